package wire

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// benchFrames are encoded frames for the benchmarks: a READ response
// First with a 1024-byte payload and an ACK, over IPv4 and IPv6.
func benchFrames() []struct {
	name  string
	frame []byte
} {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte(i)
	}
	mk := func(encap Encap, p Packet) []byte {
		f := &Frame{Encap: encap, TTL: 64, DF: true, SrcPort: 0xC011, DstPort: UDPPort, Packet: p}
		if encap == RoCEv2IPv4 {
			f.Src, f.Dst = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		} else {
			f.Src, f.Dst = netip.MustParseAddr("fe80::5054:ff:fe00:1"), netip.MustParseAddr("fe80::5054:ff:fe00:2")
		}
		return f.AppendEthernet(nil)
	}
	readFirst := Packet{BTH: BTH{Opcode: ReadResponseFirst, PKey: 0xFFFF, DestQP: 0x11, PSN: 1000},
		AETH: AETH{Syndrome: SynACK(CreditInvalid), MSN: 7}, Payload: payload}
	ack := Packet{BTH: BTH{Opcode: Acknowledge, PKey: 0xFFFF, DestQP: 0x11, PSN: 1000},
		AETH: AETH{Syndrome: SynACK(CreditInvalid), MSN: 7}}
	return []struct {
		name  string
		frame []byte
	}{
		{"ReadRespFirst1024/IPv4", mk(RoCEv2IPv4, readFirst)},
		{"ACK/IPv4", mk(RoCEv2IPv4, ack)},
		{"ReadRespFirst1024/IPv6", mk(RoCEv2IPv6, readFirst)},
		{"ACK/IPv6", mk(RoCEv2IPv6, ack)},
	}
}

// BenchmarkDecodeFrame decodes Ethernet through the last extension header.
func BenchmarkDecodeFrame(b *testing.B) {
	for _, bf := range benchFrames() {
		b.Run(bf.name, func(b *testing.B) {
			var f Frame
			b.ReportAllocs()
			b.SetBytes(int64(len(bf.frame)))
			for b.Loop() {
				if err := f.DecodeEthernet(bf.frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeFrameICRC decodes and checks the ICRC.
func BenchmarkDecodeFrameICRC(b *testing.B) {
	for _, bf := range benchFrames() {
		b.Run(bf.name, func(b *testing.B) {
			var f Frame
			b.ReportAllocs()
			b.SetBytes(int64(len(bf.frame)))
			for b.Loop() {
				if err := f.DecodeEthernet(bf.frame); err != nil {
					b.Fatal(err)
				}
				if f.CheckICRC() != ICRCOK {
					b.Fatal("ICRC")
				}
			}
		})
	}
}

// BenchmarkICRC computes the ICRC of IPv4 packets of 64 B, 1 KiB and 4 KiB.
func BenchmarkICRC(b *testing.B) {
	for _, size := range []int{64, 1024, 4096} {
		f := &Frame{Encap: RoCEv2IPv4, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
			Packet: Packet{BTH: BTH{Opcode: SendMiddle}, Payload: make([]byte, size-20-8-BTHLen)}}
		pkt := f.AppendNetwork(nil)
		pkt = pkt[:len(pkt)-ICRCLen]
		if len(pkt) != size {
			b.Fatalf("packet is %d bytes, want %d", len(pkt), size)
		}
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				ComputeICRC(pkt, RoCEv2IPv4)
			}
		})
	}
}

// BenchmarkEncodeFrame encodes into a reused buffer, ICRC included.
func BenchmarkEncodeFrame(b *testing.B) {
	for _, bf := range benchFrames() {
		var f Frame
		if err := f.DecodeEthernet(bf.frame); err != nil {
			b.Fatal(err)
		}
		f.Packet = *f.Packet.Clone()
		b.Run(bf.name, func(b *testing.B) {
			buf := make([]byte, 0, 2048)
			b.ReportAllocs()
			b.SetBytes(int64(len(bf.frame)))
			for b.Loop() {
				buf = f.AppendEthernet(buf[:0])
			}
		})
	}
}

// BenchmarkDecodingLayerParser decodes through gopacket's
// DecodingLayerParser (Ethernet, IPv4/IPv6, UDP, RoCE), without and with
// the ICRC check.
func BenchmarkDecodingLayerParser(b *testing.B) {
	for _, bf := range benchFrames() {
		for _, verify := range []bool{false, true} {
			name := bf.name
			if verify {
				name += "/ICRC"
			}
			b.Run(name, func(b *testing.B) {
				var (
					eth  layers.Ethernet
					ip4  layers.IPv4
					ip6  layers.IPv6
					udp  layers.UDP
					roce RoCE
				)
				parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp, &roce)
				parser.IgnoreUnsupported = true
				decoded := make([]gopacket.LayerType, 0, 8)
				var ip gopacket.Layer = &ip4
				if bf.frame[12] == 0x86 {
					ip = &ip6
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(bf.frame)))
				for b.Loop() {
					if err := parser.DecodeLayers(bf.frame, &decoded); err != nil {
						b.Fatal(err)
					}
					if verify && roce.VerifyICRC(ip, &udp) != ICRCOK {
						b.Fatal("ICRC")
					}
				}
			})
		}
	}
}

// BenchmarkNewPacket is gopacket's allocating decoder, for comparison.
func BenchmarkNewPacket(b *testing.B) {
	bf := benchFrames()[1]
	b.ReportAllocs()
	for b.Loop() {
		pkt := gopacket.NewPacket(bf.frame, layers.LayerTypeEthernet, gopacket.NoCopy)
		if pkt.Layer(LayerTypeBTH) == nil {
			b.Fatal("no BTH")
		}
	}
}
