// Package c9_98 checks C9-98 (§9.7.5.1.3): the last packet of a multi-packet
// RDMA READ response carries an AETH as well, and that AETH acknowledges the
// READ itself; Middle packets carry none. The specification's Response
// Generation text gives C9-97 and C9-98 one joint meaning (the first and the
// last READ response packets both carry an AETH); taking the last-packet half
// as C9-98's follows its word order and is inferred. rules/c9_97 checks the
// other half.
package c9_98

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-98"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := answers.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor follows READ response streams (answers.Tracker) and checks
// the packet of each multi-packet stream that carries the last PSN of its
// READ's range (the READ answered, or the part a retry asked for):
//   - it is a Last, which carries an AETH (a Middle there means the
//     response ended without one; a misplaced First is C9-96's concern);
//   - a Last's AETH has an ACK-kind syndrome, since it acknowledges the
//     READ (a NAK syndrome there is also C9-113.a1's concern).
//
// Indeterminate: without the path MTU the last PSN of a READ's range is
// not known (--mtu, or a capture showing a First or Middle packet,
// decides). Streams whose numbering is broken are C9-96's concern; a
// one-packet response (an Only) is C9-97's.
type monitor struct {
	t      *answers.Tracker
	feeder bool // the shared tracker's feeder (answers.Join)
}

// Kinds implements harness.KindFilter: the monitor judges READ response
// streams; it passes other packets to the shared tracker, which only its
// feeder needs to do.
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
	if ev.Kind != answers.EvStart && ev.Kind != answers.EvContinue {
		return
	}
	p := r.Packet
	s := ev.Stream
	q := s.Req
	if !s.EndKnown {
		if p.Opcode == wire.ReadResponseLast || p.Opcode == wire.ReadResponseMiddle {
			c.Indeterminate(ID, "path MTU unknown: which packet must be a READ response's last cannot be told (--mtu, or a capture showing a First or Middle packet, decides)")
		}
		return
	}
	if p.PSN != s.End || s.Start == s.End || s.Resynced {
		return
	}
	want := func() []string { // built only for a violation
		return []string{fmt.Sprintf("a READ Response Last with PSN %d carrying an AETH with an ACK syndrome", s.End)}
	}
	switch {
	case p.Opcode == wire.ReadResponseLast && answers.ACKKind(p):
		c.Checked(ID)
	case p.Opcode == wire.ReadResponseLast:
		c.Violation(ID, r, fmt.Sprintf("the last response packet of the READ at PSN %d (frame %d) carries the syndrome %s: the last AETH acknowledges the READ, so it must be an ACK",
			q.PSN, q.Rec.Frame, p.AETH), want(), p.String())
	case !opc.Has(p.Opcode, wire.HdrAETH):
		msg := fmt.Sprintf("PSN %d is the last of the %d response packets of the READ at PSN %d (frame %d, %d bytes %s), but it went out as %s, so the response ends without the AETH that acknowledges the READ",
			p.PSN, s.End.Diff(s.Start)+1, q.PSN, q.Rec.Frame, q.Length, s.Basis(), p.Opcode)
		if op, _, frame, ok := c.Req(p.PSN); ok && op == wire.ReadRequest && p.PSN != q.PSN && frame > q.Rec.Frame {
			// A READ asked again from this PSN since (a partial
			// retry): the packet may answer it, and then begins its
			// answer without the AETH (C9-97). Wrong either way.
			c.ViolationEither(r, msg, append(want(), fmt.Sprintf("a READ Response Only (or First) with PSN %d, answering the READ of frame %d", p.PSN, frame)), p.String(),
				reports.Alternative{ID: ID, If: fmt.Sprintf("it ends the answer to the READ at PSN %d", q.PSN)},
				reports.Alternative{ID: "C9-97", If: fmt.Sprintf("it answers the READ asked again from PSN %d (frame %d), whose answer begins there", p.PSN, frame)})
			return
		}
		c.Violation(ID, r, msg, want(), p.String())
	}
}

func (m *monitor) End(*harness.Conn) {}
