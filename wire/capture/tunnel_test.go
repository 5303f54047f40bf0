package capture

import (
	"encoding/binary"
	"slices"
	"testing"
)

// outerIPv4 wraps payload in an IPv4 header with protocol proto (frag:
// the flags and fragment offset field).
func outerIPv4(proto byte, frag uint16, payload []byte) []byte {
	b := []byte{0x45, 0, 0, 0, 0x12, 0x34, 0, 0, 63, proto, 0, 0, 192, 168, 9, 1, 192, 168, 9, 2}
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(payload)))
	binary.BigEndian.PutUint16(b[6:], frag)
	return append(b, payload...)
}

// outerIPv6 wraps payload in an IPv6 header with next header proto.
func outerIPv6(proto byte, payload []byte) []byte {
	b := make([]byte, 40, 40+len(payload))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6], b[7] = proto, 64
	return append(b, payload...)
}

// greHeader is a GRE header (version 0) with the flags given and the
// optional fields they call for, carrying proto.
func greHeader(flags, proto uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, flags)
	b = binary.BigEndian.AppendUint16(b, proto)
	for _, bit := range []uint16{0x8000, 0x2000, 0x1000} {
		if flags&bit != 0 {
			b = append(b, 0xa, 0xb, 0xc, 0xd)
		}
	}
	return b
}

// erspan2 is an ERSPAN type II header (version 1, VLAN 77, session 5).
var erspan2 = []byte{0x10, 77, 0x00, 0x05, 0, 0, 0, 9}

// erspan3 is an ERSPAN type III header with frame type ft and, with o, the
// O bit and an 8-byte platform-specific subheader.
func erspan3(ft byte, o bool) []byte {
	b := []byte{0x20, 77, 0x00, 0x05, 1, 2, 3, 4, 0, 0, ft << 2, 0}
	if o {
		b[11] |= 1
		b = append(b, 1, 2, 3, 4, 5, 6, 7, 8)
	}
	return b
}

// vxlan is a VXLAN UDP header and VXLAN header (VNI 42) before payload.
func vxlan(flags byte, payload []byte) []byte {
	b := []byte{0xd0, 0x00, 0x12, 0xb5, 0, 0, 0, 0, flags, 0, 0, 0, 0, 0, 42, 0}
	binary.BigEndian.PutUint16(b[4:], uint16(16+len(payload)))
	return append(b, payload...)
}

func TestTunnels(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	v4, v6 := ipv4Packet(4), ipv6Packet(4)
	inner := etherFrame(EtherTypeIPv4, v4)
	tagged := etherFrame(EtherTypeIPv6, v6, 0x8100, 300)
	mirror := func(tunnel []byte) []byte { return etherFrame(EtherTypeIPv4, outerIPv4(ipProtoGRE, 0, tunnel)) }
	const o = 14 + 20 // outer Ethernet and IPv4 headers
	for _, tc := range []struct {
		name  string
		data  []byte
		proto uint16
		off   int
		vlans []uint16
	}{
		{"erspan type I", mirror(cat(greHeader(0, 0x88be), inner)), 0x0800, o + 4 + 14, nil},
		{"erspan type II", mirror(cat(greHeader(0x1000, 0x88be), erspan2, inner)), 0x0800, o + 8 + 8 + 14, nil},
		{"erspan type II, inner vlan", mirror(cat(greHeader(0x1000, 0x88be), erspan2, tagged)), 0x86dd, o + 8 + 8 + 18, []uint16{300}},
		{"erspan type II, gre key and checksum", mirror(cat(greHeader(0xb000, 0x88be), erspan2, inner)), 0x0800, o + 16 + 8 + 14, nil},
		{"erspan type III", mirror(cat(greHeader(0x1000, 0x22eb), erspan3(0, false), inner)), 0x0800, o + 8 + 12 + 14, nil},
		{"erspan type III, platform subheader", mirror(cat(greHeader(0x1000, 0x22eb), erspan3(0, true), inner)), 0x0800, o + 8 + 20 + 14, nil},
		{"erspan type III, ip frame", mirror(cat(greHeader(0x1000, 0x22eb), erspan3(2, false), v6)), 0x86dd, o + 8 + 12, nil},
		{"gre teb", mirror(cat(greHeader(0x2000, 0x6558), inner)), 0x0800, o + 8 + 14, nil},
		{"gre ip", mirror(cat(greHeader(0, 0x0800), v4)), 0x0800, o + 4, nil},
		{"gre over ipv6", etherFrame(EtherTypeIPv6, outerIPv6(ipProtoGRE, cat(greHeader(0x1000, 0x88be), erspan2, inner))), 0x0800, 14 + 40 + 8 + 8 + 14, nil},
		{"vxlan", etherFrame(EtherTypeIPv4, outerIPv4(ipProtoUDP, 0, vxlan(0x08, inner))), 0x0800, o + 16 + 14, nil},
		{"vxlan in erspan", mirror(cat(greHeader(0x1000, 0x88be), erspan2, etherFrame(EtherTypeIPv4, outerIPv4(ipProtoUDP, 0, vxlan(0x08, tagged))))), 0x86dd, o + 16 + 14 + 20 + 16 + 18, []uint16{300}},
		// Not a tunnel that can be read: the outer packet, as is.
		{"plain rocev2", etherFrame(EtherTypeIPv4, v4), 0x0800, 14, nil},
		{"outer fragment", etherFrame(EtherTypeIPv4, outerIPv4(ipProtoGRE, 0x2000, cat(greHeader(0, 0x88be), inner))), 0x0800, 14, nil},
		{"gre version 1", mirror(cat(greHeader(0x0001, 0x88be), inner)), 0x0800, 14, nil},
		{"gre routing", mirror(cat(greHeader(0x4000, 0x88be), inner)), 0x0800, 14, nil},
		{"gre other protocol", mirror(cat(greHeader(0, 0x880b), inner)), 0x0800, 14, nil},
		{"erspan type II, wrong version", mirror(cat(greHeader(0x1000, 0x88be), []byte{0x20, 0, 0, 0, 0, 0, 0, 0}, inner)), 0x0800, 14, nil},
		{"erspan type II cut", mirror(cat(greHeader(0x1000, 0x88be), erspan2[:5])), 0x0800, 14, nil},
		{"erspan type III, unknown frame type", mirror(cat(greHeader(0x1000, 0x22eb), erspan3(1, false), inner)), 0x0800, 14, nil},
		{"erspan inner ethernet cut", mirror(cat(greHeader(0x1000, 0x88be), erspan2, inner[:13])), 0x0800, 14, nil},
		{"gre cut", mirror([]byte{0x10, 0}), 0x0800, 14, nil},
		{"vxlan without I flag", etherFrame(EtherTypeIPv4, outerIPv4(ipProtoUDP, 0, vxlan(0, inner))), 0x0800, 14, nil},
		{"udp to another port", etherFrame(EtherTypeIPv4, outerIPv4(ipProtoUDP, 0, append([]byte{0, 1, 0, 2, 0, 8, 0, 0}, inner...))), 0x0800, 14, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto, off, err := Network(LinkTypeEthernet, tc.data)
			if err != nil || proto != tc.proto || off != tc.off {
				t.Fatalf("Network = %#04x, %d, %v; want %#04x, %d", proto, off, err, tc.proto, tc.off)
			}
			if got, want := Tunnelled(LinkTypeEthernet, tc.data), off != 14; got != want {
				t.Errorf("Tunnelled = %v, want %v", got, want)
			}
			_, _, vlans, err := NetworkVLAN(LinkTypeEthernet, tc.data, nil)
			if err != nil || !slices.Equal(vlans, tc.vlans) {
				t.Errorf("NetworkVLAN vlans = %v, %v; want %v", vlans, err, tc.vlans)
			}
		})
	}
	// The same through another link type: raw IP.
	raw := outerIPv4(ipProtoGRE, 0, cat(greHeader(0x1000, 0x88be), erspan2, inner))
	if proto, off, err := Network(LinkTypeRaw, raw); err != nil || proto != 0x0800 || off != 20+16+14 {
		t.Errorf("raw IP: Network = %#04x, %d, %v", proto, off, err)
	}
}

func TestTunnelNoAlloc(t *testing.T) {
	frame := etherFrame(EtherTypeIPv4, outerIPv4(ipProtoGRE, 0, slices.Concat(greHeader(0x1000, 0x22eb), erspan3(0, true), etherFrame(EtherTypeIPv4, ipv4Packet(10)))))
	allocs := testing.AllocsPerRun(100, func() { Network(LinkTypeEthernet, frame) })
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
