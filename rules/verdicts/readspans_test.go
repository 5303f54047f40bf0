package verdicts

import (
	"strings"
	"testing"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/wire"
)

// The READ-stream model (rules/internal/responses) reads each READ's
// span from the connection's reconstruction: with the path MTU unknown
// (every response packet truncated by the capture, so no First shows the
// MTU), a READ's last PSN is still known from its Last response, and the
// response packets in a READ's span belong to that READ. These traces
// give, with the MTU unknown, the verdict the MTU would give; where only
// the requester's numbering (the next new request) bounds the span, the
// responder's count is not judged by it.

// truncated marks every response of the trace truncated by the capture:
// their payload sizes show no path MTU.
func truncated(t *ht.Trace) {
	for _, r := range t.Records {
		if r.Packet.Opcode.IsResponse() {
			r.Truncated = true
		}
	}
}

// readThenSend: SEND 100 acknowledged, a READ of 1000 bytes at 101, a
// SEND at 102 with AckReq (the requester's numbering: the READ takes one
// PSN), the READ answered by an Only (when answered), and an ACK naming
// 102. Unanswered, with the MTU unknown, the ACK may lie inside the
// READ's range (the requester's numbering may be the wrong one): C9-101
// stays undecided.
func readThenSend(answered bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Read(101, 1000)
		t.Req(wire.SendOnly, 102, true)
		if answered {
			t.ReadResp(wire.ReadResponseOnly, 101, 2, 1000)
		}
		t.Ack(102, 3)
		truncated(t)
	}
}

// replayLong: a 3 KiB READ at 101 answered First, Middle, Last (MTU
// 1024), then requested again and answered by a replay of n packets
// (First, Middles, Last, or one Only; 3 is right). One packet too many fails C9-96 (the
// Last runs past the READ's span), C9-98 (the span's last packet is a
// Middle) and C9-107 (the replay differs from this device's answers to
// new READs), with the MTU known as with only the span known; a single
// Only fails C9-96 (the earlier answer showed three) and C9-107.
func replayLong(n int) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Read(101, 3*1024)
		t.ReadStream(101, 3*1024, 1024, 2)
		t.Read(101, 3*1024)
		if n == 1 {
			t.ReadResp(wire.ReadResponseOnly, 101, 2, 1024)
			truncated(t)
			return
		}
		t.ReadResp(wire.ReadResponseFirst, 101, 2, 1024)
		for i := 1; i < n-1; i++ {
			t.ReadResp(wire.ReadResponseMiddle, wire.PSN(101+i), 0, 1024)
		}
		t.ReadResp(wire.ReadResponseLast, wire.PSN(101+n-1), 2, 1024)
		truncated(t)
	}
}

// firstLost: a 3 KiB READ at 101 (MTU 1024) and a SEND at 104 with
// AckReq (the requester's numbering closes the READ's span at 103); the
// READ's First response is lost before the capture point (or, on a
// complete trace, never sent), its Middle and Last arrive, and an ACK at
// 104. The missing First is C9-96's alone (the ACK overtook none of the
// READ's response: C9-101 holds): the Middle and Last lie in the READ's
// span, which the Last closes.
func firstLost(t *ht.Trace) {
	start(t)
	t.Read(101, 3*1024)
	t.Req(wire.SendOnly, 104, true)
	t.ReadResp(wire.ReadResponseMiddle, 102, 0, 1024)
	t.ReadResp(wire.ReadResponseLast, 103, 2, 1024)
	t.Ack(104, 3)
	truncated(t)
}

// lostMiddleRetryTrunc is lostMiddleRetry with every response truncated
// by the capture (the path MTU unknown): the Middle after the lost one
// lies in the READ's span (its Last closes it), so the retry's answer
// from 304 is no continuation of the first answer, as with the MTU known.
func lostMiddleRetryTrunc(retryLost bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		lostMiddleRetry(retryLost)(t)
		truncated(t)
	}
}

// droppedRead: SEND 100 acknowledged; SEND 101 lost before the capture
// point, so the READ at 102 reaches the responder out of sequence and is
// dropped; a sequence NAK names 101; both are resent, the READ answered by
// an Only, then a SEND at 103 acknowledged. The dropped copy of the READ
// is owed no answer (the reconstruction's Dropped): the resent one is the
// new READ, and its answer is no replay.
func droppedRead(t *ht.Trace) {
	start(t)
	t.Read(102, 1024)
	t.NAK(101, wire.NAKPSNSequence, 1)
	t.Req(wire.SendOnly, 101, false)
	t.Read(102, 1024)
	t.ReadResp(wire.ReadResponseOnly, 102, 3, 1024)
	t.Req(wire.SendOnly, 103, true)
	t.Ack(103, 4)
	truncated(t)
}

var spanCases = []struct {
	vcase
	// decided: clauses that must come out pass or fail, not
	// indeterminate (the span decides them).
	decided string
	// settled: a clause that must have no undecided instance.
	settled string
}{
	{vcase: vcase{name: "READ dropped out of sequence, resent and answered, MTU unknown", build: droppedRead, settings: capture(0)}, settled: "C9-101"},
	{vcase: vcase{name: "READ dropped out of sequence, resent and answered, MTU 1024", build: droppedRead, settings: capture(1024)}, settled: "C9-101"},
	{vcase: vcase{name: "READ First lost before the capture point, MTU unknown", build: firstLost, settings: capture(0)}},
	{vcase: vcase{name: "READ First lost before the capture point, MTU 1024", build: firstLost, settings: capture(1024)}},
	{vcase: vcase{name: "READ First never sent, MTU unknown", build: firstLost, settings: complete(0), fail: "C9-96"}},
	{vcase: vcase{name: "READ First never sent, MTU 1024", build: firstLost, settings: complete(1024), fail: "C9-96"}},
	{vcase: vcase{name: "READ response Middle lost, partial retry answered, MTU unknown", build: lostMiddleRetryTrunc(false), settings: capture(0)}},
	{vcase: vcase{name: "READ response Middle lost, partial retry request lost too, MTU unknown", build: lostMiddleRetryTrunc(true), settings: capture(0)}},
	{vcase: vcase{name: "ACK past a READ never answered, MTU unknown, the next request bounds its span", build: readThenSend(false), settings: complete(0), undecided: "C9-101"}},
	{vcase: vcase{name: "ACK past a READ answered, MTU unknown", build: readThenSend(true), settings: complete(0)}},
	{vcase: vcase{name: "ACK past a READ never answered, MTU 1024", build: readThenSend(false), settings: complete(1024), fail: "C9-101"}},
	{vcase: vcase{name: "replay one packet too long, MTU unknown, the Last closed the span", build: replayLong(4), settings: complete(0), fail: "C9-96,C9-98,C9-107"}},
	{vcase: vcase{name: "replay one packet too long, MTU 1024", build: replayLong(4), settings: complete(1024), fail: "C9-96,C9-98,C9-107"}},
	{vcase: vcase{name: "replay as one Only packet, MTU unknown", build: replayLong(1), settings: complete(0), fail: "C9-96,C9-107"}},
	{vcase: vcase{name: "replay as one Only packet, MTU 1024", build: replayLong(1), settings: complete(1024), fail: "C9-96,C9-107"}},
	{vcase: vcase{name: "replay as long as the READ, MTU unknown", build: replayLong(3), settings: complete(0)}, decided: "C9-96,C9-98"},
}

func TestReadSpanVerdicts(t *testing.T) {
	for _, c := range spanCases {
		t.Run(c.name, func(t *testing.T) {
			ts := check(t, c.vcase)
			if x := ts[c.settled]; c.settled != "" && (x == nil || x.Indeterminate > 0) {
				t.Errorf("%s: undecided instances (tally %+v)", c.settled, x)
			}
			for _, id := range strings.Split(c.decided, ",") {
				if id == "" {
					continue
				}
				if x := ts[id]; x == nil || x.Verdict() == "indeterminate" || x.Verdict() == "not-exercised" {
					t.Errorf("%s: not decided (tally %+v)", id, x)
				}
			}
		})
	}
}

// TestAckInsideAReadSeenBeforeTheMTU: an ACK inside a READ's range, sent
// while the path MTU was not yet known (the ACK seems to lie past the
// READ's one sure PSN), fails C9-95 once the READ's answer shows its
// range; its count fixes nothing then, so a later NAK is not held to it
// (the RNR NAK after it would otherwise fail C9-148 too, a second clause
// for one fault), nor is a later answer (an ATOMIC acknowledgment held
// to the count it seemed to start).
func TestAckInsideAReadSeenBeforeTheMTU(t *testing.T) {
	tr := &ht.Trace{}
	tr.Atomic(wire.FetchAdd, 31)
	tr.Read(32, 1024)
	tr.Atomic(wire.FetchAdd, 33)
	tr.AtomicAck(31, 9, 1)
	tr.ReadResp(wire.ReadResponseOnly, 32, 10, 1024)
	tr.AtomicAck(33, 11, 2)
	tr.Read(34, 0)
	tr.Read(35, 3072)
	tr.Ack(36, 11) // inside the READ at 35 (35..37 at MTU 1024)
	tr.ReadResp(wire.ReadResponseOnly, 34, 12, 0)
	tr.ReadStream(35, 3072, 1024, 13)
	tr.Atomic(wire.CompareSwap, 38)
	tr.Req(wire.SendOnly, 39, true)
	tr.AtomicAck(38, 14, 3)
	tr.RNR(39, 12, 14)
	tallies, findings := ht.AuditAll(tr, ht.Capture())
	if tallies["C9-95"].Verdict() != "fail" {
		t.Errorf("the ACK inside the READ's range does not fail C9-95: %+v", tallies["C9-95"])
	}
	for _, f := range findings {
		if f.ID == "C9-148" || strings.Contains(f.Message, "C9-148") {
			t.Errorf("C9-148 blamed for the ACK's fault: %s", f.Message)
		}
	}
}
