package c9_101

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestACKAfterTheREADsResponse(t *testing.T) {
	var b rtest.Builder
	b.Read(100, 4*1024) // 100..103
	b.Req(wire.WriteOnly, 104, true, 8)
	b.ReadStream(100, 4*1024, 1024, 1)
	b.Ack(104, 2)
	rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

func TestACKOvertakingTheREADIsFlagged(t *testing.T) {
	overtaken := func(b *rtest.Builder, msn uint32) {
		b.Read(100, 4*1024)
		b.Req(wire.WriteOnly, 104, true, 8)
		b.Resp(wire.ReadResponseFirst, 100, 0x04, msn, 1024)
		b.Ack(104, msn+1)
		b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024)
		b.Resp(wire.ReadResponseMiddle, 102, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 103, 0x04, msn, 1024)
	}
	var b rtest.Builder
	overtaken(&b, 1)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "was not complete")
	// In a capture the READ's own packets after the ACK prove it once
	// the responder's IPv4 IDs are seen to count up (nine exchanges
	// before): they show the READ's Last was sent after the ACK.
	var counted rtest.Builder
	counted.AckedSends(91, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	overtaken(&counted, 10)
	rtest.WantViolation(t, counted.Recs, rtest.Capture(1024), ID, "followed it")
	// Without them, the Last, its MSN behind the ACK's, may have been
	// sent before the ACK and delayed by the network: open.
	rtest.WantOpen(t, b.Recs, rtest.Capture(1024), ID, "the ACK before a Last that may be late is not left open")
}

// TestREADResentAfterASequenceNAK: a READ whose first copy the capture
// lost, a later request seen, then a sequence NAK naming the READ's PSN:
// the READ sent again is new to the responder (it had not passed that
// PSN), not a duplicate, and an ACK past it before its answer ends
// overtakes it.
func TestREADResentAfterASequenceNAK(t *testing.T) {
	b := rtest.Builder{PerSender: true}
	b.AckedSends(90, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	b.Req(wire.WriteOnly, 99, true, 8)
	b.Req(wire.WriteOnly, 104, true, 8) // the READ at 100 before it lost
	b.NAK(99, wire.NAKPSNSequence, 9)   // the WRITE at 99 lost after the capture point
	b.Req(wire.WriteOnly, 99, true, 8)
	b.Read(100, 4*1024)
	b.Req(wire.WriteOnly, 104, true, 8)
	b.Ack(99, 10)
	b.Resp(wire.ReadResponseFirst, 100, 0x04, 11, 1024)
	b.Ack(104, 12)
	b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024)
	b.Resp(wire.ReadResponseMiddle, 102, 0, 0, 1024)
	b.Resp(wire.ReadResponseLast, 103, 0x04, 11, 1024)
	rtest.WantViolation(t, b.Recs, rtest.Capture(1024), ID, "followed it")
}

func TestCaptureWithoutTheResponseIsIndeterminate(t *testing.T) {
	var b rtest.Builder
	b.Read(100, 4*1024)
	b.Req(wire.WriteOnly, 104, true, 8)
	b.Ack(104, 2) // the READ's response may have been lost before the capture point
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(1024), ID)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "was not complete")
	// A duplicate of the READ afterwards makes its later response ambiguous.
	var c rtest.Builder
	c.Recs = append(c.Recs, b.Recs...)
	c.Read(100, 4*1024)
	c.ReadStream(100, 4*1024, 1024, 2)
	rtest.WantIndeterminate(t, c.Recs, rtest.Capture(1024), ID)
}

func TestUnknownMTUBounds(t *testing.T) {
	var b rtest.Builder
	b.Read(100, 1000) // 1 to 4 packets: 100..103 at most
	b.Send(104, true)
	b.Ack(104, 2) // beyond the READ at any MTU
	s := rtest.Capture(0)
	s.Complete = true
	rtest.WantViolation(t, b.Recs, s, ID, "was not complete")
	// Inside the bounds it cannot be told.
	var c rtest.Builder
	c.Read(100, 1000)
	c.Send(101, true)
	c.Ack(101, 2)
	rtest.WantIndeterminate(t, c.Recs, s, ID)
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFC0, SetPSNs: true})
		r.Send(time.Millisecond, r.Read(64*256, 0), r.WriteOnly(8, 0, true), r.Read(0, 0), r.SendOnly(8, true))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("ack-overtakes-read")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "was not complete")
}

// Captures that begin during a retransmission. The responder had
// answered the READ before the capture began; what the capture shows of
// it is a resend and the replay, with the MSN of the first answer
// (allowed), after an ACK beyond it: no ACK overtook the READ's answer.
func TestCaptureBeginsDuringARetransmission(t *testing.T) {
	t.Run("the first answer shown before the resend", func(t *testing.T) {
		var b rtest.Builder
		b.Resp(wire.ReadResponseOnly, 1, 0x04, 76, 256)
		b.Ack(2, 77)
		b.Send(0, true)
		b.Read(1, 256)
		b.Req(wire.WriteOnly, 2, true, 16)
		b.Ack(2, 77)
		b.Resp(wire.ReadResponseOnly, 1, 0x04, 76, 256)
		b.Ack(2, 77)
		wantNoViolation(t, b.Recs)
	})
	t.Run("the resend shown before any acknowledgment", func(t *testing.T) {
		var b rtest.Builder
		b.Read(4, 256)
		b.Read(8, 256)
		b.Send(9, true)
		b.Ack(7, 958)
		b.Resp(wire.ReadResponseOnly, 4, 0x04, 957, 256)
		b.Resp(wire.ReadResponseOnly, 8, 0x04, 959, 256)
		b.Ack(9, 960)
		wantNoViolation(t, b.Recs)
	})
}

func wantNoViolation(t *testing.T, recs []*trace.Record) {
	t.Helper()
	sink := rtest.Audit(recs, rtest.Capture(0), ID)
	if tl := rtest.Tally(sink, ID); tl.Violations != 0 {
		t.Fatalf("%s: %s\n%s", ID, sink.Findings[0].Message, rtest.Dump(recs))
	}
}

// A READ answer whose Last skipped onto the next request's PSN (C9-96's
// fault: the responder numbered its answer wrong) cannot be placed: the
// ACK after it is not judged against the READ's answer (one root cause,
// one clause), whether the request at that PSN was seen before the Last
// or after it.
func TestACKAfterAnAnswerNumberedWrong(t *testing.T) {
	for _, sendFirst := range []bool{true, false} {
		var b rtest.Builder
		b.Read(100, 3*256) // 100..102
		if sendFirst {
			b.Send(103, true)
		}
		b.Resp(wire.ReadResponseFirst, 100, 0x04, 1, 256)
		b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 256)
		b.Resp(wire.ReadResponseLast, 103, 0x04, 1, 256) // skipped 102
		if !sendFirst {
			b.Send(103, true)
		}
		b.Ack(103, 2)
		if tl := rtest.Tally(rtest.Audit(b.Recs, rtest.Active(256), ID), ID); tl.Violations != 0 || tl.Indeterminate == 0 {
			t.Errorf("SEND seen first %v: want the ACK left undecided, got %+v\n%s", sendFirst, tl, rtest.Dump(b.Recs))
		}
	}
}

// An ACK whose own PSN is beyond every request on a complete trace
// (C9-95's fault) says nothing of what the responder had completed: it
// is not judged as passing the READ before it (one root cause, one
// clause), and the READ's answer after it is no fault.
func TestACKBeyondEveryRequest(t *testing.T) {
	var b rtest.Builder
	b.Read(100, 3*256) // 100..102
	b.Ack(150, 1)      // no request used 150
	b.ReadStream(100, 3*256, 256, 2)
	if tl := rtest.Tally(rtest.Audit(b.Recs, rtest.Active(256), ID), ID); tl.Violations != 0 || tl.Indeterminate == 0 {
		t.Errorf("want the ACK left undecided, got %+v\n%s", tl, rtest.Dump(b.Recs))
	}
}

// A capture begun mid-connection, first showing the end of a READ's
// answer (Last 312), then the requester's resend sweep from that READ
// (310, 314, 318): the ACK of 318 comes before the answer to the READ at
// 314, whose MSN (877) is below the ACK's (879) though the responder's
// IDs show it sent after. No answer sent after an ACK carries a lower MSN
// unless it replays one sent before it, with that answer's MSN: the READ
// at 314 may be a resend of one answered before the capture began, so the
// ACK is left open, not failed.
func TestAnswerBelowTheACKsMSNAfterAnEarlierAcknowledgment(t *testing.T) {
	b := rtest.Builder{PerSender: true}
	b.Resp(wire.ReadResponseLast, 312, wire.SynACK(4), 875, 1024)
	b.Read(310, 3*1024)
	b.Read(314, 3*1024)
	b.Send(317, true)
	b.Send(318, true)
	b.ReadStream(310, 3*1024, 1024, 875)
	b.Ack(318, 879)
	b.ReadStream(314, 3*1024, 1024, 877)
	tl := rtest.Tally(rtest.Audit(b.Recs, rtest.Capture(1024), ID), ID)
	if tl.Violations != 0 || tl.Open == 0 {
		t.Errorf("want the ACK left open, got %+v\n%s", tl, rtest.Dump(b.Recs))
	}
}

// TestACKInsideTheFirstAnswerOffACompleteCapture: on a capture not
// complete, an ACK between a READ's first response packet and its last
// overtook the READ's first answer where the evidence shows the stream
// is that answer: the Acknowledge before it shows the READ not yet
// executed, and the responder's IPv4 Identifications show the capture
// missed none of its packets since (no replay began unseen after the
// ACK). A gap in them, or an Acknowledge already past the READ, leaves
// it open.
func TestACKInsideTheFirstAnswerOffACompleteCapture(t *testing.T) {
	// base 500: the MSNs show no new QP's first message, the capture
	// began mid-connection; base 0: it shows the connection's beginning.
	build := func(gap, ackPast bool, base uint32) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		for k := range wire.PSN(10) {
			b.Send(90+k, true)
			b.Ack(90+k, uint32(k)+base+1)
		}
		b.Read(100, 3*1024) // 100..102
		b.Req(wire.WriteOnly, 103, true, 8)
		if ackPast {
			b.Ack(103, base+11) // the READ answered before, unseen: this stream may replay it
		}
		b.Resp(wire.ReadResponseFirst, 100, 0x04, base+11, 1024)
		b.Ack(103, base+12)
		m := b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024)
		if gap {
			m.IPID++ // one of the responder's packets missed just before
		}
		l := b.Resp(wire.ReadResponseLast, 102, 0x04, base+12, 1024)
		if gap {
			l.IPID++
		}
		return b.Recs
	}
	rtest.WantViolation(t, build(false, false, 500), rtest.Capture(1024), ID, "followed it", "ran on unbroken")
	rtest.WantOpen(t, build(true, false, 500), rtest.Capture(1024), ID, "a gap in the responder's IDs: the instance is undecided, want open (suspect)")
	rtest.WantOpen(t, build(false, true, 500), rtest.Capture(1024), ID, "an ACK past the READ before its stream: the instance is undecided, want open (suspect)")
	// From the connection's beginning with every packet of the
	// responder's, the stream can only be the READ's first answer.
	rtest.WantViolation(t, build(false, true, 0), rtest.Capture(1024), ID, "followed it", "ran on unbroken")
}

// TestACKInsideTheFirstAnswerToAResentREAD: the READ sent twice, its
// first copy lost after the capture point, so the stream answering it
// answers what the tracker takes for a duplicate. It is still the READ's
// first answer where the Acknowledge before it shows the READ not yet
// executed and the responder's IPv4 Identifications show the capture
// missed none of its packets since: an ACK beyond the READ inside it
// overtook that answer. A gap in them, or an answer to the first copy
// already shown, leaves it open.
func TestACKInsideTheFirstAnswerToAResentREAD(t *testing.T) {
	build := func(gap, answeredBefore bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		for k := range wire.PSN(10) {
			b.Send(90+k, true)
			b.Ack(90+k, uint32(k)+501)
		}
		b.Read(100, 3*1024) // 100..102, lost after the capture point
		b.Req(wire.WriteOnly, 103, true, 8)
		if answeredBefore {
			b.ReadStream(100, 3*1024, 1024, 511)
		}
		b.Read(100, 3*1024) // the resend
		b.Req(wire.WriteOnly, 103, true, 8)
		b.Resp(wire.ReadResponseFirst, 100, 0x04, 511, 1024)
		b.Ack(103, 512)
		m := b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024)
		if gap {
			m.IPID++ // one of the responder's packets missed just before
		}
		l := b.Resp(wire.ReadResponseLast, 102, 0x04, 512, 1024)
		if gap {
			l.IPID++
		}
		return b.Recs
	}
	rtest.WantViolation(t, build(false, false), rtest.Capture(1024), ID, "followed it", "ran on unbroken")
	rtest.WantOpen(t, build(true, false), rtest.Capture(1024), ID, "a gap in the responder's IDs: the instance is undecided, want open (suspect)")
	if tl := rtest.Tally(rtest.Audit(build(false, true), rtest.Capture(1024), ID), ID); tl.Violations != 0 {
		t.Errorf("the first copy answered before: the stream after the ACK is a replay, want no violation, got %+v", tl)
	}
}

// TestACKPastAREADWhoseFirstCopyTheCaptureMissed: the READ's first copy
// lost before the capture point (or dropped by the capture), a later
// request seen, then the READ sent again: the tracker takes the resend
// for a duplicate, but nothing shows the READ executed, so its first
// answer is still owed and an ACK beyond it is judged as one beyond a
// new READ. Inside the stream answering the resend, with the Acknowledge
// before it showing the READ not yet executed and the responder's IPv4
// Identifications showing the capture missed none of its packets since,
// the ACK overtook the READ's first answer; without them the first copy
// may have been answered unseen and the stream replay that answer (with
// that answer's MSN, below the ACK's, where the capture shows the
// connection's beginning: the responder's packets it missed may be that
// answer): open. So is an ACK past the READ whose answer the capture
// never shows.
func TestACKPastAREADWhoseFirstCopyTheCaptureMissed(t *testing.T) {
	build := func(counting, answered bool) []*trace.Record {
		b := rtest.Builder{PerSender: counting}
		for k := range wire.PSN(10) {
			b.Send(90+k, true)
			b.Ack(90+k, uint32(k)+501)
		}
		// The READ at 100 (100..102) lost before the capture point.
		b.Req(wire.WriteOnly, 103, true, 8)
		b.Read(100, 3*1024) // the resend
		b.Req(wire.WriteOnly, 103, true, 8)
		if answered {
			b.ReadStream(100, 3*1024, 1024, 511)
			b.Ack(103, 512)
			return b.Recs
		}
		b.Resp(wire.ReadResponseFirst, 100, 0x04, 511, 1024)
		b.Ack(103, 512)
		b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 102, 0x04, 512, 1024)
		return b.Recs
	}
	rtest.WantViolation(t, build(true, false), rtest.Capture(1024), ID, "followed it", "ran on unbroken")
	rtest.WantOpen(t, build(false, false), rtest.Capture(1024), ID, "no IPv4 ID counts: the instance is undecided, want open (suspect)")
	rtest.WantPass(t, build(true, true), rtest.Capture(1024), ID)

	// From the connection's beginning (MSNs from 1), the answer's MSN
	// below the ACK's, three of the responder's packets missed before
	// the First.
	fromStart := rtest.Builder{PerSender: true}
	for k := range wire.PSN(10) {
		fromStart.Send(90+k, true)
		fromStart.Ack(90+k, uint32(k)+1)
	}
	fromStart.Req(wire.WriteOnly, 103, true, 8)
	fromStart.Read(100, 3*1024)
	fromStart.Req(wire.WriteOnly, 103, true, 8)
	for _, r := range []*trace.Record{
		fromStart.Resp(wire.ReadResponseFirst, 100, 0x04, 11, 1024),
		fromStart.Ack(103, 12),
		fromStart.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024),
		fromStart.Resp(wire.ReadResponseLast, 102, 0x04, 11, 1024),
	} {
		r.IPID += 3
	}
	rtest.WantOpen(t, fromStart.Recs, rtest.Capture(1024), ID, "the first copy may have been answered in the packets missed: undecided, want open (suspect)")

	// The READ's answer never shown before the ACK past it.
	b := rtest.Builder{PerSender: true}
	b.Req(wire.WriteOnly, 103, true, 8)
	b.Read(100, 3*1024)
	b.Ack(103, 2)
	rtest.WantOpen(t, b.Recs, rtest.Capture(1024), ID, "an ACK past a resent READ whose answer the capture never showed: undecided, want open (suspect)")
}
