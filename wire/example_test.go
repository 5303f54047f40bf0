package wire_test

import (
	"fmt"
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/rcconform/rcconform/wire"
)

// Build a RoCEv2 SEND Only frame, then decode it and check its ICRC.
func Example() {
	out := wire.Frame{
		DstMAC:  [6]byte{0x52, 0x54, 0x00, 0x00, 0x00, 0x01},
		SrcMAC:  [6]byte{0x52, 0x54, 0x00, 0x00, 0x00, 0x02},
		Encap:   wire.RoCEv2IPv4,
		Src:     netip.MustParseAddr("10.0.0.2"),
		Dst:     netip.MustParseAddr("10.0.0.1"),
		TTL:     64,
		DF:      true,
		SrcPort: 0xC011,
		Packet: wire.Packet{
			BTH: wire.BTH{
				Opcode: wire.SendOnly,
				PKey:   0xFFFF,
				DestQP: 0x11,
				AckReq: true,
				PSN:    wire.PSN(0xFFFFFF),
			},
			Payload: []byte("hello"), // 5 bytes: 3 bytes of pad follow
		},
	}
	frame := out.AppendEthernet(nil) // lengths, IPv4 checksum, pad and ICRC filled in

	var in wire.Frame // reuse it: decoding allocates nothing
	if err := in.DecodeEthernet(frame); err != nil {
		fmt.Println("decode:", err)
		return
	}
	fmt.Println(len(frame), "bytes,", in.Encap, in.Src, "->", in.Dst)
	fmt.Println(&in.Packet)
	fmt.Printf("pad %d, payload %q, ICRC %v\n", in.PadCnt, in.Payload, in.CheckICRC())
	fmt.Println("next PSN", in.PSN.Next(), "is after", in.PSN.Next().After(in.PSN))
	// Output:
	// 66 bytes, RoCEv2/IPv4 10.0.0.2 -> 10.0.0.1
	// SEND O qp=0x000011 psn=16777215 A len=5
	// pad 3, payload "hello", ICRC ok
	// next PSN 0 is after true
}

// Build the same frame from gopacket layers, and decode it with a
// DecodingLayerParser.
func ExampleSerializeFrame() {
	// Once in a program: UDP port 4791 carries RoCE (what the UDP layer
	// tells the parser comes next).
	layers.RegisterUDPPortLayerType(layers.UDPPort(wire.UDPPort), wire.LayerTypeBTH)

	eth := &layers.Ethernet{
		SrcMAC:       []byte{0x52, 0x54, 0x00, 0x00, 0x00, 0x02},
		DstMAC:       []byte{0x52, 0x54, 0x00, 0x00, 0x00, 0x01},
		EthernetType: layers.EthernetTypeIPv4,
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
		SrcIP: []byte{10, 0, 0, 2}, DstIP: []byte{10, 0, 0, 1}}
	udp := &layers.UDP{SrcPort: 0xC011, DstPort: wire.UDPPort}
	roce := &wire.RoCE{Packet: wire.Packet{
		BTH:     wire.BTH{Opcode: wire.SendOnly, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 0xFFFFFF},
		Payload: []byte("hello"),
	}}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true}
	if err := wire.SerializeFrame(buf, opts, eth, ip, udp, roce); err != nil {
		fmt.Println(err)
		return
	}

	var (
		eth2  layers.Ethernet
		ip4   layers.IPv4
		ip6   layers.IPv6
		udp2  layers.UDP
		roce2 wire.RoCE
		pl    gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth2, &ip4, &ip6, &udp2, &roce2, &pl)
	decoded := make([]gopacket.LayerType, 0, 8)
	if err := parser.DecodeLayers(buf.Bytes(), &decoded); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(decoded)
	fmt.Println(&roce2.Packet, roce2.VerifyICRC(&ip4, &udp2), roce2.ICRC == roce.ICRC)
	// Output:
	// [Ethernet IPv4 UDP BTH Payload]
	// SEND O qp=0x000011 psn=16777215 A len=5 ok true
}
