package reference

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rcconform/rcconform/wire"
)

// pair is two reference QPs back to back: A on side A of the link, B on B.
type pair struct {
	clock *Clock
	link  *Link
	a, b  *QP
}

func pairConfigs() (Config, Config) {
	a := DefaultConfig()
	b := DefaultConfig()
	b.QPN, b.RemoteQPN = a.RemoteQPN, a.QPN
	b.LocalMAC, b.RemoteMAC = a.RemoteMAC, a.LocalMAC
	b.LocalIP, b.RemoteIP = a.RemoteIP, a.LocalIP
	b.UDPSrcPort = 0xC012
	a.SendPSN, b.ExpectedPSN = 1000, 1000
	b.SendPSN, a.ExpectedPSN = 5000, 5000
	return a, b
}

func newPair(t testing.TB, latency time.Duration, seed int64, mod func(a, b *Config)) *pair {
	t.Helper()
	ca, cb := pairConfigs()
	if mod != nil {
		mod(&ca, &cb)
	}
	p := &pair{clock: NewClock()}
	p.link = NewLink(p.clock, latency, seed)
	var err error
	if p.a, err = NewQP(p.clock, ca, p.link.SendA); err != nil {
		t.Fatal(err)
	}
	if p.b, err = NewQP(p.clock, cb, p.link.SendB); err != nil {
		t.Fatal(err)
	}
	p.link.Connect(p.a.Receive, p.b.Receive)
	return p
}

// peer is a scripted end: a QP on side A of a link, and the test on side
// B reading what the QP sends and sending crafted packets.
type peer struct {
	t     testing.TB
	clock *Clock
	link  *Link
	qp    *QP
	got   []*wire.Packet
	times []time.Duration
	frame wire.Frame
	ipid  uint16
	mr    *MR
}

func newPeer(t testing.TB, mod func(c *Config)) *peer {
	t.Helper()
	c := DefaultConfig()
	c.ExpectedPSN, c.SendPSN = 100, 7000
	if mod != nil {
		mod(&c)
	}
	p := &peer{t: t, clock: NewClock()}
	p.link = NewLink(p.clock, time.Microsecond, 1)
	var err error
	if p.qp, err = NewQP(p.clock, c, p.link.SendA); err != nil {
		t.Fatal(err)
	}
	var dec wire.Frame
	p.link.Connect(p.qp.Receive, func(b []byte) {
		if err := dec.DecodeEthernet(b); err != nil {
			t.Errorf("the QP sent an undecodable frame: %v", err)
			return
		}
		if dec.CheckICRC() != wire.ICRCOK {
			t.Errorf("the QP sent a bad ICRC")
		}
		if c.Defect == "" {
			checkFormat(t, &dec.Packet, c.SRQ != nil)
		}
		p.got = append(p.got, dec.Packet.Clone())
		p.times = append(p.times, p.clock.Now())
	})
	p.frame = wire.Frame{DstMAC: c.LocalMAC, SrcMAC: c.RemoteMAC, Encap: wire.RoCEv2IPv4,
		Src: c.RemoteIP, Dst: c.LocalIP, TTL: 64, SrcPort: 0xC123, DstPort: wire.UDPPort}
	if !c.LocalIP.Is4() {
		p.frame.Encap = wire.RoCEv2IPv6
	}
	p.mr = p.qp.Memory().Register(0x10000, 1<<16, AllRemote)
	return p
}

func (p *peer) send(pk wire.Packet) {
	pk.DestQP = p.qp.cfg.QPN
	pk.PKey = 0xFFFF
	f := p.frame
	p.ipid++
	f.IPID = p.ipid
	f.Packet = pk
	p.link.SendB(f.AppendEthernet(nil))
}

// run lets d pass and returns the packets the QP sent meanwhile.
func (p *peer) run(d time.Duration) []*wire.Packet {
	n := len(p.got)
	p.clock.RunUntil(p.clock.Now() + d)
	return p.got[n:]
}

func (p *peer) settle() []*wire.Packet { return p.run(100 * time.Microsecond) }

// Packet builders.
func pkt(op wire.Opcode, psn wire.PSN, ackReq bool, payload []byte) wire.Packet {
	return wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn, AckReq: ackReq}, Payload: payload}
}

func sendOnly(psn wire.PSN, ackReq bool) wire.Packet {
	return pkt(wire.SendOnly, psn, ackReq, []byte("data"))
}

func (p *peer) read(psn wire.PSN, off uint64, n uint32) wire.Packet {
	pk := pkt(wire.ReadRequest, psn, true, nil)
	pk.RETH = wire.RETH{VA: p.mr.VA + off, RKey: p.mr.RKey, Length: n}
	return pk
}

func (p *peer) write(op wire.Opcode, psn wire.PSN, ackReq bool, off uint64, total int, payload []byte) wire.Packet {
	pk := pkt(op, psn, ackReq, payload)
	pk.RETH = wire.RETH{VA: p.mr.VA + off, RKey: p.mr.RKey, Length: uint32(total)}
	return pk
}

func (p *peer) atomic(op wire.Opcode, psn wire.PSN, off uint64, swapAdd, compare uint64) wire.Packet {
	pk := pkt(op, psn, true, nil)
	pk.Atomic = wire.AtomicETH{VA: p.mr.VA + off, RKey: p.mr.RKey, SwapAdd: swapAdd, Compare: compare}
	return pk
}

func ack(psn wire.PSN, msn uint32) wire.Packet {
	pk := pkt(wire.Acknowledge, psn, false, nil)
	pk.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: msn}
	return pk
}

func nak(psn wire.PSN, syn uint8) wire.Packet {
	pk := pkt(wire.Acknowledge, psn, false, nil)
	pk.AETH = wire.AETH{Syndrome: syn}
	return pk
}

func buf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// want describes an expected packet; zero fields other than Op are
// checked only when their check flag is set.
type want struct {
	op     wire.Opcode
	psn    wire.PSN
	syn    int // -1: do not check
	msn    int // -1: do not check
	paylen int // -1: do not check
}

// anyACK as a want's syn accepts any ACK syndrome (any credit code).
const anyACK = -2

func ackW(psn wire.PSN, msn int) want { return w(wire.Acknowledge, psn, anyACK, msn) }
func nakW(psn wire.PSN, code uint8, msn int) want {
	return w(wire.Acknowledge, psn, int(wire.SynNAK(code)), msn)
}

func w(op wire.Opcode, psn wire.PSN, syn, msn int) want {
	return want{op: op, psn: psn, syn: syn, msn: msn, paylen: -1}
}

func expect(t testing.TB, got []*wire.Packet, ws ...want) {
	t.Helper()
	if len(got) != len(ws) {
		t.Errorf("got %d packets, want %d:", len(got), len(ws))
		for _, g := range got {
			t.Errorf("  got  %v", g)
		}
		for _, x := range ws {
			t.Errorf("  want %v psn=%d syn=%#x msn=%d", x.op.ShortName(), x.psn, x.syn, x.msn)
		}
		return
	}
	for i, x := range ws {
		g := got[i]
		ok := g.Opcode == x.op && g.PSN == x.psn
		if x.syn >= 0 && (!g.Opcode.Has(wire.HdrAETH) || int(g.AETH.Syndrome) != x.syn) {
			ok = false
		}
		if x.syn == anyACK && (!g.Opcode.Has(wire.HdrAETH) || !g.AETH.IsACK()) {
			ok = false
		}
		if x.msn >= 0 && (!g.Opcode.Has(wire.HdrAETH) || int(g.AETH.MSN) != x.msn) {
			ok = false
		}
		if x.paylen >= 0 && len(g.Payload) != x.paylen {
			ok = false
		}
		if !ok {
			t.Errorf("packet %d: got %v, want %v psn=%d syn=%#x msn=%d", i, g, x.op.ShortName(), x.psn, x.syn, x.msn)
		}
	}
}

// dump logs every frame that entered the link.
func dump(t testing.TB, l *Link) {
	t.Helper()
	var f wire.Frame
	for i, c := range l.Frames() {
		if err := f.DecodeEthernet(c.Data); err != nil {
			t.Logf("#%d %v %s: %v", i+1, c.Time, c.From, err)
			continue
		}
		t.Logf("#%d %10v %s→ %v", i+1, c.Time, c.From, &f.Packet)
	}
}

// checkFormat checks what every response of a defect-free QP must
// satisfy: syndrome bit 7 clear, never the reserved kind, NAK codes 0–3
// (§9.7.5.2), NAK syndromes only in Acknowledge packets (C9-113.a1), and
// credits valid without an SRQ (C9-150.2.1) and 0x1F with one (o9-95.2.2).
func checkFormat(t testing.TB, p *wire.Packet, srq bool) {
	t.Helper()
	if !p.Opcode.Has(wire.HdrAETH) {
		return
	}
	a := p.AETH
	switch {
	case a.ReservedBit():
		t.Errorf("%v: syndrome bit 7 set", p)
	case a.Kind() == wire.KindReserved:
		t.Errorf("%v: reserved syndrome kind", p)
	case a.Kind() == wire.KindNAK && a.Value() > 3:
		t.Errorf("%v: reserved NAK code", p)
	case a.Kind() != wire.KindACK && p.Opcode != wire.Acknowledge:
		t.Errorf("%v: a NAK outside an Acknowledge packet", p)
	case a.Kind() == wire.KindACK && srq && a.Value() != wire.CreditInvalid:
		t.Errorf("%v: credits on an SRQ QP", p)
	case a.Kind() == wire.KindACK && !srq && a.Value() == wire.CreditInvalid:
		t.Errorf("%v: no valid credits on a QP without SRQ", p)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
