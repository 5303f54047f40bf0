package answers_test

import (
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// events runs a Tracker over recs (through a throw-away monitor, so the
// harness's connection model is maintained as in a real audit) and
// returns the kind of event each record produced.
func events(t *testing.T, recs []*trace.Record, s harness.Settings) []answers.EventKind {
	t.Helper()
	var got []answers.EventKind
	const clause = "test-tracker"
	harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
		return &probe{out: &got}
	}})
	ht.Audit(&ht.Trace{Records: recs}, clause, s)
	return got
}

type probe struct {
	t   answers.Tracker
	out *[]answers.EventKind
}

func (p *probe) Observe(c *harness.Conn, r *trace.Record) {
	*p.out = append(*p.out, p.t.Observe(c, r).Kind)
}
func (p *probe) End(*harness.Conn) {}

func TestTrackerClassifies(t *testing.T) {
	var b ht.Trace
	b.Read(10, 3*256)                                  // request
	b.Read(13, 256)                                    // request
	resp(&b, wire.ReadResponseFirst, 10, 0x04, 1, 256) // start
	resp(&b, wire.ReadResponseMiddle, 11, 0, 0, 256)   // continue
	resp(&b, wire.ReadResponseLast, 12, 0x04, 1, 256)  // continue
	resp(&b, wire.ReadResponseOnly, 13, 0x04, 2, 256)  // start
	resp(&b, wire.ReadResponseOnly, 20, 0x04, 2, 256)  // orphan
	b.Read(10, 3*256)                                  // duplicate request
	resp(&b, wire.ReadResponseFirst, 10, 0x04, 2, 256) // start (replay)
	b.NAK(11, wire.NAKRemoteAccess, 2)                 // NAK ending it
	resp(&b, wire.ReadResponseMiddle, 12, 0, 0, 256)   // after the NAK
	b.Ack(13, 2)                                       // ACK
	b.Read(30, 4*256)                                  // request
	resp(&b, wire.ReadResponseMiddle, 32, 0, 0, 256)   // skip (inside the range, not at a request PSN)
	want := []answers.EventKind{
		answers.EvRequest, answers.EvRequest,
		answers.EvStart, answers.EvContinue, answers.EvContinue, answers.EvStart, answers.EvOrphan,
		answers.EvRequest, answers.EvStart, answers.EvNAK, answers.EvAfterNAK, answers.EvAck,
		answers.EvRequest, answers.EvSkip,
	}
	wantEvents(t, b.Records, events(t, b.Records, ht.ActiveMTU(256)), want)
}

// wantEvents checks the events got for recs against want.
func wantEvents(t *testing.T, recs []*trace.Record, got, want []answers.EventKind) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d (%s): event %d, want %d", i+1, recs[i], got[i], want[i])
		}
	}
}

// With the path MTU unknown (every response truncated by the capture),
// the tracker reads each READ's span from the connection's
// reconstruction: the READ's Last closes it, so a replay running past it
// is EvBeyond, and a response inside a READ's span that skipped its First
// belongs to that READ (EvSkip, not EvOrphan).
func TestTrackerReadsSpansMTUUnknown(t *testing.T) {
	var b ht.Trace
	b.Read(10, 3*256)                                  // request
	resp(&b, wire.ReadResponseFirst, 10, 0x04, 1, 256) // start
	resp(&b, wire.ReadResponseMiddle, 11, 0, 0, 256)   // continue
	resp(&b, wire.ReadResponseLast, 12, 0x04, 1, 256)  // continue: closes the span 10..12
	b.Read(10, 3*256)                                  // duplicate request
	resp(&b, wire.ReadResponseFirst, 10, 0x04, 1, 256) // start (replay)
	resp(&b, wire.ReadResponseMiddle, 11, 0, 0, 256)   // continue
	resp(&b, wire.ReadResponseMiddle, 12, 0, 0, 256)   // continue (at the span's end)
	resp(&b, wire.ReadResponseLast, 13, 0x04, 1, 256)  // beyond the span
	b.Read(20, 3*256)                                  // request
	resp(&b, wire.ReadResponseMiddle, 21, 0, 0, 256)   // skip: its First lost
	resp(&b, wire.ReadResponseLast, 22, 0x04, 2, 256)  // continue
	for _, r := range b.Records {
		if r.Packet.Opcode.IsResponse() {
			r.Truncated = true
		}
	}
	want := []answers.EventKind{
		answers.EvRequest, answers.EvStart, answers.EvContinue, answers.EvContinue,
		answers.EvRequest, answers.EvStart, answers.EvContinue, answers.EvContinue, answers.EvBeyond,
		answers.EvRequest, answers.EvSkip, answers.EvContinue,
	}
	wantEvents(t, b.Records, events(t, b.Records, ht.CaptureMTU(0)), want)
}

// readProbe records, for each READ request, whether the tracker took it
// for a duplicate.
type readProbe struct {
	t   answers.Tracker
	dup *[]bool
}

func (p *readProbe) Observe(c *harness.Conn, r *trace.Record) {
	if ev := p.t.Observe(c, r); ev.Kind == answers.EvRequest {
		*p.dup = append(*p.dup, ev.Req.Dup)
	}
}
func (p *readProbe) End(*harness.Conn) {}

// A READ behind later requests is a resend, unless the trace proves the
// responder expected its PSN: a sequence NAK named it after the later
// requests came, out of sequence.
func TestTrackerReadAtTheExpectedPSNIsNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		nak  bool
		want bool // duplicate
	}{
		{"behind later requests", false, true},
		{"named by a sequence NAK after later requests", true, false},
	} {
		var b ht.Trace
		b.Req(wire.SendOnly, 11, true)
		b.Req(wire.SendOnly, 12, true)
		if tc.nak {
			b.NAK(10, wire.NAKPSNSequence, 7)
		}
		b.Read(10, 256)
		var dup []bool
		clause := "test-read-dup-" + tc.name
		harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
			return &readProbe{dup: &dup}
		}})
		ht.Audit(&b, clause, ht.CaptureMTU(256))
		if len(dup) != 1 || dup[0] != tc.want {
			t.Errorf("%s: the READ taken for a duplicate: %v, want %v", tc.name, dup, tc.want)
		}
	}
}

// resentProbe records each READ request the tracker saw and, after
// every packet, whether the READs are among Pending.
type resentProbe struct {
	t       answers.Tracker
	reads   *[]*answers.ReadReq
	pending *map[*answers.ReadReq]bool
}

func (p *resentProbe) Observe(c *harness.Conn, r *trace.Record) {
	if ev := p.t.Observe(c, r); ev.Kind == answers.EvRequest {
		*p.reads = append(*p.reads, ev.Req)
	}
	*p.pending = map[*answers.ReadReq]bool{}
	for _, q := range p.t.Pending() {
		(*p.pending)[q] = true
	}
}
func (p *resentProbe) End(*harness.Conn) {}

// A READ behind a later request, with no copy of it before, no READ
// holding its PSN and no response that covered it, is Resent: a
// duplicate whose first answer may still be owed (the capture missed its
// first copy), so it stays among Pending until answered. Its second
// copy, a retry of part of it, or one whose PSN a response covered
// before it came are plain duplicates.
func TestTrackerResentRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func(b *ht.Trace)
		resent  []bool // each READ request's Resent, in order
		pending []bool // each READ among Pending at the end
	}{
		{"new, in order", func(b *ht.Trace) {
			b.Read(10, 3*256)
		}, []bool{false}, []bool{true}},
		{"behind a later request, twice", func(b *ht.Trace) {
			b.Req(wire.SendOnly, 13, true)
			b.Read(10, 3*256)
			b.Read(10, 3*256)
		}, []bool{true, false}, []bool{true, false}},
		{"behind a later request, then answered", func(b *ht.Trace) {
			b.Req(wire.SendOnly, 13, true)
			b.Read(10, 3*256)
			b.ReadStream(10, 3*256, 256, 1)
		}, []bool{true}, []bool{false}},
		{"a partial retry behind a later request", func(b *ht.Trace) {
			b.Read(10, 3*256)
			b.Req(wire.SendOnly, 13, true)
			b.Read(11, 2*256)
		}, []bool{false, false}, []bool{true, false}},
		{"behind a later request a response covered", func(b *ht.Trace) {
			b.Req(wire.SendOnly, 13, true)
			b.Ack(13, 2)
			b.Read(10, 3*256)
		}, []bool{false}, []bool{false}},
	} {
		var b ht.Trace
		tc.build(&b)
		var reads []*answers.ReadReq
		var pending map[*answers.ReadReq]bool
		clause := "test-read-resent-" + tc.name
		harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
			return &resentProbe{reads: &reads, pending: &pending}
		}})
		ht.Audit(&b, clause, ht.CaptureMTU(256))
		if len(reads) != len(tc.resent) {
			t.Fatalf("%s: %d READs seen, want %d", tc.name, len(reads), len(tc.resent))
		}
		for i, q := range reads {
			if q.Resent != tc.resent[i] || pending[q] != tc.pending[i] {
				t.Errorf("%s: READ %d (frame %d): Resent %v, pending %v; want %v, %v", tc.name, i+1, q.Rec.Frame, q.Resent, pending[q], tc.resent[i], tc.pending[i])
			}
		}
	}
}
