package wire

import (
	"errors"
	"hash/crc32"
)

// The ICRC (RULES.md §3.7; IBTA Vol 1 §7.8.1 and Annex A17 §A17.4.3.4) is
// CRC-32 (the Ethernet polynomial, as hash/crc32's IEEE table computes it)
// over: eight 0xFF bytes standing in for the masked LRH; the IP header or
// GRH with its variant fields forced to ones; the UDP header with its
// checksum forced to ones (RoCEv2); the BTH with byte 4 (FECN, BECN,
// resv6) forced to ones; then the rest of the packet through the pad. It
// goes on the wire least-significant byte first.

var ffLRH = [8]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}

// crcAfterLRH is the CRC register after the eight 0xFF bytes.
var crcAfterLRH = crc32.Update(0, crc32.IEEETable, ffLRH[:])

// ComputeICRC computes the ICRC of pkt, which runs from the network header
// (IPv4, IPv6 or GRH) through the pad, the ICRC itself excluded.
// A pkt too short for its headers yields the CRC of what is there.
func ComputeICRC(pkt []byte, encap Encap) uint32 {
	var masked [60 + 8 + BTHLen]byte
	n := 0
	switch encap {
	case RoCEv2IPv4:
		if len(pkt) < 20 {
			return crc32.Update(crcAfterLRH, crc32.IEEETable, pkt)
		}
		ihl := int(pkt[0]&0x0F) * 4
		if ihl < 20 || ihl > 60 || len(pkt) < ihl {
			ihl = 20
		}
		n = copy(masked[:], pkt[:ihl])
		masked[1] = 0xFF                    // TOS: DSCP and ECN
		masked[8] = 0xFF                    // TTL
		masked[10], masked[11] = 0xFF, 0xFF // header checksum
	default:
		if len(pkt) < 40 {
			return crc32.Update(crcAfterLRH, crc32.IEEETable, pkt)
		}
		n = copy(masked[:], pkt[:40])
		masked[0] |= 0x0F // traffic class, high nibble
		masked[1] = 0xFF  // traffic class low nibble, flow label
		masked[2], masked[3] = 0xFF, 0xFF
		masked[7] = 0xFF // hop limit
	}
	if encap != RoCEv1 {
		if len(pkt) < n+8 {
			c := crc32.Update(crcAfterLRH, crc32.IEEETable, masked[:n])
			return crc32.Update(c, crc32.IEEETable, pkt[n:])
		}
		copy(masked[n:], pkt[n:n+8])
		masked[n+6], masked[n+7] = 0xFF, 0xFF // UDP checksum
		n += 8
	}
	hdr := n
	if len(pkt) >= n+BTHLen {
		copy(masked[n:], pkt[n:n+BTHLen])
		masked[n+4] = 0xFF // FECN, BECN, resv6
		n += BTHLen
	}
	c := crc32.Update(crcAfterLRH, crc32.IEEETable, masked[:n])
	_ = hdr
	return crc32.Update(c, crc32.IEEETable, pkt[n:])
}

func errorIs(err, target error) bool { return errors.Is(err, target) }
