package dupnak

import (
	"fmt"
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/wire"
)

// Test-only clause keys: the shared judges registered under names no
// catalogue entry uses, so these tests run them alone.
const (
	tNAKPSN   = "test-nak-psn"
	tNAKSeq   = "test-nak-seq"
	tLatch    = "test-latch"
	tDupError = "test-dup-error"
	tOrder    = "test-order"
)

func init() {
	harness.RegisterMonitor(Monitor(tNAKPSN, NewNAKPSN(wire.NAKPSNSequence, wire.NAKInvalidRequest)))
	harness.RegisterMonitor(Monitor(tNAKSeq, NewNAKPSN(wire.NAKPSNSequence)))
	harness.RegisterMonitor(Monitor(tLatch, NewLatch))
	harness.RegisterMonitor(Monitor(tDupError, NewDupError))
	harness.RegisterMonitor(Monitor(tOrder, NewOrder))
}

type want int

const (
	wantPass  want = iota // no violation, at least one checked instance
	wantFail              // at least one violation
	wantQuiet             // no violation (checked or not)
	wantOpen              // no violation, an instance left open
)

func check(t *testing.T, name string, b *TraceBuilder, complete bool, clause string, w want) {
	t.Helper()
	sink := Audit(b.Recs, complete, b.MTU, clause)
	tl := Tally(sink, clause)
	switch w {
	case wantPass:
		if tl.Violations != 0 || tl.Checked == 0 {
			t.Errorf("%s: want pass, got %+v %v", name, tl, sink.Findings)
		}
	case wantFail:
		if tl.Violations == 0 {
			t.Errorf("%s: want a violation, got %+v", name, tl)
		}
	case wantQuiet:
		if tl.Violations != 0 {
			t.Errorf("%s: want no violation, got %+v %v", name, tl, sink.Findings)
		}
	case wantOpen:
		if tl.Violations != 0 || tl.Open == 0 {
			t.Errorf("%s: want open, got %+v %v", name, tl, sink.Findings)
		}
	}
}

func TestNAKPSN(t *testing.T) {
	const e = 1000
	cases := []struct {
		name     string
		build    func(b *TraceBuilder)
		complete bool
		clause   string
		want     want
	}{
		{"sequence NAK with the expected PSN", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Send(e + 2)
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
		}, true, tNAKSeq, wantPass},
		{"the missing PSN arrives before the NAK is seen (capture order)", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Send(e + 2)
			b.Send(e + 1)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
			b.Send(e + 2)
			b.Ack(e+2, 3)
		}, true, tNAKSeq, wantPass},
		{"sequence NAK with the received PSN", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Send(e + 2)
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e+2, 1)
		}, true, tNAKSeq, wantFail},
		{"sequence NAK across the 2^24 wrap", func(b *TraceBuilder) {
			b.Send(0xFFFFFE)
			b.Ack(0xFFFFFE, 1)
			b.Send(0)
			b.NAK(wire.NAKPSNSequence, 0xFFFFFF, 1)
		}, true, tNAKSeq, wantPass},
		{"sequence NAK one past the wrap", func(b *TraceBuilder) {
			b.Send(0xFFFFFE)
			b.Ack(0xFFFFFE, 1)
			b.Send(1)
			b.NAK(wire.NAKPSNSequence, 0, 1)
		}, true, tNAKSeq, wantFail},
		{"invalid request NAK carrying the PSN of an out-of-sequence packet", func(b *TraceBuilder) {
			b.Req(wire.SendFirst, e, false)
			b.Req(wire.SendMiddle, e+1, true)
			b.Ack(e+1, 0)
			b.Req(wire.WriteMiddle, e+3, true)
			b.NAK(wire.NAKInvalidRequest, e+3, 0)
		}, true, tNAKPSN, wantFail},
		{"invalid request NAK carrying the expected PSN", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Req(wire.SendMiddle, e+1, true)
			b.NAK(wire.NAKInvalidRequest, e+1, 1)
		}, true, tNAKPSN, wantPass},
		{"a trace starting out of sequence: the start is unknown", func(b *TraceBuilder) {
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e, 0)
			b.Send(e)
			b.Ack(e, 1)
		}, true, tNAKSeq, wantQuiet},
		{"RNR then sequence NAK at the refused PSN", func(b *TraceBuilder) {
			b.Req(wire.WriteOnly, e, true)
			b.Ack(e, 1)
			b.Send(e + 1)
			b.Send(e + 2)
			b.RNR(e+1, 1)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
		}, true, tNAKSeq, wantPass},
		{"a READ reserves its response PSNs", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Read(e+1, 3*256)
			b.Send(e + 5)
			b.ReadStream(e+1, 3*256, 2)
			b.NAK(wire.NAKPSNSequence, e+4, 2)
		}, true, tNAKSeq, wantPass},
		{"capture: a NAK behind an acknowledged PSN", func(b *TraceBuilder) {
			b.Send(e)
			b.Send(e + 1)
			b.Ack(e+1, 2)
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e, 2)
		}, false, tNAKSeq, wantFail},
		{"capture: a NAK ahead of what the capture shows is undecided", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e+2, 1)
		}, false, tNAKSeq, wantQuiet},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(256)
		tc.build(b)
		check(t, tc.name, b, tc.complete, tc.clause, tc.want)
	}
}

func TestLatch(t *testing.T) {
	const e = 500
	gap := func(b *TraceBuilder) {
		b.Send(e)
		b.Ack(e, 1)
		b.Send(e + 2)
		b.Send(e + 3)
		b.Send(e + 4)
		b.NAK(wire.NAKPSNSequence, e+1, 1)
	}
	cases := []struct {
		name     string
		build    func(b *TraceBuilder)
		complete bool
		want     want
	}{
		{"one NAK per gap, resend, new gap later", func(b *TraceBuilder) {
			gap(b)
			b.Send(e + 1)
			b.Send(e + 2)
			b.Ack(e+2, 3)
			b.Send(e + 4)
			b.NAK(wire.NAKPSNSequence, e+3, 3)
		}, true, wantPass},
		{"a second NAK for the same gap", func(b *TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
		}, true, wantFail},
		{"a network duplicate of the NAK (same IP ID) is one NAK", func(b *TraceBuilder) {
			gap(b)
			last := b.Recs[len(b.Recs)-1]
			dup := *last
			dup.Frame++
			b.Recs = append(b.Recs, &dup)
			b.Send(e + 1)
			b.Ack(e+1, 2)
		}, true, wantPass},
		{"an identical repeat when the IP ID is constant (0) cannot be judged", func(b *TraceBuilder) {
			gap(b)
			last := b.Recs[len(b.Recs)-1]
			last.IPID = 0
			dup := *last
			dup.Frame++
			b.Recs = append(b.Recs, &dup)
		}, true, wantQuiet},
		{"the resend seen before the NAK cleared it (capture order)", func(b *TraceBuilder) {
			b.Send(e)
			b.Ack(e, 1)
			b.Send(e + 2)
			b.Send(e + 1)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
			b.Send(e + 2)
			b.Ack(e+2, 3)
			b.Send(e + 4)
			b.NAK(wire.NAKPSNSequence, e+3, 3)
		}, true, wantPass},
		{"the same PSN NAKed again after its resend arrived", func(b *TraceBuilder) {
			gap(b)
			b.Send(e + 1)
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
		}, true, wantFail},
		{"a new request executed past the gap while latched", func(b *TraceBuilder) {
			gap(b)
			b.Ack(e+3, 2)
		}, true, wantFail},
		{"RNR on the resend, then a sequence NAK at the same PSN", func(b *TraceBuilder) {
			gap(b)
			b.Send(e + 1)
			b.Send(e + 2)
			b.RNR(e+1, 1)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
		}, true, wantQuiet},
		{"capture: a second NAK without a resend in the capture is undecided", func(b *TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e+1, 1)
		}, false, wantQuiet},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(256)
		tc.build(b)
		check(t, tc.name, b, tc.complete, tLatch, tc.want)
	}
	// A capture: the request at the NAK's PSN, resent after the first NAK,
	// reached the responder; a second NAK naming that PSN is wrong either
	// way (built while latched, or naming the PSN the responder had then
	// executed) unless an RNR NAK refused the resend, which the
	// responder's consecutive IDs rule out. A gap in them leaves it open.
	for _, missed := range []bool{false, true} {
		b := NewTraceBuilder(256)
		b.PerSender = true
		for psn := wire.PSN(e - 9); psn < e; psn++ { // both sides shown to number their packets one by one
			b.Send(psn)
			b.Ack(psn, uint32(psn-e+1))
		}
		gap(b)
		b.Send(e + 1)
		b.Send(e + 2)
		b.SkipRspID = missed
		b.NAK(wire.NAKPSNSequence, e+1, 1)
		check(t, fmt.Sprintf("capture: the same PSN NAKed again after its resend, a response missed between %v", missed), b, false, tLatch, map[bool]want{false: wantFail, true: wantOpen}[missed])
	}
}

func TestDupError(t *testing.T) {
	const q = 2000
	cases := []struct {
		name     string
		build    func(b *TraceBuilder)
		complete bool
		want     want
	}{
		{"a duplicate READ NAKed remote access", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, true, wantFail},
		{"a duplicate READ dropped, then new work", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.Send(q + 4)
			b.Ack(q+4, 2)
		}, true, wantPass},
		{"a WRITE resent before its NAK came back: the NAK is about the original", func(b *TraceBuilder) {
			b.Send(q)
			b.Ack(q, 1)
			b.Req(wire.WriteOnly, q+1, true)
			b.Req(wire.WriteOnly, q+1, true)
			b.NAK(wire.NAKRemoteAccess, q+1, 1)
		}, true, wantQuiet},
		{"a NAK inside a duplicate READ's replay", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.ReadResp(wire.ReadResponseFirst, q, 256, 1)
			b.NAK(wire.NAKRemoteAccess, q+1, 1)
		}, true, wantFail},
		{"a mid-stream failure of a new READ is not about a duplicate", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadResp(wire.ReadResponseFirst, q, 256, 1)
			b.NAK(wire.NAKRemoteAccess, q+1, 1)
		}, true, wantQuiet},
		{"capture: a duplicate READ NAKed, the responder's IDs counting", func(b *TraceBuilder) {
			b.CountedBefore(q)
			b.Read(q, 1024)
			b.ReadStream(q, 1024, CountedMSN+1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, CountedMSN+1)
		}, false, wantFail},
		// Too few of the responder's packets to show its IDs count: the
		// NAK may be an older response of the same count (open).
		{"capture: a duplicate READ NAKed, no IDs shown to count", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, false, wantOpen},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(256)
		tc.build(b)
		check(t, tc.name, b, tc.complete, tDupError, tc.want)
	}
}

func TestOrder(t *testing.T) {
	const a, bb = 3000, 3008
	setup := func(b *TraceBuilder) {
		b.Read(a, 2048)
		b.ReadStream(a, 2048, 1)
		b.Read(bb, 2048)
		b.ReadStream(bb, 2048, 2)
	}
	cases := []struct {
		name     string
		build    func(b *TraceBuilder)
		complete bool
		want     want
	}{
		{"two waiting duplicates answered oldest first", func(b *TraceBuilder) {
			setup(b)
			b.Read(a, 2048)
			b.Read(bb, 2048)
			b.ReadStream(a, 2048, 2)
			b.ReadStream(bb, 2048, 2)
		}, true, wantPass},
		{"two waiting duplicates answered newest first", func(b *TraceBuilder) {
			setup(b)
			b.Read(a, 2048)
			b.Read(bb, 2048)
			b.ReadStream(bb, 2048, 2)
			b.ReadStream(a, 2048, 2)
		}, true, wantFail},
		{"an older duplicate preempts a replay", func(b *TraceBuilder) {
			setup(b)
			b.Read(bb, 2048)
			b.ReadResp(wire.ReadResponseFirst, bb, 256, 2)
			b.ReadResp(wire.ReadResponseMiddle, bb+1, 256, 2)
			b.Read(a, 2048)
			b.ReadResp(wire.ReadResponseMiddle, bb+2, 256, 2)
			b.ReadStream(a, 2048, 2)
		}, true, wantPass},
		{"a preempted replay resumes afterwards", func(b *TraceBuilder) {
			setup(b)
			b.Read(bb, 2048)
			b.ReadResp(wire.ReadResponseFirst, bb, 256, 2)
			b.Read(a, 2048)
			b.ReadStream(a, 2048, 2)
			b.ReadResp(wire.ReadResponseMiddle, bb+1, 256, 2)
		}, true, wantFail},
		{"capture: newest first is undecided", func(b *TraceBuilder) {
			setup(b)
			b.Read(a, 2048)
			b.Read(bb, 2048)
			b.ReadStream(bb, 2048, 2)
			b.ReadStream(a, 2048, 2)
		}, false, wantQuiet},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(256)
		tc.build(b)
		check(t, tc.name, b, tc.complete, tOrder, tc.want)
	}
}
