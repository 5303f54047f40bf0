package c9_113

import (
	"testing"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const s = wire.PSN(0xFFFFFE)
	est := func(b *dupnak.TraceBuilder) {
		b.Req(wire.WriteOnly, s-1, true)
		b.Ack(s-1, 1)
	}
	// behind: eight SENDs acknowledged, then an RNR NAK naming the
	// fourth of them.
	behind := func(b *dupnak.TraceBuilder) {
		for i := range 8 {
			b.Req(wire.SendOnly, s.Add(i-7), i == 7)
		}
		b.Ack(s, 8)
		b.RNR(s.Add(-4), 8)
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"RNR with the refused SEND's PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(s)
			b.RNR(s, 1)
		}, true, false, true},
		{"RNR with the refused SEND's PSN + 1 (never sent)", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(s)
			b.RNR(s.Add(1), 1)
		}, true, true, false},
		{"RNR naming a multi-packet SEND's Middle", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.SendFirst, s, false)
			b.Req(wire.SendMiddle, s.Add(1), false)
			b.Req(wire.SendLast, s.Add(2), true)
			b.RNR(s.Add(1), 1)
		}, true, true, false},
		{"RNR naming a multi-packet SEND's First, the rest dropped", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.SendFirst, s, false)
			b.Req(wire.SendMiddle, s.Add(1), false)
			b.Req(wire.SendLast, s.Add(2), true)
			b.RNR(s, 1)
		}, true, false, true},
		{"RNR naming a WRITE Last with immediate", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.WriteFirst, s, false)
			b.Req(wire.WriteLastImm, s.Add(1), true)
			b.RNR(s.Add(1), 1)
		}, true, false, true},
		{"RNR naming a request already acknowledged", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(s)
			b.Ack(s, 2)
			b.RNR(s, 2)
		}, true, true, false},
		{"capture: RNR for a SEND the capture shows", func(b *dupnak.TraceBuilder) {
			b.Send(s)
			b.RNR(s, 1)
		}, false, false, true},
		{"capture: RNR for a request the capture missed is undecided", func(b *dupnak.TraceBuilder) {
			b.Send(s)
			b.RNR(s.Add(5), 1)
		}, false, false, false},
		// Behind the expected PSN the trace proves: only a resend the
		// capture missed explains it, which a requester numbering its
		// packets one by one rules out with its next packet.
		{"capture: RNR naming an acknowledged request is undecided", func(b *dupnak.TraceBuilder) {
			behind(b)
		}, false, false, false},
		{"capture, IDs unbroken: RNR naming an acknowledged request", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			behind(b)
			b.Send(s.Add(1))
		}, false, true, false},
		{"capture, IDs unbroken, the next packet resends the PSN (undecided)", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			behind(b)
			b.Send(s.Add(-4))
		}, false, false, false},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(1024)
		tc.build(b)
		sink := dupnak.Audit(b.Recs, tc.complete, 1024, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}

// TestBehindEither: an RNR NAK naming a SEND the responder had already
// acknowledged, on a capture where the requester's IDs show a packet
// missed (so a resend of that PSN may have reached the responder unseen)
// and the responder's IDs count up (so the NAK was sent after the ACK):
// either the NAK names the wrong request (C9-113), or the responder
// refused a duplicate it must acknowledge (C9-105). One finding names
// both, and both fail; where the responder's IDs do not date the NAK, it
// stays open.
func TestBehindEither(t *testing.T) {
	const s = wire.PSN(100)
	for _, dated := range []bool{true, false} {
		b := dupnak.NewTraceBuilder(1024)
		b.PerSender = true
		for i := range 10 {
			b.Send(s.Add(i))
			b.Ack(s.Add(i), uint32(i+1))
		}
		b.SkipID = true // the requester's IDs show a packet the capture missed
		b.Send(s.Add(10))
		b.RNR(s.Add(6), 10)
		b.Send(s.Add(11))
		for _, r := range b.Recs {
			if r.Dir == trace.ToRequester && !dated {
				r.HasIPID = false // as over IPv6: nothing dates the NAK
			}
		}
		sink := dupnak.Audit(b.Recs, false, 1024, ID, "C9-105")
		own, dup := dupnak.Tally(sink, ID), dupnak.Tally(sink, "C9-105")
		switch {
		case dated && (own.Violations != 1 || dup.Violations != 1 || len(sink.Findings) != 2 || len(sink.Findings[0].Alternatives) != 2):
			t.Errorf("dated: want one finding naming C9-113 and C9-105 under each, got %+v %+v %+v", own, dup, sink.Findings)
		case !dated && (own.Violations != 0 || own.Open != 1 || dup.Violations != 0):
			t.Errorf("not dated: want C9-113 open, got %+v %+v %+v", own, dup, sink.Findings)
		}
	}
}

// An ATOMIC acknowledgment one PSN late (at the next request's PSN,
// o9-58's fault) proves nothing of where the responder stood: on a
// complete trace the RNR NAK refusing that next request, at its own PSN,
// is not taken for one naming a PSN the responder had passed.
func TestAfterAnAtomicAckAtAnotherPSN(t *testing.T) {
	b := dupnak.NewTraceBuilder(1024)
	b.Send(10)
	b.Ack(10, 1)
	b.Req(wire.FetchAdd, 11, true)
	b.Send(12)
	b.AtomicAck(12, 7, 2) // one PSN late
	b.RNR(12, 2)
	sink := dupnak.Audit(b.Recs, true, 1024, ID)
	if own := dupnak.Tally(sink, ID); own.Violations != 0 || own.Checked != 1 {
		t.Fatalf("want the RNR NAK checked, got %+v: %+v", own, sink.Findings)
	}
}
