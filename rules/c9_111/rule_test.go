package c9_111

import (
	"slices"
	"testing"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// TestMonitor runs the shared table of its meaning group against this
// clause's own monitor.
func TestMonitor(t *testing.T) { dupnak.CheckNAKPSNMonitor(t, ID) }

// TestAfterAWrongRNR: on a complete trace, an RNR NAK naming a SEND the
// responder had acknowledged (C9-113's fault) refused some request the
// trace does not name; the sequence NAK after it, naming the request the
// responder really refused, is not blamed on its PSN (one root cause,
// one clause). (C9-113's own tests hold that it fails the RNR NAK.)
func TestAfterAWrongRNR(t *testing.T) {
	var tr ht.Trace
	tr.Req(wire.SendOnly, 90, true)
	tr.Ack(90, 1)
	tr.Req(wire.SendFirst, 91, false)
	tr.Req(wire.SendMiddle, 92, false)
	tr.Req(wire.SendLast, 93, true)
	tr.RNR(90, 3, 1) // should name 91, the SEND it refused
	tr.NAK(91, wire.NAKPSNSequence, 1)
	s := ht.Complete()
	s.MTU = 1024
	tallies, findings := ht.AuditAll(&tr, s)
	if v := tallies[ID].Verdict(); v == reports.Fail {
		t.Errorf("C9-111 fails too: %v", findings)
	}
}

// TestBehindAfterADuplicate: on a capture that may miss packets, a
// sequence NAK naming a PSN behind one the responder had acknowledged,
// with a duplicate since, is a violation whichever explanation holds (the
// duplicate moved the expected PSN back, C9-103, or the NAK misnames it,
// C9-111/C9-121): its one finding names the three (each of their monitors
// lists it under its own clause; rules/verdicts holds the whole audit).
func TestBehindAfterADuplicate(t *testing.T) {
	const e = wire.PSN(100)
	b := dupnak.NewTraceBuilder(1024)
	for i := 6; i >= 1; i-- {
		b.Req(wire.SendOnly, e.Add(-i), i == 1)
	}
	b.Ack(e-1, 6)
	b.Send(e - 4) // a duplicate
	b.Send(e + 1)
	b.NAK(wire.NAKPSNSequence, e-3, 6)
	sink := dupnak.Audit(b.Recs, false, 1024, ID)
	if tl := dupnak.Tally(sink, ID); tl.Violations != 1 || len(sink.Findings) != 1 {
		t.Fatalf("want one violation of %s, got %+v %v", ID, tl, sink.Findings)
	}
	var ids []string
	for _, a := range sink.Findings[0].Alternatives {
		ids = append(ids, a.ID)
	}
	if want := []string{ID, "C9-121", "C9-103"}; !slices.Equal(ids, want) {
		t.Errorf("the finding names %v, want %v", ids, want)
	}
}

// TestRepeatAfterPassed runs the shared case of a sequence NAK repeated
// after the responder had passed its PSN.
func TestRepeatAfterPassed(t *testing.T) { dupnak.CheckRepeatAfterPassed(t, ID) }

// TestBehindWithTheSameCount: with no IPv4 Identification, a sequence
// NAK naming a PSN an ACK already acknowledged, carrying that ACK's MSN,
// may be an older NAK the network or the capture delayed, sent while the
// responder expected that PSN, when no message the trace shows ends at
// it (the ACK named the middle of a SEND): open. Where a message ends
// there, the count at which the responder expected it was lower, so the
// NAK was sent after the ACK: a violation.
func TestBehindWithTheSameCount(t *testing.T) {
	for _, c := range []struct {
		name string
		op   wire.Opcode // the request at PSN 11
		want reports.Verdict
	}{
		{"in the middle of a SEND: maybe an older NAK", wire.SendMiddle, reports.Indeterminate},
		{"a SEND ends there: sent after the ACK", wire.SendLast, reports.Fail},
	} {
		var tr ht.Trace
		tr.Req(wire.SendFirst, 10, false)
		tr.Req(c.op, 11, true)
		tr.Req(wire.SendOnly, 13, true)
		tr.Ack(11, 5)
		tr.NAK(11, wire.NAKPSNSequence, 5)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict(); got != c.want {
			t.Errorf("%s: %s (%+v, %v), want %s", c.name, got, tallies[ID], findings, c.want)
		}
	}
}
