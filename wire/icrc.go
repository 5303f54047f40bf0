package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// The ICRC (IBTA Vol 1 §7.8.1 and Annex A17 §A17.4.3.4) is
// CRC-32 (the Ethernet polynomial, as hash/crc32's IEEE table computes it)
// over: eight 0xFF bytes standing in for the masked LRH; the IP header or
// GRH with its variant fields forced to ones; the UDP header with its
// checksum forced to ones (RoCEv2); the BTH with byte 4 (FECN, BECN,
// resv6) forced to ones; then the rest of the packet through the pad. It
// goes on the wire least-significant byte first.

var ffLRH = [8]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}

// crcAfterLRH is the CRC register after the eight 0xFF bytes (as
// crc32.Update returns it: 0x2144df1c, whose complement is rxe's
// precomputed seed 0xdebb20e3).
var crcAfterLRH = crc32.Update(0, crc32.IEEETable, ffLRH[:])

// maxMaskedLen bounds the masked prefix of a packet: an IPv4 header with
// options (60), the UDP header (8) and the BTH (12).
const maxMaskedLen = 60 + 8 + BTHLen

// ComputeICRC computes the ICRC of pkt, which runs from the network header
// (IPv4, IPv6 or GRH) through the pad, the ICRC itself excluded.
// A pkt too short for its headers yields the CRC of what is there: a
// header that is not complete is included unmasked.
//
// ComputeICRC allocates nothing: the masked copy of the headers stays on
// the stack.
//
// For NativeIB, pkt runs from the LRH through the pad; see
// computeICRCNative for what is masked there.
func ComputeICRC(pkt []byte, encap Encap) uint32 {
	var ip, udp, rest []byte
	switch encap {
	case NativeIB:
		return computeICRCNative(pkt)
	case RoCEv2IPv4:
		if len(pkt) < 20 {
			return crc32.Update(crcAfterLRH, crc32.IEEETable, pkt)
		}
		ihl := int(pkt[0]&0x0F) * 4
		if ihl < 20 || len(pkt) < ihl {
			ihl = 20
		}
		ip, rest = pkt[:ihl], pkt[ihl:]
	default:
		if len(pkt) < 40 {
			return crc32.Update(crcAfterLRH, crc32.IEEETable, pkt)
		}
		ip, rest = pkt[:40], pkt[40:]
	}
	if encap != RoCEv1 {
		if len(rest) < 8 {
			c := icrcHeaders(crcAfterLRH, ip, nil, nil, encap)
			return crc32.Update(c, crc32.IEEETable, rest)
		}
		udp, rest = rest[:8], rest[8:]
	}
	if m := prefixMask(encap, len(ip)); m != nil && len(rest) >= BTHLen {
		// The headers whole, one after the other in pkt: their masked
		// bytes are ORed in as the CRC reads them (no copy; the ICRC's
		// most frequent case, as a capture's).
		n := len(ip) + len(udp) + BTHLen
		c := crcMasked(crcAfterLRH, pkt[:n], m)
		return crc32.Update(c, crc32.IEEETable, pkt[n:])
	}
	return icrcTransport(ip, udp, rest, encap)
}

// icrcTransport computes the ICRC from the network header ip, the UDP
// header udp (nil for RoCEv1) and transport, which runs from the BTH
// through the pad. The three need not be contiguous. A transport shorter
// than a BTH is included unmasked.
func icrcTransport(ip, udp, transport []byte, encap Encap) uint32 {
	var bth []byte
	if len(transport) >= BTHLen {
		bth, transport = transport[:BTHLen], transport[BTHLen:]
	}
	c := icrcHeaders(crcAfterLRH, ip, udp, bth, encap)
	return crc32.Update(c, crc32.IEEETable, transport)
}

// icrcHeaders feeds the masked network header, UDP header and BTH into the
// CRC register c. ip is masked when it is a whole header (20–60 bytes for
// IPv4, 40 for IPv6 and the GRH), udp when it is 8 bytes, bth when it is 12.
func icrcHeaders(c uint32, ip, udp, bth []byte, encap Encap) uint32 {
	var m [maxMaskedLen]byte
	if len(ip)+len(udp)+len(bth) > len(m) {
		// Not a header layout this package produces; mask nothing.
		c = crc32.Update(c, crc32.IEEETable, ip)
		c = crc32.Update(c, crc32.IEEETable, udp)
		return crc32.Update(c, crc32.IEEETable, bth)
	}
	n := copy(m[:], ip)
	n += copy(m[n:], udp)
	n += copy(m[n:], bth)
	maskHeaders(m[:n], len(ip), len(udp), len(bth), encap)
	return crcSmall(c, m[:n])
}

// maskHeaders forces to ones the variant fields of the headers laid out
// one after the other in m: a network header of ipLen bytes (masked when
// whole, as icrcHeaders says), a UDP header of udpLen and a BTH of bthLen.
// Every field is forced by ORing ones in, so that maskHeaders applied to
// zeros gives a layout's mask for crcMasked (prefixMask).
func maskHeaders(m []byte, ipLen, udpLen, bthLen int, encap Encap) {
	switch {
	case encap == RoCEv2IPv4 && ipLen >= 20:
		m[1] |= 0xFF              // TOS: DSCP and ECN
		m[8] |= 0xFF              // TTL
		m[10], m[11] = 0xFF, 0xFF // header checksum
	case encap != RoCEv2IPv4 && ipLen == 40:
		m[0] |= 0x0F // traffic class, high nibble
		m[1] |= 0xFF // traffic class low nibble, flow label
		m[2], m[3] = 0xFF, 0xFF
		m[7] |= 0xFF // hop limit
	}
	if u := ipLen; udpLen == 8 {
		m[u+6], m[u+7] = 0xFF, 0xFF // UDP checksum
	}
	if t := ipLen + udpLen; bthLen == BTHLen {
		m[t+4] |= 0xFF // FECN, BECN, resv6
	}
}

// The masks of the whole headers of each encapsulation, one after the
// other (maskHeaders applied to zeros): ipv4Masks[k] for an IPv4 header of
// 20+4k bytes, the UDP header and the BTH; ipv6Mask for IPv6, UDP and BTH;
// grhMask for the GRH and the BTH (RoCEv1).
var (
	ipv4Masks [11][maxMaskedLen]byte
	ipv6Mask  = layoutMask(40, 8, RoCEv2IPv6)
	grhMask   = layoutMask(40, 0, RoCEv1)
)

func init() {
	for k := range ipv4Masks {
		ipv4Masks[k] = layoutMask(20+4*k, 8, RoCEv2IPv4)
	}
}

// layoutMask returns the mask of a network header of ipLen bytes, a UDP
// header of udpLen and a BTH.
func layoutMask(ipLen, udpLen int, encap Encap) (m [maxMaskedLen]byte) {
	maskHeaders(m[:ipLen+udpLen+BTHLen], ipLen, udpLen, BTHLen, encap)
	return m
}

// prefixMask returns the mask of the whole headers of encap whose network
// header is ipLen bytes (as ComputeICRC splits a packet), nil for an
// encapsulation it does not know.
func prefixMask(encap Encap, ipLen int) *[maxMaskedLen]byte {
	switch encap {
	case RoCEv2IPv4:
		if k := (ipLen - 20) / 4; ipLen%4 == 0 && k >= 0 && k < len(ipv4Masks) {
			return &ipv4Masks[k]
		}
	case RoCEv2IPv6:
		return &ipv6Mask
	case RoCEv1:
		return &grhMask
	}
	return nil
}

// noMask masks nothing (crcSmall).
var noMask [maxMaskedLen]byte

// crcSmall is crc32.Update(c, crc32.IEEETable, p) for p of at most
// maxMaskedLen bytes, written in Go (slicing by eight, crcMasked) so that
// p, a stack array in icrcHeaders, does not escape to the heap through
// hash/crc32's assembly-dispatching function variable.
func crcSmall(c uint32, p []byte) uint32 { return crcMasked(c, p, &noMask) }

// crcMasked is crcSmall over p with mask's bytes ORed into it (p at most
// maxMaskedLen bytes): the CRC of the masked headers read in place, eight
// bytes at a time.
func crcMasked(c uint32, p []byte, mask *[maxMaskedLen]byte) uint32 {
	c = ^c
	m := mask[:len(p)]
	n := len(p) &^ 7
	for i := 0; i < n; i += 8 {
		w := binary.LittleEndian.Uint64(p[i:i+8]) | binary.LittleEndian.Uint64(m[i:i+8])
		lo, hi := uint32(w)^c, uint32(w>>32)
		c = slicing8[0][hi>>24] ^ slicing8[1][hi>>16&0xFF] ^ slicing8[2][hi>>8&0xFF] ^ slicing8[3][hi&0xFF] ^
			slicing8[4][lo>>24] ^ slicing8[5][lo>>16&0xFF] ^ slicing8[6][lo>>8&0xFF] ^ slicing8[7][lo&0xFF]
	}
	for i := n; i < len(p); i++ {
		c = slicing8[0][byte(c)^(p[i]|m[i])] ^ c>>8
	}
	return ^c
}

// slicing8 holds the eight tables of slicing-by-8 CRC-32 (IEEE,
// reflected): slicing8[0] is crc32.IEEETable.
var slicing8 = func() (t [8][256]uint32) {
	t[0] = *crc32.IEEETable
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xFF] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()
