package capture

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNetwork(t *testing.T) {
	v4 := ipv4Packet(4)
	v6 := ipv6Packet(4)
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	sll := func(proto uint16) []byte {
		return []byte{0, 4, 0, 1, 0, 6, 0x52, 0x54, 0, 0, 0, 2, 0, 0, byte(proto >> 8), byte(proto)}
	}
	sll2 := func(proto uint16) []byte {
		return []byte{byte(proto >> 8), byte(proto), 0, 0, 0, 0, 0, 2, 0, 1, 4, 6, 0x52, 0x54, 0, 0, 0, 2, 0, 0}
	}
	for _, tc := range []struct {
		name     string
		linkType uint32
		data     []byte
		proto    uint16
		off      int
		vlans    []uint16
		err      error
	}{
		{"ethernet ipv4", 1, etherFrame(EtherTypeIPv4, v4), 0x0800, 14, nil, nil},
		{"ethernet ipv6", 1, etherFrame(EtherTypeIPv6, v6), 0x86dd, 14, nil, nil},
		{"ethernet rocev1", 1, etherFrame(EtherTypeRoCEv1, make([]byte, 40)), 0x8915, 14, nil, nil},
		{"ethernet arp", 1, etherFrame(0x0806, make([]byte, 28)), 0x0806, 14, nil, nil},
		{"ethernet 802.1q", 1, etherFrame(EtherTypeIPv4, v4, 0x8100, 100), 0x0800, 18, []uint16{100}, nil},
		{"ethernet 802.1q pcp dei", 1, etherFrame(EtherTypeIPv6, v6, 0x8100, 0xf000|4094), 0x86dd, 18, []uint16{4094}, nil},
		{"ethernet 802.1ad double", 1, etherFrame(EtherTypeIPv4, v4, 0x88a8, 10, 0x8100, 20), 0x0800, 22, []uint16{10, 20}, nil},
		{"ethernet 0x9100 triple", 1, etherFrame(EtherTypeRoCEv1, v6, 0x9100, 1, 0x88a8, 2, 0x8100, 3), 0x8915, 26, []uint16{1, 2, 3}, nil},
		{"ethernet llc snap", 1, etherFrame(uint16(8+len(v4)), cat([]byte{0xaa, 0xaa, 3, 0, 0, 0, 8, 0}, v4)), 0x0800, 22, nil, nil},
		{"ethernet llc stp", 1, etherFrame(38, cat([]byte{0x42, 0x42, 3}, make([]byte, 35))), 0, 14, nil, nil},
		{"ethernet empty", 1, nil, 0, 0, nil, ErrShortFrame},
		{"ethernet 13 bytes", 1, etherFrame(EtherTypeIPv4, nil)[:13], 0, 0, nil, ErrShortFrame},
		{"ethernet header only", 1, etherFrame(EtherTypeIPv4, nil), 0, 0, nil, ErrShortFrame},
		{"ethernet vlan cut", 1, etherFrame(EtherTypeIPv4, nil, 0x8100, 5)[:16], 0, 0, nil, ErrShortFrame},
		{"ethernet vlan cut before type", 1, etherFrame(EtherTypeIPv4, nil, 0x8100, 5)[:17], 0, 0, nil, ErrShortFrame},
		{"ethernet double vlan no payload", 1, etherFrame(EtherTypeIPv4, nil, 0x88a8, 5, 0x8100, 6), 0, 0, nil, ErrShortFrame},
		{"sll ipv4", 113, cat(sll(0x0800), v4), 0x0800, 16, nil, nil},
		{"sll ipv6", 113, cat(sll(0x86dd), v6), 0x86dd, 16, nil, nil},
		{"sll vlan", 113, cat(sll(0x8100), []byte{0, 42, 0x08, 0}, v4), 0x0800, 20, []uint16{42}, nil},
		{"sll llc", 113, cat(sll(0x0004), []byte{0x42, 0x42, 3}), 0, 16, nil, nil},
		{"sll short", 113, sll(0x0800)[:15], 0, 0, nil, ErrShortFrame},
		{"sll header only", 113, sll(0x0800), 0, 0, nil, ErrShortFrame},
		{"sll2 ipv4", 276, cat(sll2(0x0800), v4), 0x0800, 20, nil, nil},
		{"sll2 rocev1", 276, cat(sll2(0x8915), v6), 0x8915, 20, nil, nil},
		{"sll2 double vlan", 276, cat(sll2(0x88a8), []byte{0, 7, 0x81, 0, 0, 8, 0x86, 0xdd}, v6), 0x86dd, 28, []uint16{7, 8}, nil},
		{"sll2 vlan cut", 276, cat(sll2(0x8100), []byte{0, 7}), 0, 0, nil, ErrShortFrame},
		{"sll2 short", 276, sll2(0x0800)[:19], 0, 0, nil, ErrShortFrame},
		{"raw ipv4", 101, v4, 0x0800, 0, nil, nil},
		{"raw ipv6", 101, v6, 0x86dd, 0, nil, nil},
		{"raw 12 ipv4", 12, v4, 0x0800, 0, nil, nil},
		{"raw 14 ipv6", 14, v6, 0x86dd, 0, nil, nil},
		{"raw version 5", 101, []byte{0x50, 0, 0, 0}, 0, 0, nil, ErrBadFrame},
		{"raw empty", 101, nil, 0, 0, nil, ErrShortFrame},
		{"ipv4", 228, v4, 0x0800, 0, nil, nil},
		{"ipv6", 229, v6, 0x86dd, 0, nil, nil},
		{"ipv4 empty", 228, []byte{}, 0, 0, nil, ErrShortFrame},
		{"null inet little endian", 0, cat([]byte{2, 0, 0, 0}, v4), 0x0800, 4, nil, nil},
		{"null inet big endian", 0, cat([]byte{0, 0, 0, 2}, v4), 0x0800, 4, nil, nil},
		{"null inet6 netbsd", 0, cat([]byte{24, 0, 0, 0}, v6), 0x86dd, 4, nil, nil},
		{"null inet6 freebsd", 0, cat([]byte{0, 0, 0, 28}, v6), 0x86dd, 4, nil, nil},
		{"null inet6 darwin", 0, cat([]byte{30, 0, 0, 0}, v6), 0x86dd, 4, nil, nil},
		{"null unknown family", 0, cat([]byte{7, 0, 0, 0}, v6), 0, 4, nil, nil},
		{"null short", 0, []byte{2, 0, 0}, 0, 0, nil, ErrShortFrame},
		{"null no payload", 0, []byte{2, 0, 0, 0}, 0, 0, nil, ErrShortFrame},
		{"loop inet", 108, cat([]byte{0, 0, 0, 2}, v4), 0x0800, 4, nil, nil},
		{"loop inet6", 108, cat([]byte{0, 0, 0, 24}, v6), 0x86dd, 4, nil, nil},
		{"ipoib", 242, cat([]byte{0x86, 0xdd, 0, 0}, v6), 0x86dd, 4, nil, nil},
		{"ipoib short", 242, []byte{0x08, 0}, 0, 0, nil, ErrShortFrame},
		{"erf record type 0", 197, make([]byte, 100), 0, 16, nil, nil},
		{"erf infiniband", 197, cat(erfHeader(21), lrh), ProtoInfiniBand, 16, nil, nil},
		{"erf infiniband, two extension headers", 197, cat(erfHeader(21|0x80), []byte{0x81, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0}, lrh), ProtoInfiniBand, 32, nil, nil},
		{"erf extension header cut", 197, cat(erfHeader(21|0x80), []byte{0x81, 0, 0}), 0, 0, nil, ErrShortFrame},
		{"erf ethernet", 197, cat(erfHeader(2), []byte{0, 0}, etherFrame(EtherTypeIPv4, v4)), 0x0800, 32, nil, nil},
		{"erf ethernet vlan", 197, cat(erfHeader(2), []byte{0, 0}, etherFrame(EtherTypeIPv4, v4, 0x8100, 7)), 0x0800, 36, []uint16{7}, nil},
		{"erf coloured ethernet", 197, cat(erfHeader(11), []byte{0, 0}, etherFrame(EtherTypeIPv4, v4)), 0x0800, 32, nil, nil},
		{"erf coloured hdlc pos", 197, cat(erfHeader(10), []byte{0, 0}, etherFrame(EtherTypeIPv4, v4)), 0, 16, nil, nil},
		{"erf ipv4", 197, cat(erfHeader(22), v4), 0x0800, 16, nil, nil},
		{"erf ipv6", 197, cat(erfHeader(23), v6), 0x86dd, 16, nil, nil},
		{"erf infiniband link record", 197, cat(erfHeader(25), lrh), 0, 16, nil, nil},
		{"erf header only", 197, erfHeader(21), 0, 0, nil, ErrShortFrame},
		{"erf short", 197, make([]byte, 15), 0, 0, nil, ErrShortFrame},
		{"infiniband", 247, lrh, ProtoInfiniBand, 0, nil, nil},
		{"infiniband empty", 247, nil, 0, 0, nil, ErrShortFrame},
		{"unknown", 0xffff, nil, 0, 0, nil, ErrUnsupportedLinkType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto, off, err := Network(tc.linkType, tc.data)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("Network: err = %v, want %v", err, tc.err)
			}
			if err != nil {
				if proto != 0 || off != 0 {
					t.Errorf("Network: error %v with proto %#x, off %d", err, proto, off)
				}
				return
			}
			if proto != tc.proto || off != tc.off {
				t.Errorf("Network = %#04x, %d; want %#04x, %d", proto, off, tc.proto, tc.off)
			}
			buf := make([]uint16, 1, 8)
			buf[0] = 9999
			proto2, off2, vlans, err := NetworkVLAN(tc.linkType, tc.data, buf)
			if err != nil || proto2 != proto || off2 != off {
				t.Fatalf("NetworkVLAN = %#x, %d, %v", proto2, off2, err)
			}
			if !slices.Equal(vlans[1:], tc.vlans) || vlans[0] != 9999 {
				t.Errorf("NetworkVLAN vlans = %v, want %v after 9999", vlans, tc.vlans)
			}
			if !LinkTypeSupported(tc.linkType) {
				t.Errorf("LinkTypeSupported(%d) = false", tc.linkType)
			}
		})
	}
}

// lrh is the start of a native InfiniBand packet (an LRH: VL 0, LNH 2,
// DLID 12, 10 words, SLID 18).
var lrh = []byte{0x00, 0x02, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x12}

// erfHeader returns an ERF record header of the given record type (the
// top bit: an extension header follows); the other fields do not matter
// to Network.
func erfHeader(typ byte) []byte {
	h := make([]byte, 16)
	h[8] = typ
	h[9] = 0x04 // varying record length
	return h
}

func TestNetworkErrors(t *testing.T) {
	_, _, err := Network(197, erfHeader(21))
	if want := "link type 197: frame of 16 bytes, need at least 17: capture: frame too short"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if !LinkTypeSupported(197) || !LinkTypeSupported(247) {
		t.Error("ERF or INFINIBAND not supported")
	}
	if LinkTypeSupported(105) {
		t.Error("LinkTypeSupported(105)")
	}
	_, _, err = Network(1, make([]byte, 10))
	if err == nil || !strings.Contains(err.Error(), "frame of 10 bytes, need at least 14") {
		t.Errorf("err = %v", err)
	}
	if got := LinkTypeName(1); got != "ETHERNET" {
		t.Errorf("LinkTypeName(1) = %q", got)
	}
	if got := LinkTypeName(4242); got != "LINKTYPE_4242" {
		t.Errorf("LinkTypeName(4242) = %q", got)
	}
}

func TestNetworkNoAlloc(t *testing.T) {
	frame := etherFrame(EtherTypeIPv4, ipv4Packet(10), 0x88a8, 1, 0x8100, 2)
	buf := make([]uint16, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		Network(1, frame)
		NetworkVLAN(1, frame, buf[:0])
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
