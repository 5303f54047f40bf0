package c9_105

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func established(b *dupnak.TraceBuilder, e wire.PSN) {
	for i := 6; i >= 1; i-- {
		b.Req(wire.SendOnly, e.Add(-i), i == 1)
	}
	b.Ack(e.Add(-1), 6)
}

// behindRead adds a READ at PSN e whose answer (its Last with MSN msn)
// ended, then a duplicate SEND answered by an ACK naming e-1, behind it,
// with the READ's MSN.
func behindRead(b *dupnak.TraceBuilder, e wire.PSN, msn uint32) {
	b.Read(e, 4096)
	b.ReadResp(wire.ReadResponseMiddle, e+1, 1024, 0)
	b.ReadResp(wire.ReadResponseMiddle, e+2, 1024, 0)
	b.ReadResp(wire.ReadResponseLast, e+3, 1024, msn)
	b.Send(e - 3)
	b.Ack(e-1, msn)
}

// counted is established with each request acknowledged: enough of the
// responder's packets for its IPv4 IDs to be seen to count up
// (harness.Conn.DatedByID), so that they order its responses after.
func counted(b *dupnak.TraceBuilder, e wire.PSN) {
	for i := 9; i >= 1; i-- {
		b.Send(e.Add(-i))
		b.Ack(e.Add(-i), uint32(10-i))
	}
}

func TestMonitor(t *testing.T) {
	const e = wire.PSN(300)
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"a duplicate SEND answered with the newest completed PSN", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Ack(e-1, 6)
		}, true, false, true},
		{"a duplicate SEND answered with its own PSN (executed again)", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Ack(e-4, 7)
		}, true, true, false},
		{"a duplicate WRITE Middle answered with its own PSN", func(b *dupnak.TraceBuilder) {
			b.Req(wire.WriteFirst, e, false)
			b.Req(wire.WriteMiddle, e+1, false)
			b.Req(wire.WriteLast, e+2, true)
			b.Ack(e+2, 1)
			b.Req(wire.WriteMiddle, e+1, true)
			b.Ack(e+1, 1)
		}, true, true, false},
		{"new requests acknowledged after the duplicate (coalesced)", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Req(wire.SendOnly, e-4, false)
			b.Send(e)
			b.Send(e + 1)
			b.Ack(e+1, 8)
		}, true, false, true},
		{"across the 2^24 wrap", func(b *dupnak.TraceBuilder) {
			established(b, 2)
			b.Send(0xFFFFFD)
			b.Ack(0xFFFFFD, 7)
		}, true, true, false},
		{"a duplicate answered while a READ streams: the ACK stays before the READ", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Read(e, 4096)
			b.ReadResp(wire.ReadResponseFirst, e, 1024, 7)
			b.Send(e - 3)
			b.Ack(e-1, 7)
			b.ReadResp(wire.ReadResponseMiddle, e+1, 1024, 7)
		}, true, false, true},
		{"capture: a duplicate answered while a READ streams, its First not captured: the ACK stays before the READ", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Read(e, 4096)
			b.ReadResp(wire.ReadResponseMiddle, e+1, 1024, 0)
			b.ReadResp(wire.ReadResponseMiddle, e+2, 1024, 0)
			b.Send(e - 3)
			b.Ack(e-1, 7)
		}, false, false, true},
		{"capture: a duplicate answered behind a READ whose answer ended, the responder's IDs counting", func(b *dupnak.TraceBuilder) {
			counted(b, e)
			behindRead(b, e, 10)
		}, false, true, false},
		{"capture: a duplicate answered before a READ whose answer the capture lacks, while a later READ's answer shows the responder past it, the responder's IDs counting", func(b *dupnak.TraceBuilder) {
			counted(b, e)
			b.Read(e, 8)
			b.Read(e+1, 8)
			b.ReadResp(wire.ReadResponseOnly, e+1, 8, 11)
			b.Send(e - 3)
			b.Ack(e-1, 11)
		}, false, true, false},
		{"capture: a duplicate answered before a READ whose answer the capture lacks", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Read(e, 8)
			b.Send(e - 3)
			b.Ack(e-1, 6)
		}, false, false, true},
		{"capture: a duplicate answered with an older PSN", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Ack(e-4, 7)
		}, false, true, false},
		{"capture: a duplicate answered with the newest PSN", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Ack(e-1, 6)
		}, false, false, true},
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

// The duplicate answered behind a READ whose answer ended, with too few
// of the responder's packets to show that its IPv4 IDs count up: the ACK,
// with the READ's MSN, may have been sent before the READ's response and
// delayed by the network, so the clause is left open, neither failed nor
// passed.
func TestBehindAREADNoDatingIDs(t *testing.T) {
	const e = wire.PSN(300)
	b := dupnak.NewTraceBuilder(1024)
	established(b, e)
	behindRead(b, e, 7)
	if tl := dupnak.Tally(dupnak.Audit(b.Recs, false, 1024, ID), ID); tl.Violations != 0 || tl.Open == 0 {
		t.Errorf("want open, got %+v", tl)
	}
}

// A SEND Middle recorded twice (its IPv4 ID repeated) after a sequence
// NAK: the capture may have recorded it twice, and the responder then had
// no duplicate to answer, so the ACK after the resent packets (naming the
// message's first PSN) is not judged as the duplicate's answer: undecided,
// not a violation. The same Middle sent again (a new ID) is a duplicate,
// and the ACK going back behind the NAK's PSN answers it wrongly. An ACK
// going back behind the first ACK's PSN is wrong with or without a
// duplicate.
func TestCopiedRequest(t *testing.T) {
	const e = wire.PSN(300)
	build := func(copied bool, ack wire.PSN) harness.Tally {
		b := dupnak.NewTraceBuilder(1024)
		b.Send(e - 1)
		b.Ack(e-1, 1)
		b.Req(wire.SendFirst, e, false)
		m := b.Req(wire.SendMiddle, e+1, false)
		b.Req(wire.SendLast, e+3, true) // e+2 lost before the responder
		b.NAK(wire.NAKPSNSequence, e+2, 1)
		again := b.Req(wire.SendMiddle, e+1, false)
		if copied {
			again.IPID = m.IPID
		}
		b.Req(wire.SendMiddle, e+2, false)
		b.Req(wire.SendLast, e+3, true)
		b.Ack(ack, 2)
		return dupnak.Tally(dupnak.Audit(b.Recs, false, 1024, ID), ID)
	}
	if tl := build(true, e); tl.Violations != 0 || tl.Open == 0 {
		t.Errorf("a copy of the Middle: want undecided (open), got %+v", tl)
	}
	if tl := build(false, e); tl.Violations == 0 {
		t.Errorf("the Middle sent again: want a violation, got %+v", tl)
	}
	if tl := build(true, e-2); tl.Violations == 0 {
		t.Errorf("a copy of the Middle, then an ACK going back behind the first ACK: want a violation, got %+v", tl)
	}
}

// TestAnsweredAgain: on a capture, a responder may answer each duplicate
// packet; after a right answer (the newest completed PSN), a second one
// naming a duplicate's own PSN, older than that, fails too.
func TestAnsweredAgain(t *testing.T) {
	for _, again := range []wire.PSN{12, 14} {
		b := dupnak.NewTraceBuilder(1024)
		b.PerSender = true
		for i := range 5 {
			b.Send(wire.PSN(10 + i))
		}
		b.Ack(14, 5)
		b.Send(12) // duplicates
		b.Send(13)
		b.Ack(14, 5)
		b.Ack(again, 5)
		tl := dupnak.Tally(dupnak.Audit(b.Recs, false, 1024, ID), ID)
		if want := again == 12; (tl.Violations > 0) != want {
			t.Errorf("second answer naming PSN %d: violation %v, want %v (%+v)", again, tl.Violations > 0, want, tl)
		}
	}
}

// TestAnswerBehindItsOwnCount: on a capture, the ACK answering a
// duplicate names a PSN before a request whose message its own MSN
// counts past the previous ACK's: the responder had completed that
// request, so the duplicate was answered behind the newest completed PSN
// (C9-105), unless an MSN is wrong (C9-148): one finding names both. A
// READ, or a PSN the capture did not show, may be counted as soon as it
// is validated, before it completes: no violation there.
func TestAnswerBehindItsOwnCount(t *testing.T) {
	const e = wire.PSN(300)
	cases := []struct {
		name      string
		last      func(b *dupnak.TraceBuilder) // the request at e+2, or nothing
		violation bool
	}{
		{"a SEND Last counted", func(b *dupnak.TraceBuilder) { b.Req(wire.SendLast, e+2, true) }, true},
		{"a READ counted (validated, maybe not answered yet)", func(b *dupnak.TraceBuilder) { b.Read(e+2, 8) }, false},
		{"a PSN the capture did not show counted", func(*dupnak.TraceBuilder) {}, false},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(1024)
		established(b, e) // ACK e-1 with MSN 6
		b.Req(wire.SendFirst, e, false)
		b.Req(wire.SendMiddle, e+1, false)
		tc.last(b)
		b.Send(e - 3) // a duplicate
		b.Ack(e+1, 7) // counts the message ending at e+2
		sink := dupnak.Audit(b.Recs, false, 1024, ID)
		tl := dupnak.Tally(sink, ID)
		if (tl.Violations > 0) != tc.violation {
			t.Errorf("%s: violation %v, want %v (%+v %v)", tc.name, tl.Violations > 0, tc.violation, tl, sink.Findings)
			continue
		}
		if !tc.violation {
			continue
		}
		named := false
		for _, f := range sink.Findings {
			for _, a := range f.Alternatives {
				named = named || a.ID == "C9-148"
			}
		}
		if !named {
			t.Errorf("%s: the finding does not name C9-148 (an MSN at fault): %v", tc.name, sink.Findings)
		}
	}
}

// A duplicate answered, then an ACK naming the duplicate's own PSN behind
// an ACK of a READ's last PSN (which the responder's expected PSN waits
// past until the READ's answer): answered again with a PSN behind the
// newest acknowledged. Where the responder's IPv4 IDs date it, a
// violation; where nothing dates it, it may be an older ACK delayed, and
// the clause is left open, not passed.
func TestAnsweredAgainBehindAnACKOfARead(t *testing.T) {
	build := func(ids bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		for i := range 10 { // enough for each side's IDs to be seen counting
			b.Send(wire.PSN(988+i), true)
			b.Ack(wire.PSN(988+i), uint32(422+i))
		}
		requests := func() { // sent, then resent whole
			b.Send(998, true)
			b.Req(wire.SendFirst, 999, false, 256)
			b.Req(wire.SendMiddle, 1000, false, 256)
			b.Req(wire.SendLast, 1001, true, 3)
			b.Read(1002, 256)
		}
		requests()
		b.Ack(998, 432)
		b.Ack(1001, 433)
		requests()
		b.Ack(1002, 434)
		b.Ack(1001, 434)
		b.Resp(wire.ReadResponseOnly, 1002, 0, 434, 256)
		if !ids { // IPv6
			for _, r := range b.Recs {
				r.HasIPID, r.IPID = false, 0
			}
		}
		return b.Recs
	}
	rtest.WantViolation(t, build(true), rtest.Capture(256), ID, "carries that PSN, older than PSN 1002")
	rtest.WantOpen(t, build(false), rtest.Capture(256), ID, "an answer that may be an older ACK delayed left nothing open")
}

// An ACK after a duplicate naming a PSN inside a READ's known range is
// no answer any responder gives, whatever it answers: C9-95 fails it,
// and this clause leaves it (one root cause, one clause).
func TestAnswerInsideAREADsRange(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Read(11, 768) // PSNs 11..13 at a 256-byte path MTU
	b.Send(14, true)
	b.Ack(10, 1)
	b.ReadStream(11, 768, 256, 2)
	b.Ack(14, 3)
	b.Send(10, true) // a duplicate
	b.Ack(12, 3)
	tl := rtest.WantIndeterminate(t, b.Recs, rtest.Capture(256), ID)
	if tl.Checked != 0 {
		t.Errorf("the duplicate's answer passed: %+v", tl)
	}
}

// TestTailLost: on a capture, a duplicate answered with the latest
// acknowledged PSN while a SEND past it was captured before the duplicate
// names the newest completed request only if that SEND was lost on its way
// to the responder, which nothing shows: open, not passed. Without that
// SEND in the capture (or with it captured after the duplicate), the
// answer is the newest completed PSN as far as the trace shows: checked.
func TestTailLost(t *testing.T) {
	const e = wire.PSN(300)
	for _, tc := range []struct {
		name       string
		tail, late bool
		open       bool
	}{
		{"no request past the ACK", false, false, false},
		{"a SEND past the ACK captured before the duplicate", true, false, true},
		{"a SEND past the ACK captured after the duplicate", true, true, false},
	} {
		b := dupnak.NewTraceBuilder(1024)
		established(b, e)
		if tc.tail && !tc.late {
			b.Send(e)
		}
		b.Send(e - 3)
		if tc.tail && tc.late {
			b.Send(e)
		}
		b.Ack(e-1, 6)
		tl := dupnak.Tally(dupnak.Audit(b.Recs, false, 1024, ID), ID)
		if tl.Violations != 0 || (tl.Open > 0) != tc.open || (tl.Checked > 0) == tc.open {
			t.Errorf("%s: want open %v, got %+v", tc.name, tc.open, tl)
		}
	}
}

// TestAnswerBehindAPinnedCount: on a capture with no IPv4 Identification
// to date responses, a duplicate SEND answered by an ACK naming an older
// PSN whose MSN is the newest one (a duplicate READ's answer carried it
// first, at a later PSN with no message ending between) is no older ACK
// delayed
// where an earlier ACK of that same PSN counted fewer messages: an ACK
// of that PSN carries its count (one more at most, for a READ right after
// it validated) whenever it is sent, so this count was never that PSN's.
// The duplicate was answered behind the newest completed request, or an
// MSN is wrong: a violation, not left open. One past the PSN's count, an
// older ACK sent while the READ after it was validated may have been
// delayed: open.
func TestAnswerBehindAPinnedCount(t *testing.T) {
	for _, pinned := range []bool{true, false} {
		var b rtest.Builder
		b.Send(10, true)
		b.Ack(10, 1)
		b.Read(11, 256)
		b.Resp(wire.ReadResponseOnly, 11, wire.SynACK(4), 2, 256)
		msn := uint32(2)
		if pinned {
			b.Send(12, true)
			b.Send(13, true)
			b.Ack(12, 3) // the ACK of 13 not captured
			msn = 4
		}
		b.Read(11, 256) // a duplicate READ, answered with the count of now
		b.Resp(wire.ReadResponseOnly, 11, wire.SynACK(4), msn, 256)
		b.Send(10, true) // a duplicate SEND, answered behind
		b.Ack(10, msn)
		for _, r := range b.Recs { // IPv6
			r.HasIPID, r.IPID = false, 0
		}
		if pinned {
			rtest.WantViolation(t, b.Recs, rtest.Capture(256), ID, "PSN 10")
			continue
		}
		rtest.WantOpen(t, b.Recs, rtest.Capture(256), ID, "one past the PSN's count: nothing left open")
	}
}

// TestAnswerAfterTheNextRequest: on a capture, the ACK answering a
// duplicate SEND names the duplicate's PSN, just before a SEND captured
// after the duplicate. Where the ACK comes longer after that SEND than
// the capture shows the responder taking to answer a READ, the SEND had
// reached the responder before it built the ACK unless it was lost on its
// way (or the ACK delayed beyond anything the capture shows): open. Right
// after it, the SEND may still have been on its way: checked.
func TestAnswerAfterTheNextRequest(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Millisecond} {
		b := dupnak.NewTraceBuilder(1024)
		b.Send(10)
		b.Ack(10, 1)
		b.Read(11, 8)
		b.ReadResp(wire.ReadResponseOnly, 11, 8, 2) // answered 1 µs after the READ
		b.Send(12)
		b.Ack(12, 3)
		b.Send(12) // a duplicate
		b.Send(13)
		b.Wait(wait)
		b.Ack(12, 3)
		tl := dupnak.Tally(dupnak.Audit(b.Recs, false, 1024, ID), ID)
		if open := tl.Open > 0; open != (wait > 0) || tl.Violations != 0 {
			t.Errorf("ACK %v after the next SEND: open %v, want %v (%+v)", wait+time.Microsecond, open, wait > 0, tl)
		}
	}
}

// A duplicate answered with the PSN just before a READ that the ACK's
// own MSN counts: legal only while the READ's answer was still to come.
// Its answer captured after the ACK leaves the instance checked. A
// response showing the responder past the READ, with no packet of the
// READ's answer captured since the ACK, leaves it open where the
// responder's IDs cannot show that the capture missed nothing in
// between, and fails it where they can.
func TestAnswerStillToCome(t *testing.T) {
	const e = wire.PSN(300)
	const msn = dupnak.CountedMSN
	answered := func(b *dupnak.TraceBuilder) {
		b.ReadResp(wire.ReadResponseOnly, e, 1024, msn+1)
		b.Send(e + 1)
		b.Ack(e+1, msn+2)
	}
	past := func(b *dupnak.TraceBuilder) {
		b.Send(e + 1)
		b.Ack(e+1, msn+2)
	}
	cases := []struct {
		name            string
		then            func(b *dupnak.TraceBuilder)
		perSender, skip bool
		violation, open bool
	}{
		{"the READ's answer after the ACK", answered, true, false, false, false},
		{"past the READ, the responder's IDs counting one by one", past, true, false, true, false},
		{"past the READ, a gap in the responder's IDs", past, true, true, false, true},
		{"past the READ, IDs shared by both sides", past, false, false, false, true},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(1024)
		b.PerSender = tc.perSender
		b.CountedBefore(e)
		b.Read(e, 1024)
		b.Send(e - 3)
		b.Ack(e-1, msn+1) // counts the READ
		b.SkipRspID = tc.skip
		tc.then(b)
		sink := dupnak.Audit(b.Recs, false, 1024, ID)
		tl := dupnak.Tally(sink, ID)
		if (tl.Violations > 0) != tc.violation || (tl.Open > 0) != tc.open || tl.Checked == 0 && !tc.violation && !tc.open {
			t.Errorf("%s: want violation %v, open %v, got %+v %v", tc.name, tc.violation, tc.open, tl, sink.Findings)
		}
	}
}

// A duplicate answered with the PSN just before a READ that the ACK's
// MSN counts, the READ captured before the duplicate: the responder had
// it first. Where the capture shows the responder beginning an answer
// within 6 µs, and the READ came a millisecond before the ACK, the ACK
// is legal only if the READ was lost on its way or its answer delayed
// beyond that: open. 2 µs before, it is checked.
//
// So where the READ's answer had begun (its First captured, its Last
// not yet): the responder was executing the READ, and the rest of its
// answer was owed at once. Its First a millisecond before the ACK, the
// ACK is legal only if the rest of that answer was lost before the
// capture point or paused beyond that: open. Right after the First, it
// is checked.
func TestReadLongBeforeTheACK(t *testing.T) {
	const e = wire.PSN(300)
	const msn = dupnak.CountedMSN
	for _, begun := range []bool{false, true} {
		for _, pause := range []time.Duration{0, time.Millisecond} {
			b := dupnak.NewTraceBuilder(1024)
			b.PerSender = true
			b.CountedBefore(e)
			b.Read(e, 1024)
			b.Wait(5 * time.Microsecond)
			b.ReadResp(wire.ReadResponseOnly, e, 1024, msn+1) // answered within 6 µs
			if begun {
				b.Read(e+1, 2048) // PSNs e+1, e+2
				b.ReadResp(wire.ReadResponseFirst, e+1, 1024, msn+2)
			} else {
				b.Read(e+1, 1024)
			}
			b.Wait(pause)
			b.Send(e - 3)
			b.Ack(e, msn+2) // counts the READ at e+1
			if begun {
				b.ReadResp(wire.ReadResponseLast, e+2, 1024, msn+2)
			} else {
				b.ReadResp(wire.ReadResponseOnly, e+1, 1024, msn+2)
			}
			sink := dupnak.Audit(b.Recs, false, 1024, ID)
			tl := dupnak.Tally(sink, ID)
			if open := pause > 0; tl.Violations != 0 || (tl.Open > 0) != open || tl.Checked == 0 && !open {
				t.Errorf("READ (answer begun %v) %v before the duplicate: want open %v, got %+v %v", begun, pause, open, tl, sink.Findings)
			}
		}
	}
}
