package capture

import (
	"errors"
	"fmt"
)

// Errors of Network.
var (
	// ErrUnsupportedLinkType means Network does not know how to find the
	// network layer for the link type (ERF, native InfiniBand, ...).
	ErrUnsupportedLinkType = errors.New("capture: unsupported link type")
	// ErrShortFrame means the frame ends inside its link-layer header, or
	// right after it.
	ErrShortFrame = errors.New("capture: frame too short")
	// ErrBadFrame means the link-layer header is impossible (a raw IP
	// frame whose version is neither 4 nor 6).
	ErrBadFrame = errors.New("capture: malformed frame")
)

// Link types (pcap LINKTYPE_* values) that Network understands.
const (
	LinkTypeNull      = 0   // BSD loopback, family in host byte order
	LinkTypeEthernet  = 1   // Ethernet II / 802.3
	LinkTypeRaw12     = 12  // raw IP (DLT_RAW on most platforms)
	LinkTypeRaw14     = 14  // raw IP (DLT_RAW on OpenBSD)
	LinkTypeRaw       = 101 // raw IP, version from the first nibble
	LinkTypeLoop      = 108 // OpenBSD loopback, family in network byte order
	LinkTypeLinuxSLL  = 113 // Linux cooked capture v1
	LinkTypeIPv4      = 228 // raw IPv4
	LinkTypeIPv6      = 229 // raw IPv6
	LinkTypeIPoIB     = 242 // IP over InfiniBand (RFC 4391 4-byte header)
	LinkTypeLinuxSLL2 = 276 // Linux cooked capture v2
	// LinkTypeERF is Endace ERF records (erf.go); LinkTypeInfiniBand is
	// native InfiniBand packets starting with their LRH.
	LinkTypeERF        = 197
	LinkTypeInfiniBand = 247
)

// Network-layer protocols, as EtherTypes.
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeIPv6   = 0x86dd
	EtherTypeRoCEv1 = 0x8915
	EtherTypeVLAN   = 0x8100 // 802.1Q customer tag
	EtherTypeQinQ   = 0x88a8 // 802.1ad service tag
	EtherTypeQinQ1  = 0x9100 // pre-standard double tag
	// ProtoInfiniBand (below 0x0600, so no EtherType) says the network
	// layer is a native InfiniBand packet starting with its LRH; it is
	// wire.ProtoInfiniBand.
	ProtoInfiniBand = 0x001B
)

// Network finds the network layer inside a link-layer frame.
// It returns the EtherType-like protocol (0x0800 IPv4, 0x86DD IPv6, 0x8915
// RoCEv1, or other), the offset of the network header in data, and the
// 802.1Q VLAN IDs crossed (through NetworkVLAN; Network itself discards
// them so as not to allocate).
//
// Where the network layer is IPv4 or IPv6 carrying a mirror or overlay
// tunnel (GRE with ERSPAN I/II/III, Ethernet or IP; VXLAN), Network
// returns the packet inside it (tunnel.go): the headers a mirrored
// packet's sender wrote, not the mirror path's.
//
// Proto 0 means the link header names no EtherType: an 802.3 frame with an
// LLC header that is not SNAP (off is then the LLC header), a Linux cooked
// frame with a non-EtherType protocol, or a loopback frame of an unknown
// address family.
//
// Errors wrap ErrUnsupportedLinkType (the caller may skip and count such
// frames; see LinkTypeSupported to test without calling), ErrShortFrame
// (the frame ends before the network header begins) or ErrBadFrame. On
// success 0 <= off < len(data).
func Network(linkType uint32, data []byte) (proto uint16, off int, err error) {
	proto, off, _, err = network(linkType, data, nil, false)
	return proto, off, err
}

// Tunnelled reports whether the frame's network layer is the inner packet
// of a tunnel (Network looked through GRE, ERSPAN or VXLAN to find it):
// then the mirror, not only the capture's snaplen, may have cut the packet
// short without the frame's original length saying so.
func Tunnelled(linkType uint32, data []byte) bool {
	_, outer, _, err := link(linkType, data, nil, false)
	if err != nil {
		return false
	}
	_, off, _, err := network(linkType, data, nil, false)
	return err == nil && off != outer
}

// NetworkVLAN is Network that also appends the VLAN IDs (the 12-bit VID of
// each 802.1Q/802.1ad tag, outermost first) to vlans and returns the
// extended slice; pass a reused slice with room to avoid allocations.
func NetworkVLAN(linkType uint32, data []byte, vlans []uint16) (proto uint16, off int, vids []uint16, err error) {
	return network(linkType, data, vlans, true)
}

// LinkTypeSupported reports whether Network understands the link type.
func LinkTypeSupported(linkType uint32) bool {
	switch linkType {
	case LinkTypeNull, LinkTypeEthernet, LinkTypeRaw12, LinkTypeRaw14, LinkTypeRaw,
		LinkTypeLoop, LinkTypeLinuxSLL, LinkTypeIPv4, LinkTypeIPv6, LinkTypeIPoIB,
		LinkTypeLinuxSLL2, LinkTypeERF, LinkTypeInfiniBand:
		return true
	}
	return false
}

var linkTypeNames = map[uint32]string{
	LinkTypeNull:      "NULL",
	LinkTypeEthernet:  "ETHERNET",
	LinkTypeRaw12:     "RAW",
	LinkTypeRaw14:     "RAW",
	LinkTypeRaw:       "RAW",
	LinkTypeLoop:      "LOOP",
	LinkTypeLinuxSLL:  "LINUX_SLL",
	LinkTypeIPv4:      "IPV4",
	LinkTypeIPv6:      "IPV6",
	LinkTypeIPoIB:     "IPOIB",
	LinkTypeLinuxSLL2: "LINUX_SLL2",
	105:               "IEEE802_11",
	127:               "IEEE802_11_RADIOTAP",
	197:               "ERF",
	247:               "INFINIBAND",
	252:               "WIRESHARK_UPPER_PDU",
}

// LinkTypeName returns the name of a link type without its LINKTYPE_
// prefix ("ETHERNET", "ERF", ...), or "LINKTYPE_<n>" for one it does not
// know.
func LinkTypeName(linkType uint32) string {
	if s, ok := linkTypeNames[linkType]; ok {
		return s
	}
	return fmt.Sprintf("LINKTYPE_%d", linkType)
}

func network(linkType uint32, data []byte, vlans []uint16, collect bool) (proto uint16, off int, vids []uint16, err error) {
	proto, off, vids, err = link(linkType, data, vlans, collect)
	if err == nil && (proto == EtherTypeIPv4 || proto == EtherTypeIPv6) {
		proto, off, vids = untunnel(data, proto, off, vids, collect)
	}
	return proto, off, vids, err
}

// link finds the network layer inside the link-layer frame (the outer
// one, for a tunnel).
func link(linkType uint32, data []byte, vlans []uint16, collect bool) (proto uint16, off int, vids []uint16, err error) {
	vids = vlans
	switch linkType {
	case LinkTypeEthernet:
		return etherChain(linkType, data, 12, true, vids, collect)
	case LinkTypeLinuxSLL:
		if len(data) < 16 {
			return 0, 0, vids, short(linkType, data, 16)
		}
		return etherChain(linkType, data, 14, false, vids, collect)
	case LinkTypeLinuxSLL2:
		if len(data) < 20 {
			return 0, 0, vids, short(linkType, data, 20)
		}
		proto = be16(data)
		off = 20
		if isVLAN(proto) {
			// The tag follows the SLL2 header as in Ethernet: TCI,
			// then the next type. Reuse the chain with the type moved.
			return sll2VLAN(linkType, data, vids, collect)
		}
	case LinkTypeRaw, LinkTypeRaw12, LinkTypeRaw14:
		if len(data) < 1 {
			return 0, 0, vids, short(linkType, data, 1)
		}
		switch data[0] >> 4 {
		case 4:
			proto = EtherTypeIPv4
		case 6:
			proto = EtherTypeIPv6
		default:
			return 0, 0, vids, fmt.Errorf("link type %d: raw IP version %d: %w", linkType, data[0]>>4, ErrBadFrame)
		}
	case LinkTypeIPv4:
		proto = EtherTypeIPv4
	case LinkTypeIPv6:
		proto = EtherTypeIPv6
	case LinkTypeNull, LinkTypeLoop:
		if len(data) < 4 {
			return 0, 0, vids, short(linkType, data, 4)
		}
		var family uint32
		if linkType == LinkTypeLoop {
			family = bigEndian.u32(data)
		} else if family = littleEndian.u32(data); family&0xffff == 0 {
			family = bigEndian.u32(data)
		}
		switch family {
		case 2: // AF_INET
			proto = EtherTypeIPv4
		case 24, 28, 30: // AF_INET6 on NetBSD/OpenBSD, FreeBSD, Darwin
			proto = EtherTypeIPv6
		}
		off = 4
	case LinkTypeERF:
		return erf(data, vids, collect)
	case LinkTypeInfiniBand:
		proto = ProtoInfiniBand
	case LinkTypeIPoIB:
		if len(data) < 4 {
			return 0, 0, vids, short(linkType, data, 4)
		}
		proto, off = be16(data), 4
	default:
		return 0, 0, vids, fmt.Errorf("link type %d (%s): %w", linkType, LinkTypeName(linkType), ErrUnsupportedLinkType)
	}
	if off >= len(data) {
		return 0, 0, vids, short(linkType, data, off+1)
	}
	return proto, off, vids, nil
}

// etherChain reads the EtherType at typeOff and follows VLAN tags. For
// Ethernet (llc set) a type below 0x0600 is an 802.3 length: an LLC SNAP
// header then gives the EtherType.
func etherChain(linkType uint32, data []byte, typeOff int, llc bool, vids []uint16, collect bool) (uint16, int, []uint16, error) {
	for {
		if len(data) < typeOff+2 {
			return 0, 0, vids, short(linkType, data, typeOff+2)
		}
		t := be16(data[typeOff:])
		off := typeOff + 2
		if isVLAN(t) {
			if len(data) < off+4 {
				return 0, 0, vids, short(linkType, data, off+4)
			}
			if collect {
				vids = append(vids, be16(data[off:])&0x0fff)
			}
			typeOff = off + 2
			continue
		}
		if t < 0x0600 {
			t = 0
			if llc && len(data) >= off+8 && data[off] == 0xaa && data[off+1] == 0xaa && data[off+2] == 0x03 {
				t = be16(data[off+6:])
				off += 8
			}
		}
		if off >= len(data) {
			return 0, 0, vids, short(linkType, data, off+1)
		}
		return t, off, vids, nil
	}
}

// sll2VLAN follows VLAN tags after an SLL2 header, whose protocol field is
// at its start rather than its end.
func sll2VLAN(linkType uint32, data []byte, vids []uint16, collect bool) (uint16, int, []uint16, error) {
	// Tag n (n >= 0) holds TCI at 20+4n and the next type at 22+4n.
	if len(data) < 24 {
		return 0, 0, vids, short(linkType, data, 24)
	}
	if collect {
		vids = append(vids, be16(data[20:])&0x0fff)
	}
	return etherChain(linkType, data, 22, false, vids, collect)
}

func isVLAN(t uint16) bool {
	return t == EtherTypeVLAN || t == EtherTypeQinQ || t == EtherTypeQinQ1
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

func short(linkType uint32, data []byte, need int) error {
	return fmt.Errorf("link type %d: frame of %d bytes, need at least %d: %w", linkType, len(data), need, ErrShortFrame)
}
