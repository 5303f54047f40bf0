package responses_test

import (
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	_ "github.com/rcconform/rcconform/rules/c9_148" // the MSN monitor
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

// events runs a Tracker over recs (through a throw-away monitor, so the
// harness's connection model is maintained as in a real audit) and
// returns the kind of event each record produced.
func events(t *testing.T, recs []*trace.Record, s harness.Settings) []responses.EventKind {
	t.Helper()
	var got []responses.EventKind
	const clause = "test-tracker"
	harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
		return &probe{out: &got}
	}})
	rtest.Audit(recs, s, clause)
	return got
}

type probe struct {
	t   responses.Tracker
	out *[]responses.EventKind
}

func (p *probe) Observe(c *harness.Conn, r *trace.Record) {
	*p.out = append(*p.out, p.t.Observe(c, r).Kind)
}
func (p *probe) End(*harness.Conn) {}

func TestTrackerClassifies(t *testing.T) {
	var b rtest.Builder
	b.Read(10, 3*256)                                // request
	b.Read(13, 256)                                  // request
	b.Resp(wire.ReadResponseFirst, 10, 0x04, 1, 256) // start
	b.Resp(wire.ReadResponseMiddle, 11, 0, 0, 256)   // continue
	b.Resp(wire.ReadResponseLast, 12, 0x04, 1, 256)  // continue
	b.Resp(wire.ReadResponseOnly, 13, 0x04, 2, 256)  // start
	b.Resp(wire.ReadResponseOnly, 20, 0x04, 2, 256)  // orphan
	b.Read(10, 3*256)                                // duplicate request
	b.Resp(wire.ReadResponseFirst, 10, 0x04, 2, 256) // start (replay)
	b.NAK(11, wire.NAKRemoteAccess, 2)               // NAK ending it
	b.Resp(wire.ReadResponseMiddle, 12, 0, 0, 256)   // after the NAK
	b.Ack(13, 2)                                     // ACK
	b.Read(30, 4*256)                                // request
	b.Resp(wire.ReadResponseMiddle, 32, 0, 0, 256)   // skip (inside the range, not at a request PSN)
	want := []responses.EventKind{
		responses.EvRequest, responses.EvRequest,
		responses.EvStart, responses.EvContinue, responses.EvContinue, responses.EvStart, responses.EvOrphan,
		responses.EvRequest, responses.EvStart, responses.EvNAK, responses.EvAfterNAK, responses.EvAck,
		responses.EvRequest, responses.EvSkip,
	}
	wantEvents(t, b.Recs, events(t, b.Recs, rtest.Active(256)), want)
}

// wantEvents checks the events got for recs against want.
func wantEvents(t *testing.T, recs []*trace.Record, got, want []responses.EventKind) {
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

// With the path MTU unknown (every response truncated by the capture),
// the tracker reads each READ's span from the connection's
// reconstruction: the READ's Last closes it, so a replay running past it
// is EvBeyond, and a response inside a READ's span that skipped its First
// belongs to that READ (EvSkip, not EvOrphan).
func TestTrackerReadsSpansMTUUnknown(t *testing.T) {
	var b rtest.Builder
	b.Read(10, 3*256)                                // request
	b.Resp(wire.ReadResponseFirst, 10, 0x04, 1, 256) // start
	b.Resp(wire.ReadResponseMiddle, 11, 0, 0, 256)   // continue
	b.Resp(wire.ReadResponseLast, 12, 0x04, 1, 256)  // continue: closes the span 10..12
	b.Read(10, 3*256)                                // duplicate request
	b.Resp(wire.ReadResponseFirst, 10, 0x04, 1, 256) // start (replay)
	b.Resp(wire.ReadResponseMiddle, 11, 0, 0, 256)   // continue
	b.Resp(wire.ReadResponseMiddle, 12, 0, 0, 256)   // continue (at the span's end)
	b.Resp(wire.ReadResponseLast, 13, 0x04, 1, 256)  // beyond the span
	b.Read(20, 3*256)                                // request
	b.Resp(wire.ReadResponseMiddle, 21, 0, 0, 256)   // skip: its First lost
	b.Resp(wire.ReadResponseLast, 22, 0x04, 2, 256)  // continue
	for _, r := range b.Recs {
		if r.Packet.Opcode.IsResponse() {
			r.Truncated = true
		}
	}
	want := []responses.EventKind{
		responses.EvRequest, responses.EvStart, responses.EvContinue, responses.EvContinue,
		responses.EvRequest, responses.EvStart, responses.EvContinue, responses.EvContinue, responses.EvBeyond,
		responses.EvRequest, responses.EvSkip, responses.EvContinue,
	}
	wantEvents(t, b.Recs, events(t, b.Recs, rtest.Capture(0)), want)
}
