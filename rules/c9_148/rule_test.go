package c9_148

import (
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

// Both READ timings, coalesced ACKs, multi-packet messages, an ATOMIC,
// and replays carrying the current or the original MSN are all legal.
func TestLegalCounts(t *testing.T) {
	for _, readAtEnd := range []bool{false, true} {
		var b rtest.Builder
		b.Send(10, false) // MSN 1
		b.Req(wire.WriteFirst, 11, false, 1024)
		b.Req(wire.WriteLast, 12, true, 10) // MSN 2
		b.Ack(12, 2)
		b.Read(13, 3*1024) // 13..15, MSN 3
		b.Atomic(16)       // MSN 4
		b.Send(17, true)   // MSN 5
		first := uint32(3)
		if readAtEnd {
			first = 2
		}
		b.Resp(wire.ReadResponseFirst, 13, 0x04, first, 1024)
		b.Resp(wire.ReadResponseMiddle, 14, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 15, 0x04, 3, 1024)
		b.Resp(wire.AtomicAcknowledge, 16, 0x04, 4, 0)
		b.Ack(17, 5)
		// Duplicates: the READ again (answered with the original MSNs or
		// the current one), the SEND again (ACKed with the current MSN).
		b.Read(13, 3*1024)
		b.Resp(wire.ReadResponseFirst, 13, 0x04, first, 1024)
		b.Resp(wire.ReadResponseMiddle, 14, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 15, 0x04, 3, 1024)
		b.Read(13, 3*1024)
		b.Resp(wire.ReadResponseFirst, 13, 0x04, 5, 1024)
		b.Resp(wire.ReadResponseMiddle, 14, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 15, 0x04, 5, 1024)
		b.Send(17, true)
		b.Ack(17, 5)
		b.Send(18, true)
		b.Ack(18, 6)
		rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
		rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	}
}

func TestREADNeverCounted(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Read(11, 100)
	b.Resp(wire.ReadResponseOnly, 11, 0x04, 1, 100) // should be 2
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "MSN 1 is too low")
	// A capture: the ACK pins the start, the Only is one short.
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "too low")
}

func TestDuplicateBumpsTheMSN(t *testing.T) {
	var b rtest.Builder
	b.Send(10, false)
	b.Send(11, true)
	b.Ack(11, 2)
	b.Send(10, true) // duplicate
	b.Ack(11, 3)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "MSN 3 is too high")
}

func TestMSNGoingBack(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 5)
	b.Send(11, true)
	b.Ack(11, 4)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "went back")
}

// A gap in the requests of a capture: until a response acknowledges past
// it, the responder may have completed messages the capture missed.
func TestCaptureGap(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Send(13, true) // 11 and 12 missing
	b.Ack(10, 3)     // 11 and 12 may have completed unseen
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "too high")
	// An ACK past the gap: they have all completed; the count is found
	// again, and what follows is judged.
	b.Ack(13, 4)
	b.Send(14, true)
	b.Ack(14, 4)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "MSN 4 is too low")
}

// Missing request PSNs leave the count open by at most one message
// each: every message takes a PSN of its own. Once a response
// acknowledges past them, the count's start moves up by no more than the
// PSNs missing. Both violations went unjudged before (the count started
// anew from the response that closed the gap).
func TestGapBoundsTheCount(t *testing.T) {
	gap := func(msn uint32) *rtest.Builder {
		b := &rtest.Builder{}
		b.Send(10, true)
		b.Ack(10, 5)
		b.Send(13, true) // 11 and 12 missing: two messages at most
		b.Ack(13, msn)
		return b
	}
	rtest.WantPass(t, gap(8).Recs, rtest.Capture(0), ID)
	rtest.WantViolation(t, gap(9).Recs, rtest.Capture(0), ID, "MSN 9 is too high", "allowing one message more for each of the 2 request PSNs")

	// After a READ whose span the unknown MTU leaves open (16 KiB: 4 to
	// 64 PSNs), the missing PSNs are counted from the READ's own PSN on:
	// a requester that numbered the READ short put messages there.
	read := func(msn uint32) *rtest.Builder {
		b := &rtest.Builder{}
		b.Send(10, true)
		b.Ack(10, 5)
		b.Read(11, 16384)
		b.Send(20, true) // 12..19 missing: eight messages at most
		b.Ack(20, msn)
		return b
	}
	rtest.WantPass(t, read(15).Recs, rtest.Capture(0), ID)
	rtest.WantViolation(t, read(16).Recs, rtest.Capture(0), ID, "MSN 16 is too high")
}

// A NAK's MSN is the count of its moment, every message before its PSN
// completed (a READ's perhaps not yet): a later answer above what the
// PSNs since leave room for breaks C9-148, or the NAK's MSN was too low
// (C9-149). Nothing bounded the count before (only the NAK did).
func TestAboveANAKsCount(t *testing.T) {
	build := func(msn uint32) []*trace.Record {
		var b rtest.Builder
		b.Send(71, true)
		b.Resp(wire.Acknowledge, 71, 0x20|10, 941, 0) // RNR NAK: 71 not executed, MSN 941
		b.Send(71, true)
		b.Ack(71, msn)
		return b.Recs
	}
	rtest.WantPass(t, build(942), rtest.Capture(0), ID)
	rtest.WantViolation(t, build(949), rtest.Capture(0), ID, "MSN 949 is too high", "C9-149 if this MSN is right: the NAK (frame 2)")
	// One finding, listed under both clauses.
	if tl := rtest.Tally(rtest.Audit(build(949), rtest.Capture(0), ID), "C9-149"); tl.Violations != 1 {
		t.Fatalf("C9-149: want the finding listed once, got %+v", tl)
	}
}

// A resent ATOMIC whose earlier copy a sequence NAK showed dropped is
// executed by its latest copy: its first answer, were it new, counts no
// message after its PSN, though later requests reached the responder
// before it was sent. Above that it is open (a replay of a copy the
// capture missed explains it), not passed as a replay (it was before).
func TestResentAtomicFirstAnswer(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 5)
	b.Atomic(12)    // beyond the expected PSN (11 lost): dropped
	b.NAK(11, 0, 5) // sequence NAK: the responder expects 11
	b.Send(11, true)
	b.Atomic(12)
	b.Send(13, true)
	b.Send(14, true)
	b.Ack(11, 6)
	b.Resp(wire.AtomicAcknowledge, 12, 0x04, 9, 0) // 7 as new
	sink := rtest.Audit(b.Recs, rtest.Capture(0), ID)
	if tl := rtest.Tally(sink, ID); tl.Violations != 0 || tl.Open == 0 {
		t.Fatalf("want the ATOMIC's answer open, got %+v\n%s", tl, rtest.Dump(b.Recs))
	}
}

// An ACK at the PSN of a READ whose answer the capture has not shown is a
// PSN fault (C9-95's) that undermines only the counts resting on it: an
// MSN too high against a bound another ACK set is judged (it was left
// undecided on the whole connection), one against the faulty ACK's own
// bound is not.
func TestPSNFaultUnderminesWhatRestsOnIt(t *testing.T) {
	build := func(faultMSN, lastMSN uint32) []*trace.Record {
		var b rtest.Builder
		b.Send(10, true)
		b.Ack(10, 5)
		b.Read(11, 2048)    // 11..12 at MTU 1024
		b.Ack(11, faultMSN) // inside the READ's range, its answer not seen
		b.Send(13, true)
		b.Ack(13, lastMSN)
		return b.Recs
	}
	rtest.WantViolation(t, build(6, 9), rtest.Capture(1024), ID, "MSN 9 is too high", "the ACK with PSN 10 (frame 2")
	tl := rtest.Tally(rtest.Audit(build(5, 7), rtest.Capture(1024), ID), ID)
	undermined := false
	for _, k := range tl.Kinds {
		undermined = undermined || strings.Contains(k.Reason, "response PSNs on this connection are at fault")
	}
	if tl.Violations != 0 || !undermined {
		t.Fatalf("want the MSN resting on the faulty ACK undecided, got %+v", tl)
	}
}

func TestReference(t *testing.T) {
	run := func(defect, msnRead string) *rtest.Ref {
		r := rtest.NewRef(t, defect, map[string]string{"msn-read": msnRead},
			dut.ConnConfig{MTU: 512, ExpectedPSN: 0xFFFFF0, SetPSNs: true, Atomics: true})
		first := r.SendOnly(8, false)
		r.Send(time.Millisecond, first, r.SendOnly(8, true), r.Read(5*512, 0), r.Atomic(0), r.WriteOnly(8, 0, true))
		dup := *first
		dup.AckReq = true
		r.Send(time.Millisecond, &dup)
		r.Send(time.Millisecond, r.Read(1, 0), r.SendOnly(8, true))
		return r
	}
	for _, m := range []string{"start", "end"} {
		clean := run("", m)
		rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	}
	skipped := run("msn-read-skipped", "start")
	rtest.WantViolation(t, skipped.Trace(), skipped.Settings(), ID, "too low")
	bump := run("msn-dup-bump", "end")
	rtest.WantViolation(t, bump.Trace(), bump.Settings(), ID, "too high")
}

// Lossy conformant exchanges. Both are legal; neither may fail.
func TestRetriesThroughLoss(t *testing.T) {
	t.Run("partial READ retry sent twice", func(t *testing.T) {
		// A READ of three packets at MTU 256 (the MTU unknown until its
		// First), its Middle and Last lost, its rest requested again
		// twice: the second partial retry is the same message as the
		// first, no new one (counted as new, the ATOMIC's MSN was too
		// low for three messages).
		var b rtest.Builder
		b.Read(100, 768) // 100..102
		b.Resp(wire.ReadResponseFirst, 100, 0x04, 11, 256)
		for range 2 {
			b.Read(101, 512).Packet.RETH.VA += 256
		}
		b.Atomic(103)
		b.Atomic(104)
		b.Resp(wire.ReadResponseLast, 102, 0x04, 11, 256) // the replay's (its First lost)
		b.Resp(wire.AtomicAcknowledge, 103, 0x04, 12, 0)
		b.Resp(wire.AtomicAcknowledge, 104, 0x04, 13, 0)
		rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	})
	t.Run("READ resent behind the READs after it", func(t *testing.T) {
		// The capture missed the READ at PSN 650 and shows it first when
		// resent after a sequence NAK, behind the requests after it; it
		// is answered, the requests after it are resent after another
		// sequence NAK and answered, and the READ at 655 is
		// requested once more and answered with its original MSN
		// (allowed). With the resent READ's span left open to MTU 256,
		// it hid the READs after it, the READ at 655 was taken as
		// dropped beyond the expected PSN, its last copy as new, and its
		// answer's original MSN as the MSN going back.
		var b rtest.Builder
		b.Send(651, true)
		b.Read(652, 12288) // 652..654 at MTU 4096
		b.Read(655, 12288) // 655..657
		b.Send(658, true)
		b.NAK(650, 0, 20) // the READ at 650 never arrived
		b.Read(650, 4096)
		b.Resp(wire.ReadResponseOnly, 650, 0x04, 21, 4096)
		b.NAK(651, 0, 21) // nor did the SEND resent after it
		b.Send(651, true)
		b.Read(652, 12288)
		b.Read(655, 12288)
		b.Send(658, true)
		b.Ack(651, 22)
		b.ReadStream(652, 12288, 4096, 23)
		b.ReadStream(655, 12288, 4096, 24)
		b.Ack(658, 25)
		b.Read(655, 12288)
		b.ReadStream(655, 12288, 4096, 24)
		rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	})
}

// A capture that begins during a retransmission: after three new
// requests, the requester resends from PSN 3, an ATOMIC the capture never
// showed, which the responder executed before the capture began. Its
// answer repeats the original one, MSN included (allowed), below the MSN
// already sent: no MSN went back. The same answer to a new ATOMIC after
// the first request the capture shows fails. atomicFirst starts a capture
// that shows a WRITE, a READ and an ATOMIC (PSNs 4 to 6) before any
// acknowledgment, then their answers; the ATOMIC's acknowledgment carries
// MSN atomicMSN (55 counts it).
func atomicFirst(b *rtest.Builder, atomicMSN uint32) {
	b.Req(wire.WriteOnly, 4, true, 0)
	b.Read(5, 8)
	b.Atomic(6)
	b.Ack(4, 53)
	b.Resp(wire.ReadResponseOnly, 5, 0x04, 54, 8)
	b.Resp(wire.AtomicAcknowledge, 6, 0x04, atomicMSN, 0)
}

func TestReplayOfAnAtomicBeforeTheCapture(t *testing.T) {
	build := func(atomic wire.PSN) []*trace.Record {
		var b rtest.Builder
		atomicFirst(&b, 55)
		b.Atomic(atomic)
		b.Resp(wire.AtomicAcknowledge, atomic, 0x04, 52, 0)
		b.Send(8, true)
		b.Ack(8, 56)
		return b.Recs
	}
	rtest.WantPass(t, build(3), rtest.Capture(0), ID)
	// Below the count of the answers before it, whenever it was sent (the
	// responder's few packets do not show its IPv4 IDs count up, so they
	// do not date it after the ATOMIC's answer, which may be a replay).
	rtest.WantViolation(t, build(7), rtest.Capture(0), ID, "is too low")
}

// An ATOMIC acknowledgment whose MSN is above the count the capture
// shows, on a capture that showed the ATOMIC before any acknowledgment:
// only a replay of an ATOMIC executed before the capture began, carrying
// the count of its moment, explains it, and nothing shows one, so the
// clause is left open (indeterminate), not passed. One more than the
// count is the ATOMIC counted, and passes; so does the next ACK, counting
// on from the ATOMIC, either way.
func TestAtomicAckAboveTheCountOnACapture(t *testing.T) {
	build := func(msn uint32) []*trace.Record {
		var b rtest.Builder
		atomicFirst(&b, msn)
		b.Send(7, true)
		b.Ack(7, 56)
		return b.Recs
	}
	rtest.WantPass(t, build(55), rtest.Capture(0), ID)
	rtest.WantOpen(t, build(59), rtest.Capture(0), ID, "an MSN 5 above the count left undecided but not open")
}

// Answers after an acknowledgment that already covered their PSNs: the
// ATOMIC and the READ had completed before that ACK went out (a
// responder answers new requests in PSN order), so the capture's first
// copies of them were resends and these answers are replays, here with
// their original MSNs (allowed). On a capture that may have begun during
// the retransmission, no MSN went back. A complete trace shows them as
// new: the ACK then names a PSN no legal responder gives it (C9-95's
// fault), and C9-148 leaves the MSN undecided (one cause, one clause).
func TestAnswersBehindAnEarlierACK(t *testing.T) {
	var b rtest.Builder
	b.Send(309, true)
	b.Atomic(310)
	b.Read(311, 256)
	b.Ack(311, 27)
	b.Resp(wire.AtomicAcknowledge, 310, 0x04, 26, 0)
	b.Resp(wire.ReadResponseOnly, 311, 0x04, 27, 256)
	b.Send(312, true)
	b.Ack(312, 28)
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	rtest.WantIndeterminate(t, b.Recs, rtest.Active(256), ID)
}

// A capture that begins while the requester resends requests the
// responder executed before it began: the ATOMIC and the READ it shows
// before any acknowledgment are resends, and their answers replays,
// with the current MSN (first case) or the original one (second, a
// partial READ retry whose whole replay carries it). The responder's
// MSN is far above what a QP made in the capture could count, so the
// capture begins mid-connection. No MSN is too low, none went back.
func TestCaptureBeginsDuringARetransmission(t *testing.T) {
	t.Run("replays with the current MSN", func(t *testing.T) {
		var b rtest.Builder
		b.Atomic(306)
		b.Resp(wire.AtomicAcknowledge, 306, 0x04, 942, 0)
		b.Atomic(306)
		b.Read(307, 0)
		b.Atomic(308)
		b.Resp(wire.AtomicAcknowledge, 306, 0x04, 942, 0)
		b.Resp(wire.ReadResponseOnly, 307, 0x04, 942, 0)
		b.Resp(wire.AtomicAcknowledge, 308, 0x04, 943, 0)
		b.Send(309, true)
		b.Ack(309, 944)
		rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	})
	t.Run("a replay with the original MSN", func(t *testing.T) {
		var b rtest.Builder
		b.Read(305, 2048).Packet.RETH.VA += 1024
		b.Ack(307, 68)
		b.Ack(308, 69)
		b.Resp(wire.ReadResponseFirst, 305, 0x04, 67, 1024)
		b.Resp(wire.ReadResponseLast, 306, 0x04, 67, 1024)
		b.Send(309, true)
		b.Ack(309, 70)
		rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	})
}

// TestReplayedAnswerDatedMidStream: a capture begun during a resend shows
// ACKs past a READ, then the READ's answer replayed with its original
// (lower) MSN. The responder counts its IDs up one by one, but its First
// comes before enough of its packets show it: it may be late, and its MSN
// is not judged. By the Last the IDs date it: it was sent after the ACKs,
// so the answer is a replay (the READ was acknowledged before it), which
// may carry the original MSN. Failed before ("the MSN went back").
func TestReplayedAnswerDatedMidStream(t *testing.T) {
	b := rtest.Builder{PerSender: true}
	b.Read(308, 768)
	b.Send(311, true)
	b.Send(312, true)
	for range 6 {
		b.Ack(312, 549)
	}
	b.Resp(wire.ReadResponseFirst, 308, 0x04, 547, 256)
	b.Resp(wire.ReadResponseMiddle, 309, 0, 0, 256)
	b.Resp(wire.ReadResponseLast, 310, 0x04, 547, 256)
	b.Send(313, true)
	b.Ack(313, 550)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
}

// TestFailedInvalidateAcknowledged: an ACK naming a SEND with Invalidate
// with an MSN that does not count it may be a positive ACK of a failed
// request (§9.7.5.1.5's, as rxe sends), so C9-148 leaves it undecided;
// the same ACK of a plain SEND is C9-148's violation.
func TestFailedInvalidateAcknowledged(t *testing.T) {
	build := func(op wire.Opcode) []*trace.Record {
		var b rtest.Builder
		b.Send(10, true)
		b.Ack(10, 1)
		b.Req(op, 11, true, 16)
		b.Ack(11, 1)
		return b.Recs
	}
	rtest.WantViolation(t, build(wire.SendOnly), rtest.Active(1024), ID, "MSN 1 is too low")
	tl := rtest.WantIndeterminate(t, build(wire.SendOnlyInvalidate), rtest.Active(1024), ID)
	if !strings.Contains(tl.Reason, "§9.7.5.1.5") || tl.Verdict() != reports.Pass {
		t.Errorf("verdict %s, reason %q: want a pass with the instance undecided, naming §9.7.5.1.5", tl.Verdict(), tl.Reason)
	}
}

// The MSN is 24 bits: counting carries on across 0xFFFFFF → 0.
func TestMSNAcrossTheWrap(t *testing.T) {
	var b rtest.Builder
	b.Send(100, true)
	b.Ack(100, 0xFFFFFE)
	b.Send(101, false)
	b.Send(102, true)
	b.Ack(102, 0) // 0xFFFFFE + 2
	b.Send(103, true)
	b.Ack(103, 1)
	rtest.WantPass(t, b.Recs, rtest.Capture(0), "C9-148")
	b.Send(104, true)
	b.Ack(104, 3) // one too many
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), "C9-148", "MSN 3 is too high")
}

// TestOneFaultReportedOnce: after an ACK whose MSN goes back, the ACKs
// that go on from the count before it are no new fault; one that fits
// neither that count nor the wrong ACK's is.
func TestOneFaultReportedOnce(t *testing.T) {
	trace := func(lastMSN uint32) []*trace.Record {
		var b rtest.Builder
		b.AckedSends(10, 5, 6, 3, lastMSN) // the third goes back from 6
		return b.Recs
	}
	for _, c := range []struct {
		msn  uint32
		want int
	}{{8, 1}, {4, 1}, {12, 2}} {
		if tl := rtest.Tally(rtest.Audit(trace(c.msn), rtest.Capture(0), ID), ID); tl.Violations != c.want {
			t.Errorf("last ACK's MSN %d: %d violations, want %d\n%s", c.msn, tl.Violations, c.want, rtest.Dump(trace(c.msn)))
		}
	}
}

// TestLastStartingAnAnswer: a READ answer that skips a PSN onto the next
// READ's, its Last starting that READ's answer, is C9-96's fault; the
// Last shows no count of completed messages, so its MSN (which does not
// count the next READ) is no fault of C9-148's.
func TestLastStartingAnAnswer(t *testing.T) {
	var b rtest.Builder
	b.Read(10, 768) // 10..12
	b.Read(13, 256)
	b.Resp(wire.ReadResponseFirst, 10, wire.SynACK(4), 1, 256)
	b.Resp(wire.ReadResponseMiddle, 11, 0, 0, 256)
	b.Resp(wire.ReadResponseLast, 13, wire.SynACK(4), 1, 256) // skipped 12
	b.Resp(wire.ReadResponseOnly, 13, wire.SynACK(4), 2, 256)
	rtest.WantPass(t, b.Recs, rtest.Active(256), ID)
}

// TestBelowAReplayedAnswer: the answer to a READ the capture shows before
// any acknowledgment may replay one given before the capture began, with
// the MSN of then or of now; neither is above the current MSN, so an ACK
// sent after it carries no MSN below it. The responder's IPv4 IDs date the
// ACK after it once its later packets show they count up
// (harness.Conn.SentBeforeByID); two of its packets do not show that,
// and without any ID nothing can.
func TestBelowAReplayedAnswer(t *testing.T) {
	// build: the READ's answer, then a SEND acknowledged with MSN
	// ackMSN, then SENDs acknowledged with the MSNs after.
	build := func(ackMSN uint32, after ...uint32) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.ReadAnswered(10, 5)
		b.Send(11, true)
		b.Ack(11, ackMSN)
		b.AckedSends(12, after...)
		return b.Recs
	}
	rtest.WantPass(t, build(6), rtest.Capture(256), ID)
	// Nine exchanges after it show the responder counts its IDs up.
	counted := build(3, 7, 8, 9, 10, 11, 12, 13, 14, 15)
	rtest.WantViolation(t, counted, rtest.Capture(256), ID, "went back from 5")
	// The replay may carry the count of a moment after the ACK was sent,
	// and the network have delayed the ACK past it: open.
	noIDs := build(3)
	for _, r := range noIDs {
		r.HasIPID, r.IPID = false, 0
	}
	for name, recs := range map[string][]*trace.Record{"IDs not shown to count": build(3), "no IPv4 ID": noIDs} {
		tallies, findings := ht.AuditAll(&ht.Trace{Records: recs}, rtest.Capture(256))
		if tl := tallies[ID]; tl.Verdict() != reports.Indeterminate || tl.Open == 0 {
			t.Errorf("%s: %s (%+v, %v), want open", name, tl.Verdict(), tl, findings)
		}
	}
}

// TestAcknowledgedBeforeTheFirstRequest: a capture that begins with
// answers (an ATOMIC's at 306 with MSN 14, an ACK of 307 with MSN 15)
// shows those PSNs executed before its first request: the ATOMICs at 305
// and 306 resent after are duplicates, and their answers replays with the
// MSN of the moment (15), not new messages whose count the later ACK of
// the resent 307 would then fall short of.
func TestAcknowledgedBeforeTheFirstRequest(t *testing.T) {
	var b rtest.Builder
	b.Resp(wire.AtomicAcknowledge, 306, wire.SynACK(4), 14, 0)
	b.Ack(307, 15)
	b.Atomic(305)
	b.Atomic(306)
	b.Resp(wire.AtomicAcknowledge, 305, wire.SynACK(4), 15, 0)
	b.Resp(wire.AtomicAcknowledge, 306, wire.SynACK(4), 15, 0)
	b.Send(307, true)
	b.Send(308, true)
	b.Ack(307, 15)
	b.Ack(308, 16)
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

// TestBelowAReplayOfALaterRequest: a capture begun during a resend shows
// the ATOMIC at 0 and the READ at 2 before any acknowledgment, and their
// answers (MSNs 239 and 241: the ATOMIC at 1, whose first copy it missed,
// completed between); the requester then resends all three, and the
// answer to the ATOMIC at 1 carries its first MSN, 240. The READ at 2 was
// executed before (its answer, new or a replay, shows it), so the ATOMIC
// at 1 was too: its answer is a replay, not an MSN going back.
func TestBelowAReplayOfALaterRequest(t *testing.T) {
	var b rtest.Builder
	b.Req(wire.CompareSwap, 0, true, 0)
	b.Read(2, 0)
	b.Resp(wire.AtomicAcknowledge, 0, wire.SynACK(4), 239, 0)
	b.Resp(wire.ReadResponseOnly, 2, wire.SynACK(4), 241, 0)
	b.Req(wire.CompareSwap, 0, true, 0)
	b.Req(wire.CompareSwap, 1, true, 0)
	b.Read(2, 0)
	b.Resp(wire.AtomicAcknowledge, 0, wire.SynACK(4), 239, 0)
	b.Resp(wire.AtomicAcknowledge, 1, wire.SynACK(4), 240, 0)
	b.Resp(wire.ReadResponseOnly, 2, wire.SynACK(4), 241, 0)
	if tl := rtest.Tally(rtest.Audit(b.Recs, rtest.Capture(0), ID), ID); tl.Violations != 0 {
		t.Errorf("want no violation, got %+v\n%s", tl, rtest.Dump(b.Recs))
	}
}

// TestBehindWhereTheCountRose: with no IPv4 Identification, an ACK whose
// MSN is behind an earlier one's may be an older ACK delayed, unless an
// earlier ACK counted a PSN before its own with an MSN that, plus the
// messages the trace shows ending between, is above it: no ACK of its
// PSN, sent at any moment, carried so low a count.
func TestBehindWhereTheCountRose(t *testing.T) {
	for _, c := range []struct {
		name string
		op   wire.Opcode // the request at PSN 11
		want reports.Verdict
	}{
		{"a SEND ends at 11: the count at 12 is above 5", wire.SendOnly, reports.Fail},
		{"11 begins a SEND: an ACK of 12 in its middle may be older", wire.SendFirst, reports.Indeterminate},
	} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, 5)
		tr.Req(c.op, 11, false)
		mid, msn := wire.SendMiddle, uint32(7) // the count at 14
		if c.op == wire.SendOnly {
			mid, msn = wire.SendFirst, 8
		}
		tr.Req(mid, 12, true)
		tr.Req(wire.SendLast, 13, false)
		tr.Req(wire.SendOnly, 14, true)
		tr.Ack(14, msn)
		tr.Ack(12, 5)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict(); got != c.want {
			t.Errorf("%s: %s (%+v, %v), want %s", c.name, got, tallies[ID], findings, c.want)
		}
	}
}

// TestFirstAtomicAnswerAboveTheCount: off a complete trace, with no IPv4
// Identification, the first answer to an ATOMIC may answer a duplicate
// the capture missed (its first answer missed too) after new requests it
// missed, carrying the count of that moment, and the network may have
// delayed the responses sent before it: an MSN above the count is open,
// and the ACK after it, below it, is no violation either. Complete, the
// first answer is the only one: a violation.
func TestFirstAtomicAnswerAboveTheCount(t *testing.T) {
	build := func(ackAfter bool) *ht.Trace {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, 5)
		tr.Atomic(wire.CompareSwap, 11)
		tr.Req(wire.WriteOnly, 12, true)
		tr.AtomicAck(11, 12, 0)
		if ackAfter {
			tr.Ack(12, 7)
		}
		return &tr
	}
	for _, c := range []struct {
		name     string
		ackAfter bool
		settings harness.Settings
		want     reports.Verdict
	}{
		{"a capture", false, ht.Capture(), reports.Indeterminate},
		{"a capture, the correct ACK after it", true, ht.Capture(), reports.Indeterminate},
		{"complete", false, ht.Complete(), reports.Fail},
	} {
		tallies, findings := ht.AuditAll(build(c.ackAfter), c.settings)
		if got := tallies[ID].Verdict(); got != c.want {
			t.Errorf("%s: %s (%+v, %v), want %s", c.name, got, tallies[ID], findings, c.want)
		}
	}
}

// An ACK the network delayed past the next one: its MSN goes back, and
// its IPv4 ID is a little behind the one before it. That shows it was
// sent first only if the responder counts its IDs up. Where nine
// exchanges before showed that, it is late and decides nothing; where
// too few did (a sender drawing IDs at random looks the same), it may as
// well have been sent again, so the clause stays open rather than
// passing.
func TestBehindByAnIDNotShownToCount(t *testing.T) {
	for _, shown := range []bool{false, true} {
		var b rtest.Builder
		first := wire.PSN(10)
		msn := uint32(1)
		if shown {
			b.AckedSends(first, 1, 2, 3, 4, 5, 6, 7, 8, 9)
			first, msn = first+9, 10
		}
		b.Send(first, true)
		b.Send(first+1, true)
		ahead := b.Ack(first+1, msn+1)
		late := b.Ack(first, msn)
		late.IPID = ahead.IPID - 1 // sent just before it, if IDs count
		tallies, findings := ht.AuditAll(&ht.Trace{Records: b.Recs}, rtest.Capture(256))
		tl := tallies[ID]
		if tl.Violations > 0 {
			t.Fatalf("shown %v: a late ACK fails: %v", shown, findings)
		}
		if open := tl.Open > 0; open == shown {
			t.Errorf("shown %v: open %v, want %v (%+v)", shown, open, !shown, tl)
		}
	}
}

// An ACK whose MSN is below an earlier ACK's broke the clause whatever
// its own PSN: a wrong PSN (C9-95's) leaves the MSN going back. A READ
// answer between them that may replay one (the READs were shown before
// any acknowledgment) does not hide the earlier ACK's count: it fails,
// not left open as "either its PSN or its MSN is wrong".
func TestBelowAnEarlierACKWhateverItsPSN(t *testing.T) {
	var b rtest.Builder
	b.Read(73, 0)
	b.Req(wire.WriteOnly, 74, true, 0)
	b.Read(75, 0)
	b.Resp(wire.ReadResponseOnly, 73, 0, 563, 0)
	b.Ack(74, 564)
	b.Resp(wire.ReadResponseOnly, 75, 0, 565, 0)
	b.Req(wire.SendFirst, 76, false, 256)
	b.Req(wire.SendMiddle, 77, false, 256)
	b.Req(wire.SendLast, 78, true, 3)
	b.Ack(77, 561)
	b.Ack(78, 566)
	rtest.WantViolation(t, b.Recs, rtest.Capture(256), ID, "went back from 564 (frame 5) to 561")
}

// A NAK carries the MSN of its moment: an ACK after it with a lower MSN
// breaks this clause, or the NAK's MSN was too high (C9-149), one
// finding naming both. It holds also for a NAK naming a PSN before the
// capture's first request.
func TestBelowANAKsMSN(t *testing.T) {
	var b rtest.Builder
	b.Read(771, 3072)
	b.NAK(770, wire.NAKPSNSequence, 226)
	b.Send(770, true)
	b.Read(771, 3072)
	b.Ack(770, 224)
	rtest.WantViolation(t, b.Recs, rtest.Capture(1024), ID, "went back from 226 (frame 2) to 224")
}

// A READ shown before any acknowledgment may resend one the responder
// executed before the capture began, and its answer then replays one:
// its MSN bounds little. An ATOMIC acknowledgment after it that fits the
// count only if that answer was such a replay is suspect, not passed
// (here an MSN seven ahead, on a capture at the responder).
func TestAnswerFitsOnlyAsAReplay(t *testing.T) {
	build := func(msn uint32) []*trace.Record {
		var b rtest.Builder
		b.Read(423, 0)
		b.Resp(wire.ReadResponseOnly, 423, 0, 627, 0)
		b.Atomic(424)
		b.Resp(wire.AtomicAcknowledge, 424, 0, msn, 0)
		return b.Recs
	}
	rtest.WantPass(t, build(628), rtest.Capture(0), ID)
	tl := rtest.WantIndeterminate(t, build(634), rtest.Capture(0), ID)
	if tl.Open == 0 {
		t.Errorf("an MSN legal only if the READ answer replayed one left nothing open: %+v", tl)
	}
}

// An ACK whose MSN is below the messages its own PSN acknowledges, the
// request it names without AckReq: either its MSN is wrong or its PSN
// names requests the responder had not completed (C9-95), whenever it was
// sent: one finding names both clauses; it is not left open. With the
// count its PSN gives, nothing fails.
func TestTooLowForItsOwnPSN(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{5, true}, {7, false}} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, 5)
		tr.Atomic(wire.CompareSwap, 11)
		tr.Atomic(wire.FetchAdd, 12)
		tr.Req(wire.WriteFirst, 13, false)
		tr.Req(wire.WriteLast, 14, true)
		tr.AtomicAck(11, 6, 1)
		tr.AtomicAck(12, 7, 2)
		ack := tr.Ack(13, tc.msn)
		tr.Ack(14, 8)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		for _, id := range []string{ID, "C9-95"} {
			if got := tallies[id].Verdict() == reports.Fail; got != tc.fail {
				t.Errorf("MSN %d: %s %s (%+v), want fail %v", tc.msn, id, tallies[id].Verdict(), findings, tc.fail)
			}
		}
		for _, f := range findings {
			if f.Frame != ack.Frame || len(f.Alternatives) != 2 {
				t.Errorf("MSN %d: want the one finding on the ACK, naming two clauses: %+v", tc.msn, f)
			}
		}
	}
}

// An ACK whose MSN counts more messages than had reached the responder,
// where the capture missed requests past its PSN: a retransmission the
// responder took as a duplicate after completing them would explain the
// count for a READ's or an ATOMIC's answer, but an ACK names the newest
// request completed, a duplicate's answer too. Its PSN is wrong (C9-95,
// or C9-105 as it may answer the request sent again) or its MSN is: one
// finding, not left open.
func TestAckCountingMissedRequestsPastItsPSN(t *testing.T) {
	var b rtest.Builder
	b.Send(71, true)
	b.Resp(wire.Acknowledge, 71, 0x20|10, 941, 0) // RNR NAK: 71 not executed, MSN 941
	b.Send(71, true)
	b.Send(72, true)
	b.Send(74, true) // 73 missing
	b.Ack(71, 949)   // at most 4 messages (71, 72, 73, 74) had reached it
	b.Ack(74, 945)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "MSN 949 is too high", "C9-95 if the MSN is right and the ACK answers a new request", "C9-105 if")
}

// Three ATOMICs shown before any acknowledgment, their answers each taken
// for a replay of one executed before the capture began: were the first
// new, it was sent as the responder executed it, in PSN order, and its
// MSN counts no message after its PSN. An ACK two behind the count that
// account gives is legal only if that answer was a replay: open, not
// passed (recall test, seed 49, "C9-148 MSN goes back").
func TestAtomicAnswerAsNewCountsUpToItsPSN(t *testing.T) {
	build := func(msn uint32) []*trace.Record {
		var b rtest.Builder
		b.Atomic(898)
		b.Atomic(899)
		b.Atomic(900)
		b.Resp(wire.AtomicAcknowledge, 898, 0x1f, 936, 0)
		b.Resp(wire.AtomicAcknowledge, 899, 0x1f, 937, 0)
		b.Resp(wire.AtomicAcknowledge, 900, 0x1f, 938, 0)
		b.Atomic(901)
		b.Send(902, true)
		b.Send(903, true)
		b.Resp(wire.AtomicAcknowledge, 901, 0x1f, 939, 0)
		b.Ack(903, msn)
		for _, r := range b.Recs {
			r.HasIPID = false
		}
		return b.Recs
	}
	rtest.WantPass(t, build(941), rtest.Capture(0), ID)
	rtest.WantOpen(t, build(939), rtest.Capture(0), ID, "want the ACK open")
}

// An ACK below the count of the ACK just before it, which names the last
// PSN of a READ whose Last the capture does not show (a PSN the
// reconstruction calls C9-95's fault), goes back below the READ's First
// before it too, whose PSN nothing faults: a violation, not undecided
// (recall test, seed 27, "C9-148 MSN goes back").
func TestWentBackBelowAnUnfaultedCount(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 5)
	b.Read(11, 12288) // 11..13 at MTU 4096
	b.Resp(wire.ReadResponseFirst, 11, 0x1f, 6, 4096)
	b.Send(10, true)
	b.Ack(12, 6) // inside the READ's range, its Last not seen
	b.Ack(12, 4)
	rtest.WantViolation(t, b.Recs, rtest.Capture(4096), ID, "went back from 6 (frame 4)")
}

// TestWentBackBelowAnACKAtAREADsLastPSN: off a complete trace, an ACK at
// the last PSN of a READ whose answer the capture does not show may
// acknowledge the READ, answered and its answer lost before the capture
// point (it may answer a duplicate of an earlier request): its PSN is no
// fault, and an MSN going back below it fails.
func TestWentBackBelowAnACKAtAREADsLastPSN(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 5)
	b.Read(11, 8) // 11 alone
	b.Send(10, true)
	b.Ack(11, 6) // the READ answered, its answer not captured
	b.Ack(11, 4)
	rtest.WantViolation(t, b.Recs, rtest.Capture(4096), ID, "went back from 6 (frame 5)")
}

// An ATOMIC sent three times, the first copy lost (a sequence NAK names
// its PSN), and its first answer the trace shows carries an MSN above
// the count up to its PSN. Taken as the replay of a copy executed before,
// it passed (recall test, seeds 65, 70 and 79, "C9-148 MSN skips
// ahead"): that reading needs an earlier answer the capture missed,
// sent after the NAK, as the NAK shows the ATOMIC not yet executed. With
// no IPv4 ID it is open; where the responder's IDs show the capture
// missed none of its packets since the NAK, there was no earlier answer:
// this one is new, and too high. Right, it passes.
func TestAtomicAnswerAfterANAKThatShowedItUnexecuted(t *testing.T) {
	build := func(msn uint32, ids bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.AckedSends(10, 5, 6, 7, 8, 9, 10, 11, 12, 13) // 10..18
		b.Atomic(19)                                    // lost
		b.Send(20, true)
		b.NAK(19, 0, 13)
		for range 2 {
			b.Atomic(19)
			b.Send(20, true)
		}
		b.Resp(wire.AtomicAcknowledge, 19, 0x1f, msn, 0)
		b.Ack(20, 15)
		for _, r := range b.Recs {
			r.HasIPID = ids
		}
		return b.Recs
	}
	rtest.WantPass(t, build(14, true), rtest.Capture(0), ID)
	rtest.WantPass(t, build(14, false), rtest.Capture(0), ID)
	rtest.WantOpen(t, build(17, false), rtest.Capture(0), ID, "an answer above the count, taken for a replay nothing shows, left undecided but not open")
	rtest.WantViolation(t, build(17, true), rtest.Capture(0), ID, "it is the ATOMIC's first answer")
	// The same shown before any acknowledgment (recall test, seed 72): a
	// capture that began during a resend reads it as the replay of an
	// ATOMIC executed before, but the NAK showed it not executed.
	early := func(msn uint32, ids bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.Atomic(19) // lost
		b.Send(20, true)
		b.NAK(19, 0, 13)
		b.Atomic(19)
		b.Send(20, true)
		b.Resp(wire.AtomicAcknowledge, 19, 0x1f, msn, 0)
		b.Ack(20, 15)
		b.AckedSends(21, 16, 17, 18, 19, 20, 21, 22, 23)
		for _, r := range b.Recs {
			r.HasIPID = ids
		}
		return b.Recs
	}
	rtest.WantPass(t, early(14, true), rtest.Capture(0), ID)
	rtest.WantOpen(t, early(17, false), rtest.Capture(0), ID, "an answer above the count, shown before any acknowledgment, left undecided but not open")
	rtest.WantViolation(t, early(17, true), rtest.Capture(0), ID, "it is the ATOMIC's first answer")
	// An answer at another request's PSN before it (o9-58's fault) may be
	// the ATOMIC's first, misplaced: the one at its PSN may replay it,
	// and stays open (one root cause, one clause; recall test, seed 24).
	// Open, it is still a floor: a replay carries its first answer's
	// count or the count of the moment, so the ACK after it, dated after
	// it by the responder's IDs, may not carry a lower MSN (were the
	// replay new, its MSN is the fault: C9-148 either way).
	b := rtest.Builder{PerSender: true}
	b.AckedSends(10, 5, 6, 7, 8, 9, 10, 11, 12, 13)
	b.Atomic(19)
	b.Send(20, true)
	b.NAK(19, 0, 13)
	b.Atomic(19)
	b.Send(20, true)
	b.Atomic(19)
	b.Resp(wire.AtomicAcknowledge, 20, 0x1f, 14, 0)
	b.Resp(wire.AtomicAcknowledge, 19, 0x1f, 17, 0)
	sink := rtest.Audit(b.Recs, rtest.Capture(0), ID)
	if tl := rtest.Tally(sink, ID); tl.Open == 0 {
		t.Fatalf("behind an answer at another request's PSN: want open, got %+v\n%s", tl, rtest.Dump(b.Recs))
	}
	b.Ack(20, 15)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "went back from 17 (frame 26) to 15")
}

// TestFirstAnswersSinceANAK: a sequence NAK, the first count the capture
// shows, names PSN 84: the responder had executed nothing from there, so
// the READ's answer at 84 after it replays none given before the capture
// began, and the ATOMIC acknowledgment at 85 after that is the ATOMIC's
// first answer. The responder's IDs show the capture missed none of its
// packets since the NAK: an MSN at 85 above the READ's count plus one
// fails, one that fits passes.
func TestFirstAnswersSinceANAK(t *testing.T) {
	for _, c := range []struct {
		msn  uint32
		fail bool
	}{{24, false}, {27, true}} {
		var tr ht.Trace
		tr.Atomic(wire.FetchAdd, 85)
		tr.NAK(84, wire.NAKPSNSequence, 22)
		tr.Read(84, 0)
		tr.Atomic(wire.FetchAdd, 85)
		tr.ReadResp(wire.ReadResponseOnly, 84, 23, 0)
		tr.AtomicAck(85, c.msn, 1)
		for psn := wire.PSN(86); psn < 96; psn++ { // the responder shown to number its packets one by one
			tr.Req(wire.SendOnly, psn, true)
			tr.Ack(psn, c.msn+uint32(psn-85))
		}
		tr.IPIDs(100, 200)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if failed := tallies[ID].Violations > 0; failed != c.fail {
			t.Errorf("%+v: C9-148 failed %v (%+v, %v)", c, failed, tallies[ID], findings)
		}
	}
}

// TestCountOfAnAckAtAnAtomicsPSN: an ACK naming an ATOMIC's PSN before
// the trace shows the ATOMIC's answer is legal where that answer was sent
// and lost (the responder's IPv4 Identifications skip a packet after the
// ATOMIC): the responder executed the ATOMIC and acknowledged a duplicate
// of an earlier request with it. Its MSN then counts, and the next ACK,
// sent right after it and lower, went back. Where the Identifications run
// on, no answer was sent: the ACK's PSN is no legal responder's, and its
// MSN, resting on it, is not this clause's violation.
func TestCountOfAnAckAtAnAtomicsPSN(t *testing.T) {
	for _, answerLost := range []bool{true, false} {
		var tr ht.Trace
		for i := range wire.PSN(9) { // nine exchanges: the responder counts its IDs up
			tr.Req(wire.SendOnly, 10+i, true)
			tr.Ack(10+i, uint32(1+i))
		}
		tr.Atomic(wire.CompareSwap, 19)
		tr.AtomicAck(19, 10, 7)
		tr.Req(wire.SendOnly, 18, true) // a duplicate
		tr.Ack(19, 15)                  // five messages too many
		tr.Req(wire.SendOnly, 20, true)
		tr.Ack(20, 11)
		tr.IPIDs(100, 500)
		tr.Remove(19) // the ATOMIC's answer: lost before the capture point, or never sent
		if !answerLost {
			for _, r := range tr.Records[19:] {
				if r.Dir == trace.ToRequester {
					r.IPID--
				}
			}
		}
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if fails := tallies[ID].Violations > 0; fails != answerLost {
			t.Errorf("answer lost %v: fails %v (%+v, %v), want %v", answerLost, fails, tallies[ID], findings, answerLost)
		}
	}
}

// TestREADsOwnPSNsAreNoMissedRequests: with the path MTU unknown, a
// request after a READ may leave PSNs between that are the READ's or
// requests the capture missed, which the responder counts unseen. Once
// the READ's answer ends at its Last, the responder itself has numbered
// those PSNs as the READ's: none was a new message, and an ACK counting
// two more fails.
func TestREADsOwnPSNsAreNoMissedRequests(t *testing.T) {
	for _, msn := range []uint32{16, 18} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 40, true)
		tr.Read(41, 3072)
		tr.Atomic(wire.CompareSwap, 44) // 42..43: the READ's, or missed
		tr.Ack(40, 13)
		tr.ReadStream(41, 3072, 1024, 14) // 41..43: the READ's
		tr.AtomicAck(44, 15, 1)
		tr.Req(wire.SendOnly, 45, true)
		tr.Ack(45, msn)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if fails, want := tallies[ID].Violations > 0, msn != 16; fails != want {
			t.Errorf("MSN %d: fails %v (%+v, %v), want %v", msn, fails, tallies[ID], findings, want)
		}
	}
}

// TestBoundInsideAResolvedGap: a request the capture missed (878, a
// READ) completed unseen once an ACK acknowledged past it (880), which
// moves the start of the count up by one. A sequence NAK shown since at
// that PSN counts no message from there on, so the start it bounds is in
// the moved count's terms only with the unseen message after it added
// back: otherwise the correct ACK at 884 looks a message too high. The
// ACK at 880, inside the READ at 879 whose answer shows three packets, is
// the trace's one fault, and found there alone.
func TestBoundInsideAResolvedGap(t *testing.T) {
	var tr ht.Trace
	tr.Req(wire.SendOnly, 875, true)
	tr.Atomic(wire.FetchAdd, 876)
	tr.Ack(875, 34)
	tr.AtomicAck(876, 35, 1)
	tr.Atomic(wire.CompareSwap, 877)
	tr.Read(879, 3072) // the READ at 878 lost
	fault := tr.Ack(880, 35)
	tr.AtomicAck(877, 36, 1)
	tr.NAK(878, wire.NAKPSNSequence, 36)
	tr.Read(878, 0)
	tr.Read(879, 3072)
	tr.Read(882, 0)
	tr.Atomic(wire.CompareSwap, 883)
	tr.Req(wire.SendOnly, 884, true)
	tr.ReadResp(wire.ReadResponseOnly, 878, 37, 0)
	tr.ReadStream(879, 3072, 1024, 38)
	tr.ReadResp(wire.ReadResponseOnly, 882, 39, 0)
	tr.AtomicAck(883, 40, 1)
	tr.Ack(884, 41)
	tr.IPIDs(21414, 34633)
	tallies, findings := ht.AuditAll(&tr, ht.Capture())
	if tallies[ID].Checked == 0 {
		t.Errorf("no count checked: %+v", tallies[ID])
	}
	found := false
	for _, f := range findings {
		if f.ID == ID && f.Frame != fault.Frame {
			t.Errorf("a finding at frame %d, not at the ACK at fault (frame %d): %s", f.Frame, fault.Frame, f.Message)
		}
		found = found || f.ID == "C9-95" && f.Frame == fault.Frame
	}
	if !found {
		t.Errorf("no C9-95 finding at the ACK at fault (frame %d): %v", fault.Frame, findings)
	}
}

// TestBoundFromAnACKInsideAREAD: with the path MTU unknown, an ACK just
// past a READ's own PSN may acknowledge a request the capture missed,
// and bounds the count as such; once the path MTU, shown since, puts the
// PSN inside the READ's range, the ACK's PSN is at fault (C9-95's, whose
// tests hold that finding) and it bounds nothing, so the correct counts
// after it stand.
func TestBoundFromAnACKInsideAREAD(t *testing.T) {
	var tr ht.Trace
	tr.Atomic(wire.CompareSwap, 823)
	tr.AtomicAck(823, 299, 1)
	tr.Atomic(wire.CompareSwap, 824)
	tr.Read(825, 768)
	fault := tr.Ack(826, 299)
	tr.AtomicAck(824, 300, 1)
	tr.Wait(11 * time.Millisecond)
	tr.Read(825, 768)
	tr.Wait(19 * time.Millisecond)
	tr.Read(825, 768)
	tr.Atomic(wire.CompareSwap, 828)
	for _, r := range []*trace.Record{tr.Req(wire.SendFirst, 829, false), tr.Req(wire.SendMiddle, 830, false)} {
		r.Packet.Payload, r.PayloadLen = make([]byte, 256), 256 // full: the path MTU is 256
	}
	tr.Req(wire.SendLast, 831, true)
	tr.ReadStream(825, 768, 256, 301) // 825..827
	tr.AtomicAck(828, 302, 1)
	tr.Ack(831, 303)
	tr.IPIDs(4356, 57907)
	tallies, findings := ht.AuditAll(&tr, ht.Capture())
	if tallies[ID].Checked == 0 {
		t.Errorf("no count checked: %+v", tallies[ID])
	}
	for _, f := range findings {
		if f.ID == ID && f.Frame != fault.Frame {
			t.Errorf("a finding at frame %d, not at the ACK at fault (frame %d): %s", f.Frame, fault.Frame, f.Message)
		}
	}
}

// TestAtomicAnsweredAgainBoundsTheCount: any answer to an ATOMIC, its
// first or one given again for a duplicate, went out after the responder
// executed it, so its MSN counts at least every message up to the
// ATOMIC's PSN, whichever MSN a replay carries. The next ATOMIC's first
// answer then counts at most one more: four more is legal only if the
// capture missed requests or the first answer was a replay of one given
// before it began, suspect, never a pass.
func TestAtomicAnsweredAgainBoundsTheCount(t *testing.T) {
	for _, msn := range []uint32{757, 760} {
		var tr ht.Trace
		tr.Atomic(wire.CompareSwap, 576)
		tr.Atomic(wire.CompareSwap, 576) // sent again: its answers may replay one
		tr.AtomicAck(576, 756, 7)
		tr.AtomicAck(576, 756, 7)
		tr.Atomic(wire.CompareSwap, 577)
		tr.AtomicAck(577, msn, 8)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		tl := tallies[ID]
		if skips := msn != 757; tl.Violations != 0 || (tl.Open > 0) != skips || (tl.Verdict() == reports.Pass) == skips {
			t.Errorf("MSN %d: %s (%+v, %v), want a pass, or open when it skips ahead", msn, tl.Verdict(), tl, findings)
		}
	}
}

// TestOneRuleForAtomicAnswersGivenAgain: a responder answers every
// duplicate ATOMIC either with its first answer's MSN or with the count
// of the moment. An ATOMIC answered again with a count above its first
// answer's shows the second rule, and another answered again after it
// may not go back below it; one answered again below an earlier MSN shows
// the first rule, and another answered again with a new MSN after it
// fits neither.
func TestOneRuleForAtomicAnswersGivenAgain(t *testing.T) {
	prefix := func(tr *ht.Trace) {
		for i := range wire.PSN(5) {
			tr.Req(wire.SendOnly, 15+i, true)
			tr.Ack(15+i, uint32(5+i))
		}
		tr.Atomic(wire.FetchAdd, 20)
		tr.Atomic(wire.FetchAdd, 21)
		tr.Atomic(wire.FetchAdd, 20)
		tr.Req(wire.SendOnly, 22, true)
		tr.Req(wire.SendOnly, 23, true)
		tr.Atomic(wire.FetchAdd, 21)
	}
	for _, tc := range []struct {
		name string
		tail func(tr *ht.Trace)
		want string // the finding's message holds it ("": none)
	}{
		{"first MSN again", func(tr *ht.Trace) {
			tr.AtomicAck(20, 10, 7)
			tr.AtomicAck(20, 10, 7)
			tr.AtomicAck(21, 11, 8)
			tr.Ack(23, 13)
		}, ""},
		{"count of the moment, then back", func(tr *ht.Trace) {
			tr.AtomicAck(20, 10, 7)
			tr.AtomicAck(20, 13, 7) // the count of the moment
			tr.AtomicAck(21, 11, 8) // its first answer lost: with its first MSN
			tr.Ack(23, 13)
		}, "the count of the moment"},
		{"first MSN, then the count of the moment", func(tr *ht.Trace) {
			tr.AtomicAck(20, 10, 7)
			tr.AtomicAck(21, 11, 8)
			tr.Ack(23, 13)
			tr.AtomicAck(20, 10, 7) // after MSN 13: its first MSN
			tr.AtomicAck(21, 13, 8) // not its first answer's 11
		}, "neither rule"},
	} {
		var tr ht.Trace
		prefix(&tr)
		tc.tail(&tr)
		tr.IPIDs(100, 500)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		got := ""
		for _, f := range findings {
			if f.ID == ID {
				got = f.Message
			}
		}
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) || len(findings) > 1 {
			t.Errorf("%s: %+v, %v; want a finding holding %q", tc.name, tallies[ID], findings, tc.want)
		}
	}
}

// TestNoMissedRequestWhereTheRequesterSentNothing: with the path MTU
// unknown, a SEND three PSNs past a READ of 3072 bytes leaves two PSNs
// between that are the READ's, or requests the capture missed, which the
// responder would count. Where the requester's IPv4 Identifications run
// on unbroken from the READ to the SEND, it sent nothing between: an ACK
// counting two messages more than the READ and the SEND fails. Where they
// skip two, the capture missed two packets, which may have been those
// requests: it does not.
func TestNoMissedRequestWhereTheRequesterSentNothing(t *testing.T) {
	for _, skip := range []bool{false, true} {
		for _, msn := range []uint32{22, 24} {
			var tr ht.Trace
			for i := range wire.PSN(10) { // the requester counts its IDs up
				tr.Req(wire.SendOnly, 20+i, true)
				tr.Ack(20+i, uint32(11+i))
			}
			tr.Read(30, 3072)
			tr.Req(wire.SendOnly, 33, true)
			tr.Ack(33, msn)
			tr.IPIDs(100, 500)
			if skip {
				tr.Records[len(tr.Records)-2].IPID += 2
			}
			tallies, findings := ht.AuditAll(&tr, ht.Capture())
			tl := tallies[ID]
			if fails, want := tl.Violations > 0, msn != 22 && !skip; fails != want || tl.Checked == 0 {
				t.Errorf("IDs skip %v, MSN %d: %s (%+v, %v), want fails %v", skip, msn, tl.Verdict(), tl, findings, want)
			}
		}
	}
}

// TestREADsAnsweredLeaveNoMissedRequests: with the path MTU unknown, two
// READs of 3072 bytes and an ATOMIC after them leave four PSNs that may be
// the READs' or requests the capture missed. Once each READ's answer has
// ended at its Last, three packets on, the responder has numbered them
// all as the READs': none is a missed request. A READ answer counting
// five past an ACK, with only the two READs and the ATOMIC after it, is
// then above what the requests allow, and suspect, not passed.
func TestREADsAnsweredLeaveNoMissedRequests(t *testing.T) {
	for _, ackMSN := range []uint32{152, 148} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 90, true)
		tr.Read(91, 3072)
		tr.Req(wire.SendOnly, 90, true) // a resend: the answers after it may replay
		tr.Read(91, 3072)
		tr.Read(94, 3072)
		tr.Atomic(wire.CompareSwap, 97)
		tr.Ack(90, ackMSN)
		tr.ReadStream(91, 3072, 1024, 153)
		tr.Read(94, 3072)
		tr.Atomic(wire.CompareSwap, 97)
		tr.ReadStream(94, 3072, 1024, 154)
		tr.AtomicAck(97, 155, 8)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		tl := tallies[ID]
		if right := ackMSN == 152; tl.Violations != 0 || (tl.Verdict() == reports.Pass) != right || (tl.Open > 0) == right {
			t.Errorf("ACK MSN %d: %s (%+v, %v), want a pass only for the right count, suspect otherwise", ackMSN, tl.Verdict(), tl, findings)
		}
	}
}

// TestCompleteTraceACKTooLowForItsPSN: on a complete trace, an ACK naming
// a SEND's First packet, after two messages completed past the previous
// ACK, with that ACK's count, is too low for what its PSN acknowledges or
// names a PSN past what the responder had completed: C9-95 cannot tell a
// plausible PSN ahead, so one finding names both clauses. And a request
// behind the first one a complete trace shows is a duplicate of nothing
// the QP executed, never a new message: a duplicate SEND there, answered
// after two READs with their count, passes.
func TestCompleteTraceACKTooLowForItsPSN(t *testing.T) {
	for _, msn := range []uint32{5, 3} {
		var tr ht.Trace
		for i := range wire.PSN(3) {
			tr.Req(wire.SendOnly, 811+i, true)
			tr.Ack(811+i, uint32(1+i))
		}
		tr.Req(wire.SendOnly, 814, true)
		tr.Req(wire.SendFirst, 815, false)
		tr.Req(wire.SendLast, 816, true)
		tr.Req(wire.SendFirst, 817, false)
		tr.Ack(817, msn)
		tallies, findings := ht.AuditAll(&tr, ht.Complete())
		if fails, want := tallies[ID].Verdict() == reports.Fail, msn != 5; fails != want {
			t.Errorf("MSN %d: %s (%+v, %v), want fails %v", msn, tallies[ID].Verdict(), tallies[ID], findings, want)
		}
	}
	var tr ht.Trace
	tr.Read(60000, 2048)
	tr.ReadStream(60000, 2048, 1024, 1)
	tr.Read(60002, 2048)
	tr.ReadStream(60002, 2048, 1024, 2)
	tr.Req(wire.SendOnly, 59998, true) // behind the first request: a duplicate
	tr.Ack(60003, 2)
	tallies, findings := ht.AuditAll(&tr, ht.Complete())
	if tl := tallies[ID]; tl.Verdict() != reports.Pass {
		t.Errorf("duplicate before the first request: %s (%+v, %v), want a pass", tl.Verdict(), tl, findings)
	}
}

// TestTooHighBeforeAResendThatMayBeginNewQPs: an ACK's MSN too high for
// the messages that had reached the responder, then, after a silence, the
// requester sends the acknowledged PSN again and the ACK before the fault
// comes again (a resend after lost ACKs, or QPs made anew with the same
// numbers, which no MSN after it tells apart). The fault was judged from
// the old QPs' packets alone, so QPs made anew explain none of it: it
// fails. The same resend after a right MSN leaves nothing to fail.
func TestTooHighBeforeAResendThatMayBeginNewQPs(t *testing.T) {
	for _, msn := range []uint32{20, 13} {
		var tr ht.Trace
		for i := range wire.PSN(10) {
			tr.Req(wire.SendOnly, 800+i, true)
			tr.Ack(800+i, uint32(4+i))
		}
		tr.Ack(809, msn) // 13: the ACK again, its MSN right
		tr.Wait(14 * time.Millisecond)
		tr.Req(wire.SendOnly, 809, true)
		tr.Ack(809, 13)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if fails, want := tallies[ID].Verdict() == reports.Fail, msn != 13; fails != want {
			t.Errorf("MSN %d: %s (%+v, %v), want fails %v", msn, tallies[ID].Verdict(), tallies[ID], findings, want)
		}
	}
}

// TestACKNoHigherThanAnAtomicsFirstAnswer: after a READ sent twice and
// answered once (a replay, maybe, which bounds no count), the first answer a capture shows to an ATOMIC sent once, then an ACK of the SEND and WRITE after
// it, sent again, carrying the ATOMIC answer's MSN. Were that answer new,
// it counted every message up to the ATOMIC, and the ACK counts two too
// few; it passes only if the answer replayed one given before the capture
// began, with the count of a later moment (every request here executed
// before it): open, never a pass, on a capture; failed on a complete one.
// The ACK counting both passes.
func TestACKNoHigherThanAnAtomicsFirstAnswer(t *testing.T) {
	cases := []struct {
		msn      uint32
		settings harness.Settings
		want     reports.Verdict
	}{
		{50, ht.Capture(), reports.Indeterminate},
		{50, ht.Complete(), reports.Fail},
		{52, ht.Capture(), reports.Pass},
	}
	for _, tc := range cases {
		var tr ht.Trace
		tr.Read(99, 256)
		tr.Wait(3 * time.Millisecond)
		tr.Read(99, 256)
		tr.ReadResp(wire.ReadResponseOnly, 99, 49, 256)
		tr.Atomic(wire.FetchAdd, 100)
		tr.Req(wire.SendOnly, 101, true)
		tr.Req(wire.WriteOnly, 102, true)
		tr.AtomicAck(100, 50, 7)
		tr.Wait(20 * time.Millisecond)
		tr.Req(wire.SendOnly, 101, true)
		tr.Req(wire.WriteOnly, 102, true)
		tr.Ack(102, tc.msn)
		tallies, findings := ht.AuditAll(&tr, tc.settings)
		tl := tallies[ID]
		if got := tl.Verdict(); got != tc.want || tc.want == reports.Indeterminate && tl.Open == 0 {
			t.Errorf("MSN %d, complete %v: %s (%+v, %v), want %s", tc.msn, tc.settings.Complete, got, tl, findings, tc.want)
		}
	}
}

// TestREADsFirstNumbersItsSpan: the first ACK a capture shows, then two
// READs asked for with the path MTU unknown, the first answered from its
// First (256 bytes: the path MTU, so the READ takes three PSNs, the second
// READ following them) but its Last lost. Its two PSNs after the First
// are the READ's, no request the capture missed: a First counting three
// past the ACK where only the READ lies between goes back from the count
// the ACK showed. The ACK with the count one below the First's passes.
func TestREADsFirstNumbersItsSpan(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{16, true}, {18, false}} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 77, true)
		tr.Req(wire.WriteOnly, 78, true)
		tr.Ack(78, tc.msn)
		tr.Read(79, 768)
		tr.Read(82, 768)
		tr.ReadResp(wire.ReadResponseFirst, 79, 19, 256)
		tr.ReadResp(wire.ReadResponseMiddle, 80, 0, 256)
		tr.ReadStream(82, 768, 256, 20)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict() == reports.Fail; got != tc.fail {
			t.Errorf("ACK MSN %d: %s (%+v, %v), want fail %v", tc.msn, tallies[ID].Verdict(), tallies[ID], findings, tc.fail)
		}
	}
}

// TestReplayBelowAnAnswerToAnEarlierRequest: on a capture begun while the
// requester resent ATOMICs, their answers may all replay ones given
// before it began. An answer to the ATOMIC at PSN 56 below the answer to
// the one at 55 before it fits neither numbering of a replay (a first
// answer's count grows with the PSN; the count of the moment grows with
// time) unless it was sent first: a violation where the responder's IDs
// date it after, open (no pass) where nothing does; the answer at 55
// with its first MSN passes.
func TestReplayBelowAnAnswerToAnEarlierRequest(t *testing.T) {
	for _, tc := range []struct {
		first uint32 // the MSN of the answer at 55
		ids   bool
		want  reports.Verdict
	}{
		{36, true, reports.Fail},
		{36, false, reports.Indeterminate},
		{33, true, reports.Pass},
		{33, false, reports.Pass},
	} {
		var tr ht.Trace
		tr.Atomic(wire.FetchAdd, 55)
		tr.Wait(19 * time.Millisecond)
		tr.Atomic(wire.FetchAdd, 55)
		tr.Atomic(wire.FetchAdd, 56)
		tr.Atomic(wire.CompareSwap, 57)
		tr.AtomicAck(55, tc.first, 1)
		tr.AtomicAck(56, 34, 2)
		tr.AtomicAck(57, 35, 3)
		for psn := wire.PSN(58); psn < 66; psn++ {
			tr.Atomic(wire.FetchAdd, psn)
			tr.AtomicAck(psn, 36+uint32(psn-58), uint64(psn))
		}
		if tc.ids {
			tr.IPIDs(100, 200)
		}
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict(); got != tc.want {
			t.Errorf("%+v: %s (%+v), want %s; findings %v", tc, got, tallies[ID], tc.want, findings)
		}
	}
}

// TestHeldFindingShowsItsMoment: a violation held to the connection's end
// (reported then) shows in its ladder the records up to the packet it
// blames, as they were when it was judged, not the trace's last ones.
func TestHeldFindingShowsItsMoment(t *testing.T) {
	var tr ht.Trace
	tr.Req(wire.SendOnly, 10, true)
	tr.Ack(10, 5)
	tr.Req(wire.SendOnly, 11, true)
	tr.Ack(11, 4) // went back
	for psn := wire.PSN(12); psn < 40; psn++ {
		tr.Req(wire.SendOnly, psn, true)
		tr.Ack(psn, 6+uint32(psn-11))
	}
	tr.IPIDs(100, 200)
	_, findings := ht.AuditAll(&tr, ht.Capture())
	if len(findings) != 1 {
		t.Fatalf("findings %+v, want the ACK whose MSN went back", findings)
	}
	f := findings[0]
	if n := len(f.Ladder); n == 0 || f.Ladder[n-1].Frame != f.Frame || !f.Ladder[n-1].Highlight || f.Ladder[0].Frame != 1 {
		t.Errorf("ladder %+v: want the records from frame 1 up to frame %d, it highlighted", f.Ladder, f.Frame)
	}
}

// TestAckAtTheCountOfAREADShownFirst: a capture that begins with a READ
// and the requests after it, the READ's answer first among the
// responses: were that answer new, it counts the messages up to the READ
// only (the responder answers in PSN order), so an ACK of the two
// messages after it carrying the same MSN is too low; it fits only if the
// answer replayed one with the count of a later moment (the capture began
// while the requester resent requests already executed), which nothing
// shows: open, not passed. Counting the two messages, it passes.
func TestAckAtTheCountOfAREADShownFirst(t *testing.T) {
	for _, tc := range []struct {
		ack  uint32
		want reports.Verdict
	}{
		{562, reports.Indeterminate},
		{564, reports.Pass},
	} {
		var tr ht.Trace
		tr.Read(851, 8)
		tr.Req(wire.WriteOnly, 852, true)
		tr.Req(wire.SendFirst, 853, false)
		tr.Req(wire.SendMiddle, 854, false)
		tr.Req(wire.SendLast, 855, true)
		tr.ReadResp(wire.ReadResponseOnly, 851, 562, 8)
		tr.Ack(855, tc.ack)
		tr.IPIDs(100, 200)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict(); got != tc.want {
			t.Errorf("ACK MSN %d: %s (%+v), want %s; findings %v", tc.ack, got, tallies[ID], tc.want, findings)
		}
	}
}

// TestAnswersThatFitOnlyAsUnseenReplays: an answer that fits the count
// only if it, or an answer before it, replayed one the capture does not
// show is open, not passed; one the count allows passes.
//   - An ATOMIC sent twice, its first answer the capture shows, then three
//     SENDs and an ACK of them with that answer's MSN. Were the answer new
//     it counts the ATOMIC, and the ACK three messages more: too low. It
//     fits only if the answer replayed an earlier one the capture missed
//     with the count of a later moment, after requests the capture dropped
//     too (recall test, seeds 474 and 533, "C9-148 MSN goes back"). Three
//     above the answer's, it passes.
//   - The capture begins with a READ sent twice and answered twice, which
//     may replay answers given before the capture began; the ATOMIC after
//     it is answered six messages on. A READ answered again went out after
//     every request before it was executed, and carries its first answer's
//     count or the count of the moment: either way its MSN bounds the count
//     before the READ, and the ATOMIC's answer, were it new, counts one
//     more (recall test, seed 657, "C9-148 MSN skips ahead"). One above the
//     READ's count passes.
func TestAnswersThatFitOnlyAsUnseenReplays(t *testing.T) {
	atomicSentTwice := func(msn uint32) *rtest.Builder {
		var b rtest.Builder
		b.Atomic(96)
		b.Atomic(96)
		b.Resp(wire.AtomicAcknowledge, 96, 0x1f, 900, 0)
		b.Send(97, true)
		b.Send(98, true)
		b.Send(99, true)
		b.Ack(99, msn)
		return &b
	}
	afterReplayedREAD := func(msn uint32) *rtest.Builder {
		var b rtest.Builder
		b.Read(91, 8)
		b.Read(91, 8)
		b.Resp(wire.ReadResponseOnly, 91, 0x1f, 212, 8)
		b.Resp(wire.ReadResponseOnly, 91, 0x1f, 212, 8)
		b.Atomic(92)
		b.Resp(wire.AtomicAcknowledge, 92, 0x1f, msn, 0)
		return &b
	}
	for _, c := range []struct {
		what  string
		build func(msn uint32) *rtest.Builder
		msn   uint32
		open  bool
	}{
		{"an ACK no higher than the answer of an ATOMIC sent twice", atomicSentTwice, 900, true},
		{"an ACK three above the answer of an ATOMIC sent twice", atomicSentTwice, 903, false},
		{"an ATOMIC answer above a replayed READ's count", afterReplayedREAD, 218, true},
		{"an ATOMIC answer one above a replayed READ's count", afterReplayedREAD, 213, false},
	} {
		recs := c.build(c.msn).Recs
		if c.open {
			rtest.WantOpen(t, recs, rtest.Capture(0), ID, c.what)
		} else {
			rtest.WantPass(t, recs, rtest.Capture(0), ID)
		}
	}
}

// TestAckAfterAREADAnsweredBeforeItsRequest: the capture begins with a
// READ's answer, then the READ sent again and answered again with the same
// MSN, then an ACK one message on (the request it names lost before the
// capture point). The first answer shows the READ executed before the
// capture began, so it is not among the messages counted from the
// capture's start, and the replay's MSN bounds nothing about them: the ACK
// passes.
func TestAckAfterAREADAnsweredBeforeItsRequest(t *testing.T) {
	var b rtest.Builder
	b.Resp(wire.ReadResponseOnly, 2100, 0x0c, 1, 256)
	b.Read(2100, 256)
	b.Resp(wire.ReadResponseOnly, 2100, 0x0c, 1, 256)
	b.Ack(2101, 2)
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

// A READ's first answer the trace shows, whose MSN is above what it could
// carry were it new, on a capture showing the QP from its creation: legal
// only as the replay of a copy of the READ sent before, and requests after
// it, that the capture missed. Where the requester's IPv4 IDs show it
// missed none of its packets, that is ruled out (a violation); where they
// skip two before the READ, it stays open (the clause cannot pass), unless
// a later ACK's MSN is below the answer's: the count was never that high,
// and the replay reading would need that ACK wrong too (a violation, the
// answer's).
func TestREADsFirstAnswerAboveTheCount(t *testing.T) {
	build := func(skip uint16, ackAfter bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.AckedSends(10, 1, 2, 3, 4, 5, 6, 7, 8, 9)
		q := b.Read(19, 256)
		b.Resp(wire.ReadResponseOnly, 19, 0x04, 12, 256) // new: 10
		s := b.Send(20, ackAfter)
		if ackAfter {
			b.Ack(20, 11)
		}
		q.IPID += skip
		s.IPID += skip
		return b.Recs
	}
	rtest.WantViolation(t, build(0, false), rtest.Capture(0), ID, "MSN 12 is too high")
	rtest.WantOpen(t, build(2, false), rtest.Capture(0), ID, "want the READ's answer open")
	rtest.WantViolation(t, build(2, true), rtest.Capture(0), ID, "MSN 12 is too high")
}

// TestREADsLastAboveTheCount: a READ's answer captured from its First,
// then a Last whose MSN is above the count, the requester's IDs skipping
// two packets before the READ. Where the responder's IDs skip packets
// before the Last, it may end a replay of the READ sent again (after
// requests past it, all missed by the capture): open. Where they show it
// sent right after the Middle before it, it ends the answer the capture
// shows from its First: a violation.
func TestREADsLastAboveTheCount(t *testing.T) {
	build := func(gap uint16) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		b.AckedSends(10, 1, 2, 3, 4, 5, 6, 7, 8, 9)
		b.Read(19, 3*256).IPID += 2
		b.Resp(wire.ReadResponseFirst, 19, 0x04, 10, 256)
		b.Resp(wire.ReadResponseMiddle, 20, 0, 0, 256)
		b.Resp(wire.ReadResponseLast, 21, 0x04, 12, 256).IPID += gap // new: 10
		return b.Recs
	}
	rtest.WantViolation(t, build(0), rtest.Capture(0), ID, "MSN 12 is too high")
	rtest.WantOpen(t, build(3), rtest.Capture(0), ID, "want the READ's Last open")
}
