package trace

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/rcconform/rcconform/wire"
)

// TestAppendFrame: a record's frame decodes back to its packet,
// addresses, IPv4 Identification and UDP source port, with a right ICRC,
// or a wrong one where the record's was bad; IPv6 addresses give IPv6.
func TestAppendFrame(t *testing.T) {
	pkt := &wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PKey: 0xffff, DestQP: 0x12, PSN: 77, AckReq: true}, Payload: []byte("payload")}
	for _, tc := range []struct {
		name     string
		src, dst string
		icrc     wire.ICRCStatus
		encap    wire.Encap
	}{
		{"IPv4", "10.0.0.1", "10.0.0.2", wire.ICRCOK, wire.RoCEv2IPv4},
		{"IPv4, ICRC bad", "10.0.0.1", "10.0.0.2", wire.ICRCBad, wire.RoCEv2IPv4},
		{"IPv6", "fd00::1", "fd00::2", wire.ICRCOK, wire.RoCEv2IPv6},
	} {
		r := &Record{Src: netip.MustParseAddr(tc.src), Dst: netip.MustParseAddr(tc.dst), IPID: 4321, HasIPID: true,
			SrcPort: 0xc0de, ICRC: tc.icrc, Packet: pkt, PayloadLen: len(pkt.Payload)}
		var f wire.Frame
		if err := f.DecodeEthernet(r.AppendFrame(nil)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(f.Packet.AppendTransport(nil), pkt.AppendTransport(nil)) || f.Src != r.Src || f.Dst != r.Dst || f.SrcPort != r.SrcPort || f.Encap != tc.encap {
			t.Errorf("%s: decoded %v %v>%v port %#x %v, want %v %v>%v", tc.name, &f.Packet, f.Src, f.Dst, f.SrcPort, f.Encap, pkt, r.Src, r.Dst)
		}
		if tc.encap == wire.RoCEv2IPv4 && f.IPID != r.IPID {
			t.Errorf("%s: IPv4 Identification %d, want %d", tc.name, f.IPID, r.IPID)
		}
		want := wire.ICRCOK
		if tc.icrc == wire.ICRCBad {
			want = wire.ICRCBad
		}
		if got := f.CheckICRC(); got != want {
			t.Errorf("%s: ICRC %v, want %v", tc.name, got, want)
		}
	}
}
