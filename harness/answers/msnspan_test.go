package answers_test

import (
	"strings"
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// judged runs a Tracker and an MSNModel over recs (through a throw-away
// monitor, so that the harness's reconstruction is maintained as in an
// audit) and returns the model's judgement of record at (0-based).
func judged(t *testing.T, recs []*trace.Record, at int, s harness.Settings) answers.Judgement {
	t.Helper()
	var got answers.Judgement
	seen := false
	const clause = "test-msn-judged"
	harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
		return &judgeProbe{at: recs[at], out: &got, seen: &seen}
	}})
	ht.Audit(&ht.Trace{Records: recs}, clause, s)
	if !seen {
		t.Fatalf("record %d (%s) was not judged", at+1, recs[at])
	}
	return got
}

type judgeProbe struct {
	t    answers.Tracker
	m    answers.MSNModel
	at   *trace.Record
	out  *answers.Judgement
	seen *bool
}

func (p *judgeProbe) Observe(c *harness.Conn, r *trace.Record) {
	ev := p.t.Observe(c, r)
	if r.Packet.Opcode.IsRequest() {
		p.m.Request(c, r, ev.MTU)
		return
	}
	j := p.m.Model(c, r, ev)
	if r == p.at {
		*p.out, *p.seen = j, true
	}
}
func (p *judgeProbe) End(*harness.Conn) {}

// TestMSNAboveAReadSpanShownLate: a READ seen while the path MTU is
// unknown reserves between one PSN (at the largest MTU) and three (at the
// smallest) for its 768 bytes; its answer, First, Middle and Last of 256
// bytes, shows both the MTU and that it used all three. An ATOMIC just
// past it is then the next message, not one after two requests the
// capture missed. Its acknowledgment, the first answer to it the capture
// shows, with an MSN above what the READ's answer (whose MSN fixes where
// the count starts) and the ATOMIC allow, is legal only if one of the two
// replays an answer to a request executed before the capture began (the
// READ came before any acknowledgment, so the capture may have begun
// during its resend): open, not checked as counting the READ's own PSNs as
// two missed messages, which would pass it. With the MTU known from the
// start the model judged it so already; with it never shown, the PSNs
// between may be missed requests, and only an MSN above those too is open.
// An ACK naming the READ's last PSN counts no missed message either, and
// replays nothing: above the READ's count it fails. Where
// no earlier MSN fixes the start, the ATOMIC's answer only fixes it:
// undecided, not open.
func TestMSNAboveAReadSpanShownLate(t *testing.T) {
	// spanShown: the READ's answer shows its span (and the MTU).
	build := func(spanShown bool, msn uint32) ([]*trace.Record, int) {
		var b ht.Trace
		if !spanShown {
			// The count's start, fixed by an ACK before the READ;
			// nothing shows the MTU.
			b.Req(wire.SendOnly, 175, true)
			b.Ack(175, 178)
		}
		b.Read(176, 768)
		if spanShown {
			b.ReadStream(176, 768, 256, 179)
		}
		b.Atomic(wire.FetchAdd, 179)
		b.AtomicAck(179, msn, 0)
		at := len(b.Records) - 1
		b.Req(wire.SendOnly, 180, true)
		b.Ack(180, msn+1)
		return b.Records, at
	}
	type want int
	const (
		checked want = iota
		open
		undecided
	)
	for _, tc := range []struct {
		name      string
		spanShown bool
		mtu       int // 0: unknown to the audit
		msn       uint32
		want      want
	}{
		// READ counted at its First (179 counts it) or at its Last
		// (179 does not), then the ATOMIC: 180 or 181.
		{"span shown late, the count", true, 0, 180, checked},
		{"span shown late, the READ counted at its Last", true, 0, 181, checked},
		{"span shown late, one above", true, 0, 182, open},
		{"span shown late, four above", true, 0, 183, open},
		{"MTU known, four above", true, 256, 183, open},
		// 178 + SEND's ACK done: READ, two PSNs perhaps missed
		// requests, the ATOMIC: at most 182.
		{"span never shown, the most the gap allows", false, 0, 182, checked},
		{"span never shown, above the gap too", false, 0, 183, open},
	} {
		recs, at := build(tc.spanShown, tc.msn)
		s := ht.Capture()
		s.MTU = tc.mtu
		j := judged(t, recs, at, s)
		var got want
		switch {
		case j.Violation:
			t.Errorf("%s: MSN %d fails: %s", tc.name, tc.msn, j.Message)
			continue
		case j.Undecided && j.Open:
			got = open
		case j.Undecided:
			got = undecided
		}
		if got != tc.want {
			t.Errorf("%s: MSN %d judged %+v, want %v (0 checked, 1 open, 2 undecided)", tc.name, tc.msn, j, tc.want)
		}
		if got == open && tc.spanShown && !strings.Contains(j.Reason, "executed before the capture began") {
			t.Errorf("%s: open for %q, which does not name a replay of a request executed before the capture began", tc.name, j.Reason)
		}
	}
	// So for an ACK naming the READ's last PSN: it counts the READ, no
	// message the capture missed (180: the READ counted at its Last).
	// Above that it fails, though the READ's answer may replay one to a
	// READ executed before the capture began: a replayed answer went out
	// after the responder executed every request before the READ, and
	// carries its first answer's count or the count of the moment, which
	// only rises, so 179 bounds the count before the READ either way; an
	// ACK replays nothing.
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{180, false}, {181, true}, {182, true}} {
		var b ht.Trace
		b.Read(176, 768)
		b.ReadStream(176, 768, 256, 179)
		b.Ack(178, tc.msn)
		j := judged(t, b.Records, 4, ht.Capture())
		if j.Violation != tc.fail || j.Undecided {
			t.Errorf("an ACK at the READ's last PSN with MSN %d: %+v, want violation %v", tc.msn, j, tc.fail)
		}
	}
	// No earlier MSN: the ATOMIC's answer is the first.
	var b ht.Trace
	b.Read(176, 768)
	b.Atomic(wire.FetchAdd, 179)
	b.AtomicAck(179, 183, 0)
	if j := judged(t, b.Records, 2, ht.Capture()); !j.Undecided || j.Open || j.Violation {
		t.Errorf("the first MSN the capture shows: %+v, want undecided, not open", j)
	}
}
