package capture

// Endace ERF records (LINKTYPE_ERF): each frame of the capture is one ERF
// record, a 16-byte header (timestamp, record type, flags, record length,
// loss counter, wire length; all but the timestamp big-endian), extension headers of 8 bytes each while the
// type's top bit (then each extension's) says another follows, and the
// packet. Record types read here: InfiniBand (native packets from their
// LRH, as ibdump writes them), Ethernet (after 2 bytes of padding), IPv4
// and IPv6. Records of other types (an InfiniBand link-layer record, which
// has no transport; ATM, HDLC, ...) are reported with protocol 0, like any
// frame naming no network protocol: the link type is supported, the record
// carries nothing rcconform reads.
const (
	erfHeaderLen = 16
	erfExtLen    = 8

	erfTypeEth         = 2
	erfTypeColorEth    = 11
	erfTypeDSMColorEth = 16
	erfTypeColorHash   = 20 // COLOR_HASH_ETH
	erfTypeInfiniBand  = 21
	erfTypeIPv4        = 22
	erfTypeIPv6        = 23

	// The other coloured types: like COLOR_ETH, DSM_COLOR_ETH and
	// COLOR_HASH_ETH they carry a colour where the others have their
	// loss counter (counters.go).
	erfTypeColorHDLCPoS    = 10
	erfTypeDSMColorHDLCPoS = 15
	erfTypeColorMCHDLCPoS  = 17
	erfTypeColorHashPoS    = 19
)

// erf finds the network layer of one ERF record.
func erf(data []byte, vids []uint16, collect bool) (uint16, int, []uint16, error) {
	if len(data) < erfHeaderLen {
		return 0, 0, vids, short(LinkTypeERF, data, erfHeaderLen)
	}
	typ := data[8]
	off := erfHeaderLen
	for more := typ&0x80 != 0; more; off += erfExtLen {
		if len(data) < off+erfExtLen {
			return 0, 0, vids, short(LinkTypeERF, data, off+erfExtLen)
		}
		more = data[off]&0x80 != 0
	}
	var proto uint16
	switch t := typ & 0x7F; t {
	case erfTypeInfiniBand:
		proto = ProtoInfiniBand
	case erfTypeIPv4:
		proto = EtherTypeIPv4
	case erfTypeIPv6:
		proto = EtherTypeIPv6
	case erfTypeEth, erfTypeColorEth, erfTypeDSMColorEth, erfTypeColorHash:
		// Two bytes of offset and padding, then the Ethernet header.
		return etherChain(LinkTypeERF, data, off+2+12, true, vids, collect)
	default:
		proto = 0
	}
	if off >= len(data) {
		return 0, 0, vids, short(LinkTypeERF, data, off+1)
	}
	return proto, off, vids, nil
}
