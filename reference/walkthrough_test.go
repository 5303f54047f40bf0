package reference

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// TestWalkResponseGeneration replays the 17 steps of the specification's
// Response Generation text packet for packet: SEND 300 and WRITE 301 without
// AckReq, an 8 KiB READ at MTU 4096 (PSNs 302–303, MSN bumped when the READ
// finishes), SEND 304 lost, 305 with AckReq, the sequence NAK, the resend,
// and the final ACK.
func TestWalkResponseGeneration(t *testing.T) {
	p := newPeer(t, func(c *Config) {
		c.ExpectedPSN = 300
		c.MTU = 4096
		c.MSNAtReadEnd = true
	})
	postRecvs(8, 8192)(p)
	copy(p.mr.Bytes(), buf(8192, 3))
	step := func(n string, act func(), wantEPSN wire.PSN, ws ...want) {
		t.Helper()
		act()
		got := p.settle()
		expect(&stepNameT{t, n}, got, ws...)
		if p.qp.ExpectedPSN() != wantEPSN {
			t.Errorf("%s: expected PSN %d, want %d", n, p.qp.ExpectedPSN(), wantEPSN)
		}
	}
	// Steps 1–2: SEND 300, no AckReq: MSN 1, expected PSN 301, nothing sent.
	step("SEND 300", func() { p.send(sendOnly(300, false)) }, 301)
	// Steps 3–4: WRITE 301, no AckReq: MSN 2, expected PSN 302, nothing sent.
	step("WRITE 301", func() { p.send(p.write(wire.WriteOnly, 301, false, 0x1000, 4, []byte("wxyz"))) }, 302)
	// Steps 5–8: the READ: First (AETH, MSN 2) at 302, Last (AETH, MSN 3) at 303.
	step("READ 302", func() { p.send(p.read(302, 0, 8192)) }, 304,
		want{op: wire.ReadResponseFirst, psn: 302, syn: anyACK, msn: 2, paylen: 4096},
		want{op: wire.ReadResponseLast, psn: 303, syn: anyACK, msn: 3, paylen: 4096})
	// Steps 9–12: 304 is lost; 305 with AckReq is a sequence error: one NAK
	// carrying the expected PSN 304 and MSN 3, nothing executed.
	step("SEND 305", func() { p.send(sendOnly(305, true)) }, 304, nakW(304, wire.NAKPSNSequence, 3))
	// Steps 13–14: the resent 304 clears the latch and runs: MSN 4.
	step("resent 304", func() { p.send(sendOnly(304, false)) }, 305)
	// Steps 15–17: 305 with AckReq: one ACK, PSN 305, MSN 5.
	step("SEND 305 again", func() { p.send(sendOnly(305, true)) }, 306, ackW(305, 5))
	if p.qp.MSN() != 5 {
		t.Errorf("MSN %d, want 5", p.qp.MSN())
	}
	if n := len(p.qp.PollCQ()); n != 3 {
		t.Errorf("%d receive completions, want 3 (SENDs 300, 304, 305)", n)
	}
}

type stepNameT struct {
	testing.TB
	name string
}

func (s *stepNameT) Errorf(format string, args ...any) {
	s.TB.Helper()
	s.TB.Errorf("%s: "+format, append([]any{s.name}, args...)...)
}

// TestWalkRetryExhaustion replays the retry walk of the specification's Retry
// and RNR Timeout State Machines text: retry count 2, PSN 1000 lost, the
// timer expires (go-back-N, one retry spent), a sequence NAK arrives (another
// go-back-N, the count reaches zero), the next expiry ends the WQE with
// retry-exceeded and the QP in ERROR, with the RNR count untouched.
func TestWalkRetryExhaustion(t *testing.T) {
	p := newPeer(t, func(c *Config) {
		c.SendPSN = 1000
		c.Timeout = 10
		c.RetryCnt = 2
		c.RNRRetry = 3
	})
	T := wire.AckTimeout(10)
	p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: []byte("walk")})
	got := p.run(T / 2)
	expect(t, got, w(wire.SendOnly, 1000, -1, -1))
	sent := p.times[0]
	// Silence: the timer expires T after the packet left.
	got = p.run(T)
	expect(t, got, w(wire.SendOnly, 1000, -1, -1))
	if at := p.times[1] - sent; at != T {
		t.Errorf("retransmitted %v after the first transmission, want the ACK timeout %v", at, T)
	}
	if s := p.qp.Stats(); s.Retries != 1 || s.Timeouts != 1 {
		t.Errorf("after the timeout: %+v", s)
	}
	// A sequence NAK instead of silence: the same counter.
	p.send(nak(1000, wire.SynNAK(wire.NAKPSNSequence)))
	got = p.run(10 * time.Microsecond)
	expect(t, got, w(wire.SendOnly, 1000, -1, -1))
	if s := p.qp.Stats(); s.Retries != 2 || s.RNRRetries != 0 {
		t.Errorf("after the NAK: %+v", s)
	}
	// Silence again: the count is exhausted.
	got = p.run(2 * T)
	expect(t, got)
	cs := p.qp.PollCQ()
	if len(cs) != 1 || cs[0].Status != dut.StatusRetryExceeded {
		t.Fatalf("completions %+v, want one retry-exceeded", cs)
	}
	if p.qp.State() != dut.StateError {
		t.Errorf("state %v, want ERROR", p.qp.State())
	}
	if p.qp.s.rnrLeft != 3 {
		t.Errorf("RNR retries left %d, want 3: loss never touches them", p.qp.s.rnrLeft)
	}
}

// TestWalkRNR replays the RNR walk: a SEND reaches an empty receive queue,
// comes back as an RNR NAK carrying a delay, the requester waits it out on
// the RNR timer (not the ACK timer), the responder's application posts a
// receive WQE meanwhile, and the same PSN is sent again and completes. One
// RNR retry is spent and no transport retry.
func TestWalkRNR(t *testing.T) {
	const code = 14 // 1.28 ms
	pr := newPair(t, time.Microsecond, 1, func(a, b *Config) {
		a.RetryCnt, a.RNRRetry, a.Timeout = 2, 3, 8
		b.MinRNRTimer = code
	})
	var times []time.Duration
	var psns []wire.PSN
	pr.link.OnTransmit = func(from Side, _ int, frame []byte) {
		var f wire.Frame
		if f.DecodeEthernet(frame) == nil && from == SideA {
			times = append(times, pr.clock.Now())
			psns = append(psns, f.PSN)
		}
	}
	pr.a.PostSend(dut.WR{ID: 7, Op: dut.OpSend, Data: []byte("not ready")})
	pr.clock.RunUntil(100 * time.Microsecond)
	if s := pr.b.Stats(); s.RNRNAKsSent != 1 {
		t.Fatalf("responder stats %+v, want one RNR NAK", s)
	}
	pr.b.PostRecv(1, 64) // the application posts a receive WQE meanwhile
	pr.clock.RunUntil(10 * time.Millisecond)
	if len(times) != 2 || psns[0] != 1000 || psns[1] != 1000 {
		t.Fatalf("requester sent %v at %v, want PSN 1000 twice", psns, times)
	}
	// The RNR NAK left B at 1 µs and arrived at 2 µs; the resend may not
	// leave before 2 µs + the delay.
	if min := 2*time.Microsecond + wire.RNRDelay(code); times[1] < min {
		t.Errorf("resent at %v, before the RNR delay ended at %v", times[1], min)
	}
	cs := pr.a.PollCQ()
	if len(cs) != 1 || cs[0].Status != dut.StatusSuccess {
		t.Errorf("requester completions %+v", cs)
	}
	if rc := pr.b.PollCQ(); len(rc) != 1 || string(pr.b.RecvData(1)) != "not ready" {
		t.Errorf("responder completions %+v", rc)
	}
	if s := pr.a.Stats(); s.RNRRetries != 1 || s.Retries != 0 {
		t.Errorf("requester stats %+v: want 1 RNR retry and no transport retry", s)
	}
}

// TestWalkRNRExhaustion: the receive queue stays empty; each RNR NAK
// spends one RNR retry, and when none is left the WQE ends with
// RNR-retry-exceeded and the QP goes to ERROR, the transport count intact.
func TestWalkRNRExhaustion(t *testing.T) {
	pr := newPair(t, time.Microsecond, 1, func(a, b *Config) {
		a.RetryCnt, a.RNRRetry, a.Timeout = 2, 3, 8
		b.MinRNRTimer = 1
	})
	pr.a.PostSend(dut.WR{ID: 7, Op: dut.OpSend, Data: []byte("never")})
	pr.clock.RunUntil(10 * time.Millisecond)
	cs := pr.a.PollCQ()
	if len(cs) != 1 || cs[0].Status != dut.StatusRNRRetryExceeded {
		t.Fatalf("completions %+v, want RNR retry exceeded", cs)
	}
	if s := pr.a.Stats(); s.RNRRetries != 3 || s.Retries != 0 || s.RequestsSent != 4 {
		t.Errorf("stats %+v: want 3 RNR retries, 4 transmissions, no transport retry", s)
	}
	if pr.a.s.retryLeft != 2 || pr.a.State() != dut.StateError {
		t.Errorf("transport retries left %d (want 2), state %v", pr.a.s.retryLeft, pr.a.State())
	}
	if s := pr.b.Stats(); s.RNRNAKsSent != 4 || pr.b.State() != dut.StateRTS {
		t.Errorf("responder %+v in %v", s, pr.b.State())
	}
}

// TestWalkFatalNAK: a WRITE answered with a remote access NAK is reported
// at once: no wait, no second attempt, both budgets untouched.
func TestWalkFatalNAK(t *testing.T) {
	pr := newPair(t, time.Microsecond, 1, func(a, b *Config) { a.RetryCnt, a.RNRRetry = 2, 3 })
	mr := pr.b.Memory().Register(0x5000, 64, AllRemote)
	pr.a.PostSend(dut.WR{ID: 1, Op: dut.OpWrite, Data: []byte("x"), RemoteVA: 0x5000, RKey: mr.RKey + 1})
	pr.a.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: []byte("y")})
	pr.clock.RunUntil(10 * time.Millisecond)
	cs := pr.a.PollCQ()
	if len(cs) != 2 || cs[0].Status != dut.StatusRemoteAccessError || cs[1].Status != dut.StatusFlushed {
		t.Fatalf("completions %+v", cs)
	}
	s := pr.a.Stats()
	if s.Retries != 0 || s.RNRRetries != 0 || s.Retransmits != 0 || pr.a.s.retryLeft != 2 || pr.a.s.rnrLeft != 3 {
		t.Errorf("budgets touched: %+v", s)
	}
	if pr.a.State() != dut.StateError || pr.b.State() != dut.StateError {
		t.Errorf("states %v %v, want ERROR both", pr.a.State(), pr.b.State())
	}
}
