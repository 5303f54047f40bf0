package reference

import (
	"fmt"
)

// Access is the set of rights a memory region grants.
type Access uint8

// Access rights (verbs IBV_ACCESS_*).
const (
	LocalWrite Access = 1 << iota
	RemoteRead
	RemoteWrite
	RemoteAtomic
)

// AllRemote grants every remote right and local write.
const AllRemote = LocalWrite | RemoteRead | RemoteWrite | RemoteAtomic

// Memory is a set of registered memory regions, looked up by R_Key for
// remote access and by address for local access.
type Memory struct {
	mrs     []*MR
	keyBase uint32
	next    uint32
}

// NewMemory returns an empty memory whose R_Keys are derived from keyBase,
// so that the keys of different QPs differ.
func NewMemory(keyBase uint32) *Memory {
	return &Memory{keyBase: keyBase & 0xFFFFFF}
}

// MR is a registered memory region.
type MR struct {
	VA     uint64
	RKey   uint32
	Access Access
	buf    []byte
	valid  bool
}

// Register registers size bytes at virtual address va with the given
// access rights and returns the new region with a fresh R_Key.
func (m *Memory) Register(va uint64, size int, access Access) *MR {
	if size < 0 {
		size = 0
	}
	m.next++
	key := (m.keyBase+m.next)<<8 | m.next&0xFF
	mr := &MR{VA: va, RKey: key, Access: access, buf: make([]byte, size), valid: true}
	m.mrs = append(m.mrs, mr)
	return mr
}

// Regions returns the registered regions in registration order.
func (m *Memory) Regions() []*MR { return m.mrs }

// Bytes returns the region's memory (writes through it are seen by the
// transport).
func (mr *MR) Bytes() []byte { return mr.buf }

// Len returns the region's size.
func (mr *MR) Len() int { return len(mr.buf) }

// Invalidate makes the R_Key invalid, as deregistering or invalidating
// the region would; the memory stays readable locally.
func (mr *MR) Invalidate() { mr.valid = false }

// Valid reports whether the R_Key is still valid.
func (mr *MR) Valid() bool { return mr.valid }

// contains reports whether [va, va+n) lies inside the region.
func (mr *MR) contains(va uint64, n uint64) bool {
	if va < mr.VA {
		return false
	}
	off := va - mr.VA
	return off <= uint64(len(mr.buf)) && n <= uint64(len(mr.buf))-off
}

// accessError says why a remote access was refused.
type accessError struct{ why string }

func (e *accessError) Error() string { return "remote access refused: " + e.why }

// lookup finds the valid region with R_Key key and checks that it grants
// want over [va, va+n). It returns the bytes of that range.
func (m *Memory) lookup(key uint32, va uint64, n uint64, want Access) ([]byte, *MR, error) {
	for _, mr := range m.mrs {
		if mr.RKey != key {
			continue
		}
		if !mr.valid {
			return nil, mr, &accessError{fmt.Sprintf("R_Key 0x%x invalidated", key)}
		}
		if mr.Access&want != want {
			return nil, mr, &accessError{fmt.Sprintf("R_Key 0x%x lacks the access right", key)}
		}
		if !mr.contains(va, n) {
			return nil, mr, &accessError{fmt.Sprintf("[0x%x, +%d) outside the region of R_Key 0x%x", va, n, key)}
		}
		off := va - mr.VA
		return mr.buf[off : off+n], mr, nil
	}
	return nil, nil, &accessError{fmt.Sprintf("no region with R_Key 0x%x", key)}
}

// invalidate invalidates the region with R_Key key (SEND with
// invalidate); false if there is none or it is already invalid.
func (m *Memory) invalidate(key uint32) bool {
	for _, mr := range m.mrs {
		if mr.RKey == key && mr.valid {
			mr.valid = false
			return true
		}
	}
	return false
}

// Local returns n bytes at va from a region registered with local write
// access, for placing READ responses and ATOMIC results.
func (m *Memory) Local(va uint64, n int) ([]byte, error) {
	for _, mr := range m.mrs {
		if mr.Access&LocalWrite != 0 && n >= 0 && mr.contains(va, uint64(n)) {
			off := va - mr.VA
			return mr.buf[off : off+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("no local region with write access covers [0x%x, +%d)", va, n)
}
