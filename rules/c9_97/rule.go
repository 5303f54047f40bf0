// Package c9_97 checks C9-97 (§9.7.5.1.3): the first packet of an RDMA READ
// response, or its only packet, carries an AETH, and that AETH also
// acknowledges every earlier SEND or WRITE still outstanding. The
// specification's Response Generation text gives C9-97 and C9-98 one joint
// meaning (the first and the last READ response packets both carry an AETH);
// taking the first-packet half as C9-97's follows its word order and is
// inferred. rules/c9_98 checks the other half.
package c9_97

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-97"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := answers.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor follows READ response streams (answers.Tracker) and checks the
// first packet of each stream that starts at a READ request's PSN:
//   - it carries an AETH: a Middle there means the response began without
//     one (a stream starting with a Last has its AETH; the broken sequence
//     is C9-96's concern);
//   - its AETH has an ACK-kind syndrome: an AETH carrying a NAK or RNR
//     syndrome cannot acknowledge anything (that is also C9-113.a1's
//     concern).
//
// The answer to a duplicate READ, partial or whole, is a READ response
// like any other: it opens at the duplicate's PSN with First (or Only) and
// its AETH (docs/interpretations.md, "Opcodes of a partial READ
// replay"; C9-107 requires the same of the replay, so a replay opening
// with Middle fails both). Streams whose
// numbering is broken are C9-96's concern.
type monitor struct {
	t      *answers.Tracker
	feeder bool // the shared tracker's feeder (answers.Join)
}

// Kinds implements harness.KindFilter: the monitor judges the first packet
// of READ response streams; it passes other packets to the shared tracker,
// which only its feeder needs to do.
func (m *monitor) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return opcodes
}

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.Class(op) == wire.ClassReadResponse
})

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	p := r.Packet
	if ev.Kind == answers.EvSkip && ev.Unstarted != nil && !opc.Has(p.Opcode, wire.HdrAETH) {
		q := ev.Unstarted
		c.Unresolved(ID, fmt.Sprintf("a READ response %s at PSN %d, the PSN of the READ of frame %d, may go on with the answer owed to the READ at PSN %d (frame %d), whose range holds it, its first packets lost before the capture point; otherwise it begins the answer without an AETH (--complete decides)",
			p.Opcode, p.PSN, q.Rec.Frame, ev.Req.PSN, ev.Req.Rec.Frame))
		return
	}
	if ev.Kind == answers.EvContinue && ev.Unstarted != nil && !opc.Has(p.Opcode, wire.HdrAETH) {
		q, s := ev.Unstarted, ev.Stream.Req
		c.Unresolved(ID, fmt.Sprintf("a READ response %s at PSN %d, the PSN of the READ of frame %d, whose answer has not begun, goes on with the answer to the READ at PSN %d (frame %d) only if the packets the responder sent since that answer's latest were not its rest; otherwise it begins the answer without an AETH (--complete decides, or a responder numbering its IPv4 IDs one by one)",
			p.Opcode, p.PSN, q.Rec.Frame, s.PSN, s.Rec.Frame))
		return
	}
	if ev.Kind != answers.EvStart {
		return
	}
	s := ev.Stream
	q := s.Req
	// The READ the stream answers is the trace's, whether the QPs were
	// made anew since or not (the same request either way): the first
	// packet of its answer is judged on any QPs.
	want := func() []string { // built only for a violation
		return []string{fmt.Sprintf("a READ Response First (or Only, for a one-packet READ) with PSN %d carrying an AETH with an ACK syndrome", q.PSN)}
	}
	if !opc.Has(p.Opcode, wire.HdrAETH) {
		if answers.PastRangeOrStart(c, r, ev) {
			// Or it continues the answer before it past that READ's
			// range: one finding names C9-96 too.
			return
		}
		if q.Dup {
			// docs/interpretations.md, "Opcodes of a partial READ
			// replay": the answer to a
			// duplicate READ, partial or whole, is a READ response like
			// any other, opening with First (or Only) and its AETH.
			c.ViolationOnAnyQPs(ID, r, fmt.Sprintf("the replay answering the duplicate READ at PSN %d (frame %d) begins with %s, which carries no AETH: a replay, partial or whole, starts at the duplicate's PSN with First (or Only)",
				q.PSN, q.Rec.Frame, p.Opcode), want(), p.String())
			return
		}
		c.ViolationOnAnyQPs(ID, r, fmt.Sprintf("the response of the READ at PSN %d (frame %d) begins with %s, which carries no AETH",
			q.PSN, q.Rec.Frame, p.Opcode), want(), p.String())
		return
	}
	if !answers.ACKKind(p) {
		c.ViolationOnAnyQPs(ID, r, fmt.Sprintf("the first response packet of the READ at PSN %d (frame %d) carries the syndrome %s, which acknowledges nothing: the first AETH must be an ACK",
			q.PSN, q.Rec.Frame, p.AETH), want(), p.String())
		return
	}
	c.Checked(ID)
}

func (m *monitor) End(*harness.Conn) {}
