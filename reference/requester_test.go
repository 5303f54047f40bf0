package reference

import (
	"bytes"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

const s0 = wire.PSN(7000) // the peer QP's first send PSN

func reqPeer(t *testing.T, mod func(c *Config)) *peer {
	return newPeer(t, func(c *Config) {
		c.Timeout = 8 // 1.048576 ms
		c.RetryCnt, c.RNRRetry = 3, 3
		if mod != nil {
			mod(c)
		}
	})
}

func wantStatus(t *testing.T, q *QP, st ...dut.Status) []dut.Completion {
	t.Helper()
	cs := q.PollCQ()
	if len(cs) != len(st) {
		t.Fatalf("completions %+v, want statuses %v", cs, st)
	}
	for i := range st {
		if cs[i].Status != st[i] {
			t.Errorf("completion %d: %+v, want %v", i, cs[i], st[i])
		}
	}
	return cs
}

func TestRequesterSegmentation(t *testing.T) {
	p := reqPeer(t, func(c *Config) { c.AckReqEvery = 2 })
	data := buf(3*1024+3, 1)
	p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSendImm, Data: data, Imm: 0xabcd})
	p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpWrite, Data: buf(1024, 2), RemoteVA: 0x100, RKey: 5})
	p.qp.PostSend(dut.WR{ID: 3, Op: dut.OpRead, Length: 2500, RemoteVA: 0x200, RKey: 6})
	p.qp.PostSend(dut.WR{ID: 4, Op: dut.OpFetchAdd, CompareAdd: 9, RemoteVA: 0x300, RKey: 7})
	p.qp.PostSend(dut.WR{ID: 5, Op: dut.OpCmpSwap, CompareAdd: 1, Swap: 2, RemoteVA: 0x308, RKey: 7})
	p.qp.PostSend(dut.WR{ID: 6, Op: dut.OpSendInv, Data: nil, RKey: 0x77})
	p.qp.PostSend(dut.WR{ID: 7, Op: dut.OpWriteImm, Data: buf(2000, 3), RemoteVA: 0x400, RKey: 5, Imm: 1})
	got := p.settle()
	expect(t, got,
		w(wire.SendFirst, s0, -1, -1), w(wire.SendMiddle, s0+1, -1, -1), w(wire.SendMiddle, s0+2, -1, -1), w(wire.SendLastImm, s0+3, -1, -1),
		w(wire.WriteOnly, s0+4, -1, -1), w(wire.ReadRequest, s0+5, -1, -1), w(wire.FetchAdd, s0+8, -1, -1),
		w(wire.CompareSwap, s0+9, -1, -1), w(wire.SendOnlyInvalidate, s0+10, -1, -1),
		w(wire.WriteFirst, s0+11, -1, -1), w(wire.WriteLastImm, s0+12, -1, -1))
	if t.Failed() {
		return
	}
	ackReq := []bool{false, true, false, true, true, true, true, true, true, false, true}
	for i, g := range got {
		if g.AckReq != ackReq[i] {
			t.Errorf("packet %d (%v): AckReq %v, want %v", i, g, g.AckReq, ackReq[i])
		}
	}
	if !bytes.Equal(append(append(append(got[0].Payload, got[1].Payload...), got[2].Payload...), got[3].Payload...), data) || got[3].Imm != 0xabcd {
		t.Errorf("SEND segments do not rebuild the data")
	}
	if r := got[4].RETH; r.VA != 0x100 || r.RKey != 5 || r.Length != 1024 {
		t.Errorf("WRITE RETH %+v", r)
	}
	if r := got[5].RETH; r.VA != 0x200 || r.RKey != 6 || r.Length != 2500 {
		t.Errorf("READ RETH %+v", r)
	}
	if a := got[6].Atomic; a.VA != 0x300 || a.SwapAdd != 9 || a.RKey != 7 {
		t.Errorf("FetchAdd %+v", a)
	}
	if a := got[7].Atomic; a.Compare != 1 || a.SwapAdd != 2 {
		t.Errorf("CmpSwap %+v", a)
	}
	if got[8].IETH != 0x77 {
		t.Errorf("IETH %#x", got[8].IETH)
	}
	if r := got[9].RETH; r.Length != 2000 || got[10].Imm != 1 {
		t.Errorf("WRITE with immediate %+v imm %d", r, got[10].Imm)
	}
}

func TestRequesterCoalescedACK(t *testing.T) {
	p := reqPeer(t, nil)
	for i := 0; i < 4; i++ {
		p.qp.PostSend(dut.WR{ID: uint64(i), Op: dut.OpSend, Data: buf(10, 0)})
	}
	p.settle()
	p.send(ack(s0+2, 3))
	p.settle()
	wantStatus(t, p.qp, dut.StatusSuccess, dut.StatusSuccess, dut.StatusSuccess)
	p.send(ack(s0+1, 2)) // ghost: behind
	p.send(ack(s0+3, 4))
	p.settle()
	wantStatus(t, p.qp, dut.StatusSuccess)
	if s := p.qp.Stats(); s.GhostResponses != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestRequesterACKTimer(t *testing.T) {
	T := wire.AckTimeout(8)
	t.Run("re-armed on partial ACK, disarmed when all acknowledged (C9-140)", func(t *testing.T) {
		p := reqPeer(t, nil)
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(10, 0)})
		p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(10, 0)})
		p.run(T / 2)
		p.send(ack(s0, 1))
		got := p.run(T/2 + 10*time.Microsecond)
		expect(t, got) // the timer restarted at the ACK
		got = p.run(T / 2)
		expect(t, got, w(wire.SendOnly, s0+1, -1, -1))
		if d := p.times[2] - (T/2 + 2*time.Microsecond); d < T || d > T+time.Microsecond {
			t.Errorf("retransmitted %v after the partial ACK arrived, want %v", d, T)
		}
		p.send(ack(s0+1, 2))
		got = p.run(10 * T)
		expect(t, got)
		if s := p.qp.Stats(); s.Timeouts != 1 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("timeout 0 means no timer (C9-140)", func(t *testing.T) {
		p := reqPeer(t, func(c *Config) { c.Timeout = 0 })
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(10, 0)})
		got := p.run(10 * time.Second)
		expect(t, got, w(wire.SendOnly, s0, -1, -1))
		if p.clock.Pending() != 0 {
			t.Errorf("%d events pending", p.clock.Pending())
		}
	})
}

func TestRequesterGoBackN(t *testing.T) {
	t.Run("sequence NAK: implicit ACK before it, resend from it with the same PSNs", func(t *testing.T) {
		p := reqPeer(t, nil)
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(10, 0)})
		p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(4*1024, 0)})
		p.qp.PostSend(dut.WR{ID: 3, Op: dut.OpSend, Data: buf(10, 0)})
		expect(t, p.settle(), w(wire.SendOnly, s0, -1, -1), w(wire.SendFirst, s0+1, -1, -1), w(wire.SendMiddle, s0+2, -1, -1),
			w(wire.SendMiddle, s0+3, -1, -1), w(wire.SendLast, s0+4, -1, -1), w(wire.SendOnly, s0+5, -1, -1))
		p.send(nak(s0+3, wire.SynNAK(wire.NAKPSNSequence)))
		got := p.settle()
		expect(t, got, w(wire.SendMiddle, s0+3, -1, -1), w(wire.SendLast, s0+4, -1, -1), w(wire.SendOnly, s0+5, -1, -1))
		if !bytes.Equal(got[0].Payload, buf(4*1024, 0)[2048:3072]) {
			t.Errorf("resumed packet carries the wrong bytes")
		}
		wantStatus(t, p.qp, dut.StatusSuccess)
		if s := p.qp.Stats(); s.Retries != 1 || s.Retransmits != 3 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("timeout: resend from the oldest unacknowledged, a partly received READ only for its missing part", func(t *testing.T) {
		p := reqPeer(t, nil)
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpRead, Length: 4 * 1024, RemoteVA: 0x1000, RKey: 3})
		p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(10, 0)})
		expect(t, p.settle(), w(wire.ReadRequest, s0, -1, -1), w(wire.SendOnly, s0+4, -1, -1))
		rsp := func(op wire.Opcode, psn wire.PSN, n byte) wire.Packet {
			x := pkt(op, psn, false, buf(1024, n))
			x.AETH = wire.AETH{Syndrome: 0x1F}
			return x
		}
		p.send(rsp(wire.ReadResponseFirst, s0, 1))
		p.send(rsp(wire.ReadResponseMiddle, s0+1, 2))
		got := p.run(wire.AckTimeout(8) + 10*time.Microsecond)
		expect(t, got, w(wire.ReadRequest, s0+2, -1, -1), w(wire.SendOnly, s0+4, -1, -1))
		if r := got[0].RETH; r.VA != 0x1000+2048 || r.Length != 2048 || r.RKey != 3 {
			t.Errorf("re-requested RETH %+v, want the missing 2 KiB", r)
		}
		p.send(rsp(wire.ReadResponseMiddle, s0+1, 2)) // ghost
		p.send(rsp(wire.ReadResponseFirst, s0+2, 3))
		p.send(rsp(wire.ReadResponseLast, s0+3, 4))
		p.send(ack(s0+4, 2))
		p.settle()
		wantStatus(t, p.qp, dut.StatusSuccess, dut.StatusSuccess)
		want := append(append(append(buf(1024, 1), buf(1024, 2)...), buf(1024, 3)...), buf(1024, 4)...)
		if !bytes.Equal(p.qp.Result(1), want) {
			t.Errorf("READ data differs")
		}
	})
	t.Run("implied NAK: an ACK past an outstanding READ re-issues it (§9.7.5.1.2)", func(t *testing.T) {
		p := reqPeer(t, nil)
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpWrite, Data: buf(10, 0), RemoteVA: 8, RKey: 1})
		p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpRead, Length: 8, RemoteVA: 8, RKey: 1})
		p.qp.PostSend(dut.WR{ID: 3, Op: dut.OpSend, Data: buf(10, 0)})
		p.settle()
		p.send(ack(s0+2, 3))
		got := p.settle()
		expect(t, got, w(wire.ReadRequest, s0+1, -1, -1), w(wire.SendOnly, s0+2, -1, -1))
		wantStatus(t, p.qp, dut.StatusSuccess)
		if s := p.qp.Stats(); s.Retries != 1 || s.ImpliedNAKs != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

// TestImpliedNAKEchoes: while a go-back-N is under way without progress,
// more acknowledgments past the re-issued READ are echoes of packets sent
// before it and are not acted on; after progress an implied NAK is again.
func TestImpliedNAKEchoes(t *testing.T) {
	p := reqPeer(t, nil)
	p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpRead, Length: 8, RemoteVA: 8, RKey: 1})
	p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(8, 0)})
	p.qp.PostSend(dut.WR{ID: 3, Op: dut.OpRead, Length: 8, RemoteVA: 8, RKey: 1})
	p.qp.PostSend(dut.WR{ID: 4, Op: dut.OpSend, Data: buf(8, 0)})
	all := []want{w(wire.ReadRequest, s0, -1, -1), w(wire.SendOnly, s0+1, -1, -1), w(wire.ReadRequest, s0+2, -1, -1), w(wire.SendOnly, s0+3, -1, -1)}
	expect(t, p.settle(), all...)
	p.send(ack(s0+1, 2))
	expect(t, p.settle(), all...)
	p.send(ack(s0+1, 2)) // an echo
	p.send(ack(s0+3, 4)) // another
	expect(t, p.settle())
	if s := p.qp.Stats(); s.Retries != 1 || s.ImpliedNAKs != 3 {
		t.Errorf("after the echoes: %+v", s)
	}
	r := pkt(wire.ReadResponseOnly, s0, false, buf(8, 1))
	r.AETH.Syndrome = 0x1F
	p.send(r)            // progress
	p.send(ack(s0+3, 4)) // passes the second READ: acted on
	expect(t, p.settle(), w(wire.ReadRequest, s0+2, -1, -1), w(wire.SendOnly, s0+3, -1, -1))
	if s := p.qp.Stats(); s.Retries != 2 {
		t.Errorf("after a new implied NAK: %+v", s)
	}
	wantStatus(t, p.qp, dut.StatusSuccess, dut.StatusSuccess)
}

func TestRequesterRNR(t *testing.T) {
	t.Run("resend from the NAKed PSN after the delay, on the RNR timer", func(t *testing.T) {
		p := reqPeer(t, nil)
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(10, 0)})
		p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(10, 0)})
		p.settle()
		p.send(nak(s0+1, wire.SynRNR(16))) // 2.56 ms
		got := p.run(wire.RNRDelay(16) - 10*time.Microsecond)
		expect(t, got)
		got = p.run(time.Millisecond)
		expect(t, got, w(wire.SendOnly, s0+1, -1, -1))
		wantStatus(t, p.qp, dut.StatusSuccess)
		if s := p.qp.Stats(); s.RNRRetries != 1 || s.Retries != 0 || s.Timeouts != 0 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("RNR retry 7 is infinite", func(t *testing.T) {
		p := reqPeer(t, func(c *Config) { c.RNRRetry = 7 })
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(10, 0)})
		p.settle()
		for i := 0; i < 20; i++ {
			p.send(nak(s0, wire.SynRNR(1)))
			expect(t, p.settle(), w(wire.SendOnly, s0, -1, -1))
		}
		if p.qp.State() != dut.StateRTS || p.qp.Stats().RNRRetries != 20 {
			t.Errorf("state %v stats %+v", p.qp.State(), p.qp.Stats())
		}
	})
	t.Run("progress reloads both counters", func(t *testing.T) {
		p := reqPeer(t, func(c *Config) { c.RNRRetry = 1 })
		for i := 0; i < 3; i++ {
			p.qp.PostSend(dut.WR{ID: uint64(i), Op: dut.OpSend, Data: buf(10, 0)})
		}
		p.settle()
		p.send(nak(s0, wire.SynRNR(1)))
		p.settle()
		p.send(ack(s0, 1))
		p.send(nak(s0+1, wire.SynRNR(1)))
		p.settle()
		p.send(ack(s0+1, 2))
		p.send(nak(s0+2, wire.SynRNR(1)))
		p.settle()
		p.send(ack(s0+2, 3))
		p.settle()
		wantStatus(t, p.qp, dut.StatusSuccess, dut.StatusSuccess, dut.StatusSuccess)
	})
}

func TestRequesterFatalNAKs(t *testing.T) {
	for _, c := range []struct {
		syn uint8
		st  dut.Status
	}{
		{wire.SynNAK(wire.NAKInvalidRequest), dut.StatusRemoteInvalidRequest},
		{wire.SynNAK(wire.NAKRemoteAccess), dut.StatusRemoteAccessError},
		{wire.SynNAK(wire.NAKRemoteOp), dut.StatusRemoteOperationalError},
		{wire.SynNAK(9), dut.StatusRemoteOperationalError},
		{0x40, dut.StatusRemoteOperationalError},
	} {
		t.Run(wire.SyndromeString(c.syn), func(t *testing.T) {
			p := reqPeer(t, nil)
			p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(10, 0)})
			p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(10, 0)})
			p.qp.PostSend(dut.WR{ID: 3, Op: dut.OpSend, Data: buf(10, 0)})
			p.settle()
			p.send(nak(s0+1, c.syn))
			expect(t, p.run(10*time.Millisecond))
			wantStatus(t, p.qp, dut.StatusSuccess, c.st, dut.StatusFlushed)
			if s := p.qp.Stats(); s.Retries != 0 || s.RNRRetries != 0 || p.qp.State() != dut.StateError {
				t.Errorf("stats %+v state %v", s, p.qp.State())
			}
		})
	}
}

func TestRequesterInitiatorDepth(t *testing.T) {
	p := reqPeer(t, func(c *Config) { c.MaxRdAtomic = 2 })
	for i := 0; i < 3; i++ {
		p.qp.PostSend(dut.WR{ID: uint64(i), Op: dut.OpRead, Length: 4, RemoteVA: 8, RKey: 1})
	}
	expect(t, p.settle(), w(wire.ReadRequest, s0, -1, -1), w(wire.ReadRequest, s0+1, -1, -1))
	r := pkt(wire.ReadResponseOnly, s0, false, []byte("abcd"))
	r.AETH.Syndrome = 0x1F
	p.send(r)
	expect(t, p.settle(), w(wire.ReadRequest, s0+2, -1, -1))
	if !bytes.Equal(p.qp.Result(0), []byte("abcd")) {
		t.Errorf("READ result %q", p.qp.Result(0))
	}
}

func TestRequesterAtomicResult(t *testing.T) {
	p := reqPeer(t, nil)
	local := p.qp.Memory().Register(0x9000, 64, LocalWrite)
	if err := p.qp.PostSendLocal(dut.WR{ID: 1, Op: dut.OpFetchAdd, CompareAdd: 1, RemoteVA: 8, RKey: 1}, 0x9008); err != nil {
		t.Fatal(err)
	}
	p.settle()
	a := pkt(wire.AtomicAcknowledge, s0+1, false, nil) // ghost: no such request
	a.AETH.Syndrome = 0x1F
	p.send(a)
	a.PSN = s0
	a.AtomicAck = 0x0102030405060708
	p.send(a)
	p.settle()
	wantStatus(t, p.qp, dut.StatusSuccess)
	if !bytes.Equal(local.Bytes()[8:16], []byte{8, 7, 6, 5, 4, 3, 2, 1}) {
		t.Errorf("local memory %x", local.Bytes()[8:16])
	}
}

func TestQPStates(t *testing.T) {
	p := reqPeer(t, nil)
	q := p.qp
	if err := q.Modify(dut.StateRTR); err == nil {
		t.Errorf("RTS → RTR allowed")
	}
	if err := q.Modify(dut.StateSQD); err != nil {
		t.Fatal(err)
	}
	q.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: buf(1, 0)})
	expect(t, p.settle())
	if err := q.Modify(dut.StateRTS); err != nil {
		t.Fatal(err)
	}
	expect(t, p.settle(), w(wire.SendOnly, s0, -1, -1))
	for _, st := range []dut.QPState{dut.StateReset, dut.StateInit, dut.StateRTR, dut.StateRTS} {
		if err := q.Modify(st); err != nil {
			t.Fatalf("to %v: %v", st, err)
		}
	}
	if q.NextPSN() != s0 || len(q.PollCQ()) != 0 {
		t.Errorf("RESET kept state")
	}
	q.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(1, 0)})
	q.PostRecv(5, 10)
	q.Modify(dut.StateError)
	q.PostSend(dut.WR{ID: 3, Op: dut.OpSend, Data: buf(1, 0)})
	cs := q.PollCQ()
	if len(cs) != 3 || cs[0].Status != dut.StatusFlushed || cs[1].ID != 5 || !cs[1].Recv || cs[2].ID != 3 {
		t.Errorf("flushed completions %+v", cs)
	}
	expect(t, p.settle())
}

func TestConfigValidate(t *testing.T) {
	bad := []func(c *Config){
		func(c *Config) { c.MTU = 1000 },
		func(c *Config) { c.QPN = 0 },
		func(c *Config) { c.RetryCnt = 8 },
		func(c *Config) { c.Timeout = 32 },
		func(c *Config) { c.Defect = "no-such-defect" },
		func(c *Config) { c.RemoteIP = mustAddr("fd00::1") },
		func(c *Config) { c.AckPolicy, c.AckEveryN = AckEveryN, 0 },
	}
	for i, m := range bad {
		c := DefaultConfig()
		m(&c)
		if _, err := NewQP(NewClock(), c, func([]byte) {}); err == nil {
			t.Errorf("case %d: invalid configuration accepted", i)
		}
	}
}
