package c9_96

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestLegalStreams(t *testing.T) {
	var b rtest.Builder
	b.Send(100, false)
	b.Read(101, 3000) // 3 packets at 1024: 101..103
	b.Read(104, 0)    // 1 packet
	b.Read(105, 1024) // 1 packet
	b.Send(106, true)
	b.ReadStream(101, 3000, 1024, 2)
	b.ReadStream(104, 0, 1024, 3)
	b.ReadStream(105, 1024, 1024, 4)
	b.Ack(106, 5)
	rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

func TestAcrossTheWrap(t *testing.T) {
	var b rtest.Builder
	b.Read(0xFFFFFE, 4*256) // 0xFFFFFE, 0xFFFFFF, 0, 1
	b.ReadStream(0xFFFFFE, 4*256, 256, 1)
	tl := rtest.WantPass(t, b.Recs, rtest.Active(256), ID)
	if tl.Checked != 4 {
		t.Fatalf("checked %d packets, want 4", tl.Checked)
	}
}

func TestDuplicateReplayRestartsAtTheDuplicatesPSN(t *testing.T) {
	var b rtest.Builder
	b.Read(10, 4*512)
	b.ReadStream(10, 4*512, 512, 1)
	d := b.Read(12, 2*512) // a retry of the last two packets
	d.Packet.RETH.VA += 2 * 512
	b.ReadStream(12, 2*512, 512, 1)
	rtest.WantPass(t, b.Recs, rtest.Active(512), ID)
}

func TestSkewedStreamIsFlagged(t *testing.T) {
	var b rtest.Builder
	b.Read(50, 3*1024)
	b.Resp(wire.ReadResponseFirst, 51, 0x04, 1, 1024)
	b.Resp(wire.ReadResponseMiddle, 52, 0, 0, 1024)
	b.Resp(wire.ReadResponseLast, 53, 0x04, 1, 1024)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "carries PSN 51")
	// A capture that may have lost packets cannot tell from the first two
	// packets; the third runs past the READ's range in any trace.
	rtest.WantIndeterminate(t, b.Recs[:3], rtest.Capture(1024), ID)
	rtest.WantViolation(t, b.Recs, rtest.Capture(1024), ID, "runs past PSN 52")
}

func TestResponseAtASendsPSN(t *testing.T) {
	var b rtest.Builder
	b.Read(50, 8)
	b.Send(51, true)
	b.Resp(wire.ReadResponseOnly, 51, 0x04, 1, 8)
	// Even a capture knows that PSN 51 belongs to a SEND.
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "SEND Only")
}

func TestWrongCount(t *testing.T) {
	var b rtest.Builder
	b.Read(7, 3000)
	b.Resp(wire.ReadResponseFirst, 7, 0x04, 1, 1024)
	b.Resp(wire.ReadResponseLast, 8, 0x04, 1, 1976)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "needs 3 packets")

	var c rtest.Builder
	c.Read(7, 5000)
	c.Resp(wire.ReadResponseOnly, 7, 0x04, 1, 5000)
	rtest.WantViolation(t, c.Recs, rtest.Capture(0), ID, "single Only")

	var e rtest.Builder
	e.Read(7, 2048)
	e.ReadStream(7, 2048, 1024, 1)
	e.Resp(wire.ReadResponseMiddle, 9, 0, 0, 1024)
	rtest.WantViolation(t, e.Recs, rtest.Active(1024), ID, "PSN 9")
}

// A READ answered by a Last at its own PSN: in a capture that shows no
// request before it, the READ may re-issue the tail of an earlier READ
// the capture missed, answered by that READ's Last (a capture cut
// before the earlier READ); undecided. A capture showing the request
// before it, or a complete trace, fails.
func TestLastFirstAfterUnseenRequests(t *testing.T) {
	var b rtest.Builder
	b.Read(20801, 4096)
	b.Resp(wire.ReadResponseLast, 20801, 0x04, 1, 4096)
	tl := rtest.WantIndeterminate(t, b.Recs, rtest.Capture(4096), ID)
	if tl.Open == 0 {
		t.Errorf("the Last may also be a wrong answer: want it open (unresolved), got %+v", tl)
	}
	rtest.WantViolation(t, b.Recs, rtest.Active(4096), ID, "starts with a Last")

	var c rtest.Builder
	c.Send(20800, true)
	c.Read(20801, 4096)
	c.Resp(wire.ReadResponseLast, 20801, 0x04, 1, 4096)
	rtest.WantViolation(t, c.Recs, rtest.Capture(4096), ID, "starts with a Last")
}

func TestUnknownMTUIsIndeterminate(t *testing.T) {
	var b rtest.Builder
	b.Read(7, 2000) // one packet at 2048 or 4096, several at smaller MTUs
	b.Resp(wire.ReadResponseOnly, 7, 0x04, 1, 2000)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
}

// The reference device, clean and with the defect that numbers READ
// responses from the request PSN + 1.
func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 0xFFFFFE, SetPSNs: true})
		r.Send(time.Millisecond, r.Read(0, 0), r.Read(1, 0), r.Read(3*1024, 0), r.SendOnly(8, true))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("read-resp-psn-skew")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID)
}

// Loss on a capture between two hosts (a fifth of the packets lost): a
// READ whose answer the capture lost entirely, then the answers to three
// requests it lost, the path MTU unknown until a Middle shows it. With
// the MTU unknown the first of them lay within the READ's furthest range
// (13 packets at MTU 256); once a Middle shows MTU 1024 the READ's range
// ends at PSN 3111 and the stream that began at PSN 3116 was never its
// answer. It answers a request the capture did not show: undecided, not
// a stream running past the READ's range.
func TestStreamPlacedBeforeTheMTUWasKnown(t *testing.T) {
	var b rtest.Builder
	b.Read(3108, 3079)
	b.Resp(wire.ReadResponseOnly, 3112, 0x1F, 7, 0)
	b.Resp(wire.ReadResponseOnly, 3113, 0x1F, 8, 1024)
	b.Resp(wire.ReadResponseMiddle, 3116, 0, 0, 1024)
	b.Resp(wire.ReadResponseLast, 3117, 0x1F, 9, 7)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(1024), ID)
}

// A READ's Last lost, and the next READ's request too: the First after
// the READ's range starts the answer to a request the capture did not
// show, and its Last goes on from it. On a capture that may lose packets
// that is undecided; a complete trace shows no request there, and fails.
// (A guard written with the test above: the lost Last leaves a gap in the
// stream, so the First is never taken as the stream running on.)
func TestLostLastAndLostRequest(t *testing.T) {
	var b rtest.Builder
	b.Read(100, 3072) // 100..102 at MTU 1024
	b.Resp(wire.ReadResponseFirst, 100, 0x1F, 1, 1024)
	b.Resp(wire.ReadResponseMiddle, 101, 0, 0, 1024)
	// the Last at 102 and a READ request at 103 for 2048 bytes: lost
	b.Resp(wire.ReadResponseFirst, 103, 0x1F, 2, 1024)
	b.Resp(wire.ReadResponseLast, 104, 0x1F, 2, 1024)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(1024), ID)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "")
}

// TestSkipOnACapture: off a complete capture, a READ answer's Last that
// skips a PSN inside its READ's range fails once the responder's IPv4
// Identifications show that nothing it sent between the Middle and the
// Last escaped the capture; with a gap in the responder's IDs there it
// stays open. One that lands just past the range (on the next request's
// PSN, a READ's too: a Last starts no answer) fails whatever was missed:
// no READ's range ends there but this one's.
func TestSkipOnACapture(t *testing.T) {
	for _, tc := range []struct {
		name    string
		packets int  // the READ's response packets (at MTU 1024), from PSN 18
		onRead  bool // the next request is a READ
		gap     bool // the responder's IDs skip one before the Last
		want    string
	}{
		{"IDs unbroken", 4, false, false, "violation"},
		{"a responder packet missed", 4, false, true, "open"},
		{"IDs unbroken, just past the range", 3, false, false, "violation"},
		{"IDs unbroken, just past the range onto the next READ's PSN", 3, true, false, "violation"},
		{"a responder packet missed, just past the range", 3, false, true, "violation"},
	} {
		var tr ht.Trace
		for i := range 8 { // enough ACKs for the responder's IDs to count
			tr.Req(wire.SendOnly, wire.PSN(10+i), true)
			tr.Ack(wire.PSN(10+i), uint32(i+1))
		}
		next := wire.PSN(18 + tc.packets)
		tr.Read(18, uint32(tc.packets*1024))
		if tc.onRead {
			tr.Read(next, 8)
		} else {
			tr.Req(wire.SendOnly, next, true)
		}
		tr.ReadResp(wire.ReadResponseFirst, 18, 9, 1024)
		tr.ReadResp(wire.ReadResponseMiddle, 19, 9, 1024)
		last := tr.ReadResp(wire.ReadResponseLast, 21, 9, 1024) // skips 20
		tr.Req(wire.SendOnly, next.Next(), true)
		tr.IPIDs(100, 5000)
		if tc.gap {
			last.IPID++
		}
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		tl := tallies[ID]
		got := "other"
		switch {
		case tl != nil && tl.Violations == 1:
			got = "violation"
		case tl != nil && tl.Open > 0:
			got = "open"
		}
		if got != tc.want {
			t.Errorf("%s: got %s (%+v, %v), want %s", tc.name, got, tl, findings, tc.want)
		}
	}
}

// TestJustPastTheRangeMayLookLate: a READ answer's Last just past its
// READ's range carries the MSN of a response the trace shows before it,
// of the next PSN, and no IDs date it: it may be an older response delayed,
// but no order of the packets puts a Last there, so it fails all the same.
func TestJustPastTheRangeMayLookLate(t *testing.T) {
	var tr ht.Trace
	tr.Read(18, 3*1024) // 18..20 at MTU 1024
	tr.Req(wire.SendOnly, 21, true)
	tr.Read(22, 8)
	tr.ReadResp(wire.ReadResponseFirst, 18, 1, 1024)
	tr.ReadResp(wire.ReadResponseMiddle, 19, 1, 1024)
	tr.Ack(21, 2)
	tr.ReadResp(wire.ReadResponseOnly, 22, 3, 8)
	tr.ReadResp(wire.ReadResponseLast, 21, 3, 1024) // skips 20, past the range
	tallies, findings := ht.AuditAll(&tr, ht.Capture())
	if tl := tallies[ID]; tl == nil || tl.Violations != 1 {
		t.Errorf("a Last just past its READ's range, looking delayed: %+v, %v", tl, findings)
	}
}

// TestLastOnTheNextREAD: a READ answer skips to a Middle at its READ's
// last PSN, and its Last lands on the PSN of the next READ, whose range
// begins there. No earlier READ's range can end at that PSN (the
// previous READ's range, fixed by the path MTU its First shows, ends just
// before it): the Last starts no answer and fails, with no IDs to tell
// what was missed; the Middle alone is left open (a Last sent as a
// Middle is C9-98's fault).
func TestLastOnTheNextREAD(t *testing.T) {
	var tr ht.Trace
	tr.Read(18, 3*1024) // 18..20 at MTU 1024
	tr.Read(21, 8)
	tr.ReadResp(wire.ReadResponseFirst, 18, 1, 1024)
	tr.ReadResp(wire.ReadResponseMiddle, 20, 1, 1024) // skips 19
	tr.ReadResp(wire.ReadResponseLast, 21, 1, 1024)   // past the range, on the next READ
	tallies, findings := ht.AuditAll(&tr, ht.Capture())
	if tl := tallies[ID]; tl == nil || tl.Violations != 1 || len(findings) == 0 || findings[0].Frame != 5 {
		t.Fatalf("%+v %v: want one violation, at the Last (frame 5)", tl, findings)
	}
}

// A Last past its READ's range at a PSN a SEND used is no READ's,
// however late it may be: an earlier NAK at a later PSN with the same
// MSN (which leaves the Last possibly older) changes nothing.
func TestPastTheRangeAtASendsPSNIsLateToNoAvail(t *testing.T) {
	var b rtest.Builder
	b.Read(50, 3*256) // 50..52
	b.Req(wire.SendFirst, 53, false, 256)
	b.Req(wire.SendMiddle, 54, false, 256)
	b.Req(wire.SendLast, 55, true, 3)
	b.NAK(55, 0, 1) // sequence NAK at 55: the READ counted
	b.Resp(wire.ReadResponseFirst, 50, 0x1F, 1, 256)
	b.Resp(wire.ReadResponseMiddle, 52, 0, 0, 256)
	b.Resp(wire.ReadResponseLast, 53, 0x1F, 1, 256)
	rtest.WantViolation(t, b.Recs, rtest.Capture(256), ID, "SEND First")
}

// TestLastOnTheNextREADMayLookLate: a READ answered once, a duplicate of
// it and of the READs after it, and the duplicate's replay skipping to a
// Middle at the READ's last PSN, then a Last at the next READ's PSN. The
// Last carries the count of a response the trace shows earlier at a later
// PSN, and no IDs date it: it may be an older response delayed, but no
// answer has a Last at a READ's own PSN (the ranges of new READs do not
// overlap), so it fails all the same.
func TestLastOnTheNextREADMayLookLate(t *testing.T) {
	var tr ht.Trace
	tr.Read(490, 768) // 490..492 at MTU 256
	tr.Read(493, 0)
	tr.Read(494, 256)
	tr.ReadResp(wire.ReadResponseFirst, 490, 1, 256)
	tr.ReadResp(wire.ReadResponseMiddle, 491, 1, 256)
	tr.ReadResp(wire.ReadResponseOnly, 493, 2, 0)
	tr.ReadResp(wire.ReadResponseOnly, 494, 3, 256)
	tr.Read(490, 768)
	tr.Read(493, 0)
	tr.Read(494, 256)
	tr.ReadResp(wire.ReadResponseFirst, 490, 3, 256)
	tr.ReadResp(wire.ReadResponseMiddle, 492, 3, 256) // skips 491
	tr.ReadResp(wire.ReadResponseLast, 493, 3, 256)   // on the next READ's PSN
	tallies, findings := ht.AuditAll(&tr, ht.Capture())
	if tl := tallies[ID]; tl == nil || tl.Violations != 1 || len(findings) == 0 || findings[0].Frame != 13 {
		t.Errorf("%+v %v: want one violation, at the Last (frame 13)", tl, findings)
	}
}
