package responses

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// C9-100 and C9-112 share one meaning (the specification's Response
// Generation text does not split it): when a READ fails after part of its
// response went out, the responder sends none of the faulty data; the packet
// that would have carried it goes out as an Acknowledge with a NAK syndrome,
// at that packet's PSN, and the stream ends there. One monitor checks it and
// is registered once under each clause number.

// RegisterMidStreamMonitor registers the shared monitor under clause.
func RegisterMidStreamMonitor(clause string) {
	harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(c *harness.Conn) harness.Checker {
		t, feeder := answers.Join(c)
		return &midStream{clause: clause, t: t, feeder: feeder}
	}})
}

// midStream checks, for every NAK or RNR NAK that arrives while a READ
// response stream is being sent and names a PSN inside that stream's
// range:
//   - its PSN is the stream's next PSN, the first packet not delivered
//     (the PSN of an already delivered packet, such as the READ request's
//     own, is a violation in any trace: the same sender's packets keep
//     their order past any capture point; a PSN further on is a violation
//     in a complete trace and indeterminate otherwise, since packets of
//     the stream may have been lost before the capture point);
//   - its opcode is Acknowledge: a READ response opcode carrying a NAK
//     syndrome in the middle of a stream is caught here as well as by
//     C9-113.a1, since the refused packet must go out as an Acknowledge;
//   - no READ response data of that stream follows the NAK.
//
// Not decided here: a NAK for a READ before any of its response packets
// went out names the READ's own PSN, which is C9-124's concern; a NAK
// whose PSN a duplicate READ that arrived after the stream began could
// explain is left to the duplicate rules (C9-106/C9-115). A PSN sequence
// error NAK answers an out-of-sequence request, not a failing READ: one
// naming a PSN inside a READ's response range (which no expected PSN of
// a legal responder lies in) is a fault of the PSN it names, judged
// under C9-111/C9-121 (or of the expected PSN, C9-103), not here.
type midStream struct {
	clause string
	t      *answers.Tracker
	feeder bool // the shared tracker's feeder (answers.Join)
}

// Kinds implements harness.KindFilter: the monitor judges READ responses
// and Acknowledges (the NAKs); it passes other packets to the shared tracker,
// which only its feeder needs to do.
func (m *midStream) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return midStreamOpcodes
}

var midStreamOpcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.Class(op) == wire.ClassReadResponse || opc.Class(op) == wire.ClassAck
})

func (m *midStream) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	open, next := ev.Before, ev.BeforeNext
	p := r.Packet
	switch ev.Kind {
	case answers.EvAfterNAK:
		s := ev.Stream
		if seqNAK(s.NAKRec) {
			c.Indeterminate(m.clause, "READ response data followed a sequence NAK inside the READ's range: that NAK answered a request, not the READ's failure (its PSN is judged under C9-111/C9-121)")
			return
		}
		c.Violation(m.clause, r, fmt.Sprintf("READ response data at PSN %d follows the NAK (frame %d) that ended the response of the READ at PSN %d: after the error no more of its data may be sent",
			p.PSN, s.NAKRec.Frame, s.Req.PSN),
			[]string{"no READ response packet of that READ after its NAK (a new response only for a new or duplicate READ request)"},
			p.String())
	case answers.EvNAK, answers.EvStart, answers.EvContinue, answers.EvBeyond, answers.EvSkip:
		s := ev.Stream
		if s == nil || open == nil || s != open || !s.NAKed || s.NAKRec != r {
			return
		}
		if s.Resynced {
			c.Indeterminate(m.clause, "a NAK ended a READ response whose numbering no READ request explains (C9-96's concern): the refused packet's PSN cannot be told")
			return
		}
		m.judge(c, r, s, next)
	}
}

// seqNAK reports whether r is an Acknowledge carrying a PSN sequence
// error NAK.
func seqNAK(r *trace.Record) bool {
	return r != nil && r.Packet.Opcode == wire.Acknowledge && r.Packet.AETH.IsNAK(wire.NAKPSNSequence)
}

// judge checks NAK r, which ended stream s whose next PSN was next.
func (m *midStream) judge(c *harness.Conn, r *trace.Record, s *answers.Stream, next wire.PSN) {
	p := r.Packet
	if seqNAK(r) {
		c.Indeterminate(m.clause, fmt.Sprintf("a sequence NAK with PSN %d inside the response range of the READ at PSN %d answers an out-of-sequence request, not the READ's failure: its PSN is judged under C9-111/C9-121", p.PSN, s.Req.PSN))
		return
	}
	want := []string{fmt.Sprintf("an Acknowledge (opcode 0x11) NAK with PSN %d, the first response packet of the READ at PSN %d not yet sent, and no more of its response after it", next, s.Req.PSN)}
	if p.Opcode != wire.Acknowledge {
		c.Violation(m.clause, r, fmt.Sprintf("the READ at PSN %d failed after %d response packets and the refused packet went out as %s carrying the NAK syndrome, not as an Acknowledge",
			s.Req.PSN, s.Packets, p.Opcode), want, p.String())
		return
	}
	x := p.PSN
	switch {
	case x == next:
		c.Checked(m.clause)
	case x.Before(next):
		// A duplicate READ covering x that arrived while the stream was
		// being sent could have been answered by this NAK instead.
		for _, q := range m.t.Reads() {
			if q.Seq > s.SeqAtStart && q.Dup {
				if last, ok := q.Last(s.MTU); !ok || x.InRange(q.PSN, last) {
					c.Indeterminate(m.clause, "a NAK inside a READ's response followed a duplicate READ that arrived while the response was streaming: which request it answers cannot be told")
					return
				}
			}
		}
		own := x == s.Req.PSN
		what := fmt.Sprintf("PSN %d, which the response had already delivered", x)
		if own {
			what = fmt.Sprintf("PSN %d, the READ request's own PSN, which the response had already delivered", x)
		}
		msg := fmt.Sprintf("the READ at PSN %d failed after %d response packets (up to PSN %d); its NAK names %s instead of the refused packet's PSN %d",
			s.Req.PSN, s.Packets, next.Add(-1), what, next)
		if alts := m.answeredBeforeAck(c, s, next); alts != nil {
			// Listed under C9-106/C9-115 too (by whichever of C9-100 and
			// C9-112 judges first), so that neither passes.
			for _, a := range alts {
				if a.ID == m.clause || !c.Blamed(r, a.ID) {
					c.ViolationOf(a.ID, r, msg, want, p.String(), alts...)
				}
			}
			return
		}
		if own {
			// Judged whichever was sent first: a NAK sent before the
			// response refused the READ itself, and the response packets
			// after it answered a request the responder had refused.
			c.ViolationInAnyOrder(m.clause, r, msg, want, p.String())
			return
		}
		c.Violation(m.clause, r, msg, want, p.String())
	default:
		if c.Complete() {
			c.Violation(m.clause, r, fmt.Sprintf("the READ at PSN %d failed after %d response packets (up to PSN %d); its NAK names PSN %d, skipping PSNs no packet carried, instead of the refused packet's PSN %d",
				s.Req.PSN, s.Packets, next.Add(-1), x, next), want, p.String())
			return
		}
		c.Indeterminate(m.clause, "a NAK inside a READ's response names a PSN past the last response packet seen: response packets may have been lost before the capture point (--complete decides)")
	}
}

// answeredBeforeAck returns, for a NAK inside stream s's range at a PSN it
// had delivered, the two readings left open where a positive ACK past the
// READ's range came after the stream's latest packet and the responder's
// IPv4 Identifications leave room for the rest of the answer (from next on)
// between them: the ACK overtook the answer, and this NAK ended it (this
// clause); or the rest went out before the ACK uncaptured, and the NAK,
// behind the responder by then, answers the READ requested again, a
// duplicate the capture did not show (an error on a duplicate is never
// NAKed, C9-106/C9-115). Nil where no such ACK came, or the IDs rule the
// second out.
func (m *midStream) answeredBeforeAck(c *harness.Conn, s *answers.Stream, next wire.PSN) []reports.Alternative {
	if s.AckPast == nil || s.AckPastSeq < s.LastSeq || !s.EndKnown {
		return nil
	}
	if n, known := c.SentBetween(s.LastRec, s.AckPast); known && n < s.End.Diff(next)+1 {
		return nil
	}
	dup := fmt.Sprintf("the rest of the READ's answer went out uncaptured before the ACK with PSN %d (frame %d), as the responder's IPv4 Identifications allow, and this NAK answers the READ requested again, a duplicate the capture did not show", s.AckPast.Packet.PSN, s.AckPast.Frame)
	return []reports.Alternative{
		{ID: m.clause, If: fmt.Sprintf("the ACK with PSN %d (frame %d) overtook the rest of the READ's answer (C9-101's concern too) and this NAK ended that answer", s.AckPast.Packet.PSN, s.AckPast.Frame)},
		{ID: "C9-106", If: dup},
		{ID: "C9-115", If: dup},
	}
}

func (m *midStream) End(*harness.Conn) {}
