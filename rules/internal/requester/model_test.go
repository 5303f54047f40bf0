package requester

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

func rec(op wire.Opcode, psn wire.PSN, at time.Duration, id uint16) *trace.Record {
	return &trace.Record{Time: at, IPID: id, HasIPID: true, ICRC: wire.ICRCOK,
		Packet: &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn}, AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid)}}}
}

// TestTrackerBounded: a long acknowledged stream keeps the model small,
// across the 2^24 wrap, and the model still knows what is outstanding.
func TestTrackerBounded(t *testing.T) {
	c := &harness.Conn{Settings: harness.UnknownSettings()}
	c.Settings.MTU = 1024
	tr := NewTracker(c)
	psn := wire.PSN(0xFFFF00)
	for i := 0; i < 200000; i++ {
		at := time.Duration(i) * time.Microsecond
		if ev := tr.Request(rec(wire.SendOnly, psn, at, uint16(i))); ev.Kind != KindNew {
			t.Fatalf("request %d (PSN %d): kind %v, want new", i, psn, ev.Kind)
		}
		if i%4 == 3 {
			tr.Response(rec(wire.Acknowledge, psn, at, 0))
		}
		psn = psn.Next()
	}
	if len(tr.ents) > 2*keepBehind+8 {
		t.Errorf("the model keeps %d PSNs after a long acknowledged stream", len(tr.ents))
	}
	if _, ok := tr.Base(); ok {
		t.Errorf("everything was acknowledged, yet the model has an oldest outstanding PSN")
	}
	// A resend of a long-acknowledged PSN is a resend, answered.
	ev := tr.Request(rec(wire.SendOnly, psn.Add(-100000), time.Second, 1))
	if ev.Kind != KindResend || !ev.Answered {
		t.Errorf("a resend of a long-acknowledged PSN: kind %v answered %v", ev.Kind, ev.Answered)
	}
}

// TestTrackerRead: a READ reserves its response PSNs; responses advance
// it; an ACK beyond it while incomplete is an implied NAK.
func TestTrackerRead(t *testing.T) {
	c := &harness.Conn{Settings: harness.UnknownSettings()}
	c.Settings.MTU = 256
	tr := NewTracker(c)
	rd := rec(wire.ReadRequest, 0xFFFFFE, 0, 1)
	rd.Packet.RETH.Length = 1000 // 4 responses: 0xFFFFFE .. 1
	tr.Request(rd)
	tr.Request(rec(wire.SendOnly, 2, 1, 2))
	if s := tr.Lookup(0); s == nil || s.Op != wire.ReadRequest {
		t.Fatalf("PSN 0 should belong to the READ")
	}
	tr.Response(rec(wire.ReadResponseFirst, 0xFFFFFE, 2, 0))
	ev := tr.Response(rec(wire.Acknowledge, 2, 3, 0))
	if len(ev.Implied) != 1 || ev.Implied[0].ReadNext != 0xFFFFFF {
		t.Fatalf("an ACK passing a half-answered READ: implied %v", ev.Implied)
	}
	if b, ok := tr.Base(); !ok || b != 0xFFFFFF {
		t.Errorf("oldest outstanding: %d %v, want the first missing response 16777215", b, ok)
	}
}

// TestTrackerReadUnknownMTU: a READ seen while the path MTU is unknown
// reserves only its own PSN; its response stream still completes it, and
// an acknowledged stream after it keeps the model small (a READ left open
// would pin every later request in memory).
func TestTrackerReadUnknownMTU(t *testing.T) {
	c := &harness.Conn{Settings: harness.UnknownSettings()}
	tr := NewTracker(c)
	rd := rec(wire.ReadRequest, 10, 0, 1)
	rd.Packet.RETH.Length = 1000 // 4 responses at MTU 256: PSN 10 .. 13
	tr.Request(rd)
	tr.Request(rec(wire.SendOnly, 14, 1, 2))
	for i, op := range []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseMiddle, wire.ReadResponseLast} {
		if ev := tr.Response(rec(op, wire.PSN(10+i), 2, 0)); ev.Gap != nil || len(ev.Implied) != 0 {
			t.Fatalf("READ response %d: gap %v implied %v", i, ev.Gap, ev.Implied)
		}
	}
	if s := tr.Lookup(10); s == nil || !s.Done || s.ReadNext != 14 {
		t.Fatalf("the READ answered in full is not complete: %+v", s)
	}
	tr.Response(rec(wire.Acknowledge, 14, 3, 0))
	if b, ok := tr.Base(); ok {
		t.Fatalf("everything was answered, yet PSN %d is outstanding", b)
	}
	psn := wire.PSN(15)
	for i := 0; i < 20000; i++ {
		tr.Request(rec(wire.SendOnly, psn, 4, uint16(i)))
		tr.Response(rec(wire.Acknowledge, psn, 4, 0))
		psn = psn.Next()
	}
	if len(tr.ents) > 2*keepBehind+8 {
		t.Errorf("the model keeps %d PSNs after a long acknowledged stream", len(tr.ents))
	}
}

// TestSweepUnderLargeTolerance: on a live device whose timing tolerance is
// above the transport timer interval, the next PSN resent right after the
// first of a go-back-N continues that go-back-N; it is no new start (which
// would read as a go-back-N skipping the oldest PSN and as an extra retry).
func TestSweepUnderLargeTolerance(t *testing.T) {
	for _, tol := range []time.Duration{0, 5 * time.Millisecond, 52 * time.Millisecond} {
		c := &harness.Conn{Settings: harness.UnknownSettings()}
		c.Settings.MTU, c.Settings.Active, c.Settings.AckTimeout, c.Settings.Tolerance = 1024, true, 12, tol
		tr := NewTracker(c)
		ms := time.Millisecond
		tr.Request(rec(wire.SendOnly, 3000, 131*ms, 1))
		tr.Request(rec(wire.SendOnly, 3001, 136*ms, 2))
		nak := rec(wire.Acknowledge, 3000, 137*ms, 0)
		nak.Packet.AETH.Syndrome = wire.SynNAK(wire.NAKPSNSequence)
		tr.Response(nak)
		first := tr.Request(rec(wire.SendOnly, 3000, 140*ms, 3))
		next := tr.Request(rec(wire.SendOnly, 3001, 141*ms, 4))
		if !first.Start || first.Cause != CauseSeqNAK {
			t.Errorf("tolerance %v: the resend of PSN 3000 after the NAK: start %v cause %v", tol, first.Start, first.Cause)
		}
		if next.Kind != KindResend || next.Start {
			t.Errorf("tolerance %v: PSN 3001 resent 1 ms after PSN 3000 starts a new retry; it continues the go-back-N", tol)
		}
	}
}
