package udpframe

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"net/netip"
	"testing"

	"github.com/rcconform/rcconform/wire"
)

var (
	src4 = netip.MustParseAddrPort("192.0.2.1:4791")
	dst4 = netip.MustParseAddrPort("192.0.2.2:4791")
	src6 = netip.MustParseAddrPort("[2001:db8::1]:4791")
	dst6 = netip.MustParseAddrPort("[2001:db8::2]:4791")
)

func samplePacket(n int) *wire.Packet {
	p := &wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, PKey: 0xFFFF, DestQP: 0x123456, PSN: 77, AckReq: true},
		RETH: wire.RETH{VA: 0x7f0000001000, RKey: 0xabcd, Length: uint32(n)}}
	p.Payload = make([]byte, n)
	for i := range p.Payload {
		p.Payload[i] = byte(i * 7)
	}
	return p
}

// decode decodes a network packet and checks its ICRC.
func decode(t *testing.T, network []byte) *Parsed {
	t.Helper()
	var p Parsed
	if err := Parse(network, &p); err != nil {
		t.Fatalf("decoding the rebuilt packet: %v", err)
	}
	return &p
}

func TestPayloadRebuildRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src, dst netip.AddrPort
	}{{"IPv4", src4, dst4}, {"IPv6", src6, dst6}} {
		for _, n := range []int{0, 1, 3, 100, 1024} {
			p := samplePacket(n)
			pl := Payload(p, tc.src, tc.dst, 0)
			net, fit, err := Rebuild(nil, tc.src, tc.dst, pl)
			if err != nil {
				t.Fatalf("%s %d: %v", tc.name, n, err)
			}
			if !fit.OK || fit.Solved || fit.IPID != 0 {
				t.Errorf("%s %d: fit %+v, want OK with IP ID 0 not solved", tc.name, n, fit)
			}
			f := decode(t, net)
			if f.ICRC != wire.ICRCOK {
				t.Errorf("%s %d: the rebuilt packet's ICRC is %v", tc.name, n, f.ICRC)
			}
			if f.Packet.DestQP != p.DestQP || f.Packet.PSN != p.PSN || !bytes.Equal(f.Packet.Payload, p.Payload) || f.Src != tc.src {
				t.Errorf("%s %d: decoded %v from %v, want %v", tc.name, n, &f.Packet, f.Src, p)
			}
		}
	}
}

// TestRebuildSolvesIPID: a device that numbers its packets (as rxe and
// most NICs do) is verified all the same: the IP ID and DF come out of
// the ICRC.
func TestRebuildSolvesIPID(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		ipid := uint16(rng.Intn(1 << 16))
		df := rng.Intn(4) != 0
		p := samplePacket(rng.Intn(300))
		f := wire.Frame{Encap: wire.RoCEv2IPv4, Src: src4.Addr(), Dst: dst4.Addr(), TTL: 17, TOS: 0x60,
			IPID: ipid, DF: df, SrcPort: 0xC001, DstPort: 4791, Packet: *p}
		net := f.AppendNetwork(nil)
		pl := net[28:]
		from := netip.AddrPortFrom(src4.Addr(), 0xC001)
		got, fit, err := Rebuild(nil, from, dst4, pl)
		if err != nil {
			t.Fatal(err)
		}
		if !fit.OK || fit.IPID != ipid || fit.DF != df {
			t.Fatalf("IP ID %d DF %v: fit %+v", ipid, df, fit)
		}
		if fit.Solved != (ipid != 0 || !df) {
			t.Errorf("IP ID %d DF %v: Solved %v", ipid, df, fit.Solved)
		}
		g := decode(t, got)
		if g.ICRC != wire.ICRCOK || g.IPID != ipid || g.DF != df {
			t.Fatalf("IP ID %d DF %v: rebuilt header has IP ID %d DF %v ICRC %v", ipid, df, g.IPID, g.DF, g.ICRC)
		}
	}
}

func TestRebuildRejectsBadICRC(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	accepted := 0
	const n = 2000
	for i := 0; i < n; i++ {
		p := samplePacket(64)
		pl := Payload(p, src4, dst4, uint16(rng.Intn(1<<16)))
		at := rng.Intn(len(pl))
		if at == 4 {
			continue // BTH byte 4 (FECN, BECN, resv6) is masked: not covered
		}
		pl[at] ^= byte(1 + rng.Intn(255))
		_, fit, err := Rebuild(nil, src4, dst4, pl)
		if err != nil {
			t.Fatal(err)
		}
		if fit.OK {
			accepted++
		}
	}
	// 17 unknown bits of 32: about one corrupt packet in 32768 fits.
	if accepted > 2 {
		t.Errorf("%d of %d corrupt packets accepted", accepted, n)
	}
	pl := Payload(samplePacket(8), src6, dst6, 0)
	pl[20] ^= 1
	if _, fit, _ := Rebuild(nil, src6, dst6, pl); fit.OK {
		t.Error("a corrupt IPv6 packet was accepted")
	}
	if _, _, err := Rebuild(nil, src4, dst4, make([]byte, 10)); err == nil {
		t.Error("a 10-byte datagram was rebuilt")
	}
}

func TestRewrite(t *testing.T) {
	p := samplePacket(40)
	f := wire.Frame{Encap: wire.RoCEv2IPv4, Src: src4.Addr(), Dst: dst4.Addr(), TTL: 64, IPID: 999, DF: true,
		SrcPort: 0xC011, DstPort: 4791, Packet: *p}
	net := f.AppendNetwork(nil)
	from := netip.MustParseAddrPort("192.0.2.1:5000")
	to := netip.MustParseAddrPort("192.0.2.2:6000")
	pl, err := Rewrite(net, from, to)
	if err != nil {
		t.Fatal(err)
	}
	got, fit, _ := Rebuild(nil, from, to, pl)
	if !fit.OK || fit.Solved {
		t.Fatalf("rewritten packet: fit %+v, want OK with IP ID 0", fit)
	}
	if g := decode(t, got); g.Packet.DestQP != p.DestQP || !bytes.Equal(g.Packet.Payload, p.Payload) || g.Dst != to {
		t.Errorf("rewritten packet decodes as %v", &g.Packet)
	}
	// A corrupt ICRC stays corrupt by the same difference.
	bad := append([]byte(nil), net...)
	bad[len(bad)-2] ^= 0x40
	pl, err = Rewrite(bad, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if _, fit, _ := Rebuild(nil, from, to, pl); fit.OK {
		t.Fatal("a corrupt ICRC was repaired by the rewrite")
	}
	good := Payload(p, from, to, 0)
	if d := binary.LittleEndian.Uint32(pl[len(pl)-4:]) ^ binary.LittleEndian.Uint32(good[len(good)-4:]); d != 0x40<<16 {
		t.Errorf("the corruption changed: ICRC differs by 0x%08x", d)
	}
}

func BenchmarkRebuildSolve(b *testing.B) {
	p := samplePacket(1024)
	pl := Payload(p, src4, dst4, 4242)
	buf := make([]byte, 0, 2048)
	for i := 0; i < b.N; i++ {
		_, fit, _ := Rebuild(buf[:0], src4, dst4, pl)
		if !fit.OK {
			b.Fatal("no fit")
		}
	}
}
