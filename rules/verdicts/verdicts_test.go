package verdicts

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	_ "github.com/rcconform/rcconform/rules"
	"github.com/rcconform/rcconform/wire"
)

// A case is one hand-built trace audited by every monitor.
type vcase struct {
	name     string
	build    func(t *ht.Trace)
	settings harness.Settings
	fail     string // the clause that must fail, with the clauses of the same meaning ("" none)
	// undecided, when set, is a clause that must come out indeterminate
	// (not pass) on the trace.
	undecided string
}

func capture(mtu int) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU = mtu
	return s
}

func complete(mtu int) harness.Settings {
	s := capture(mtu)
	s.Complete = true
	return s
}

// active is a complete trace whose responder's first expected PSN is
// known, as in the suite's own runs (rulekit sets it).
func active(mtu int, start wire.PSN) harness.Settings {
	s := complete(mtu)
	s.StartKnown, s.StartPSN = true, start
	return s
}

// seedWalk is the 17-step walk of the specification's Response Generation
// text: SEND 300, WRITE 301, READ 302–303 (8 KiB at a 4 KiB MTU), SEND 304
// lost before the capture point when lost, SEND 305 answered by a sequence
// NAK naming 304, 304 and 305 resent, ACK 305 with MSN 5.
func seedWalk(lost bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 300, false)
		t.Req(wire.WriteOnly, 301, false)
		t.Read(302, 8192)
		t.ReadResp(wire.ReadResponseFirst, 302, 2, 4096)
		t.ReadResp(wire.ReadResponseLast, 303, 3, 4096)
		if !lost {
			t.Req(wire.SendOnly, 304, false)
		}
		t.Req(wire.SendOnly, 305, true)
		t.NAK(304, wire.NAKPSNSequence, 3)
		t.Req(wire.SendOnly, 304, false)
		t.Req(wire.SendOnly, 305, true)
		t.Ack(305, 5)
	}
}

var cases = []vcase{
	// One root cause, one clause (issue 13): a deviation that another
	// clause governs fails only that clause.
	{name: "an ACK going back to answer a duplicate with its own PSN is C9-105's", build: dupAckBack(true), settings: complete(1024), fail: "C9-105"},
	{name: "an ACK going back with no duplicate to answer is C9-95's", build: dupAckBack(false), settings: complete(1024), fail: "C9-95"},
	{name: "every READ answer opening with a Middle is C9-97's, not the replay's", build: readFormat(wire.ReadResponseMiddle, wire.ReadResponseLast), settings: complete(1024), fail: "C9-97"},
	{name: "every READ answer closing with a Middle is C9-98's, not the replay's", build: readFormat(wire.ReadResponseFirst, wire.ReadResponseMiddle), settings: complete(1024), fail: "C9-98"},
	{name: "a new AckReq request left unanswered is C9-116's", build: ackReqLeft(false), settings: complete(1024), fail: "C9-116"},
	{name: "a duplicate AckReq request left unanswered is not C9-116's", build: ackReqLeft(true), settings: complete(1024)},
	{name: "an AckReq request beyond the expected PSN owes no answer", build: ackReqAhead, settings: complete(1024)},
	{name: "an RNR NAK repeated unprompted is §9.7.7.2's, not a wrong PSN", build: rnrRepeat, settings: complete(1024), fail: "§9.7.7.2"},
	{name: "a sequence NAK repeated after its gap was filled is the latch's, not a wrong PSN", build: seqRepeat, settings: active(1024, 100), fail: "C9-114,C9-122"},
	{name: "a READ failing mid-response NAKed with its own PSN is C9-100's, not C9-124's", build: readFailNAK(101), settings: complete(1024), fail: "C9-100,C9-112"},
	{name: "a READ failing mid-response NAKed at the refused packet", build: readFailNAK(103), settings: complete(1024)},
	{name: "a sequence NAK inside a READ's response range is no READ failure", build: readSeqNAK, settings: complete(1024), fail: "C9-111,C9-121"},
	{name: "ACKs one PSN ahead are C9-95's, not the MSN's", build: ackAhead, settings: complete(1024), fail: "C9-95"},
	{name: "an ACK answering AckReq with an MSN too low is C9-148's", build: ackMSNLow, settings: complete(1024), fail: "C9-148"},
	{name: "READ responses numbered one PSN late are C9-96's only", build: readSkew, settings: complete(1024), fail: "C9-96"},
	{name: "ATOMIC Acknowledges one PSN late are o9-58's only", build: atomicSkew, settings: complete(1024), fail: "o9-58"},
	{name: "seed walk, 304 lost before the capture point, MTU unknown", build: seedWalk(true), settings: capture(0)},
	{name: "seed walk, 304 lost before the capture point, MTU 4096", build: seedWalk(true), settings: capture(4096)},
	{name: "seed walk, capture at the responder", build: seedWalk(true), settings: complete(4096)},
	{name: "READ response Middle lost before the capture point", build: lostMiddle(true), settings: capture(1024)},
	{name: "READ response Middle lost before the capture point, MTU unknown", build: lostMiddle(true), settings: capture(0)},
	{name: "READ responses all seen", build: lostMiddle(false), settings: capture(1024)},
	{name: "READ response Middle lost, partial retry answered", build: lostMiddleRetry(false), settings: capture(1024)},
	{name: "READ response Middle lost, partial retry request lost too", build: lostMiddleRetry(true), settings: capture(1024)},
	// With the path MTU not told to the audit, the READ's span is known
	// from its Last response (and the MTU from its First): the partial
	// retry is a resend of the READ, judged as one.
	{name: "READ response Middle lost, partial retry answered, MTU unknown", build: lostMiddleRetry(false), settings: capture(0)},
	{name: "partial READ retry that is not the rest of the READ, MTU unknown", build: partialRetry(false, 1024), settings: capture(0), fail: "go-back-n"},
	{name: "partial READ retry that is not the rest of the READ", build: partialRetry(false, 1024), settings: capture(1024), fail: "go-back-n"},
	// An ACK passing a READ whose First alone arrived is an implied NAK
	// even with the MTU not told: the READ's span is learnt from its First.
	{name: "READ passed by an ACK, then a new request, MTU unknown", build: impliedRead(false), settings: capture(0), undecided: "§9.7.5.1.2"},
	{name: "READ passed by an ACK, re-issued, MTU unknown", build: impliedRead(true), settings: capture(0)},
	{name: "late ACK reordered after the sender", build: lateAck(true), settings: capture(0)},
	{name: "ACKs in order", build: lateAck(false), settings: capture(0)},
	{name: "late READ response reordered after the sender", build: lateReadResp, settings: capture(1024)},

	{name: "sequence NAK behind the expected PSN", build: seqNAK(101), settings: complete(1024), fail: "C9-111,C9-121"},
	{name: "sequence NAK beyond every request", build: seqNAK(105), settings: complete(1024), fail: "C9-111,C9-121"},
	{name: "sequence NAK at the expected PSN", build: seqNAK(102), settings: complete(1024)},
	// Loss after the capture point may leave the responder expecting
	// 101, but then its MSN counts no SEND at 101: one finding names the
	// NAK's PSN, its MSN and the ACK's count.
	{name: "sequence NAK behind, capture may miss loss after it", build: seqNAK(101), settings: capture(1024), fail: "C9-111,C9-121,C9-148,C9-149"},
	// Behind a PSN the responder acknowledged, after a duplicate: one
	// finding names C9-111 (C9-121) and C9-103, a duplicate that moved
	// the expected PSN back, and nothing else fails (o9-67 neither, where
	// the duplicate is an ATOMIC: a sequence NAK names the expected PSN,
	// not the request it answers).
	{name: "sequence NAK behind an acknowledged PSN after a duplicate, capture", build: seqNAKAfterDup(wire.SendOnly), settings: capture(1024), fail: "C9-103,C9-111,C9-121"},
	{name: "sequence NAK at a duplicate ATOMIC's PSN behind an acknowledged PSN, capture", build: seqNAKAfterDup(wire.FetchAdd), settings: capture(1024), fail: "C9-103,C9-111,C9-121"},
	// Its PSN again after the responder acknowledged it: one finding
	// names C9-111 (C9-121) and the latch, C9-114 (C9-122).
	{name: "sequence NAK repeated after its PSN was acknowledged, capture", build: seqNAKAgain, settings: capture(1024), fail: "C9-111,C9-114,C9-121,C9-122"},
	{name: "invalid request NAK behind the expected PSN", build: invNAK(100), settings: complete(1024), fail: "C9-111,C9-125"},
	{name: "invalid request NAK past the request (an undecoded packet may be there)", build: invNAK(102), settings: complete(1024), undecided: "C9-125"},
	{name: "invalid request NAK at the request", build: invNAK(101), settings: complete(1024)},
	{name: "remote access NAK naming no request", build: raNAK(102), settings: complete(1024), fail: "C9-124"},
	{name: "remote access NAK at the request", build: raNAK(101), settings: complete(1024)},
	{name: "RNR NAK naming no request", build: rnrNAK(102), settings: complete(1024), fail: "C9-113"},
	{name: "RNR NAK at the request", build: rnrNAK(101), settings: complete(1024)},
	{name: "NAK about a duplicate", build: dupNAK(true), settings: complete(1024), fail: "C9-106,C9-115"},
	{name: "duplicate answered by an ACK", build: dupNAK(false), settings: complete(1024)},
	{name: "READ whose MSN never moves, MTU unknown", build: readMSN(1), settings: complete(0), fail: "C9-148"},
	{name: "READ counted, MTU unknown", build: readMSN(2), settings: complete(0)},
	{name: "ACK naming a request never sent", build: ackNever(103), settings: complete(1024), fail: "C9-95"},
	{name: "ACK naming the newest request", build: ackNever(101), settings: complete(1024)},
	{name: "Atomic Acknowledge with the wrong PSN", build: atomicAck(102), settings: complete(1024), fail: "o9-58"},
	{name: "Atomic Acknowledge at the ATOMIC's PSN", build: atomicAck(101), settings: complete(1024)},
	{name: "duplicate READ replay starting late", build: dupRead(101), settings: complete(1024), fail: "C9-107"},
	{name: "duplicate READ replay from its PSN", build: dupRead(100), settings: complete(1024)},
	{name: "RNR resend sooner than the delay", build: rnrResend(2 * time.Millisecond), settings: rnrSettings(7), fail: "rnr-retry"},
	{name: "RNR resend after the delay", build: rnrResend(12 * time.Millisecond), settings: rnrSettings(7)},
	{name: "retry after a remote access NAK", build: retryAfterRA(true), settings: complete(1024), fail: "§9.9.2.2"},
	{name: "no retry after a remote access NAK", build: retryAfterRA(false), settings: complete(1024)},
	{name: "more RNR retries than allowed", build: rnrRetries(4), settings: rnrSettings(2), fail: "rnr-retry"},
	{name: "RNR retries as allowed", build: rnrRetries(2), settings: rnrSettings(2)},
	{name: "go-back-N skipping the NAK's PSN", build: gbn(true), settings: complete(1024), fail: "go-back-n"},
	{name: "go-back-N from the NAK's PSN", build: gbn(false), settings: complete(1024)},

	// Captures without --complete that show the connection's start (its
	// first request acknowledged with MSN 1): the MSN count starts at 0,
	// but a request that reached the responder may still be missing (a
	// capture drops frames without always saying so), so a response
	// naming a PSN no request in the capture carried stays undecided.
	{name: "capture from the start: READ whose MSN never moves, MTU unknown", build: readMSN(1), settings: capture(0), fail: "C9-148"},
	{name: "capture from the start: READ counted, MTU unknown", build: readMSN(2), settings: capture(0)},
	{name: "capture from the start: Atomic Acknowledge with the wrong PSN", build: atomicAck(102), settings: capture(0), undecided: "o9-58"},
	{name: "capture from the start: Atomic Acknowledge at the ATOMIC's PSN", build: atomicAck(101), settings: capture(0)},
	{name: "capture from the start: ACK naming a request never sent", build: ackNever(103), settings: capture(0), undecided: "C9-95"},
	{name: "capture from the start: go-back-N skipping the NAK's PSN", build: gbn(true), settings: capture(0), undecided: "go-back-n"},
	{name: "capture from the start: more RNR retries than allowed", build: rnrRetries(4), settings: rnrCapture(2), undecided: "rnr-retry"},
	{name: "capture from the start: RNR resend sooner than the delay", build: rnrResend(2 * time.Millisecond), settings: rnrCapture(7), undecided: "rnr-retry"},
	{name: "capture from the start: retry after a remote access NAK", build: retryAfterRA(true), settings: capture(0), undecided: "§9.9.2.2"},
	{name: "capture from the start: RNR NAK naming no request", build: rnrNAK(102), settings: capture(0), undecided: "C9-113"},
	{name: "capture from the start: remote access NAK naming no request", build: raNAK(102), settings: capture(0), undecided: "C9-124"},

	// The expected-PSN window is the reconstruction's: an RNR NAK rolls
	// the responder's expected PSN back to the refused request, so its
	// resend is new (it was a duplicate to the old reconstruction, and
	// C9-116 passed it unanswered).
	{name: "resend after an RNR NAK left unanswered is C9-116's", build: rnrThenResend(false), settings: complete(1024), fail: "C9-116"},
	{name: "resend after an RNR NAK answered", build: rnrThenResend(true), settings: complete(1024)},

	// A NAK naming a PSN behind the one an earlier sequence NAK named:
	// the responder's expected PSN had passed it (it never goes back). On
	// a capture, a resend the capture missed could still explain it (a
	// duplicate, another clause's matter): indeterminate, not pass.
	{name: "RNR NAK behind an earlier sequence NAK's PSN", build: nakBehindSeqNAK(false), settings: capture(1024), undecided: "C9-113"},
	{name: "remote access NAK behind an earlier sequence NAK's PSN", build: nakBehindSeqNAK(true), settings: capture(1024), undecided: "C9-124"},

	// Found by the metamorphic tests (cut start): requests sent before
	// the capture began, after the PSN of the first response it shows,
	// complete unseen and count in the MSN.
	{name: "capture starting after requests the responder later acknowledges", build: startedLate, settings: capture(0)},
	{name: "capture starting after requests, with a request lost before the responder", build: startedLateLoss, settings: capture(0)},
	// Found by the metamorphic tests (capture loss): a READ response no
	// READ in the capture explains shows a READ the capture dropped,
	// which the responder counted.
	{name: "capture from the start: a READ the capture dropped, its response seen", build: readDropped, settings: capture(1024)},
	{name: "capture from the start: an ATOMIC the capture dropped, its Acknowledge seen", build: atomicDropped, settings: capture(1024)},
	{name: "capture from the start: a READ the capture dropped, only Middles of its response seen", build: readMiddleOnly, settings: capture(1024)},
	{name: "capture from the start: a replayed ATOMIC Acknowledge counting a newer ATOMIC the capture dropped", build: replayCountsDropped, settings: capture(1024)},
	{name: "capture from the start: a sequence NAK beyond requests the capture dropped", build: nakPastDropped, settings: capture(1024)},
	// Found by the metamorphic tests (capture loss): a duplicate READ the
	// capture dropped explains READ response packets that an ACK passed,
	// or an answer starting inside an earlier one.
	{name: "an ACK past a READ, then a replay answering a duplicate the capture dropped", build: replayAfterAck, settings: capture(1024), undecided: "C9-101"},
	{name: "a partial READ retry the capture dropped, answered inside the READ's response", build: partialDropped, settings: capture(1024), undecided: "C9-96"},

	// Found by the metamorphic tests (duplicated frames): a copy of an
	// earlier packet, its IPv4 ID included, recorded after newer ones is
	// the same transmission, not a second one.
	{name: "an ACK recorded again after a newer one", build: ackCopied, settings: complete(0)},
	{name: "a request recorded again after its RNR NAK and resend", build: reqCopied, settings: rnrTimed(7, 14)},
	{name: "a READ answered again after an answer seen from its middle", build: readAnsweredTwice, settings: capture(1024)},
	{name: "a READ answered again after an answer seen from its middle, trace complete", build: readAnsweredTwice, settings: complete(1024), fail: "C9-148,C9-96"},
	{name: "a READ resent after a request the capture dropped, answered with the MSN counting it", build: readResentPastDropped, settings: capture(1024), undecided: "C9-148"},
	{name: "a READ answered with an MSN too high, trace complete", build: readResentPastDropped, settings: complete(1024), fail: "C9-148"},
	{name: "a READ answered with an MSN too high, the PSN after it lost before the responder", build: readMSNHighLostBefore, settings: capture(1024), fail: "C9-148"},
	{name: "a SEND acknowledged before the capture shows it, then resent", build: ackBeforeResend, settings: capture(1024)},
	{name: "an IPv6 ACK recorded again after a newer one is undecided, not a violation", build: ackRepeated(false, false), settings: complete(0), undecided: "C9-95"},
	{name: "an ACK repeated after a newer one with its sender's one fixed ID is undecided", build: ackRepeated(true, true), settings: complete(0), undecided: "C9-95"},
	{name: "an ACK sent again after a newer one with a new IPv4 ID goes back", build: ackRepeated(true, false), settings: complete(0), fail: "C9-148,C9-95"},

	{name: "unanswered AckReq, complete", build: unanswered(1, false), settings: complete(0), fail: "C9-116"},
	{name: "unanswered AckReq, capture showing the connection's start", build: unanswered(1, false), settings: capture(0), undecided: "C9-116"},
	{name: "unanswered AckReq, mid-connection capture, responder answering on", build: unanswered(7, true), settings: capture(0), undecided: "C9-116"},
}

// startedLate: a capture that began after SENDs 101 and 102 were sent:
// SEND 103 (AckReq), the ACK of 100 (MSN 10), then the ACK of 103 with
// MSN 13, which counts 101 and 102.
func startedLate(t *ht.Trace) {
	t.Req(wire.SendOnly, 103, true)
	t.Ack(100, 10)
	t.Ack(103, 13)
}

// readDropped: SEND 100 acknowledged (MSN 1), a READ at 101 the capture
// dropped answered by a READ response Only (MSN 2), then SEND 102
// acknowledged with MSN 3, which counts the READ.
func readDropped(t *ht.Trace) {
	start(t)
	t.ReadResp(wire.ReadResponseOnly, 101, 2, 512)
	t.Req(wire.SendOnly, 102, true)
	t.Ack(102, 3)
}

// ackCopied: SENDs 101 and 102 acknowledged in turn, then the ACK of 101
// once more with its IPv4 ID: a copy, not an ACK going back.
func ackCopied(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 101, true)
	t.Ack(101, 2)
	t.Req(wire.SendOnly, 102, true)
	t.Ack(102, 3)
	t.IPIDs(1, 1)
	t.Recopy(3)
}

// readAnsweredTwice: SEND 100 acknowledged (MSN 1), a 4 KiB READ at 101
// (MTU 1024) whose answer the capture shows only from its Last (MSN 2),
// then a second whole answer with MSN 3: a duplicate of the READ the
// capture dropped, after a new request it dropped too, replayed with the
// MSN of the moment.
func readAnsweredTwice(t *ht.Trace) {
	start(t)
	t.Read(101, 4*1024)
	t.ReadResp(wire.ReadResponseLast, 104, 2, 1024)
	t.ReadStream(101, 4*1024, 1024, 3)
}

// readResentPastDropped: SEND 100 acknowledged (MSN 1); a READ at 101
// whose first transmission, a SEND 102 after it and the READ's answer
// the capture dropped; the READ resent and answered (a duplicate, with
// the MSN of the moment, 3); SEND 103 acknowledged with MSN 4. The
// capture shows the READ once and SEND 102 missing only from SEND 103 on.
func readResentPastDropped(t *ht.Trace) {
	start(t)
	t.Read(101, 1024)
	t.ReadResp(wire.ReadResponseOnly, 101, 3, 1024)
	t.Req(wire.SendOnly, 103, true)
	t.Ack(103, 4)
}

// readMSNHighLostBefore: readResentPastDropped, but a sequence NAK
// naming 102 shows that SEND 102 never reached the responder before it is
// resent: the READ's MSN of 3 counted a message that had not completed.
// The NAK's MSN of 2 is the count before that fault, so right: C9-148
// alone fails (one root cause, one clause).
func readMSNHighLostBefore(t *ht.Trace) {
	start(t)
	t.Read(101, 1024)
	t.ReadResp(wire.ReadResponseOnly, 101, 3, 1024)
	t.Req(wire.SendOnly, 103, true)
	t.NAK(102, wire.NAKPSNSequence, 2)
	t.Req(wire.SendOnly, 102, false)
	t.Req(wire.SendOnly, 103, true)
	t.Ack(103, 4)
}

// ackBeforeResend: SENDs 3000 to 3004, SEND 3005 dropped by the capture
// and acknowledged (MSN 6), resent and acknowledged again, then SEND 3006
// acknowledged with MSN 7. The ACK of 3005 shows the connection's start
// (its MSN counts every PSN from the first request) only once the
// capture's missing 3005 has been counted as completed unseen.
func ackBeforeResend(t *ht.Trace) {
	for p := wire.PSN(3000); p < 3005; p++ {
		t.Req(wire.SendOnly, p, false)
	}
	t.Ack(3005, 6)
	t.Req(wire.SendOnly, 3005, true)
	t.Ack(3005, 6)
	t.Wait(100 * time.Millisecond)
	t.Req(wire.SendOnly, 3006, true)
	t.Ack(3006, 7)
}

// ackRepeated: SENDs 101 and 102 acknowledged in turn, then the ACK of
// 101 once more, byte for byte. Without IPv4 IDs (IPv6), or from a
// responder whose ID stays fixed, it may be a copy the capture or the
// network made or the responder sending it again (an ACK going back,
// C9-95, with its MSN, C9-148): undecided. With a new ID from a
// responder whose IDs count up it is a second transmission.
func ackRepeated(ipv4, fixedID bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		ackCopied(t)
		if !ipv4 {
			for _, r := range t.Records {
				r.HasIPID, r.IPID = false, 0
			}
			return
		}
		last := t.Records[len(t.Records)-1]
		for _, r := range t.Records {
			if fixedID && r.Dir == last.Dir {
				r.IPID = 7
			}
		}
		if !fixedID {
			last.IPID = t.Records[len(t.Records)-2].IPID + 1
		}
	}
}

// reqCopied: SEND 101 refused by an RNR NAK (timer code 20: 10 ms),
// resent 12 ms later and refused again, then the first transmission of
// 101 recorded once more right after the second NAK, then the third
// transmission in time and its ACK.
func reqCopied(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 101, true)
	t.RNR(101, 20, 1)
	t.Wait(12 * time.Millisecond)
	t.Req(wire.SendOnly, 101, true)
	t.RNR(101, 20, 1)
	t.IPIDs(1, 1)
	t.Recopy(2)
	t.Wait(12 * time.Millisecond)
	t.Req(wire.SendOnly, 101, true).IPID = 4
	t.Ack(101, 2).IPID = 5
	for _, r := range t.Records[len(t.Records)-2:] {
		r.HasIPID = true
	}
}

// atomicDropped: SEND 100 acknowledged (MSN 1), an ATOMIC at 101 the
// capture dropped answered by its ATOMIC Acknowledge (MSN 2), then SEND
// 102 acknowledged with MSN 3, which counts the ATOMIC.
func atomicDropped(t *ht.Trace) {
	start(t)
	t.AtomicAck(101, 2, 7)
	t.Req(wire.SendOnly, 102, true)
	t.Ack(102, 3)
}

// replayAfterAck: a 4 KiB READ at 101 (MTU 1024) and a WRITE at 105;
// the READ's First, the ACK of 105 (MSN 3), then, answering a duplicate
// of the READ the capture dropped (the First of that answer dropped
// too), Middles and a Last with MSN 3.
func replayAfterAck(t *ht.Trace) {
	start(t)
	t.Read(101, 4*1024)
	t.Req(wire.WriteOnly, 105, true)
	t.ReadResp(wire.ReadResponseFirst, 101, 2, 1024)
	t.Ack(105, 3)
	t.ReadResp(wire.ReadResponseMiddle, 102, 0, 1024)
	t.ReadResp(wire.ReadResponseMiddle, 103, 0, 1024)
	t.ReadResp(wire.ReadResponseLast, 104, 3, 1024)
}

// partialDropped: a 2 KiB READ at 101 (MTU 1024) whose First arrives;
// the requester re-issues it from 102 (dropped by the capture), answered
// by an Only at 102.
func partialDropped(t *ht.Trace) {
	start(t)
	t.Read(101, 2*1024)
	t.ReadResp(wire.ReadResponseFirst, 101, 2, 1024)
	t.ReadResp(wire.ReadResponseOnly, 102, 2, 1024)
}

// readMiddleOnly: a 4 KiB READ at 100 (MTU 1024) answered (MSN 1); of a
// second one at 104 only Middles of its response are in the capture;
// then a duplicate of the first READ, replayed with MSN 2, which counts
// the second.
func readMiddleOnly(t *ht.Trace) {
	t.Read(100, 4*1024)
	t.ReadStream(100, 4*1024, 1024, 1)
	t.ReadResp(wire.ReadResponseMiddle, 105, 0, 1024)
	t.ReadResp(wire.ReadResponseMiddle, 106, 0, 1024)
	t.Read(100, 4*1024)
	t.ReadStream(100, 4*1024, 1024, 2)
}

// startedLateLoss: a capture that began after SEND 104 was sent: SENDs
// 105 and 107 (106 lost before the responder), the ACKs of 103 (MSN 4),
// 104 and 105, a sequence NAK naming 106, 106 and 107 resent, and the
// ACK of 107 with MSN 8, which counts 104.
func startedLateLoss(t *ht.Trace) {
	t.Req(wire.SendOnly, 105, false)
	t.Req(wire.SendOnly, 107, false)
	t.Ack(103, 4)
	t.Ack(104, 5)
	t.Ack(105, 6)
	t.NAK(106, wire.NAKPSNSequence, 6)
	t.Req(wire.SendOnly, 106, false)
	t.Req(wire.SendOnly, 107, true)
	t.Ack(107, 8)
}

// replayCountsDropped: SEND 100 acknowledged (MSN 1), FetchAdd 101
// acknowledged (MSN 2), an ATOMIC at 102 the capture dropped, then a
// duplicate of 101 whose replayed Acknowledge carries the MSN of then, 3.
func replayCountsDropped(t *ht.Trace) {
	start(t)
	t.Atomic(wire.FetchAdd, 101)
	t.AtomicAck(101, 2, 7)
	t.Atomic(wire.FetchAdd, 101)
	t.AtomicAck(101, 3, 7)
}

// nakPastDropped: SEND 100 acknowledged (MSN 1); SENDs 101 and 102 the
// capture dropped; a sequence NAK naming 103 with MSN 3.
func nakPastDropped(t *ht.Trace) {
	start(t)
	t.NAK(103, wire.NAKPSNSequence, 3)
}

// dupAckBack: SENDs 101 and 102 acknowledged; when dup, a duplicate of
// 101 follows, answered by an ACK with its own PSN 101 (C9-105 wants the
// newest completed PSN, 102); otherwise the ACK of 101 follows with no
// request to answer.
func dupAckBack(dup bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		t.Ack(101, 2)
		t.Req(wire.SendOnly, 102, true)
		t.Ack(102, 3)
		if dup {
			t.Req(wire.SendOnly, 101, true)
		}
		t.Ack(101, 3)
	}
}

// readFormat: a 3 KiB READ at 100 (MTU 1024) answered first, last and a
// Middle between, then its duplicate answered the same way: a device
// whose every READ answer has the wrong first or last opcode.
func readFormat(first, last wire.Opcode) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		for range 2 {
			t.Read(100, 3*1024)
			t.ReadResp(first, 100, 1, 1024)
			t.ReadResp(wire.ReadResponseMiddle, 101, 0, 1024)
			t.ReadResp(last, 102, 1, 1024)
		}
	}
}

// ackReqLeft: SEND 101 with AckReq acknowledged, then SEND 102 with
// AckReq (or, when dup, a duplicate of 100 with AckReq) never answered.
func ackReqLeft(dup bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		t.Ack(101, 2)
		if dup {
			t.Req(wire.SendOnly, 100, true)
		} else {
			t.Req(wire.SendOnly, 102, true)
		}
	}
}

// ackReqAhead: SEND 102 with AckReq arrives while the responder expects
// 101: it is dropped, and owes no answer under C9-116 (the sequence NAK
// the gap calls for is C9-121's matter).
func ackReqAhead(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 101, false)
	t.Ack(101, 2)
	t.Req(wire.SendOnly, 103, true)
}

// rnrRepeat: SEND 101 refused with an RNR NAK naming it, and the same
// RNR NAK again 1 ms later with no request to prompt it, sent again (a
// new IPv4 ID: without one it could be a copy the capture made).
func rnrRepeat(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 101, true)
	t.RNR(101, 1, 1)
	t.Wait(time.Millisecond)
	t.RNR(101, 1, 1)
	t.IPIDs(1, 1)
}

// seqRepeat: a 4-packet SEND at 101 whose First is lost before the
// responder, answered by a sequence NAK naming 101, resent whole and
// ACKed, a WRITE ACKed, and then the same NAK again: a second NAK for a
// gap already filled, whose PSN is stale by then.
func seqRepeat(t *ht.Trace) {
	start(t)
	t.Req(wire.SendMiddle, 102, false)
	t.Req(wire.SendMiddle, 103, false)
	t.Req(wire.SendLast, 104, true)
	t.NAK(101, wire.NAKPSNSequence, 1)
	t.Req(wire.SendFirst, 101, false)
	t.Req(wire.SendMiddle, 102, false)
	t.Req(wire.SendMiddle, 103, false)
	t.Req(wire.SendLast, 104, true)
	t.Ack(104, 2)
	t.Req(wire.WriteOnly, 105, true)
	t.Ack(105, 3)
	t.Wait(time.Millisecond)
	t.NAK(101, wire.NAKPSNSequence, 3)
}

// readFailNAK: a 4 KiB READ at 101 (MTU 1024) whose response stops after
// First and Middle (PSNs 101, 102), NAKed for a remote access error
// naming x (103, the refused packet's PSN, is right).
func readFailNAK(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Read(101, 4*1024)
		t.ReadResp(wire.ReadResponseFirst, 101, 2, 1024)
		t.ReadResp(wire.ReadResponseMiddle, 102, 0, 1024)
		t.NAK(x, wire.NAKRemoteAccess, 2)
	}
}

// readSeqNAK: a 4 KiB READ at 101 (MTU 1024) answered with First and
// Middle, then a SEND 105 drawing a sequence NAK that names 102, inside
// the READ's range (no legal expected PSN: C9-111/C9-121's fault).
func readSeqNAK(t *ht.Trace) {
	start(t)
	t.Read(101, 4*1024)
	t.ReadResp(wire.ReadResponseFirst, 101, 2, 1024)
	t.ReadResp(wire.ReadResponseMiddle, 102, 0, 1024)
	t.Req(wire.SendOnly, 105, true)
	t.NAK(102, wire.NAKPSNSequence, 2)
}

// ackAhead: SENDs 101 (AckReq) and 102 answered by an ACK naming 102
// with MSN 2, then SEND 103 (AckReq) answered by an ACK naming 104, which
// no request carried: each ACK one PSN past the request it answers.
func ackAhead(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 101, true)
	t.Req(wire.SendOnly, 102, false)
	t.Ack(102, 2)
	t.Req(wire.SendOnly, 103, true)
	t.Ack(104, 4)
}

// ackMSNLow: SEND 101 with AckReq answered by an ACK naming it whose MSN
// did not move.
func ackMSNLow(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 101, true)
	t.Ack(101, 1)
}

// readSkew: a 0-byte READ at 101 and a WRITE at 102 (AckReq); the READ's
// Only response carries 102, then the WRITE is acknowledged.
func readSkew(t *ht.Trace) {
	start(t)
	t.Read(101, 0)
	t.Req(wire.WriteOnly, 102, true)
	t.ReadResp(wire.ReadResponseOnly, 102, 2, 0)
	t.Ack(102, 3)
}

// atomicSkew: ATOMICs at 101 and 102, acknowledged at 102 and 103.
func atomicSkew(t *ht.Trace) {
	start(t)
	t.Atomic(wire.FetchAdd, 101)
	t.Atomic(wire.FetchAdd, 102)
	t.AtomicAck(102, 2, 7)
	t.AtomicAck(103, 3, 8)
}

// unanswered: SEND 200 acknowledged with MSN msn (1: the connection's
// first message), SEND 201 with AckReq never covered; when more, a
// duplicate of 200 is answered after it.
func unanswered(msn uint32, more bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 200, true)
		t.Ack(200, msn)
		t.Req(wire.SendOnly, 201, true)
		if more {
			t.Req(wire.SendOnly, 200, true)
			t.Ack(200, msn)
		}
	}
}

func rnrCapture(retries int) harness.Settings {
	s := capture(0)
	s.RNRRetry = retries
	return s
}

// rnrTimed is rnrSettings with the local ACK timeout known.
func rnrTimed(retries, timeout int) harness.Settings {
	s := rnrSettings(retries)
	s.AckTimeout = timeout
	return s
}

func rnrSettings(retries int) harness.Settings {
	s := complete(1024)
	s.RNRRetry = retries
	return s
}

// start is an established connection: SEND 100 acknowledged with MSN 1.
func start(t *ht.Trace) {
	t.Req(wire.SendOnly, 100, true)
	t.Ack(100, 1)
}

// rnrThenResend: SEND 101 with AckReq refused by an RNR NAK, resent 1 ms
// later (past the 10 µs delay) and acknowledged when answered.
func rnrThenResend(answered bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		t.RNR(101, 1, 1)
		t.Wait(time.Millisecond)
		t.Req(wire.SendOnly, 101, true)
		if answered {
			t.Ack(101, 2)
		}
	}
}

// nakBehindSeqNAK: SENDs 101 and 103 (102 lost), a sequence NAK naming
// 102, then an RNR NAK (or a remote access NAK) naming 101.
func nakBehindSeqNAK(ra bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, false)
		t.Req(wire.SendOnly, 103, true)
		t.NAK(102, wire.NAKPSNSequence, 2)
		if ra {
			t.NAK(101, wire.NAKRemoteAccess, 2)
		} else {
			t.RNR(101, 1, 2)
		}
	}
}

// seqNAK: SENDs 101 and 103 (102 lost before the responder); the
// sequence NAK names x (102 is right).
func seqNAK(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, false)
		t.Req(wire.SendOnly, 103, true)
		t.NAK(x, wire.NAKPSNSequence, 2)
	}
}

// seqNAKAfterDup: a request of opcode op (a SEND or an ATOMIC) at 100
// and a SEND at 101, both acknowledged; op at 100 again, a duplicate
// answered (a SEND's by the newest ACK, an ATOMIC's with its saved
// result), a SEND at 103, and a sequence NAK naming 100.
func seqNAKAfterDup(op wire.Opcode) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		// once sends op at 100 and answers it: a SEND by the ACK of
		// newest, an ATOMIC with its (saved) result.
		once := func(newest wire.PSN, msn uint32) {
			if op == wire.SendOnly {
				t.Req(op, 100, true)
				t.Ack(newest, msn)
				return
			}
			t.Atomic(op, 100)
			t.AtomicAck(100, msn, 7)
		}
		once(100, 1)
		t.Req(wire.SendOnly, 101, true)
		t.Ack(101, 2)
		once(101, 2)
		t.Req(wire.SendOnly, 103, true)
		t.NAK(100, wire.NAKPSNSequence, 2)
		t.IPIDs(1000, 5000)
	}
}

// seqNAKAgain: SEND 102 ahead of the expected PSN 101, NAKed; 101 and
// 102 resent and acknowledged; the sequence NAK naming 101 again.
func seqNAKAgain(t *ht.Trace) {
	start(t)
	t.Req(wire.SendOnly, 102, true)
	t.NAK(101, wire.NAKPSNSequence, 1)
	t.Req(wire.SendOnly, 101, false)
	t.Req(wire.SendOnly, 102, true)
	t.Ack(102, 3)
	t.NAK(101, wire.NAKPSNSequence, 3)
	t.IPIDs(1000, 5000)
}

// invNAK: a SEND Middle with no message in progress at the expected PSN
// 101, NAKed as an invalid request naming x.
func invNAK(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendMiddle, 101, true)
		t.NAK(x, wire.NAKInvalidRequest, 1)
	}
}

// raNAK: a WRITE at 101 NAKed for a remote access error naming x.
func raNAK(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.WriteOnly, 101, true)
		t.NAK(x, wire.NAKRemoteAccess, 1)
	}
}

// rnrNAK: a SEND at 101 refused with an RNR NAK naming x.
func rnrNAK(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		t.RNR(x, 1, 1)
	}
}

// dupNAK: a duplicate of SEND 100 answered with a remote access NAK
// (nak) or with an ACK of the newest completed request.
func dupNAK(nak bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		t.Ack(101, 2)
		t.Req(wire.SendOnly, 100, true)
		if nak {
			t.NAK(100, wire.NAKRemoteAccess, 2)
		} else {
			t.Ack(101, 2)
		}
	}
}

// readMSN: a 3 KiB READ at 101 (MTU 1024, not known to the audit)
// answered with First MSN 1 and Last MSN last (2 is right).
func readMSN(last uint32) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Read(101, 3*1024)
		t.ReadResp(wire.ReadResponseFirst, 101, 1, 1024)
		t.ReadResp(wire.ReadResponseMiddle, 102, 0, 1024)
		t.ReadResp(wire.ReadResponseLast, 103, last, 1024)
	}
}

// ackNever: SEND 101 acknowledged by an ACK naming x.
func ackNever(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		t.Ack(x, 2)
	}
}

// atomicAck: a Fetch & Add at 101 answered by an Atomic Acknowledge
// naming x.
func atomicAck(x wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Atomic(wire.FetchAdd, 101)
		t.AtomicAck(x, 2, 7)
	}
}

// dupRead: a 3 KiB READ at 100 answered, then again as a duplicate whose
// replay begins at from with First.
func dupRead(from wire.PSN) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Read(100, 3*1024)
		t.ReadStream(100, 3*1024, 1024, 1)
		t.Read(100, 3*1024)
		if from == 100 {
			t.ReadStream(100, 3*1024, 1024, 1)
			return
		}
		t.ReadResp(wire.ReadResponseFirst, from, 1, 1024)
		t.ReadResp(wire.ReadResponseLast, 102, 1, 1024)
	}
}

// retryAfterRA: a WRITE at 101 NAKed for a remote access error, sent
// again 5 ms later when retry.
func retryAfterRA(retry bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.WriteOnly, 101, true)
		t.NAK(101, wire.NAKRemoteAccess, 1)
		if retry {
			t.Wait(5 * time.Millisecond)
			t.Req(wire.WriteOnly, 101, true)
		}
		t.IPIDs(1, 1)
	}
}

// rnrResends: SEND 101 refused n times by RNR NAKs with timer code
// code, resent wait after each, then acknowledged.
func rnrResends(code uint8, n int, wait time.Duration) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 101, true)
		for range n {
			t.RNR(101, code, 1)
			t.Wait(wait)
			t.Req(wire.SendOnly, 101, true)
		}
		t.Ack(101, 2)
		t.IPIDs(1, 1)
	}
}

// rnrResend: one RNR NAK with timer code 20 (10.24 ms), the resend d
// after it.
func rnrResend(d time.Duration) func(t *ht.Trace) { return rnrResends(20, 1, d) }

// rnrRetries: n resends after RNR NAKs with timer code 1 (10 µs), 1 ms
// apart.
func rnrRetries(n int) func(t *ht.Trace) { return rnrResends(1, n, time.Millisecond) }

// gbn: SENDs 101..103, 101 lost before the responder; a sequence NAK
// names 101; the requester goes back to 101 (or skips it when skip, and
// the latched responder drops what follows).
func gbn(skip bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		start(t)
		t.Req(wire.SendOnly, 102, false)
		t.Req(wire.SendOnly, 103, true)
		t.NAK(101, wire.NAKPSNSequence, 1)
		t.Wait(2 * time.Millisecond)
		if !skip {
			t.Req(wire.SendOnly, 101, false)
		}
		t.Req(wire.SendOnly, 102, false)
		t.Req(wire.SendOnly, 103, true)
		if !skip {
			t.Ack(103, 4)
		}
		t.IPIDs(1, 1)
	}
}

// lostMiddle: two READs of 5 KiB at MTU 1024 (F, M, M, M, L each); the
// first's second Middle is lost before the capture point when lost.
func lostMiddle(lost bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 10, true)
		t.Ack(10, 1)
		t.Read(11, 5*1024)
		t.Read(16, 5*1024)
		rs := t.ReadStream(11, 5*1024, 1024, 2)
		t.ReadStream(16, 5*1024, 1024, 3)
		t.Req(wire.SendOnly, 21, true)
		t.Ack(21, 4)
		if lost {
			for i, r := range t.Records {
				if r == rs[2] {
					t.Remove(i)
				}
			}
		}
	}
}

// lostMiddleRetry: a 5 KiB READ at 302 (MTU 1024) whose Middle 304 is
// lost before the capture point; the requester asks again from 304 (that
// partial retry itself lost before the capture point when retryLost) and
// the responder answers it from 304 with First, Middle, Last.
func lostMiddleRetry(retryLost bool) func(t *ht.Trace) { return partialRetry(retryLost, 2*1024) }

// partialRetry is lostMiddleRetry with the partial retry's VA advanced by
// off from the READ's (2 KiB: the exact rest of the READ).
func partialRetry(retryLost bool, off uint64) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 301, true)
		t.Ack(301, 1)
		t.Read(302, 5*1024)
		t.ReadResp(wire.ReadResponseFirst, 302, 2, 1024)
		t.ReadResp(wire.ReadResponseMiddle, 303, 0, 1024)
		t.ReadResp(wire.ReadResponseMiddle, 305, 0, 1024)
		t.ReadResp(wire.ReadResponseLast, 306, 2, 1024)
		if !retryLost {
			r := t.Read(304, 3*1024)
			r.Packet.RETH.VA += off
		}
		t.ReadResp(wire.ReadResponseFirst, 304, 2, 1024)
		t.ReadResp(wire.ReadResponseMiddle, 305, 0, 1024)
		t.ReadResp(wire.ReadResponseLast, 306, 2, 1024)
		t.Req(wire.SendOnly, 307, true)
		t.Ack(307, 3)
	}
}

// impliedRead: a 4 KiB READ at 101 (MTU 1024, not told to the audit) and
// a SEND at 105; only the READ's First arrives before the ACK of the SEND,
// which implies the rest of the READ's responses were lost; then the
// requester re-issues the READ for its rest (reissue) or sends a new
// SEND.
func impliedRead(reissue bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 100, true)
		t.Ack(100, 1)
		t.Read(101, 4*1024)
		t.Req(wire.SendOnly, 105, true)
		t.ReadResp(wire.ReadResponseFirst, 101, 1, 1024)
		t.Ack(105, 3)
		t.Wait(10 * time.Millisecond)
		if reissue {
			r := t.Read(102, 3*1024)
			r.Packet.RETH.VA += 1024
			t.ReadStream(102, 3*1024, 1024, 3)
		} else {
			t.Req(wire.SendOnly, 106, true)
			t.Ack(106, 4)
		}
	}
}

// lateAck: a responder that counts its IPv4 Identification up ACKs every
// SEND; when late, the network delays one ACK behind the next.
func lateAck(late bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		for i := range 12 {
			t.Req(wire.SendOnly, wire.PSN(100+2*i), false)
			t.Req(wire.SendOnly, wire.PSN(101+2*i), true)
		}
		for i := range 12 {
			t.Ack(wire.PSN(101+2*i), uint32(2*i+2))
		}
		t.IPIDs(1000, 5000)
		if late {
			n := len(t.Records)
			t.Swap(n-4, n-3)
		}
	}
}

// lateReadResp: READ responses counted up in IP ID, one Middle delayed
// behind the next by the network.
func lateReadResp(t *ht.Trace) {
	for i := range 10 {
		t.Req(wire.SendOnly, wire.PSN(100+i), true)
		t.Ack(wire.PSN(100+i), uint32(i+1))
	}
	t.Read(110, 5*1024)
	t.ReadStream(110, 5*1024, 1024, 11)
	t.IPIDs(1000, 5000)
	n := len(t.Records)
	t.Swap(n-3, n-2)
}

func clauses(ts map[string]*harness.Tally, pred func(*harness.Tally) bool) []string {
	var out []string
	for k, t := range ts {
		if pred(t) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestVerdicts(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, c) })
	}
}

// check audits case c with every monitor, checks its failing clauses and
// its undecided one, and returns the tallies.
func check(t *testing.T, c vcase) map[string]*harness.Tally {
	t.Helper()
	tr := &ht.Trace{}
	c.build(tr)
	ts, fs := ht.AuditAll(tr, c.settings)
	failed := clauses(ts, func(x *harness.Tally) bool { return x.Violations > 0 })
	var want []string
	if c.fail != "" {
		want = strings.Split(c.fail, ",")
		sort.Strings(want)
	}
	if strings.Join(failed, ",") != strings.Join(want, ",") {
		var msgs []string
		for _, f := range fs {
			msgs = append(msgs, f.ID+": "+f.Message)
		}
		t.Errorf("failed %v, want %v\n  %s", failed, want, strings.Join(msgs, "\n  "))
	}
	if c.undecided != "" {
		if v := ts[c.undecided].Verdict(); v != "indeterminate" {
			t.Errorf("%s: verdict %s, want indeterminate (tally %+v)", c.undecided, v, ts[c.undecided])
		}
	}
	return ts
}

// TestOneCountFaultOneFinding: an ACK whose MSN counts requests past its
// PSN is one finding (C9-95, C9-105 or C9-148: its PSN or its count is
// wrong), whichever later packets show it; a sequence NAK after it whose
// MSN is below it, right if the ACK's count was the fault, is that same
// root cause, not a C9-149 fault of its own.
func TestOneCountFaultOneFinding(t *testing.T) {
	tr := &ht.Trace{}
	tr.Req(wire.SendOnly, 10, true)
	tr.Ack(10, 5)
	for psn := wire.PSN(11); psn <= 14; psn++ {
		tr.Req(wire.SendOnly, psn, true)
	}
	tr.Ack(11, 8) // counts 11 to 13
	tr.NAK(13, wire.NAKPSNSequence, 7)
	tr.Req(wire.SendOnly, 13, true)
	tr.Req(wire.SendOnly, 14, true)
	tr.Ack(14, 9)
	tallies, findings := ht.AuditAll(tr, ht.Capture())
	if tl := tallies["C9-149"]; tl != nil && tl.Violations > 0 {
		t.Errorf("C9-149 fails: %+v", tl)
	}
	messages := map[string]bool{}
	for _, f := range findings {
		if f.Frame != 7 {
			t.Errorf("a finding at frame %d: %s", f.Frame, f.Message)
		}
		messages[f.Message] = true
	}
	if len(messages) != 1 {
		t.Errorf("%d findings for one fault: %v", len(messages), messages)
	}
}

// TestNAKBehindAMisplacedAnswer: an ATOMIC acknowledgment one PSN past its
// ATOMIC, at the PSN a READ the capture shows later carries (o9-58's
// fault), raised the expected PSN past that READ's PSN; the sequence NAK
// naming it is right, and rests on that fault only: no C9-111 or C9-121
// finding of its own. Behind an ACK nothing blames, the NAK fails.
func TestNAKBehindAMisplacedAnswer(t *testing.T) {
	for _, misplaced := range []bool{true, false} {
		tr := &ht.Trace{}
		tr.Req(wire.SendOnly, 20, true)
		tr.Ack(20, 5)
		tr.Atomic(wire.CompareSwap, 21)
		if misplaced {
			tr.Req(wire.SendOnly, 23, true)
			tr.AtomicAck(22, 6, 1)
			tr.NAK(22, wire.NAKPSNSequence, 6)
			tr.Read(22, 0)
		} else {
			tr.Req(wire.SendOnly, 22, true)
			tr.AtomicAck(21, 6, 1)
			tr.Ack(22, 7)
			tr.NAK(22, wire.NAKPSNSequence, 7)
			tr.Req(wire.SendOnly, 22, true)
		}
		tr.Req(wire.SendOnly, 23, true)
		for range 8 { // enough packets to show both sides count their IDs up
			tr.Req(wire.SendOnly, 24, true)
			tr.Ack(24, 8)
		}
		tr.IPIDs(100, 200)
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		for _, id := range []string{"C9-111", "C9-121"} {
			if failed := tallies[id] != nil && tallies[id].Violations > 0; failed == misplaced {
				t.Errorf("misplaced %v: %s failed %v: %+v", misplaced, id, failed, findings)
			}
		}
		if misplaced && (tallies["o9-58"] == nil || tallies["o9-58"].Violations == 0) {
			t.Errorf("o9-58 passes the acknowledgment at the READ's PSN: %+v", findings)
		}
	}
}

// TestACKInsideAREADFoundLater: an ACK strictly inside the range of a
// READ that is not owed its answer (seen while the responder's expected
// PSN was behind it), the range known from the path MTU, is C9-95's fault
// alone: no request acknowledged there fixes a count its MSN must carry
// (C9-148), and it raises no bound on the expected PSN that a NAK after it
// could be held to (C9-111).
func TestACKInsideAREADFoundLater(t *testing.T) {
	tr := &ht.Trace{}
	for psn := wire.PSN(1); psn <= 9; psn++ { // both sides shown to count their IDs up
		tr.Req(wire.SendOnly, psn, true)
		tr.Ack(psn, uint32(psn))
	}
	tr.Read(11, 768) // 11..13 at MTU 256; the READ at 10 before it lost
	tr.NAK(10, wire.NAKPSNSequence, 9)
	tr.Read(10, 8)
	tr.Read(11, 768)
	w := tr.Req(wire.WriteFirst, 14, false)
	w.Packet.RETH.Length = 515
	w.Packet.Payload, w.PayloadLen = make([]byte, 256), 256
	tr.Ack(12, 9) // inside the READ's range
	tr.ReadResp(wire.ReadResponseOnly, 10, 10, 8)
	tr.NAK(11, wire.NAKPSNSequence, 10)
	tr.IPIDs(100, 200)
	_, findings := ht.AuditAll(tr, ht.Capture())
	n := 0
	for _, f := range findings {
		if f.ID != "C9-95" {
			t.Errorf("%s fails at frame %d: %s", f.ID, f.Frame, f.Message)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d findings, want the one on the ACK", n)
	}
}

// TestCountAtAPSNInsideARead: an ACK naming a PSN inside an outstanding
// READ's range (C9-95's fault, found when the READ's answer shows the
// range) fixes no count at that PSN: an MSN above what reached the
// responder by that count alone rests on the PSN already reported (one
// root cause, one finding; here the later MSN is right by the sequence
// NAK's count). Where the same count comes with a PSN before the READ,
// which no finding blames, an MSN above it fails C9-148.
func TestCountAtAPSNInsideARead(t *testing.T) {
	for _, c := range []struct {
		ackPSN wire.PSN
		msn    uint32 // the last ACK's
		fails  bool
	}{
		{26, 70, false}, // the READ at 25 reserves 25..27
		{23, 71, true},  // the NAK's 66 and four new messages make 70
	} {
		tr := &ht.Trace{}
		if c.ackPSN == 23 {
			tr.Ack(23, 66)
		}
		tr.Read(25, 12288)
		tr.NAK(24, wire.NAKPSNSequence, 66)
		tr.Read(24, 4096)
		tr.Read(25, 12288)
		if c.ackPSN == 26 {
			tr.Ack(26, 66)
		}
		tr.Atomic(wire.FetchAdd, 28)
		tr.Req(wire.WriteOnly, 29, true)
		tr.ReadResp(wire.ReadResponseOnly, 24, 67, 4096)
		tr.ReadStream(25, 12288, 4096, 68)
		tr.AtomicAck(28, 69, 0)
		tr.Ack(29, c.msn)
		tr.IPIDs(100, 200)
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		var at []int
		for _, f := range findings {
			if f.ID == "C9-148" {
				at = append(at, f.Frame)
			}
		}
		if c.ackPSN == 26 && tallies["C9-95"].Violations == 0 {
			t.Errorf("C9-95 passes the ACK inside the READ (%v)", findings)
		}
		if (len(at) > 0) != c.fails {
			t.Errorf("ACK at %d, MSN %d: C9-148 findings at frames %v, want one %v (%+v)", c.ackPSN, c.msn, at, c.fails, tallies["C9-148"])
		}
	}
}

// TestNAKBehindAnACKInsideARead: an ACK at a PSN no request carried, past
// the first PSN of a READ whose range the trace has not shown, raised the
// expected PSN past it; the READ's answer then shows the ACK inside its
// range (C9-95's fault), and the sequence NAK naming the READ's PSN rests
// on that fault only: no C9-111 or C9-121 finding of its own, nor C9-103
// after a duplicate. Where the answer shows the READ ended before the
// ACK's PSN, the NAK fails.
func TestNAKBehindAnACKInsideARead(t *testing.T) {
	for _, c := range []struct{ inside, dup bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		tr := &ht.Trace{}
		tr.Req(wire.SendOnly, 103, true)
		tr.Ack(103, 5)
		tr.Read(104, 768)
		tr.Req(wire.SendOnly, 107, true)
		tr.Ack(105, 7)
		if c.dup {
			tr.Req(wire.SendOnly, 103, true)
		}
		tr.NAK(104, wire.NAKPSNSequence, 7)
		if c.inside {
			tr.ReadStream(104, 768, 256, 6) // 104..106
		} else {
			tr.ReadResp(wire.ReadResponseOnly, 104, 6, 768) // 104 alone
		}
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		ids := []string{"C9-111", "C9-121"}
		if c.dup {
			ids = append(ids, "C9-103")
		}
		for _, id := range ids {
			if failed := tallies[id] != nil && tallies[id].Violations > 0; failed == c.inside {
				t.Errorf("%+v: %s failed %v: %+v", c, id, failed, findings)
			}
		}
		if c.inside && (tallies["C9-95"] == nil || tallies["C9-95"].Violations == 0) {
			t.Errorf("%+v: C9-95 passes the ACK inside the READ: %+v", c, findings)
		}
	}
}

// TestACKAtARetriedREADsPSN: a READ asking for the rest of an answer from
// a PSN inside the first READ's range (its Middle lost) ends where that
// READ does: an ACK naming its PSN names no completion (C9-95), as one
// naming a PSN inside the range that no request carried does. At the
// READ's last PSN, the newest completed, it is no fault.
func TestACKAtARetriedREADsPSN(t *testing.T) {
	for _, c := range []struct {
		psn   wire.PSN
		fails bool
	}{{14, true}, {15, false}} {
		tr := &ht.Trace{}
		for psn := wire.PSN(1); psn <= 12; psn++ {
			tr.Req(wire.SendOnly, psn, true)
			tr.Ack(psn, uint32(psn))
		}
		tr.Read(13, 768) // 13..15 at MTU 256
		tr.ReadResp(wire.ReadResponseFirst, 13, 13, 256)
		tr.ReadResp(wire.ReadResponseMiddle, 14, 0, 256)
		tr.ReadResp(wire.ReadResponseLast, 15, 13, 256)
		retry := tr.Read(14, 512)
		retry.Packet.RETH.VA += 256
		tr.ReadResp(wire.ReadResponseFirst, 14, 13, 256)
		tr.ReadResp(wire.ReadResponseLast, 15, 13, 256)
		tr.Ack(c.psn, 13)
		tr.IPIDs(100, 200)
		tr.Remove(26) // the Middle, lost before the capture point
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		if failed := tallies["C9-95"] != nil && tallies["C9-95"].Violations > 0; failed != c.fails {
			t.Errorf("ACK at %d: C9-95 failed %v, want %v (%+v)", c.psn, failed, c.fails, findings)
		}
	}
}

// TestMiddleJustPastAREADsRange: a Middle right after a READ's answer, at
// the PSN just past that READ's known range, where the next READ begins:
// it continues the first answer past its range (C9-96) or begins the
// second without an AETH (C9-97), and the trace tells neither: one finding
// names both, so neither passes and no clause is blamed alone. An Only
// there begins the second answer properly.
func TestMiddleJustPastAREADsRange(t *testing.T) {
	for _, op := range []wire.Opcode{wire.ReadResponseMiddle, wire.ReadResponseOnly} {
		tr := &ht.Trace{}
		tr.Read(44, 12288) // 44..46 at MTU 4096
		tr.ReadResp(wire.ReadResponseFirst, 44, 5, 4096)
		tr.ReadResp(wire.ReadResponseMiddle, 45, 0, 4096)
		retry := tr.Read(46, 4096) // the Last lost: the rest asked for again
		retry.Packet.RETH.VA += 8192
		tr.Read(47, 8)
		msn := uint32(0)
		if op == wire.ReadResponseOnly {
			msn = 7
		}
		tr.ReadResp(op, 47, msn, 8)
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		for _, id := range []string{"C9-96", "C9-97"} {
			if failed := tallies[id] != nil && tallies[id].Violations > 0; failed != (op == wire.ReadResponseMiddle) {
				t.Errorf("%s at 47: %s failed %v (%+v)", op, id, failed, findings)
			}
		}
		for _, f := range findings {
			if (f.ID == "C9-96" || f.ID == "C9-97") && len(f.Alternatives) != 2 {
				t.Errorf("%s at 47: a finding naming %s alone: %s", op, f.ID, f.Message)
			}
		}
	}
}

// TestRNRNAKBehindAMisplacedAnswer: an ATOMIC acknowledgment one PSN past
// its ATOMIC, at the PSN of a SEND the capture shows only later (o9-58's
// fault), raised the expected PSN past that SEND; the RNR NAK refusing the
// SEND's resend rests on that fault only: no C9-113 finding of its own.
func TestRNRNAKBehindAMisplacedAnswer(t *testing.T) {
	tr := &ht.Trace{}
	for psn := wire.PSN(40); psn < 52; psn++ { // both sides shown to number their packets one by one
		tr.Req(wire.SendOnly, psn, true)
		tr.Ack(psn, uint32(psn))
	}
	tr.Atomic(wire.FetchAdd, 52)
	tr.Req(wire.SendMiddle, 54, false) // the SEND's First lost
	tr.Req(wire.SendLast, 55, true)
	tr.AtomicAck(53, 52, 1) // the ATOMIC's answer, one PSN late
	tr.NAK(53, wire.NAKPSNSequence, 52)
	tr.Req(wire.SendFirst, 53, false)
	tr.Req(wire.SendMiddle, 54, false)
	tr.Req(wire.SendLast, 55, true)
	tr.RNR(53, 4, 52)
	tr.IPIDs(100, 200)
	tallies, findings := ht.AuditAll(tr, ht.Capture())
	if tl := tallies["C9-113"]; tl != nil && tl.Violations > 0 {
		t.Errorf("C9-113 fails: %+v", findings)
	}
	if tallies["o9-58"] == nil || tallies["o9-58"].Violations == 0 {
		t.Errorf("o9-58 passes the acknowledgment at the SEND's PSN: %+v", findings)
	}
}

// TestRepeatedNAKPastAnACKInsideARead: a sequence NAK names the READ's
// PSN, the request is sent again, an ACK at a PSN no request carried
// raises the expected PSN past it, and the NAK names that PSN again: one
// finding would name the NAK latch and the NAK's PSN (C9-111/C9-121,
// C9-114/C9-122). Where the READ's answer then shows the ACK inside its
// range (C9-95's fault), the repeated NAK rests on that fault only.
// Where the answer shows the READ ended before the ACK's PSN, it fails.
func TestRepeatedNAKPastAnACKInsideARead(t *testing.T) {
	for _, inside := range []bool{true, false} {
		tr := &ht.Trace{}
		tr.Req(wire.SendOnly, 103, true)
		tr.Ack(103, 5)
		tr.Read(104, 768)
		tr.Req(wire.SendOnly, 107, true)
		tr.NAK(104, wire.NAKPSNSequence, 5)
		tr.Read(104, 768)
		tr.Ack(105, 7)
		tr.NAK(104, wire.NAKPSNSequence, 7)
		if inside {
			tr.ReadStream(104, 768, 256, 6) // 104..106
		} else {
			tr.ReadResp(wire.ReadResponseOnly, 104, 6, 768) // 104 alone
		}
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		for _, id := range []string{"C9-111", "C9-114"} {
			if failed := tallies[id] != nil && tallies[id].Violations > 0; failed == inside {
				t.Errorf("inside %v: %s failed %v: %+v", inside, id, failed, findings)
			}
		}
		if inside && (tallies["C9-95"] == nil || tallies["C9-95"].Violations == 0) {
			t.Errorf("C9-95 passes the ACK inside the READ: %+v", findings)
		}
	}
}

// answeredREAD returns a trace of ten SENDs, each acknowledged (both
// sides shown to number their packets one by one), then a READ at PSN 180
// of 768 bytes (180..182 at MTU 256) and its answer.
func answeredREAD() *ht.Trace {
	tr := &ht.Trace{}
	for psn := wire.PSN(170); psn < 180; psn++ {
		tr.Req(wire.SendOnly, psn, true)
		tr.Ack(psn, uint32(psn))
	}
	tr.Read(180, 768)
	tr.ReadStream(180, 768, 256, 180)
	return tr
}

// TestMiddleInAnEarlierREADsRange: a Middle at the PSN of a READ asking
// for the rest of an answer from there may also go on with the answer
// owed to the READ that arrived before it, whose range holds it (the
// replay for a duplicate), whose First the capture missed: where the
// responder's IDs show a packet missed just before it, C9-97 and C9-107
// are open; where they show none missed, the Middle begins the later
// READ's answer (a duplicate's) without an AETH, and both fail.
func TestMiddleInAnEarlierREADsRange(t *testing.T) {
	for _, missed := range []bool{true, false} {
		tr := answeredREAD()
		tr.Read(180, 768) // a duplicate
		retry := tr.Read(181, 512)
		retry.Packet.RETH.VA += 256
		if missed {
			tr.ReadResp(wire.ReadResponseFirst, 180, 180, 256) // the replay's First, removed below
		}
		tr.ReadResp(wire.ReadResponseMiddle, 181, 0, 256)
		tr.ReadResp(wire.ReadResponseLast, 182, 180, 256)
		tr.IPIDs(100, 200)
		if missed {
			tr.Remove(26)
		}
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		for _, id := range []string{"C9-97", "C9-107"} {
			tl := tallies[id]
			if failed := tl != nil && tl.Violations > 0; failed == missed {
				t.Errorf("missed %v: %s failed %v (%+v, %+v)", missed, id, failed, tl, findings)
			}
			if missed && (tl == nil || tl.Open == 0) {
				t.Errorf("missed %v: %s not open (%+v)", missed, id, tl)
			}
		}
	}
}

// TestMiddleAtAnOwedAnswersLastPSN: a Middle at the PSN of a READ asking
// again for the last packet of an answer, inside the range of a
// duplicate READ whose answer the responder owes before it, cannot go on
// with that owed answer, whose packet there is its Last: even where the
// responder's IDs show a packet missed just before it, the Middle begins
// the later READ's answer, and C9-97 fails.
func TestMiddleAtAnOwedAnswersLastPSN(t *testing.T) {
	tr := answeredREAD()
	tr.Read(180, 768) // a duplicate: its answer owed, a Last at 182
	retry := tr.Read(182, 256)
	retry.Packet.RETH.VA += 512
	tr.ReadResp(wire.ReadResponseFirst, 180, 180, 256) // the replay's First, removed below
	tr.ReadResp(wire.ReadResponseMiddle, 182, 0, 256)
	tr.IPIDs(100, 200)
	tr.Remove(26)
	tallies, findings := ht.AuditAll(tr, ht.Capture())
	if tl := tallies["C9-97"]; tl == nil || tl.Violations == 0 {
		t.Errorf("C9-97 not failed (%+v, %+v)", tl, findings)
	}
}

// TestMiddleAfterAnACKPastTheREAD: a READ sent twice (its first copy
// lost after the capture point, the second executed and its answer seen
// to its First), the responder's IDs then skipping its Middle and Last,
// the rest of the READ asked for again, an ACK past the READ, and a
// Middle at the retry's PSN dated after that ACK. It either goes on with
// the READ's answer, which the ACK overtook (C9-101), or begins the
// retry's answer without an AETH (C9-97): one finding naming both, though
// the answer it goes on with answers the READ's second copy. With no ACK
// past the READ, nothing fails.
func TestMiddleAfterAnACKPastTheREAD(t *testing.T) {
	for _, ack := range []bool{true, false} {
		tr := &ht.Trace{}
		for psn := wire.PSN(170); psn < 180; psn++ {
			tr.Req(wire.SendOnly, psn, true)
			tr.Ack(psn, uint32(psn))
		}
		tr.Read(180, 768) // lost after the capture point
		tr.Wait(5 * time.Millisecond)
		tr.Read(180, 768)
		tr.ReadResp(wire.ReadResponseFirst, 180, 180, 256)
		lost := len(tr.Records)
		tr.ReadResp(wire.ReadResponseMiddle, 181, 0, 256)
		tr.ReadResp(wire.ReadResponseLast, 182, 180, 256)
		tr.Req(wire.SendOnly, 183, true)
		retry := tr.Read(181, 512) // the rest asked for again
		retry.Packet.RETH.VA += 256
		if ack {
			tr.Ack(183, 181)
		}
		tr.ReadResp(wire.ReadResponseMiddle, 181, 0, 256)
		tr.ReadResp(wire.ReadResponseLast, 182, 181, 256)
		tr.Req(wire.SendOnly, 184, true)
		tr.Ack(184, 182)
		tr.IPIDs(100, 200)
		tr.Remove(lost + 1)
		tr.Remove(lost)
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		for _, clause := range []string{"C9-97", "C9-101"} {
			tl := tallies[clause]
			if failed := tl != nil && tl.Violations > 0; failed != ack {
				t.Errorf("ACK past the READ %v: %s failed %v (%+v, %+v)", ack, clause, failed, tl, findings)
			}
		}
		for _, f := range findings {
			if len(f.Alternatives) != 2 || f.PSN != 181 {
				t.Errorf("ACK past the READ %v: want only the finding at the Middle naming C9-97 and C9-101, got %+v", ack, f)
			}
		}
	}
}

// TestMiddleOfACopysAnswer: the network copies a READ asked for again,
// and the responder answers both copies; the first answer is seen but
// for its Middle, the second from its Middle on. The Middle at the
// PSN of a partial READ answered earlier goes on with the answer owed to
// the second copy where the responder's IDs show a packet missed just
// before it (C9-97 open, no violation); where they show none missed, it
// begins the partial READ's answer again without an AETH.
func TestMiddleOfACopysAnswer(t *testing.T) {
	for _, missed := range []bool{true, false} {
		tr := answeredREAD()
		retry := tr.Read(181, 512) // the rest of it asked for again
		retry.Packet.RETH.VA += 256
		tr.ReadResp(wire.ReadResponseFirst, 181, 180, 256)
		tr.ReadResp(wire.ReadResponseLast, 182, 180, 256)
		tr.Read(180, 768) // a duplicate, and the network's copy of it
		tr.Read(180, 768)
		tr.ReadResp(wire.ReadResponseFirst, 180, 180, 256) // the first copy's replay
		tr.ReadResp(wire.ReadResponseMiddle, 181, 0, 256)  // lost, removed below
		tr.ReadResp(wire.ReadResponseLast, 182, 180, 256)
		if missed {
			tr.ReadResp(wire.ReadResponseFirst, 180, 180, 256) // the second copy's First, removed below
		}
		tr.ReadResp(wire.ReadResponseMiddle, 181, 0, 256)
		tr.ReadResp(wire.ReadResponseLast, 182, 180, 256)
		tr.IPIDs(100, 200)
		n := len(tr.Records)
		if missed {
			tr.Remove(n - 3)
			n--
		}
		tr.Remove(n - 4)
		tallies, findings := ht.AuditAll(tr, ht.Capture())
		tl := tallies["C9-97"]
		if failed := tl != nil && tl.Violations > 0; failed == missed {
			t.Errorf("missed %v: C9-97 failed %v (%+v, %+v)", missed, failed, tl, findings)
		}
		if missed && (tl == nil || tl.Open == 0) {
			t.Errorf("missed %v: C9-97 not open (%+v)", missed, tl)
		}
		if missed && len(findings) > 0 {
			t.Errorf("a conformant exchange: %+v", findings)
		}
	}
}

// TestNAKOnACountJudgedWrong: an ACK whose MSN goes back below an ATOMIC
// answer's that may replay one (open until the responder's IDs date the
// two), then a sequence NAK whose MSN is too high for the count that ACK
// shows but right for the one before it, and ACKs whose counts pass it
// by more than the requests between end. One root cause: where the IDs
// date the ACK after the answer, C9-148 fails it, and nothing resting on
// its count (the NAK's finding, the ATOMIC answer's after it, the later
// ACK's naming C9-95) is a second finding; with no ID, one finding names
// C9-149 and C9-148. Never a finding of C9-149 alone.
func TestNAKOnACountJudgedWrong(t *testing.T) {
	for _, ids := range []bool{true, false} {
		var tr ht.Trace
		tr.Read(301, 8)
		tr.Atomic(wire.CompareSwap, 302)
		tr.Req(wire.WriteOnly, 303, true)
		tr.ReadResp(wire.ReadResponseOnly, 301, 85, 8)
		tr.AtomicAck(302, 86, 1)
		tr.Ack(303, 85) // went back: 87
		tr.Read(304, 3072)
		tr.Atomic(wire.FetchAdd, 307)
		tr.Atomic(wire.CompareSwap, 308)
		tr.ReadStream(304, 3072, 1024, 88)
		tr.AtomicAck(307, 89, 2)
		tr.AtomicAck(308, 90, 3)
		tr.Wait(17 * time.Millisecond) // the ATOMIC answers lost after the capture point
		tr.Atomic(wire.FetchAdd, 307)
		tr.Atomic(wire.CompareSwap, 308)
		lost := len(tr.Records)
		tr.Atomic(wire.CompareSwap, 309) // lost before the responder, removed below
		tr.Req(wire.SendOnly, 310, true)
		tr.AtomicAck(307, 90, 2)
		tr.AtomicAck(308, 90, 3)
		tr.NAK(309, wire.NAKPSNSequence, 90)
		tr.Atomic(wire.CompareSwap, 309)
		tr.AtomicAck(309, 91, 4)
		for psn := wire.PSN(310); psn < 318; psn++ {
			tr.Req(wire.SendOnly, psn, true)
			tr.Ack(psn, 92+uint32(psn-310))
		}
		if ids {
			tr.IPIDs(100, 200)
		}
		tr.Remove(lost)
		_, findings := ht.AuditAll(&tr, ht.Capture())
		blamed148 := false
		for _, f := range findings {
			names148 := f.ID == "C9-148"
			for _, a := range f.Alternatives {
				names148 = names148 || a.ID == "C9-148"
			}
			if f.ID == "C9-149" && !names148 {
				t.Errorf("IDs %v: a finding of C9-149 alone: %+v", ids, f)
			}
			blamed148 = blamed148 || names148
		}
		if ids && !blamed148 {
			t.Errorf("IDs %v: C9-148 not failed: %+v", ids, findings)
		}
		alone := 0
		for _, f := range findings {
			if f.ID == "C9-148" && len(f.Alternatives) == 0 {
				alone++
			}
		}
		if ids && (alone != 1 || len(findings) != 1) {
			t.Errorf("IDs %v: %d findings of C9-148 alone among %d, want only the one on the ACK whose MSN went back: %+v", ids, alone, len(findings), findings)
		}
	}
}

// TestBelowAnACKBeforeItsRequest: a capture in the middle shows a SEND, a
// READ and an ATOMIC before any response, so their answers may replay
// ones given before it began; but the ACK of the SEND, before them,
// names a PSN before the READ's. Were that ACK right, the responder
// executed the READ after sending it, and every answer to it, a replay
// too, counts no fewer messages: where the ACK's MSN skipped ahead, the
// READ's answer below it fails C9-148 (or the ACK's PSN), in whatever
// order the IDs give; where it did not, nothing fails.
func TestBelowAnACKBeforeItsRequest(t *testing.T) {
	for _, tc := range []struct {
		ackMSN uint32
		ids    bool
	}{{14, true}, {14, false}, {10, true}, {10, false}} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 20, true)
		tr.Read(21, 3072)
		tr.Atomic(wire.CompareSwap, 24)
		tr.Ack(20, tc.ackMSN)
		tr.ReadStream(21, 3072, 1024, 11)
		tr.AtomicAck(24, 12, 1)
		if tc.ids {
			tr.IPIDs(100, 200)
		}
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if tc.ackMSN == 10 {
			if len(findings) != 0 {
				t.Errorf("%+v: findings on a conformant trace: %+v", tc, findings)
			}
			continue
		}
		if tl := tallies["C9-148"]; tl == nil || tl.Verdict() != reports.Fail {
			t.Errorf("%+v: C9-148 %+v, want fail", tc, tl)
		}
	}
}
