package capture

// Mirror and overlay tunnels. A capture taken away from the hosts, at a
// collector receiving a switch's mirror session, holds each RoCE packet
// inside a tunnel: GRE carrying ERSPAN type I, II or III (RFC draft
// foschiano-erspan), Transparent Ethernet Bridging or IP, or VXLAN (RFC
// 7348). Network looks through these to the mirrored packet, whose
// headers (addresses, IPv4 Identification, UDP port) are the ones the
// transport sent; the tunnel's own headers belong to the mirror's path.

const (
	ipProtoUDP = 17
	ipProtoGRE = 47

	greProtoERSPAN2 = 0x88be // ERSPAN type I (no sequence number) or II
	greProtoERSPAN3 = 0x22eb
	greProtoTEB     = 0x6558 // Transparent Ethernet Bridging
	vxlanPort       = 4789

	// maxTunnels bounds how many tunnels Network looks through (a
	// mirror of tunnelled traffic is two deep).
	maxTunnels = 4
)

// untunnel returns the network layer inside the tunnel whose outer IP
// header (proto, an EtherType) starts at off, following nested tunnels;
// it returns proto and off unchanged when the packet is no tunnel it
// knows, or when a tunnel header is cut short or malformed (the frame is
// then what its outer headers say: not RoCE).
func untunnel(data []byte, proto uint16, off int, vids []uint16, collect bool) (uint16, int, []uint16) {
	for range maxTunnels {
		p, o, v, ok := inner(data, proto, off, vids, collect)
		if !ok {
			break
		}
		proto, off, vids = p, o, v
	}
	return proto, off, vids
}

// inner returns the network layer one tunnel inside the IP packet at off
// (ok false: no tunnel, or none that can be read).
func inner(data []byte, proto uint16, off int, vids []uint16, collect bool) (uint16, int, []uint16, bool) {
	var next byte // the IP payload's protocol
	var pay int   // where the IP payload starts
	switch proto {
	case EtherTypeIPv4:
		h := data[off:]
		if len(h) < 20 || h[0]>>4 != 4 {
			return 0, 0, vids, false
		}
		ihl := int(h[0]&0x0f) * 4
		if ihl < 20 || len(h) < ihl {
			return 0, 0, vids, false
		}
		if frag := be16(h[6:]); frag&0x3fff != 0 {
			return 0, 0, vids, false // a fragment: the tunnel header is not all here
		}
		next, pay = h[9], off+ihl
	case EtherTypeIPv6:
		h := data[off:]
		if len(h) < 40 || h[0]>>4 != 6 {
			return 0, 0, vids, false
		}
		next, pay = h[6], off+40 // extension headers are not followed
	default:
		return 0, 0, vids, false
	}
	switch next {
	case ipProtoGRE:
		return gre(data, pay, vids, collect)
	case ipProtoUDP:
		if len(data) < pay+8 || be16(data[pay+2:]) != vxlanPort {
			return 0, 0, vids, false
		}
		// VXLAN: flags with I (a valid VNI) set, then the inner
		// Ethernet frame after the 8-byte header.
		v := pay + 8
		if len(data) < v+8 || data[v]&0x08 == 0 {
			return 0, 0, vids, false
		}
		return ether(data, v+8, vids, collect)
	}
	return 0, 0, vids, false
}

// gre reads the GRE header at off and returns the network layer of what it
// carries.
func gre(data []byte, off int, vids []uint16, collect bool) (uint16, int, []uint16, bool) {
	if len(data) < off+4 {
		return 0, 0, vids, false
	}
	flags := be16(data[off:])
	if flags&0x0007 != 0 || flags&0x4000 != 0 {
		return 0, 0, vids, false // not version 0, or source routing present
	}
	n := 4
	if flags&0x8000 != 0 { // checksum
		n += 4
	}
	if flags&0x2000 != 0 { // key
		n += 4
	}
	if flags&0x1000 != 0 { // sequence number
		n += 4
	}
	proto := be16(data[off+2:])
	p := off + n
	switch proto {
	case greProtoERSPAN2:
		if flags&0x1000 == 0 {
			return ether(data, p, vids, collect) // type I: no ERSPAN header
		}
		// Type II: version 1, then 8 bytes.
		if len(data) < p+8 || data[p]>>4 != 1 {
			return 0, 0, vids, false
		}
		return ether(data, p+8, vids, collect)
	case greProtoERSPAN3:
		// Type III: version 2, 12 bytes, 8 more with the O bit (a
		// platform-specific subheader); the frame type says Ethernet
		// (0) or IP (2).
		if len(data) < p+12 || data[p]>>4 != 2 {
			return 0, 0, vids, false
		}
		ft, o := data[p+10]>>2&0x1f, data[p+11]&1
		p += 12
		if o != 0 {
			p += 8
		}
		switch ft {
		case 0:
			return ether(data, p, vids, collect)
		case 2:
			return ipAt(data, p, vids)
		}
		return 0, 0, vids, false
	case greProtoTEB:
		return ether(data, p, vids, collect)
	case EtherTypeIPv4, EtherTypeIPv6:
		if p >= len(data) {
			return 0, 0, vids, false
		}
		return proto, p, vids, true
	}
	return 0, 0, vids, false
}

// ether returns the network layer of the Ethernet frame at off.
func ether(data []byte, off int, vids []uint16, collect bool) (uint16, int, []uint16, bool) {
	if len(data) < off+14 {
		return 0, 0, vids, false
	}
	proto, o, v, err := etherChain(LinkTypeEthernet, data, off+12, true, vids, collect)
	if err != nil {
		return 0, 0, vids, false
	}
	return proto, o, v, true
}

// ipAt returns the IP packet at off, its version from the first nibble.
func ipAt(data []byte, off int, vids []uint16) (uint16, int, []uint16, bool) {
	if off >= len(data) {
		return 0, 0, vids, false
	}
	switch data[off] >> 4 {
	case 4:
		return EtherTypeIPv4, off, vids, true
	case 6:
		return EtherTypeIPv6, off, vids, true
	}
	return 0, 0, vids, false
}
