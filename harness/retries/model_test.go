package retries

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// rec returns a record without an IPv4 ID (the Auditor then holds nothing
// back: see feed).
func rec(op wire.Opcode, psn wire.PSN, at time.Duration) *trace.Record {
	return &trace.Record{Time: at, ICRC: wire.ICRCOK,
		Packet: &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn}, AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid)}}}
}

// TestTrackerBounded: a long acknowledged stream keeps the model small,
// across the 2^24 wrap, and the model still knows what is outstanding.
func TestTrackerBounded(t *testing.T) {
	s := harness.UnknownSettings()
	s.MTU = 1024
	f := newFeed(s)
	psn := wire.PSN(0xFFFF00)
	for i := 0; i < 200000; i++ {
		at := time.Duration(i) * time.Microsecond
		if ev := f.Request(rec(wire.SendOnly, psn, at)); ev.Kind != KindNew {
			t.Fatalf("request %d (PSN %d): kind %v, want new", i, psn, ev.Kind)
		}
		if i%4 == 3 {
			f.Response(rec(wire.Acknowledge, psn, at))
		}
		psn = psn.Next()
	}
	if len(f.tr.ents) > 2*keepBehind+8 {
		t.Errorf("the model keeps %d PSNs after a long acknowledged stream", len(f.tr.ents))
	}
	if _, ok := f.tr.Base(); ok {
		t.Errorf("everything was acknowledged, yet the model has an oldest outstanding PSN")
	}
	// A resend of a long-acknowledged PSN is a resend, answered.
	ev := f.Request(rec(wire.SendOnly, psn.Add(-100000), time.Second))
	if ev.Kind != KindResend || !ev.Answered {
		t.Errorf("a resend of a long-acknowledged PSN: kind %v answered %v", ev.Kind, ev.Answered)
	}
}

// TestTrackerRead: a READ reserves its response PSNs; responses advance
// it; an ACK beyond it while incomplete is an implied NAK.
func TestTrackerRead(t *testing.T) {
	s := harness.UnknownSettings()
	s.MTU = 256
	f := newFeed(s)
	rd := rec(wire.ReadRequest, 0xFFFFFE, 0)
	rd.Packet.RETH.Length = 1000 // 4 responses: 0xFFFFFE .. 1
	f.Request(rd)
	f.Request(rec(wire.SendOnly, 2, 1))
	if s := f.tr.Lookup(0); s == nil || s.Op != wire.ReadRequest {
		t.Fatalf("PSN 0 should belong to the READ")
	}
	f.Response(rec(wire.ReadResponseFirst, 0xFFFFFE, 2))
	ev := f.Response(rec(wire.Acknowledge, 2, 3))
	if len(ev.Implied) != 1 || ev.Implied[0].ReadNext != 0xFFFFFF {
		t.Fatalf("an ACK passing a half-answered READ: implied %v", ev.Implied)
	}
	if b, ok := f.tr.Base(); !ok || b != 0xFFFFFF {
		t.Errorf("oldest outstanding: %d %v, want the first missing response 16777215", b, ok)
	}
}

// TestTrackerReadUnknownMTU: a READ seen while the path MTU is unknown
// reserves only its own PSN; its response stream still completes it, and
// an acknowledged stream after it keeps the model small (a READ left open
// would pin every later request in memory).
func TestTrackerReadUnknownMTU(t *testing.T) {
	f := newFeed(harness.UnknownSettings())
	rd := rec(wire.ReadRequest, 10, 0)
	rd.Packet.RETH.Length = 1000 // 4 responses at MTU 256: PSN 10 .. 13
	f.Request(rd)
	f.Request(rec(wire.SendOnly, 14, 1))
	for i, op := range []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseMiddle, wire.ReadResponseLast} {
		if ev := f.Response(rec(op, wire.PSN(10+i), 2)); ev.Gap != nil || len(ev.Implied) != 0 {
			t.Fatalf("READ response %d: gap %v implied %v", i, ev.Gap, ev.Implied)
		}
	}
	if s := f.tr.Lookup(10); s == nil || !s.Done || s.ReadNext != 14 {
		t.Fatalf("the READ answered in full is not complete: %+v", s)
	}
	f.Response(rec(wire.Acknowledge, 14, 3))
	if b, ok := f.tr.Base(); ok {
		t.Fatalf("everything was answered, yet PSN %d is outstanding", b)
	}
	psn := wire.PSN(15)
	for i := 0; i < 20000; i++ {
		f.Request(rec(wire.SendOnly, psn, 4))
		f.Response(rec(wire.Acknowledge, psn, 4))
		psn = psn.Next()
	}
	if len(f.tr.ents) > 2*keepBehind+8 {
		t.Errorf("the model keeps %d PSNs after a long acknowledged stream", len(f.tr.ents))
	}
}

// TestTrackerReadSpanLearnt: a 5-packet READ sent while the path MTU is
// unknown, whose second Middle is lost before the capture point: the
// responses after the gap belong to the READ (its span, as the
// connection's reconstruction knows it, holds them) and show the gap; its
// Last closes the span, so the requester's partial retry from the missing
// PSN is a resend of the READ (an implied NAK's retry), not a new
// request, and the retry's answer completes the READ.
func TestTrackerReadSpanLearnt(t *testing.T) {
	f := newFeed(harness.UnknownSettings())
	f.Request(rec(wire.SendOnly, 102, 0))
	f.Response(rec(wire.Acknowledge, 102, 1))
	rd := rec(wire.ReadRequest, 103, 2)
	rd.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 7, Length: 5 * 1024}
	f.Request(rd)
	for i, k := range []struct {
		op  wire.Opcode
		psn wire.PSN
		gap bool
	}{{wire.ReadResponseFirst, 103, false}, {wire.ReadResponseMiddle, 104, false}, {wire.ReadResponseMiddle, 106, true}, {wire.ReadResponseLast, 107, true}} {
		if ev := f.Response(rec(k.op, k.psn, time.Duration(3+i))); (ev.Gap != nil) != k.gap || k.gap && ev.Gap.PSN != 103 {
			t.Fatalf("READ response %d (PSN %d): gap %+v, want a gap: %v", i, k.psn, ev.Gap, k.gap)
		}
	}
	if next, ok := f.tr.Next(); !ok || next != 108 {
		t.Fatalf("after the READ's Last at PSN 107, the next new PSN is %d (%v), want 108", next, ok)
	}
	retry := rec(wire.ReadRequest, 105, 10)
	retry.Packet.RETH = wire.RETH{VA: 0x1000 + 2*1024, RKey: 7, Length: 3 * 1024}
	ev := f.Request(retry)
	if ev.Kind != KindResend || ev.Orig == nil || ev.Orig.PSN != 103 || !ev.Start || ev.Cause != CauseImplied {
		t.Fatalf("the partial retry from PSN 105: kind %v, orig %+v, start %v, cause %v; want a resend of the READ at 103 starting a retry on the implied NAK",
			ev.Kind, ev.Orig, ev.Start, ev.Cause)
	}
	if s := f.tr.Lookup(106); s == nil || s.PSN != 103 || !s.EndOK || s.End != 107 {
		t.Fatalf("PSN 106 should belong to the READ at 103, whose span ends at 107: %+v", s)
	}
	for i, op := range []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseLast} {
		if ev := f.Response(rec(op, wire.PSN(105+i), time.Duration(11+i))); ev.Gap != nil || len(ev.Implied) != 0 {
			t.Fatalf("answer to the retry, packet %d: gap %v implied %v", i, ev.Gap, ev.Implied)
		}
	}
	if s := f.tr.Lookup(103); s == nil || !s.Done {
		t.Fatalf("the READ answered in full after its retry is not complete: %+v", s)
	}
	if ev := f.Request(rec(wire.SendOnly, 108, 20)); ev.Kind != KindNew {
		t.Fatalf("the SEND after the READ: kind %v, want new", ev.Kind)
	}
	f.Response(rec(wire.Acknowledge, 108, 21))
	if b, ok := f.tr.Base(); ok {
		t.Fatalf("everything was answered, yet PSN %d is outstanding", b)
	}
}

// TestSweepUnderLargeTolerance: on a live device whose timing tolerance is
// above the transport timer interval, the next PSN resent right after the
// first of a go-back-N continues that go-back-N; it is no new start (which
// would read as a go-back-N skipping the oldest PSN and as an extra retry).
func TestSweepUnderLargeTolerance(t *testing.T) {
	for _, tol := range []time.Duration{0, 5 * time.Millisecond, 52 * time.Millisecond} {
		s := harness.UnknownSettings()
		s.MTU, s.Active, s.AckTimeout, s.Tolerance = 1024, true, 12, tol
		f := newFeed(s)
		ms := time.Millisecond
		f.Request(rec(wire.SendOnly, 3000, 131*ms))
		f.Request(rec(wire.SendOnly, 3001, 136*ms))
		nak := rec(wire.Acknowledge, 3000, 137*ms)
		nak.Packet.AETH.Syndrome = wire.SynNAK(wire.NAKPSNSequence)
		f.Response(nak)
		first := f.Request(rec(wire.SendOnly, 3000, 140*ms))
		next := f.Request(rec(wire.SendOnly, 3001, 141*ms))
		if !first.Start || first.Cause != CauseSeqNAK {
			t.Errorf("tolerance %v: the resend of PSN 3000 after the NAK: start %v cause %v", tol, first.Start, first.Cause)
		}
		if next.Kind != KindResend || next.Start {
			t.Errorf("tolerance %v: PSN 3001 resent 1 ms after PSN 3000 starts a new retry; it continues the go-back-N", tol)
		}
	}
}

// TestCauseNamesThePSN: an RNR NAK at PSN 11 that passes an ATOMIC at 10
// whose answer never came adds an implied NAK of the ATOMIC after its
// own trigger; the resend of PSN 11 starts at the RNR NAK's PSN, so the
// RNR NAK explains it (a retry for the implied NAK begins at PSN 10).
func TestCauseNamesThePSN(t *testing.T) {
	f := newFeed(harness.UnknownSettings())
	us := time.Microsecond
	f.Request(rec(wire.SendOnly, 9, 1*us))
	f.Response(rec(wire.Acknowledge, 9, 2*us))
	f.Request(rec(wire.FetchAdd, 10, 3*us))
	f.Request(rec(wire.SendOnly, 11, 4*us))
	rnr := rec(wire.Acknowledge, 11, 5*us)
	rnr.Packet.AETH.Syndrome = wire.SynRNR(11)
	if ev := f.Response(rnr); len(ev.Implied) != 1 || ev.Implied[0].PSN != 10 {
		t.Fatalf("the RNR NAK at 11 should pass the unanswered ATOMIC at 10: implied %v", ev.Implied)
	}
	if ev := f.Request(rec(wire.SendOnly, 11, 600*us)); !ev.Start || ev.Cause != CauseRNR {
		t.Fatalf("the resend of PSN 11: start %v cause %v, want a retry on the RNR NAK", ev.Start, ev.Cause)
	}
	if ev := f.Request(rec(wire.FetchAdd, 10, 601*us)); ev.Kind != KindResend {
		t.Fatalf("the resend of the ATOMIC at 10: kind %v", ev.Kind)
	}
}

// TestReactionNotTheRNRWait: a sequence NAK's PSN resent at once shows
// the requester's reaction; resent after an RNR NAK's delay, it shows
// that wait instead, which Reaction leaves out where a sequence NAK's
// resend shows a reaction, whichever of the two NAKs came first.
func TestReactionNotTheRNRWait(t *testing.T) {
	us := time.Microsecond
	for _, rnrFirst := range []bool{true, false} {
		f := newFeed(harness.UnknownSettings())
		f.Request(rec(wire.SendOnly, 9, 1*us))
		f.Request(rec(wire.SendOnly, 10, 2*us))
		f.Request(rec(wire.SendOnly, 11, 3*us))
		nak := rec(wire.Acknowledge, 10, 4*us)
		nak.Packet.AETH.Syndrome = wire.SynNAK(wire.NAKPSNSequence)
		f.Response(nak)
		f.Request(rec(wire.SendOnly, 10, 6*us)) // 2 µs after the NAK
		f.Request(rec(wire.SendOnly, 11, 7*us))
		rnr := rec(wire.Acknowledge, 11, 8*us)
		rnr.Packet.AETH.Syndrome = wire.SynRNR(11)
		nak = rec(wire.Acknowledge, 11, 9*us)
		nak.Packet.AETH.Syndrome = wire.SynNAK(wire.NAKPSNSequence)
		if rnrFirst {
			f.Response(rnr)
			f.Response(nak)
		} else {
			nak.Time, rnr.Time = rnr.Time, nak.Time
			f.Response(nak)
			f.Response(rnr)
		}
		f.Request(rec(wire.SendOnly, 11, 700*us)) // after the RNR delay
		if d, ok := f.tr.Reaction(); !ok || d != 2*us {
			t.Errorf("RNR NAK first %v: reaction %v (%v), want the 2µs of the first NAK's resend", rnrFirst, d, ok)
		}
	}
}

// TestFirstSentBehindTheBase: a request whose first transmission the
// capture missed, sent after a sequence NAK naming it (which acknowledged
// what came before and left its slot empty), is covered by a later ACK
// of its PSN like any other: the model knows it acknowledged.
func TestFirstSentBehindTheBase(t *testing.T) {
	f := newFeed(harness.UnknownSettings())
	f.Request(rec(wire.SendOnly, 10, 0))
	f.Request(rec(wire.SendOnly, 12, time.Microsecond)) // PSN 11 missed by the capture
	nak := rec(wire.Acknowledge, 11, 2*time.Microsecond)
	nak.Packet.AETH.Syndrome = wire.SynNAK(wire.NAKPSNSequence)
	f.Response(nak)
	f.Request(rec(wire.SendOnly, 11, 3*time.Microsecond))
	f.Request(rec(wire.SendOnly, 12, 4*time.Microsecond))
	f.Response(rec(wire.Acknowledge, 11, 5*time.Microsecond))
	if s := f.tr.Lookup(11); s == nil || !s.Done {
		t.Errorf("PSN 11, first sent after the NAK named it and acknowledged since: %+v, want done", s)
	}
	if p, ok := f.tr.Base(); !ok || p != 12 {
		t.Errorf("oldest outstanding PSN %d (%v), want 12", p, ok)
	}
}

// TestReactionFromAnRNRWait: with no sequence NAK's resend in the trace,
// the resend after an RNR NAK, less the delay the NAK asked for (code
// 11: 480 µs), bounds the reaction: the requester waited at least that.
func TestReactionFromAnRNRWait(t *testing.T) {
	us := time.Microsecond
	f := newFeed(harness.UnknownSettings())
	f.Request(rec(wire.SendOnly, 10, 1*us))
	rnr := rec(wire.Acknowledge, 10, 2*us)
	rnr.Packet.AETH.Syndrome = wire.SynRNR(11)
	f.Response(rnr)
	if _, ok := f.tr.Reaction(); ok {
		t.Fatalf("a reaction before any resend")
	}
	f.Request(rec(wire.SendOnly, 10, 500*us))
	if d, ok := f.tr.Reaction(); !ok || d != 18*us {
		t.Errorf("reaction %v (%v), want the 18µs the resend took beyond the 480µs delay", d, ok)
	}
}
