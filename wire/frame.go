package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// RoCE constants (Annex A17; docs/interpretations.md, "Wire formats").
const (
	// UDPPort is the well-known RoCEv2 UDP destination port.
	UDPPort = 4791
	// EtherTypeIPv4, EtherTypeIPv6 and EtherTypeRoCEv1 are the network
	// protocols a RoCE frame can carry.
	EtherTypeIPv4   = 0x0800
	EtherTypeIPv6   = 0x86DD
	EtherTypeRoCEv1 = 0x8915
	etherTypeVLAN   = 0x8100
	etherTypeQinQ   = 0x88A8
	etherTypeQinQ2  = 0x9100
	// GRHNextHeaderIBA is the GRH next-header value for an IBA transport header.
	GRHNextHeaderIBA = 0x1B
	ipProtoUDP       = 17
)

// Encap says how a transport packet was carried.
type Encap uint8

// Encapsulations.
const (
	RoCEv2IPv4 Encap = iota
	RoCEv2IPv6
	RoCEv1
	// NativeIB is a native InfiniBand packet: an LRH, a GRH when the
	// LRH's LNH says one follows, the transport, the ICRC and the VCRC.
	NativeIB
)

func (e Encap) String() string {
	return [...]string{"RoCEv2/IPv4", "RoCEv2/IPv6", "RoCEv1", "InfiniBand"}[e%4]
}

// ICRCStatus is the outcome of checking a frame's ICRC.
type ICRCStatus uint8

// ICRC outcomes.
const (
	ICRCUnchecked    ICRCStatus = iota
	ICRCOK                      // computed and equal
	ICRCBad                     // computed and different: the receiver drops the packet
	ICRCUnverifiable            // the frame was cut by the capture's snaplen
)

func (s ICRCStatus) String() string {
	return [...]string{"unchecked", "ok", "bad", "unverifiable"}[s%4]
}

// Frame is a RoCE frame: Ethernet (optional 802.1Q tag), IPv4 or IPv6 and
// UDP (RoCEv2) or a GRH (RoCEv1), the transport packet, and the ICRC.
// Decoding into a reused Frame allocates nothing; the Packet's payload and
// the raw bytes alias the input.
type Frame struct {
	DstMAC, SrcMAC [6]byte
	HasVLAN        bool
	VLAN           uint16 // TCI of the outermost 802.1Q tag
	Encap          Encap
	Src, Dst       netip.Addr
	TOS            uint8  // IPv4 TOS or IPv6/GRH traffic class (DSCP and ECN)
	TTL            uint8  // IPv4 TTL or IPv6/GRH hop limit
	IPID           uint16 // IPv4 identification
	DF             bool   // IPv4 don't-fragment
	FlowLabel      uint32 // IPv6/GRH flow label
	SrcPort        uint16 // UDP source port (RoCEv2)
	DstPort        uint16 // UDP destination port, 4791
	UDPChecksum    uint16
	Packet
	ICRC uint32 // the ICRC as read from the wire (least-significant byte first)
	// Truncated is set when the captured bytes end before the IP length
	// (native InfiniBand: the LRH's packet length) says.
	Truncated bool
	// LRH is the Local Route Header of a native InfiniBand packet
	// (Encap NativeIB); HasGRH says a GRH followed it. Src and Dst are
	// then the LIDs in their synthetic address form (LIDAddr).
	LRH    LRH
	HasGRH bool
	// VCRC is the native packet's variant CRC as read from the wire;
	// HasVCRC says the capture holds it.
	VCRC    uint16
	HasVCRC bool

	net  []byte // network header (native IB: the LRH) through ICRC, as decoded
	icrc ICRCStatus
	vcrc ICRCStatus
}

// IsIPv6 reports whether the frame was carried over IPv6 or a GRH.
func (f *Frame) IsIPv6() bool { return f.Encap != RoCEv2IPv4 }

// DecodeEthernet decodes an Ethernet frame. It returns an error wrapping
// ErrNotRoCE for frames that are not RoCE, so callers can skip and count
// them; other errors describe malformed RoCE frames.
func (f *Frame) DecodeEthernet(data []byte) error {
	if len(data) < 14 {
		return fmt.Errorf("decoding Ethernet: %d bytes: %w", len(data), ErrShort)
	}
	copy(f.DstMAC[:], data[0:6])
	copy(f.SrcMAC[:], data[6:12])
	et := binary.BigEndian.Uint16(data[12:])
	off := 14
	f.HasVLAN, f.VLAN = false, 0
	for et == etherTypeVLAN || et == etherTypeQinQ || et == etherTypeQinQ2 {
		if len(data) < off+4 {
			return fmt.Errorf("decoding 802.1Q tag: %w", ErrShort)
		}
		if !f.HasVLAN {
			f.HasVLAN = true
			f.VLAN = binary.BigEndian.Uint16(data[off:])
		}
		et = binary.BigEndian.Uint16(data[off+2:])
		off += 4
	}
	return f.DecodeNetwork(et, data[off:])
}

// DecodeNetwork decodes a frame from its network header on: proto is the
// EtherType (0x0800, 0x86DD or 0x8915), or ProtoInfiniBand for a native
// InfiniBand packet starting with its LRH.
func (f *Frame) DecodeNetwork(proto uint16, data []byte) error {
	f.Truncated = false
	f.icrc, f.vcrc = ICRCUnchecked, ICRCUnchecked
	f.net = nil
	f.HasGRH, f.HasVCRC = false, false
	switch proto {
	case ProtoInfiniBand:
		return f.decodeLRH(data)
	case EtherTypeIPv4:
		return f.decodeIPv4(data)
	case EtherTypeIPv6:
		return f.decodeIPv6(data, false)
	case EtherTypeRoCEv1:
		return f.decodeIPv6(data, true)
	}
	return fmt.Errorf("EtherType 0x%04x: %w", proto, ErrNotRoCE)
}

func (f *Frame) decodeIPv4(b []byte) error {
	if len(b) < 20 {
		return fmt.Errorf("decoding IPv4 header: %d bytes: %w", len(b), ErrShort)
	}
	if b[0]>>4 != 4 {
		return fmt.Errorf("decoding IPv4 header: version %d: %w", b[0]>>4, ErrMalformed)
	}
	ihl := int(b[0]&0x0F) * 4
	if ihl < 20 || len(b) < ihl {
		return fmt.Errorf("decoding IPv4 header: header length %d: %w", ihl, ErrMalformed)
	}
	if b[9] != ipProtoUDP {
		return fmt.Errorf("IPv4 protocol %d: %w", b[9], ErrNotRoCE)
	}
	frag := binary.BigEndian.Uint16(b[6:])
	if frag&0x3FFF != 0 {
		return fmt.Errorf("IPv4 fragment: %w", ErrNotRoCE)
	}
	total := int(binary.BigEndian.Uint16(b[2:]))
	if total < ihl+8 {
		return fmt.Errorf("decoding IPv4 header: total length %d: %w", total, ErrMalformed)
	}
	f.Encap = RoCEv2IPv4
	f.TOS = b[1]
	f.TTL = b[8]
	f.IPID = binary.BigEndian.Uint16(b[4:])
	f.DF = frag&0x4000 != 0
	f.FlowLabel = 0
	f.Src = netip.AddrFrom4([4]byte(b[12:16]))
	f.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	return f.decodeUDP(b, ihl, total)
}

func (f *Frame) decodeIPv6(b []byte, grh bool) error {
	what := "IPv6 header"
	if grh {
		what = "GRH"
	}
	if len(b) < 40 {
		return fmt.Errorf("decoding %s: %d bytes: %w", what, len(b), ErrShort)
	}
	if b[0]>>4 != 6 {
		return fmt.Errorf("decoding %s: version %d: %w", what, b[0]>>4, ErrMalformed)
	}
	w := binary.BigEndian.Uint32(b)
	f.TOS = uint8(w >> 20)
	f.FlowLabel = w & 0xFFFFF
	f.TTL = b[7]
	f.IPID, f.DF = 0, false
	// IPv6 addresses stay IPv6 even when they are v4-mapped (as rxe's
	// IPv4 GIDs are); Unmap them to compare with IPv4 addresses.
	f.Src = netip.AddrFrom16([16]byte(b[8:24]))
	f.Dst = netip.AddrFrom16([16]byte(b[24:40]))
	total := 40 + int(binary.BigEndian.Uint16(b[4:]))
	if grh {
		if b[6] != GRHNextHeaderIBA {
			return fmt.Errorf("GRH next header 0x%02x: %w", b[6], ErrNotRoCE)
		}
		f.Encap = RoCEv1
		f.SrcPort, f.DstPort, f.UDPChecksum = 0, 0, 0
		return f.decodeTransport(b, 40, total)
	}
	if b[6] != ipProtoUDP {
		return fmt.Errorf("IPv6 next header %d: %w", b[6], ErrNotRoCE)
	}
	f.Encap = RoCEv2IPv6
	return f.decodeUDP(b, 40, total)
}

func (f *Frame) decodeUDP(b []byte, off, total int) error {
	if len(b) < off+8 {
		return fmt.Errorf("decoding UDP header: %w", ErrShort)
	}
	u := b[off:]
	f.SrcPort = binary.BigEndian.Uint16(u)
	f.DstPort = binary.BigEndian.Uint16(u[2:])
	if f.DstPort != UDPPort {
		return fmt.Errorf("UDP port %d: %w", f.DstPort, ErrNotRoCE)
	}
	ulen := int(binary.BigEndian.Uint16(u[4:]))
	f.UDPChecksum = binary.BigEndian.Uint16(u[6:])
	if ulen < 8 || off+ulen > total {
		return fmt.Errorf("decoding UDP header: length %d in an IP packet of %d: %w", ulen, total, ErrMalformed)
	}
	return f.decodeTransport(b, off+8, off+ulen)
}

// decodeTransport decodes the BTH onwards; b[start:end] holds transport
// headers, payload, pad and ICRC as the network header says.
func (f *Frame) decodeTransport(b []byte, start, end int) error {
	if end-start < BTHLen+ICRCLen {
		return fmt.Errorf("decoding BTH: %d bytes for BTH and ICRC: %w", end-start, ErrShort)
	}
	if len(b) < end {
		// Cut by the capture's snaplen: decode what is there. When only
		// (part of) the ICRC is missing, the pad is known; otherwise the
		// payload is every captured byte after the headers that can
		// belong to it (the pad count in the BTH says how many of the
		// last bytes of the whole packet are pad).
		f.Truncated = true
		f.icrc = ICRCUnverifiable
		f.ICRC = 0
		f.net = b
		padEnd := end - ICRCLen
		if len(b) >= padEnd {
			return f.Packet.DecodeTransport(b[start:padEnd])
		}
		if len(b) >= start+BTHLen {
			if payEnd := padEnd - int(b[start+1]>>4&3); len(b) > payEnd {
				b = b[:payEnd] // the cut is inside the pad
			}
		}
		return f.Packet.decodeTransport(b[start:], true)
	}
	f.net = b[:end]
	f.ICRC = binary.LittleEndian.Uint32(b[end-ICRCLen:])
	return f.Packet.DecodeTransport(b[start : end-ICRCLen])
}

// CheckICRC verifies the decoded frame's ICRC (§7.8.1, §A17.4.3.4) and returns
// ICRCOK, ICRCBad, or ICRCUnverifiable for a frame cut short. It reads the
// decoded bytes, so call it before the input buffer is reused.
func (f *Frame) CheckICRC() ICRCStatus {
	if f.icrc != ICRCUnchecked || f.net == nil {
		return f.icrc
	}
	n := len(f.net) - ICRCLen
	if ComputeICRC(f.net[:n], f.Encap) == f.ICRC {
		f.icrc = ICRCOK
	} else {
		f.icrc = ICRCBad
	}
	return f.icrc
}

// Network returns the decoded bytes from the network header through the
// ICRC (aliasing the input).
func (f *Frame) Network() []byte { return f.net }

// AppendEthernet encodes the frame with an Ethernet header (and 802.1Q tag
// when HasVLAN), computing IP length and checksum, UDP length, and the ICRC.
// The UDP checksum is written as UDPChecksum (0 means none, as rxe does).
func (f *Frame) AppendEthernet(b []byte) []byte {
	b = append(b, f.DstMAC[:]...)
	b = append(b, f.SrcMAC[:]...)
	if f.HasVLAN {
		b = binary.BigEndian.AppendUint16(b, etherTypeVLAN)
		b = binary.BigEndian.AppendUint16(b, f.VLAN)
	}
	switch f.Encap {
	case RoCEv2IPv4:
		b = binary.BigEndian.AppendUint16(b, EtherTypeIPv4)
	case RoCEv2IPv6:
		b = binary.BigEndian.AppendUint16(b, EtherTypeIPv6)
	default:
		b = binary.BigEndian.AppendUint16(b, EtherTypeRoCEv1)
	}
	return f.AppendNetwork(b)
}

// AppendNetwork encodes the frame from the network header on.
func (f *Frame) AppendNetwork(b []byte) []byte {
	start := len(b)
	tl := f.Packet.TransportLen()
	switch f.Encap {
	case RoCEv2IPv4:
		total := 20 + 8 + tl + ICRCLen
		b = grow(b, 20)
		h := b[start:]
		h[0] = 0x45
		h[1] = f.TOS
		binary.BigEndian.PutUint16(h[2:], uint16(total))
		binary.BigEndian.PutUint16(h[4:], f.IPID)
		var fl uint16
		if f.DF {
			fl = 0x4000
		}
		binary.BigEndian.PutUint16(h[6:], fl)
		h[8] = f.TTL
		h[9] = ipProtoUDP
		h[10], h[11] = 0, 0
		s4, d4 := as4(f.Src), as4(f.Dst)
		copy(h[12:], s4[:])
		copy(h[16:], d4[:])
		binary.BigEndian.PutUint16(h[10:], ipv4Checksum(h[:20]))
		b = f.appendUDP(b, tl)
	default:
		b = grow(b, 40)
		h := b[start:]
		binary.BigEndian.PutUint32(h, 6<<28|uint32(f.TOS)<<20|f.FlowLabel&0xFFFFF)
		plen := tl + ICRCLen
		if f.Encap == RoCEv2IPv6 {
			plen += 8
			h[6] = ipProtoUDP
		} else {
			h[6] = GRHNextHeaderIBA
		}
		binary.BigEndian.PutUint16(h[4:], uint16(plen))
		h[7] = f.TTL
		s16, d16 := f.Src.As16(), f.Dst.As16() // the zero Addr gives ::
		copy(h[8:], s16[:])
		copy(h[24:], d16[:])
		if f.Encap == RoCEv2IPv6 {
			b = f.appendUDP(b, tl)
		}
	}
	b = f.Packet.AppendTransport(b)
	icrc := ComputeICRC(b[start:], f.Encap)
	return binary.LittleEndian.AppendUint32(b, icrc)
}

func (f *Frame) appendUDP(b []byte, tl int) []byte {
	dst := f.DstPort
	if dst == 0 {
		dst = UDPPort
	}
	b = binary.BigEndian.AppendUint16(b, f.SrcPort)
	b = binary.BigEndian.AppendUint16(b, dst)
	b = binary.BigEndian.AppendUint16(b, uint16(8+tl+ICRCLen))
	return binary.BigEndian.AppendUint16(b, f.UDPChecksum)
}

// as4 returns a's IPv4 form: the address itself, the IPv4 address an
// IPv4-mapped IPv6 address carries, or 0.0.0.0 for the zero Addr and other
// IPv6 addresses (netip.Addr.As4 would panic).
func as4(a netip.Addr) [4]byte {
	if a = a.Unmap(); a.Is4() {
		return a.As4()
	}
	return [4]byte{}
}

func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}
