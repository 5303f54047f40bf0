package c9_149

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestNAKsCarryTheCurrentMSN(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Send(11, false)                 // completes silently: MSN 2
	b.Send(13, true)                  // 12 lost
	b.NAK(12, wire.NAKPSNSequence, 2) // the current MSN
	b.Send(12, false)
	b.Send(13, true)
	b.Resp(wire.Acknowledge, 13, wire.SynRNR(4), 3, 0)
	tl := rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	if tl.Checked != 2 {
		t.Fatalf("checked %d NAKs, want 2", tl.Checked)
	}
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

func TestNAKWithMSNZero(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Send(12, true)
	b.NAK(11, wire.NAKPSNSequence, 0)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "below the MSN 1")
}

func TestNAKBelowSilentCompletions(t *testing.T) {
	var b rtest.Builder
	b.Send(10, false)
	b.Send(11, false)
	b.Send(13, true)
	b.NAK(12, wire.NAKPSNSequence, 0) // two SENDs completed before PSN 12
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "2 SEND/WRITE/ATOMIC messages")
	// A capture has nothing fixing where the count started.
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
}

// TestNAKAboveWhatArrived: a NAK's MSN counts no more messages than had
// reached the responder; a sequence NAK's none at or past its PSN
// (TestNAKCountsPastItsPSN), which a remote access NAK's PSN does not
// bound.
func TestNAKAboveWhatArrived(t *testing.T) {
	trace := func(psn wire.PSN, code uint8) []*trace.Record {
		var b rtest.Builder
		b.Send(10, true)
		b.Ack(10, 1)
		b.Send(12, true)
		b.NAK(psn, code, 7)
		return b.Recs
	}
	rtest.WantViolation(t, trace(11, wire.NAKPSNSequence), rtest.Capture(0), ID, "counts a message at or past the PSN it names")
	rtest.WantViolation(t, trace(12, wire.NAKRemoteAccess), rtest.Capture(0), ID, "above the at most 3 new messages")
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 50, SetPSNs: true, RecvWQEs: 2})
		r.Send(time.Millisecond, r.SendOnly(8, true), r.SendOnly(8, false), r.WriteOnly(8, 0, false))
		r.Send(time.Millisecond, r.SendOnly(8, true)) // RNR NAK: no receive WQE left
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("nak-msn-zero")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "below the MSN")
}

// TestAfterAnMSNFault: an ACK whose MSN goes back is C9-148's fault; the
// NAK after it carries the MSN the ACKs before it lead to, and is no
// fault of its own (one root cause, one clause), as a NAK whose MSN fits
// the account begun by the wrong ACK would not be either. One that fits
// neither is.
func TestAfterAnMSNFault(t *testing.T) {
	trace := func(nakMSN uint32) *rtest.Builder {
		var b rtest.Builder
		b.AckedSends(10, 5, 6, 3) // the last goes back from 6: C9-148's fault
		b.Send(14, true)
		b.NAK(13, wire.NAKPSNSequence, nakMSN)
		return &b
	}
	rtest.WantPass(t, trace(7).Recs, rtest.Capture(0), ID) // the count before the wrong ACK
	rtest.WantPass(t, trace(3).Recs, rtest.Capture(0), ID) // the wrong ACK's
	rtest.WantViolation(t, trace(9).Recs, rtest.Capture(0), ID, "counts a message at or past the PSN it names")
}

// TestAfterAnAnswerAboveTheCount: the answer to a resent ATOMIC whose MSN
// is above the count the ACK before it fixes may replay the first answer
// (C9-148 leaves it open), or the ACK was wrong. A NAK carrying the
// answer's MSN fits the second account only: the ACK's count was too low
// (C9-148), or the NAK counts past its PSN (C9-149, or its PSN is wrong):
// illegal in every account, one finding names them all. Above the
// answer's MSN, the model's own judgement finds it too.
func TestAfterAnAnswerAboveTheCount(t *testing.T) {
	trace := func(nakMSN uint32) *rtest.Builder {
		var b rtest.Builder
		b.Send(10, true)
		b.Atomic(11)
		b.Atomic(11)
		b.Ack(10, 1)
		b.Resp(wire.AtomicAcknowledge, 11, wire.SynACK(4), 6, 0)
		b.Send(13, true)
		b.NAK(12, wire.NAKPSNSequence, nakMSN)
		return &b
	}
	for _, msn := range []uint32{6, 9} {
		tallies, findings := ht.AuditAll(&ht.Trace{Records: trace(msn).Recs}, ht.Capture())
		for _, id := range []string{ID, "C9-111", "C9-148"} {
			if tallies[id].Verdict() != reports.Fail {
				t.Errorf("NAK MSN %d: %s %s (%+v), want fail", msn, id, tallies[id].Verdict(), findings)
			}
		}
	}
}

// TestNAKBelowAReplayedAnswer: an answer that may replay one given before
// the capture began carries the MSN of then or of now, neither above the
// current one: a NAK after it carries no MSN below it.
func TestNAKBelowAReplayedAnswer(t *testing.T) {
	trace := func(nakMSN uint32) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.ReadAnswered(10, 5)
		b.Send(12, true)
		b.NAK(11, wire.NAKPSNSequence, nakMSN)
		return b.Recs
	}
	rtest.WantViolation(t, trace(3), rtest.Capture(256), ID, "below the MSN 5")
	rtest.WantPass(t, trace(5), rtest.Capture(256), ID)
}

// TestNAKAboveAfterMissedRequests: an ACK names PSN 20, past requests the
// capture missed (it shows none from 11 to 20), which all completed;
// requests it shows there later may be retransmissions the responder took
// as duplicates, or the ACK's PSN is wrong (C9-95): a NAK's MSN above the
// new messages the capture showed is open, as it is for an ACK (C9-148),
// not a violation.
func TestNAKAboveAfterMissedRequests(t *testing.T) {
	trace := func(ahead bool) []*trace.Record {
		var b rtest.Builder
		b.AckedSends(10, 1)
		if ahead {
			b.Ack(20, 2)
		}
		b.Send(11, true)
		b.Send(13, true)
		b.NAK(12, wire.NAKPSNSequence, 4)
		return b.Recs
	}
	rtest.WantOpen(t, trace(true), rtest.Capture(0), ID, "the NAK's MSN is not left open")
	// Without the ACK ahead, the NAK's MSN counts a message at or past
	// the PSN it names (TestNAKCountsPastItsPSN).
	rtest.WantViolation(t, trace(false), rtest.Capture(0), ID, "counts a message at or past the PSN it names")
}

// TestNAKCountsPastItsPSN: a sequence or RNR NAK names the PSN where the
// responder stopped, so its MSN counts no message at or past it: above the
// count of the answer before it plus the messages ending between, either
// its MSN (this clause), its PSN (the NAK's own clause) or that answer's
// count (C9-148) is wrong, one finding naming the three. A duplicate of
// an earlier request in between may have been counted (C9-148's fault,
// the count's to judge): the NAK then carries the count of the moment.
func TestNAKCountsPastItsPSN(t *testing.T) {
	trace := func(syn uint8, msn uint32, dup bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.AckedSends(10, 1, 2, 3, 4, 5, 6, 7, 8, 9)
		if dup {
			b.Send(15, true)
		}
		b.Send(19, true)
		b.Resp(wire.Acknowledge, 19, syn, msn, 0)
		return b.Recs
	}
	for _, tc := range []struct {
		syn    uint8
		clause string
	}{{wire.SynRNR(4), "C9-113"}, {wire.SynNAK(wire.NAKPSNSequence), "C9-111"}} {
		rtest.WantPass(t, trace(tc.syn, 9, false), rtest.Capture(0), ID)
		rtest.WantViolation(t, trace(tc.syn, 10, false), rtest.Capture(0), ID, "counts a message at or past the PSN it names")
		// The one finding, this monitor's, is listed under each clause
		// it names in a full audit.
		tallies, _ := ht.AuditAll(&ht.Trace{Records: trace(tc.syn, 10, false)}, rtest.Capture(0))
		for _, c := range []string{ID, tc.clause, "C9-148"} {
			if tallies[c] == nil || tallies[c].Violations != 1 {
				t.Errorf("%s: the NAK's finding is not listed once under %s", wire.SyndromeString(tc.syn), c)
			}
		}
		if f := rtest.Tally(rtest.Audit(trace(tc.syn, 10, true), rtest.Capture(0), ID), ID); f.Violations != 0 {
			t.Errorf("%s: a NAK after a duplicate that may have been counted fails", wire.SyndromeString(tc.syn))
		}
	}
}

// TestNAKCountsPastItsPSNByALaterACK: an RNR NAK, the first response of
// the capture, carries an MSN that a later ACK, covering every request up
// to its PSN, shows counted the request the NAK names: one finding on the
// NAK names C9-149, C9-113 and C9-148. With an MSN one lower it passes.
func TestNAKCountsPastItsPSNByALaterACK(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{6, true}, {5, false}} {
		b := rtest.Builder{PerSender: true}
		b.Send(10, true)
		b.Resp(wire.Acknowledge, 10, wire.SynRNR(4), tc.msn, 0)
		b.Send(10, true)
		b.Send(11, true)
		b.Ack(11, 7)
		tallies, findings := ht.AuditAll(&ht.Trace{Records: b.Recs}, rtest.Capture(0))
		for _, c := range []string{ID, "C9-113", "C9-148"} {
			if got := tallies[c] != nil && tallies[c].Violations == 1; got != tc.fail {
				t.Errorf("MSN %d: %s failed %v, want %v (%+v)", tc.msn, c, got, tc.fail, findings)
			}
		}
	}
}

// TestNAKBelowTheFirstCount: a sequence NAK whose MSN is below the first
// count the capture shows (an ACK's, which nothing before it checked)
// breaks C9-149 if that count was right, and C9-148 if the NAK's was:
// one finding names both. Below a later count, one the first had checked,
// it is C9-149's alone.
func TestNAKBelowTheFirstCount(t *testing.T) {
	trace := func(checked bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.Send(10, true)
		b.Ack(10, 7)
		if checked {
			b.Send(11, true)
			b.Ack(11, 8)
		}
		b.Send(12, true)
		b.Send(14, true)
		b.NAK(13, wire.NAKPSNSequence, 6)
		return b.Recs
	}
	for _, checked := range []bool{false, true} {
		sink := rtest.Audit(trace(checked), rtest.Capture(0), ID)
		if len(sink.Findings) == 0 {
			t.Fatalf("checked %v: no finding", checked)
		}
		var names []string
		for _, a := range sink.Findings[0].Alternatives {
			names = append(names, a.ID)
		}
		if want := map[bool]int{false: 2, true: 0}[checked]; len(names) != want || (want > 0 && names[1] != "C9-148") {
			t.Errorf("checked %v: the finding names %v: %s", checked, names, sink.Findings[0].Message)
		}
	}
}

// TestAfterAFindingNamingTheCount: an RNR NAK whose MSN counts a message
// at or past its PSN by the ACK before it is one finding naming C9-149,
// C9-113 and C9-148 (that ACK's count too low). The sequence NAK after
// it, with the same MSN, is above what reached the responder only by
// that same count: one root cause, already reported; its instance is
// left undecided, naming the finding it rests on.
func TestAfterAFindingNamingTheCount(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 100)
	b.Send(11, true)
	b.Resp(wire.Acknowledge, 11, wire.SynRNR(4), 104, 0)
	b.NAK(11, wire.NAKPSNSequence, 104)
	sink := rtest.Audit(b.Recs, rtest.Capture(0), ID)
	for _, f := range sink.Findings {
		if f.Frame != 4 {
			t.Errorf("a second finding at frame %d: %s", f.Frame, f.Message)
		}
	}
	if tl := rtest.Tally(sink, ID); tl.Violations != 1 || !strings.Contains(tl.Reason, "already reported under C9-148") {
		t.Errorf("C9-149: %d violations, reason %q; want 1, the second NAK resting on the count already reported", tl.Violations, tl.Reason)
	}
}

// TestNAKBelowAnUncheckedCount: the capture begins with a READ sent
// twice and its answer twice, which may replay one with the count of its
// first answer; the ATOMIC acknowledgment after them, six messages on with
// one request between, fits only that reading, so no bound checked its
// count from above. An RNR NAK below it breaks C9-149 if that count was
// right, and C9-148 if the NAK's was: one finding names both. After an
// ACK that bounds the count, the NAK below a count it checked is C9-149's
// alone.
func TestNAKBelowAnUncheckedCount(t *testing.T) {
	for _, checked := range []bool{false, true} {
		var tr ht.Trace
		atomicMSN := uint32(28)
		if checked {
			tr.Req(wire.SendOnly, 53, true)
			tr.Ack(53, 21)
			atomicMSN = 23
		}
		tr.Read(54, 8)
		tr.Read(54, 8)
		tr.ReadResp(wire.ReadResponseOnly, 54, 22, 8)
		tr.ReadResp(wire.ReadResponseOnly, 54, 22, 8)
		tr.Atomic(wire.CompareSwap, 55)
		tr.Req(wire.SendFirst, 56, false)
		tr.Req(wire.SendMiddle, 57, false)
		tr.Req(wire.SendLast, 58, true)
		tr.AtomicAck(55, atomicMSN, 1)
		tr.RNR(56, 5, atomicMSN-5)
		tr.IPIDs(100, 200)
		sink := rtest.Audit(tr.Records, rtest.Capture(0), ID)
		if len(sink.Findings) == 0 {
			t.Fatalf("checked %v: no finding", checked)
		}
		var names []string
		for _, a := range sink.Findings[0].Alternatives {
			names = append(names, a.ID)
		}
		if named := slices.Contains(names, "C9-148"); named == checked {
			t.Errorf("checked %v: the finding names %v: %s", checked, names, sink.Findings[0].Message)
		}
	}
}
