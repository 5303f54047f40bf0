package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// Native InfiniBand (IBTA Vol 1 chapter 7): a packet is the Local Route
// Header (LRH, 8 bytes), a Global Route Header (GRH, 40 bytes, laid out as
// an IPv6 header with next header 0x1B) when the LRH's Link Next Header
// says one follows, the transport headers and payload, the 4-byte ICRC,
// and the 2-byte VCRC.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  VL   | LVer  |  SL   |rsv|LNH|          DLID                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  resv5  |   PktLen (words)    |          SLID                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

// ProtoInfiniBand is the protocol value (in the place of an EtherType;
// below 0x0600, so no EtherType can take it) that says the network layer
// of a frame is a native InfiniBand packet starting with its LRH.
// capture.Network returns it for ERF InfiniBand records and
// LINKTYPE_INFINIBAND; Frame.DecodeNetwork accepts it.
const ProtoInfiniBand = 0x001B

// Lengths of the native InfiniBand headers and trailer.
const (
	LRHLen  = 8
	GRHLen  = 40
	VCRCLen = 2
)

// Link Next Header values (the LRH's LNH field).
const (
	LNHRaw       = 0 // raw packet, no IBA transport
	LNHIPv6      = 1 // raw IPv6, no IBA transport
	LNHIBALocal  = 2 // BTH follows the LRH
	LNHIBAGlobal = 3 // GRH, then BTH
)

// LRH is the Local Route Header.
type LRH struct {
	VL     uint8  // virtual lane
	LVer   uint8  // link version, 0
	SL     uint8  // service level
	LNH    uint8  // link next header
	DLID   uint16 // destination LID
	PktLen uint16 // LRH through ICRC, in 4-byte words
	SLID   uint16 // source LID
}

// DecodeLRH decodes the 8-byte LRH at the start of b.
func DecodeLRH(b []byte, h *LRH) error {
	if len(b) < LRHLen {
		return fmt.Errorf("decoding LRH: %d bytes: %w", len(b), ErrShort)
	}
	*h = LRH{VL: b[0] >> 4, LVer: b[0] & 0x0F, SL: b[1] >> 4, LNH: b[1] & 3,
		DLID: binary.BigEndian.Uint16(b[2:]), PktLen: binary.BigEndian.Uint16(b[4:]) & 0x7FF,
		SLID: binary.BigEndian.Uint16(b[6:])}
	return nil
}

// AppendLRH appends the encoded LRH.
func (h *LRH) AppendLRH(b []byte) []byte {
	b = append(b, h.VL<<4|h.LVer&0x0F, h.SL<<4|h.LNH&3)
	b = binary.BigEndian.AppendUint16(b, h.DLID)
	b = binary.BigEndian.AppendUint16(b, h.PktLen&0x7FF)
	return binary.BigEndian.AppendUint16(b, h.SLID)
}

// lidPrefix is the start of the synthetic IPv6 address a LID is given
// (fd1b:4c49:4400::/112, a unique-local prefix spelling "LID" in ASCII),
// so that native InfiniBand connections are keyed like RoCE ones: by
// address and QP number.
var lidPrefix = [14]byte{0xfd, 0x1b, 'L', 'I', 'D'}

// LIDAddr returns the synthetic address that stands for LID lid.
func LIDAddr(lid uint16) netip.Addr {
	var a [16]byte
	copy(a[:], lidPrefix[:])
	binary.BigEndian.PutUint16(a[14:], lid)
	return netip.AddrFrom16(a)
}

// LIDOf returns the LID a synthetic address (LIDAddr) stands for.
func LIDOf(a netip.Addr) (uint16, bool) {
	if !a.Is6() {
		return 0, false
	}
	b := a.As16()
	if [14]byte(b[:14]) != lidPrefix {
		return 0, false
	}
	return binary.BigEndian.Uint16(b[14:]), true
}

// AddrString formats an address as reports show it: "LID 18" for the
// synthetic address of a LID, the usual form otherwise.
func AddrString(a netip.Addr) string {
	if lid, ok := LIDOf(a); ok {
		return fmt.Sprintf("LID %d", lid)
	}
	return a.String()
}

// decodeLRH decodes a native InfiniBand packet from its LRH on. The
// packet's end is where the LRH's PktLen says; the two bytes after it, when
// captured, are the VCRC. A packet cut by the capture is decoded from what
// is there (Truncated).
func (f *Frame) decodeLRH(b []byte) error {
	f.Encap = NativeIB
	if err := DecodeLRH(b, &f.LRH); err != nil {
		return err
	}
	h := &f.LRH
	if h.LNH != LNHIBALocal && h.LNH != LNHIBAGlobal {
		return fmt.Errorf("LRH link next header %d: %w", h.LNH, ErrNotRoCE)
	}
	f.Src, f.Dst = LIDAddr(h.SLID), LIDAddr(h.DLID)
	f.SrcPort, f.DstPort, f.UDPChecksum = 0, 0, 0
	f.IPID, f.DF = 0, false
	f.TOS, f.TTL, f.FlowLabel = 0, 0, 0
	end := int(h.PktLen) * 4
	start := LRHLen
	if h.LNH == LNHIBAGlobal {
		if len(b) < LRHLen+GRHLen {
			return fmt.Errorf("decoding GRH: %d bytes: %w", len(b)-LRHLen, ErrShort)
		}
		g := b[LRHLen:]
		if g[0]>>4 != 6 {
			return fmt.Errorf("decoding GRH: version %d: %w", g[0]>>4, ErrMalformed)
		}
		if g[6] != GRHNextHeaderIBA {
			return fmt.Errorf("GRH next header 0x%02x: %w", g[6], ErrNotRoCE)
		}
		f.HasGRH = true
		w := binary.BigEndian.Uint32(g)
		f.TOS, f.FlowLabel, f.TTL = uint8(w>>20), w&0xFFFFF, g[7]
		start += GRHLen
	}
	if end < start {
		return fmt.Errorf("decoding LRH: packet length %d bytes, shorter than its headers: %w", end, ErrMalformed)
	}
	if len(b) >= end+VCRCLen {
		f.VCRC, f.HasVCRC = binary.LittleEndian.Uint16(b[end:]), true
	} else {
		f.vcrc = ICRCUnverifiable
	}
	return f.decodeTransport(b, start, end)
}

// CheckVCRC verifies a native InfiniBand packet's VCRC: ICRCOK or ICRCBad,
// or ICRCUnverifiable when the capture does not hold it (or holds only
// part of the packet). Frames of other encapsulations have none
// (ICRCUnchecked).
func (f *Frame) CheckVCRC() ICRCStatus {
	if f.Encap != NativeIB || f.vcrc != ICRCUnchecked || f.net == nil {
		return f.vcrc
	}
	if ComputeVCRC(f.net) == f.VCRC {
		f.vcrc = ICRCOK
	} else {
		f.vcrc = ICRCBad
	}
	return f.vcrc
}

// computeICRCNative is ComputeICRC for a native InfiniBand packet, pkt
// running from the LRH through the pad. With a GRH (which lets routers
// rewrite the LRH), the LRH counts as eight 0xFF bytes and the rest is
// computed as for RoCEv1; without one, the LRH is included with its VL
// forced to ones. Either way the BTH's byte 4 is forced to ones
// (IBTA Vol 1 §7.8.1).
func computeICRCNative(pkt []byte) uint32 {
	if len(pkt) < LRHLen {
		return crc32.Update(0, crc32.IEEETable, pkt)
	}
	if pkt[1]&3 == LNHIBAGlobal {
		return ComputeICRC(pkt[LRHLen:], RoCEv1)
	}
	var lrh [LRHLen]byte
	copy(lrh[:], pkt)
	lrh[0] |= 0xF0 // VL
	c := crcSmall(0, lrh[:])
	rest := pkt[LRHLen:]
	if len(rest) < BTHLen {
		return crc32.Update(c, crc32.IEEETable, rest)
	}
	c = icrcHeaders(c, nil, nil, rest[:BTHLen], NativeIB)
	return crc32.Update(c, crc32.IEEETable, rest[BTHLen:])
}

// ComputeVCRC computes the VCRC of a native InfiniBand packet, pkt running
// from the LRH through the ICRC: CRC-16 with polynomial 0x100B (bit
// reflected, 0xD008), initial value 0xFFFF and the result complemented,
// over every bit of the packet (IBTA Vol 1 §7.8.2). It goes on the wire
// least-significant byte first.
func ComputeVCRC(pkt []byte) uint16 {
	c := uint16(0xFFFF)
	for _, v := range pkt {
		c = vcrcTable[byte(c)^v] ^ c>>8
	}
	return ^c
}

var vcrcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ 0xD008
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// AppendIB encodes the frame as a native InfiniBand packet: LRH (its
// PktLen and LNH computed), a GRH when HasGRH (from Src, Dst, TOS,
// FlowLabel and TTL as 16-byte GIDs), the transport, the ICRC and the
// VCRC. Src and Dst are not used for the LRH: set LRH.SLID and LRH.DLID.
func (f *Frame) AppendIB(b []byte) []byte {
	start := len(b)
	h := f.LRH
	h.LNH = LNHIBALocal
	n := LRHLen + f.Packet.TransportLen() + ICRCLen
	if f.HasGRH {
		h.LNH = LNHIBAGlobal
		n += GRHLen
	}
	h.PktLen = uint16(n / 4)
	b = h.AppendLRH(b)
	if f.HasGRH {
		g := len(b)
		b = grow(b, GRHLen)
		binary.BigEndian.PutUint32(b[g:], 6<<28|uint32(f.TOS)<<20|f.FlowLabel&0xFFFFF)
		binary.BigEndian.PutUint16(b[g+4:], uint16(n-LRHLen-GRHLen))
		b[g+6], b[g+7] = GRHNextHeaderIBA, f.TTL
		s16, d16 := f.Src.As16(), f.Dst.As16()
		copy(b[g+8:], s16[:])
		copy(b[g+24:], d16[:])
	}
	b = f.Packet.AppendTransport(b)
	b = binary.LittleEndian.AppendUint32(b, computeICRCNative(b[start:]))
	return binary.LittleEndian.AppendUint16(b, ComputeVCRC(b[start:]))
}
