// Package udpframe carries RoCEv2 packets over ordinary UDP sockets.
//
// A UDP socket sends and receives only the UDP payload of a RoCEv2
// packet: the BTH, the extension headers, the payload, the pad and the
// ICRC. The ICRC, though, covers the IP and UDP headers the kernel builds
// (IBTA Annex A17 §A17.4.3.4), less the fields it masks (the IPv4 TOS, TTL
// and checksum; the IPv6 traffic class, flow label and hop limit; the UDP
// checksum). What is left over and is not visible to a UDP socket is, for
// IPv4, the Identification field and the flags. So:
//
//   - Sending, Payload computes the ICRC over the IPv4 header that Linux
//     emits for a socket with IP_PMTUDISC_DO that is not connected: DF set
//     and Identification 0 (ip_select_ident gives 0 to DF packets of
//     unconnected sockets that may not fragment). Callers set that option
//     (see SetDontFragment).
//   - Receiving, Rebuild reconstructs the network header from the
//     addresses the socket reports and solves the Identification and DF
//     bit from the ICRC: the ICRC is an affine function of those 17 bits,
//     and a CRC-32 maps every non-zero change within one 32-bit word to a
//     non-zero change of the CRC, so at most one Identification/DF pair
//     matches a given ICRC. A packet whose ICRC no pair matches has a bad
//     ICRC; a corrupted ICRC goes unnoticed with probability 2^-15 (the
//     share of 32-bit values some pair reaches). With an AF_PACKET socket,
//     which sees the real header, nothing needs solving.
package udpframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/rcconform/rcconform/wire"
)

// Header lengths.
const (
	ipv4Len = 20
	ipv6Len = 40
	udpLen  = 8
	ethLen  = 14
)

// Payload returns the UDP payload (BTH through ICRC) of p sent from src to
// dst over a UDP socket, with the ICRC computed over the IP header the
// kernel will build: for IPv4, DF set and Identification ipid (0 for a
// socket with IP_PMTUDISC_DO; a raw socket's own choice otherwise).
func Payload(p *wire.Packet, src, dst netip.AddrPort, ipid uint16) []byte {
	f := frameFor(src, dst, ipid, true)
	f.Packet = *p
	b := f.AppendNetwork(nil)
	return b[headerLen(f.Encap):]
}

// Network returns the whole network packet (IPv4 or IPv6 header, UDP
// header, BTH through ICRC) of p sent from src to dst with
// Identification ipid and DF set, for a raw socket.
func Network(p *wire.Packet, src, dst netip.AddrPort, ipid uint16) []byte {
	f := frameFor(src, dst, ipid, true)
	f.Packet = *p
	return f.AppendNetwork(nil)
}

func frameFor(src, dst netip.AddrPort, ipid uint16, df bool) wire.Frame {
	f := wire.Frame{Src: src.Addr().Unmap(), Dst: dst.Addr().Unmap(), TTL: 64, SrcPort: src.Port(), DstPort: dst.Port()}
	if f.Src.Is4() {
		f.Encap, f.IPID, f.DF = wire.RoCEv2IPv4, ipid, df
	} else {
		f.Encap = wire.RoCEv2IPv6
	}
	return f
}

func headerLen(e wire.Encap) int {
	if e == wire.RoCEv2IPv4 {
		return ipv4Len + udpLen
	}
	return ipv6Len + udpLen
}

// AppendHeaders appends the IP and UDP headers a kernel would put in front
// of payload (BTH through ICRC) sent from src to dst: IPv4 with
// Identification ipid, DF as given, TTL 64 and a valid checksum; IPv6 with
// hop limit 64. The UDP checksum is 0.
func AppendHeaders(b []byte, src, dst netip.AddrPort, ipid uint16, df bool, payload []byte) []byte {
	s, d := src.Addr().Unmap(), dst.Addr().Unmap()
	ul := udpLen + len(payload)
	if s.Is4() {
		start := len(b)
		b = append(b, make([]byte, ipv4Len)...)
		h := b[start:]
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(ipv4Len+ul))
		binary.BigEndian.PutUint16(h[4:], ipid)
		if df {
			h[6] = 0x40
		}
		h[8] = 64
		h[9] = syscall.IPPROTO_UDP
		s4, d4 := s.As4(), d.As4()
		copy(h[12:], s4[:])
		copy(h[16:], d4[:])
		binary.BigEndian.PutUint16(h[10:], checksum(h[:ipv4Len]))
	} else {
		start := len(b)
		b = append(b, make([]byte, ipv6Len)...)
		h := b[start:]
		h[0] = 0x60
		binary.BigEndian.PutUint16(h[4:], uint16(ul))
		h[6] = syscall.IPPROTO_UDP
		h[7] = 64
		s16, d16 := s.As16(), d.As16()
		copy(h[8:], s16[:])
		copy(h[24:], d16[:])
	}
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(ul))
	b = binary.BigEndian.AppendUint16(b, 0)
	return append(b, payload...)
}

func checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

// Fit says how Rebuild matched the ICRC.
type Fit struct {
	// OK: the ICRC matches the rebuilt header (with IPID and DF below for
	// IPv4). False: no header the socket could have hidden matches it, so
	// the ICRC is bad.
	OK   bool
	IPID uint16
	DF   bool
	// Solved: the Identification and DF were solved from the ICRC rather
	// than assumed (IPv4 only).
	Solved bool
}

// ErrShort is returned for datagrams too short to hold a BTH and an ICRC.
var ErrShort = errors.New("datagram too short for a BTH and an ICRC")

// Rebuild appends to b the network packet (IP header, UDP header, then
// payload) that carried payload, a UDP datagram received from src at dst,
// and says whether its ICRC matches: for IPv4 it tries Identification 0
// with DF set first, then solves the Identification and DF from the ICRC.
// The returned packet carries the matching header (or, when none matches,
// Identification 0 with DF set).
func Rebuild(b []byte, src, dst netip.AddrPort, payload []byte) ([]byte, Fit, error) {
	if len(payload) < wire.BTHLen+wire.ICRCLen {
		return b, Fit{}, fmt.Errorf("rebuilding a %d-byte datagram from %v: %w", len(payload), src, ErrShort)
	}
	start := len(b)
	b = AppendHeaders(b, src, dst, 0, true, payload)
	pkt := b[start:]
	want := binary.LittleEndian.Uint32(pkt[len(pkt)-wire.ICRCLen:])
	body := pkt[:len(pkt)-wire.ICRCLen]
	if !src.Addr().Unmap().Is4() {
		return b, Fit{OK: wire.ComputeICRC(body, wire.RoCEv2IPv6) == want}, nil
	}
	if wire.ComputeICRC(body, wire.RoCEv2IPv4) == want {
		return b, Fit{OK: true, DF: true}, nil
	}
	ipid, df, ok := solve(body, want)
	if !ok {
		return b, Fit{DF: true}, nil
	}
	setIPv4(pkt, ipid, df)
	return b, Fit{OK: true, IPID: ipid, DF: df, Solved: true}, nil
}

// setIPv4 sets the Identification and DF of an IPv4 header and fixes its
// checksum.
func setIPv4(h []byte, ipid uint16, df bool) {
	binary.BigEndian.PutUint16(h[4:], ipid)
	h[6] &^= 0x40
	if df {
		h[6] |= 0x40
	}
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], checksum(h[:ipv4Len]))
}

// solve finds the Identification and DF bit that give the IPv4 packet body
// (network header through pad) the ICRC want. It leaves body as it found
// it. The ICRC is affine in the header's bits, so it is c0 ^ Σ col[i] over
// the bits set, where col[i] is the change one bit makes; Gaussian
// elimination over GF(2) finds the bits (the 17 columns are independent,
// since CRC-32 detects every error burst of 32 bits or fewer).
func solve(body []byte, want uint32) (ipid uint16, df bool, ok bool) {
	orig := [4]byte(body[4:8])
	defer copy(body[4:8], orig[:])
	setIPv4(body, 0, false)
	c0 := wire.ComputeICRC(body, wire.RoCEv2IPv4)
	var cols [17]uint32
	for i := 0; i < 16; i++ {
		setIPv4(body, 1<<i, false)
		cols[i] = wire.ComputeICRC(body, wire.RoCEv2IPv4) ^ c0
	}
	setIPv4(body, 0, true)
	cols[16] = wire.ComputeICRC(body, wire.RoCEv2IPv4) ^ c0
	target := want ^ c0
	// Reduce: basis vectors keyed by pivot bit, each with the set of
	// columns (as a 17-bit mask) that XOR to it.
	var basis [32]uint32
	var combo [32]uint32
	var have [32]bool
	for i, v := range cols {
		m := uint32(1) << i
		for bit := 31; bit >= 0 && v != 0; bit-- {
			if v>>bit&1 == 0 {
				continue
			}
			if !have[bit] {
				basis[bit], combo[bit], have[bit] = v, m, true
				v = 0
				break
			}
			v ^= basis[bit]
			m ^= combo[bit]
		}
	}
	var sel uint32
	for bit := 31; bit >= 0; bit-- {
		if target>>bit&1 == 0 {
			continue
		}
		if !have[bit] {
			return 0, false, false
		}
		target ^= basis[bit]
		sel ^= combo[bit]
	}
	if target != 0 {
		return 0, false, false
	}
	return uint16(sel & 0xFFFF), sel&(1<<16) != 0, true
}

// Ethernet prepends a made-up Ethernet header to a network packet (IPv4
// or IPv6), for code that decodes whole frames.
func Ethernet(b []byte, network []byte, dstMAC, srcMAC [6]byte) []byte {
	b = append(b, dstMAC[:]...)
	b = append(b, srcMAC[:]...)
	if network[0]>>4 == 4 {
		b = binary.BigEndian.AppendUint16(b, wire.EtherTypeIPv4)
	} else {
		b = binary.BigEndian.AppendUint16(b, wire.EtherTypeIPv6)
	}
	return append(b, network...)
}

// Rewrite turns the network packet a transport built for itself (its own
// Identification, DF and UDP ports) into the UDP payload to send through a
// socket from src to dst: the ICRC is recomputed over the header the
// kernel will build (DF set, Identification 0, the socket's ports). A
// packet whose ICRC was bad stays bad by the same difference, so a
// deliberately corrupt ICRC survives the rewrite.
func Rewrite(network []byte, src, dst netip.AddrPort) ([]byte, error) {
	out, err := Reheader(network, src, dst, 0, true)
	if err != nil {
		return nil, err
	}
	return out[headerLen(encapOf(src)):], nil
}

// Reheader returns network (a whole RoCEv2 packet from its IP header
// through its ICRC) under a new IP and UDP header: from src to dst,
// Identification ipid and DF df for IPv4. The ICRC is recomputed so that
// it is right for the new header exactly when it was right for the old
// one; a bad ICRC stays bad by the same difference.
func Reheader(network []byte, src, dst netip.AddrPort, ipid uint16, df bool) ([]byte, error) {
	if len(network) < 1 {
		return nil, fmt.Errorf("re-heading an empty packet: %w", ErrShort)
	}
	encap, hl := wire.RoCEv2IPv4, ipv4Len
	if network[0]>>4 == 6 {
		encap, hl = wire.RoCEv2IPv6, ipv6Len
	} else if ihl := int(network[0]&0x0F) * 4; ihl > hl {
		hl = ihl
	}
	if len(network) < hl+udpLen+wire.BTHLen+wire.ICRCLen {
		return nil, fmt.Errorf("re-heading a %d-byte packet: %w", len(network), ErrShort)
	}
	body := network[:len(network)-wire.ICRCLen]
	had := binary.LittleEndian.Uint32(network[len(body):])
	delta := had ^ wire.ComputeICRC(body, encap)
	out := AppendHeaders(nil, src, dst, ipid, df, network[hl+udpLen:])
	obody := out[:len(out)-wire.ICRCLen]
	binary.LittleEndian.PutUint32(out[len(obody):], wire.ComputeICRC(obody, encapOf(src))^delta)
	return out, nil
}

func encapOf(a netip.AddrPort) wire.Encap {
	if a.Addr().Unmap().Is4() {
		return wire.RoCEv2IPv4
	}
	return wire.RoCEv2IPv6
}

// Parsed is a RoCEv2 packet parsed from its network header on, whatever
// its UDP ports (wire.Frame insists on 4791; a loopback test may not).
type Parsed struct {
	Src, Dst netip.AddrPort
	IPv4     bool
	IPID     uint16
	DF       bool
	// Packet's payload aliases the input.
	Packet wire.Packet
	ICRC   wire.ICRCStatus
}

// ErrNotUDP is returned by Parse for packets that are not UDP over IPv4
// or IPv6.
var ErrNotUDP = errors.New("not a UDP packet")

// Parse parses network, an IPv4 or IPv6 packet, as RoCEv2 and checks its
// ICRC. An unknown opcode is reported as wire.Packet.DecodeTransport
// reports it (the BTH is decoded all the same).
func Parse(network []byte, p *Parsed) error {
	if len(network) < ipv4Len {
		return ErrShort
	}
	var hl, total int
	switch network[0] >> 4 {
	case 4:
		hl = int(network[0]&0x0F) * 4
		total = int(binary.BigEndian.Uint16(network[2:]))
		if network[9] != syscall.IPPROTO_UDP || hl < ipv4Len || binary.BigEndian.Uint16(network[6:])&0x3FFF != 0 {
			return ErrNotUDP
		}
		p.IPv4 = true
		p.IPID = binary.BigEndian.Uint16(network[4:])
		p.DF = network[6]&0x40 != 0
		p.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(network[12:16])), 0)
		p.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(network[16:20])), 0)
	case 6:
		if len(network) < ipv6Len || network[6] != syscall.IPPROTO_UDP {
			return ErrNotUDP
		}
		hl = ipv6Len
		total = ipv6Len + int(binary.BigEndian.Uint16(network[4:]))
		p.IPv4, p.IPID, p.DF = false, 0, false
		p.Src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(network[8:24])), 0)
		p.Dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(network[24:40])), 0)
	default:
		return ErrNotUDP
	}
	if total > len(network) || total < hl+udpLen+wire.BTHLen+wire.ICRCLen {
		return ErrShort
	}
	network = network[:total]
	u := network[hl:]
	p.Src = netip.AddrPortFrom(p.Src.Addr(), binary.BigEndian.Uint16(u))
	p.Dst = netip.AddrPortFrom(p.Dst.Addr(), binary.BigEndian.Uint16(u[2:]))
	body := network[:total-wire.ICRCLen]
	p.ICRC = wire.ICRCBad
	if wire.ComputeICRC(body, encapOf(p.Src)) == binary.LittleEndian.Uint32(network[len(body):]) {
		p.ICRC = wire.ICRCOK
	}
	return p.Packet.DecodeTransport(body[hl+udpLen:])
}
