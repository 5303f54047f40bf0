// The monitor tests shared by the clauses of one
// shared-meaning group. Each clause package calls its group's function
// with its own ID, so every clause's registered monitor is tested
// against the same table.

package dupnak

import (
	"slices"
	"testing"

	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// CheckNAKPSNMonitor tests the NAK-PSN judge shared by C9-111, C9-121 and C9-125, registered under ID.
func CheckNAKPSNMonitor(t *testing.T, ID string) {
	t.Helper()
	const e = wire.PSN(0xFFFFFF) // the expected PSN sits at the 2^24 wrap
	est := func(b *TraceBuilder) {
		b.Send(e - 2)
		b.Send(e - 1)
		b.Ack(e-1, 2)
	}
	type tc struct {
		name      string
		build     func(b *TraceBuilder)
		complete  bool
		violation bool
	}
	seq := []tc{
		{"sequence NAK with the expected PSN", func(b *TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e, 2)
		}, true, false},
		{"sequence NAK with the received PSN", func(b *TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e.Add(2), 2)
		}, true, true},
		{"sequence NAK naming a SEND longer than the MTU, taken in sequence, after a later request: dropped (§9.7.5.1.5's), so expected still", func(b *TraceBuilder) {
			est(b)
			b.Req(wire.SendOnly, e, true).PayloadLen = 1028
			b.Send(e.Add(1))
			b.NAK(wire.NAKPSNSequence, e, 2)
		}, true, false},
		{"sequence NAK naming a SEND of the MTU, taken in sequence, after a later request", func(b *TraceBuilder) {
			est(b)
			b.Req(wire.SendOnly, e, true).PayloadLen = 1024
			b.Send(e.Add(1))
			b.NAK(wire.NAKPSNSequence, e, 2)
		}, true, true},
		{"capture: sequence NAK behind the acknowledged PSN", func(b *TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e-2, 2)
		}, false, true},
	}
	inv := []tc{
		{"invalid request NAK with the expected PSN", func(b *TraceBuilder) {
			est(b)
			b.Req(wire.SendMiddle, e, true)
			b.NAK(wire.NAKInvalidRequest, e, 2)
		}, true, false},
		{"invalid request NAK with the received PSN, ahead", func(b *TraceBuilder) {
			est(b)
			b.Req(wire.SendMiddle, e.Add(2), true)
			b.NAK(wire.NAKInvalidRequest, e.Add(2), 2)
		}, true, true},
	}
	var cases []tc
	switch ID {
	case "C9-121":
		cases = seq
	case "C9-125":
		cases = inv
	default:
		cases = append(seq, inv...)
	}
	for _, c := range cases {
		b := NewTraceBuilder(1024)
		c.build(b)
		sink := Audit(b.Recs, c.complete, 1024, ID)
		tl := Tally(sink, ID)
		if c.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", c.name, c.violation, tl, sink.Findings)
		}
		if !c.violation && c.complete && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", c.name, tl)
		}
	}
}

// CheckLatchMonitor tests the NAK-latch monitor shared by C9-114 and C9-122, registered under ID.
func CheckLatchMonitor(t *testing.T, ID string) {
	t.Helper()
	const e = wire.PSN(0xFFFFFF)
	// gapAt: PSN e lost, the responder's count msn before it, and its
	// sequence NAK; gap on a connection from its start.
	gapAt := func(b *TraceBuilder, msn uint32) {
		b.Send(e - 1)
		b.Ack(e-1, msn)
		b.Send(e.Add(1))
		b.Send(e.Add(2))
		b.Send(e.Add(3))
		b.NAK(wire.NAKPSNSequence, e, msn)
	}
	gap := func(b *TraceBuilder) { gapAt(b, 1) }
	cases := []struct {
		name      string
		build     func(b *TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"one NAK per gap", func(b *TraceBuilder) {
			gap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Ack(e.Add(1), 3)
		}, true, false, true},
		{"a NAK per out-of-sequence packet (no latch)", func(b *TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.NAK(wire.NAKPSNSequence, e, 1)
		}, true, true, false},
		{"a new request executed past the gap while latched", func(b *TraceBuilder) {
			gap(b)
			b.Ack(e.Add(3), 2)
		}, true, true, false},
		{"a new gap after the first was repaired", func(b *TraceBuilder) {
			gap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Send(e.Add(3))
			b.Ack(e.Add(1), 3)
			b.NAK(wire.NAKPSNSequence, e.Add(2), 3)
		}, true, false, true},
		{"capture: a second NAK with no resend in the capture is undecided", func(b *TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
		}, false, false, false},
		// A requester numbering its packets one by one (PerSender) shows
		// whether the capture missed a resend of PSN e, once its next
		// packet comes.
		{"capture, IDs unbroken: a second NAK fails", func(b *TraceBuilder) {
			b.PerSender = true
			idGap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.Send(e.Add(4))
		}, false, true, false},
		{"capture, IDs broken before the second NAK: undecided", func(b *TraceBuilder) {
			b.PerSender = true
			idGap(b)
			b.SkipID = true
			b.Send(e.Add(4))
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.Send(e.Add(5))
		}, false, false, false},
		// The responder's IDs show it sent nothing between its two NAKs:
		// a request with PSN e that reached it unseen would have been
		// executed (no NAK could name e again) or refused (a packet in
		// between), so the second NAK fails whatever the capture missed
		// of the requester's packets.
		{"capture, requester packets missed, the responder's IDs unbroken between two NAKs naming PSN e: fails", func(b *TraceBuilder) {
			b.PerSender = true
			b.SkipID = true
			ackedGap(b)
			b.NAK(wire.NAKPSNSequence, e, 11)
		}, false, true, false},
		{"capture, requester packets missed, a responder packet missed between two NAKs naming PSN e: undecided", func(b *TraceBuilder) {
			b.PerSender = true
			b.SkipID = true
			ackedGap(b)
			b.SkipRspID = true
			b.NAK(wire.NAKPSNSequence, e, 11)
		}, false, false, false},
		{"capture, requester packets missed, the responder's IDs unbroken, the second NAK names another PSN: undecided", func(b *TraceBuilder) {
			// PSN e may have arrived unseen and been executed without an
			// ACK: the responder then expected e+1.
			b.PerSender = true
			b.SkipID = true
			ackedGap(b)
			b.NAK(wire.NAKPSNSequence, e.Add(1), 11)
		}, false, false, false},
		{"capture, IDs unbroken but the next request resends PSN e: undecided", func(b *TraceBuilder) {
			b.PerSender = true
			idGap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.Send(e)
		}, false, false, false},
		{"capture, IDs unbroken, only a copy of the requester's latest packet comes next: undecided", func(b *TraceBuilder) {
			// The copy (its ID repeated) was sent before the NAK: it
			// shows nothing of what the requester sent after.
			b.PerSender = true
			idGap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.Copy(b.Recs[len(b.Recs)-3])
		}, false, false, false},
		{"capture, IDs unbroken, the trace ends before the requester's next packet: undecided", func(b *TraceBuilder) {
			b.PerSender = true
			idGap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
		}, false, false, false},
		// Mid-connection (the MSNs count from far on): a resend that
		// reached the responder after its first NAK was sent after the
		// requester's first packet captured, where the NAK came beyond
		// the reordering after it and is no late packet (the responder's
		// IDs count up); within it, one sent before the capture began
		// may have arrived after the NAK was built.
		{"capture mid-connection, IDs unbroken from the requester's first packet: a second NAK fails", func(b *TraceBuilder) {
			b.PerSender = true
			for i := range 10 { // the responder's IDs shown to count up
				b.Req(wire.SendOnly, e.Add(i-11), true)
				b.Ack(e.Add(i-11), 5001+uint32(i))
			}
			gapAt(b, 5011)
			b.SkipRspID = true // the responder's own IDs do not decide
			b.NAK(wire.NAKPSNSequence, e, 5011)
			b.Send(e.Add(4))
		}, false, true, false},
		{"capture mid-connection, the first NAK within the reordering after the requester's first packet: undecided", func(b *TraceBuilder) {
			b.PerSender = true
			b.Send(e.Add(3))
			b.NAK(wire.NAKPSNSequence, e, 5011)
			b.NAK(wire.NAKPSNSequence, e, 5011)
			for i := range 10 {
				b.Send(e.Add(4 + i))
			}
		}, false, false, false},
		{"capture, IDs unbroken, one NAK per gap: no violation", func(b *TraceBuilder) {
			b.PerSender = true
			idGap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Ack(e.Add(1), 3)
		}, false, false, true},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(1024)
		tc.build(b)
		sink := Audit(b.Recs, tc.complete, 1024, ID)
		tl := Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
		if !tc.violation && !tc.checked && tl.Verdict() == reports.Pass {
			t.Errorf("%s: an instance only a missed packet explains passed: %+v", tc.name, tl)
		}
	}
}

// ackedGap is idGap with each of the ten requests acknowledged, enough
// for the responder's IDs to count as evidence too.
func ackedGap(b *TraceBuilder) {
	const e = wire.PSN(0xFFFFFF)
	for i := range 10 {
		b.Send(e.Add(i - 11))
		b.Ack(e.Add(i-11), uint32(i+1))
	}
	b.Send(e - 1)
	b.Ack(e-1, 11)
	b.Send(e.Add(1))
	b.Send(e.Add(2))
	b.Send(e.Add(3))
	b.NAK(wire.NAKPSNSequence, e, 11)
}

// idGap is the latch trace's gap after ten more requests (no AckReq: the
// ACK that follows covers them, with the MSN of a new QP, so the trace
// shows the connection's beginning), enough for the requester's IDs to
// count as evidence.
func idGap(b *TraceBuilder) {
	const e = wire.PSN(0xFFFFFF)
	for i := range 10 {
		b.Req(wire.SendOnly, e.Add(i-11), false)
	}
	b.Send(e - 1)
	b.Ack(e-1, 11)
	b.Send(e.Add(1))
	b.Send(e.Add(2))
	b.Send(e.Add(3))
	b.NAK(wire.NAKPSNSequence, e, 11)
}

// CheckDupErrorMonitor tests the duplicate-error monitor shared by C9-106 and C9-115, registered under ID.
func CheckDupErrorMonitor(t *testing.T, ID string) {
	t.Helper()
	const q = wire.PSN(0xFFFFFE) // the READ's PSNs cross the 2^24 wrap
	cases := []struct {
		name      string
		build     func(b *TraceBuilder)
		complete  bool
		violation bool
	}{
		{"a duplicate READ NAKed remote access", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, true, true},
		{"a partial duplicate READ NAKed invalid request", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q.Add(2), 512)
			b.NAK(wire.NAKInvalidRequest, q.Add(2), 1)
		}, true, true},
		{"a duplicate READ dropped silently", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.Send(q.Add(4))
			b.Ack(q.Add(4), 2)
		}, true, false},
		{"an access error on a new WRITE (not a duplicate)", func(b *TraceBuilder) {
			b.Send(q)
			b.Ack(q, 1)
			b.Req(wire.WriteOnly, q.Add(1), true)
			b.NAK(wire.NAKRemoteAccess, q.Add(1), 1)
		}, true, false},
		{"capture: a duplicate READ NAKed, the responder's IDs counting", func(b *TraceBuilder) {
			b.CountedBefore(q)
			b.Read(q, 1024)
			b.ReadStream(q, 1024, CountedMSN+1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, CountedMSN+1)
		}, false, true},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(256)
		tc.build(b)
		sink := Audit(b.Recs, tc.complete, 256, ID)
		tl := Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if !tc.violation && tc.complete && tl.Checked == 0 && tc.name != "an access error on a new WRITE (not a duplicate)" {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
	// Too few of the responder's packets to show its IDs count: the NAK,
	// with the READ's MSN, may be an older response of the same count,
	// sent before the READ's response and delayed (open).
	b := NewTraceBuilder(256)
	b.Read(q, 1024)
	b.ReadStream(q, 1024, 1)
	b.Read(q, 1024)
	b.NAK(wire.NAKRemoteAccess, q, 1)
	if tl := Tally(Audit(b.Recs, false, 256, ID), ID); tl.Violations != 0 || tl.Open == 0 {
		t.Errorf("capture: a duplicate READ NAKed, no IDs shown to count: want open, got %+v", tl)
	}
}

// CheckRepeatAfterPassed tests, for C9-111, C9-121, C9-114 or C9-122 (ID),
// a sequence NAK naming its previous one's PSN again after the request at
// that PSN arrived and a positive response acknowledged it, on a capture
// that may miss packets (also where an RNR NAK ended the latch between):
// one finding names C9-111, C9-121, C9-114 and C9-122, listed under ID.
// A repeat of a NAK whose PSN was already behind an acknowledged one
// repeats that fault: not flagged again.
func CheckRepeatAfterPassed(t *testing.T, ID string) {
	t.Helper()
	const e = wire.PSN(100)
	build := func(rnr, stale bool) *TraceBuilder {
		b := NewTraceBuilder(1024)
		for i := 6; i >= 1; i-- {
			b.Req(wire.SendOnly, e.Add(-i), i == 1)
		}
		b.Ack(e-1, 6)
		b.Send(e + 1)
		x := e
		if stale {
			x = e - 2 // behind 99, acknowledged: C9-111's fault already
		}
		b.NAK(wire.NAKPSNSequence, x, 6)
		b.Send(e)
		b.Send(e + 1)
		b.Ack(e+1, 8)
		if rnr {
			b.Send(e + 2)
			b.RNR(e+2, 8)
		}
		b.NAK(wire.NAKPSNSequence, x, 8)
		return b
	}
	want := []string{"C9-111", "C9-121", "C9-114", "C9-122"}
	for _, rnr := range []bool{false, true} {
		b := build(rnr, false)
		sink := Audit(b.Recs, false, 1024, ID)
		if tl := Tally(sink, ID); tl.Violations != 1 || len(sink.Findings) != 1 {
			t.Errorf("RNR between %v: want one violation of %s, got %+v %v", rnr, ID, tl, sink.Findings)
			continue
		}
		var ids []string
		for _, a := range sink.Findings[0].Alternatives {
			ids = append(ids, a.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("RNR between %v: the finding names %v, want %v", rnr, ids, want)
		}
	}
	b := build(false, true)
	sink := Audit(b.Recs, false, 1024, ID)
	for _, f := range sink.Findings {
		if f.Frame == b.Recs[len(b.Recs)-1].Frame {
			t.Errorf("a repeat of a NAK already behind an acknowledged PSN is flagged again: %s", f.Message)
		}
	}
}
