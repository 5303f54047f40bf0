// Package s9_7_5_1_5 checks the rule of §9.7.5.1.5 (NAKs) that no public
// clause number states, so it is keyed by its section: a request that
// arrives at the responder's expected PSN but cannot be executed (a SEND
// or RDMA WRITE packet carrying more than the path MTU, a reserved RC
// opcode, a SEND with Invalidate naming an R_Key the responder cannot
// invalidate) is answered with a NAK invalid request (NAK code 1, the
// class Table 58 gives such requests). It is never acknowledged
// positively, as if executed, and never dropped without an answer. Which
// PSN the NAK carries is C9-125's matter.
package s9_7_5_1_5

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "§9.7.5.1.5"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return &monitor{} }})
}

// monitor judges, in a trace, the requests it can prove the responder
// cannot execute: SEND and RDMA WRITE packets carrying more than the path
// MTU (Conn.BeyondMTU: the connection's, configured or announced by its
// handshake, or, for an Only or Last packet, the one its full First and
// Middle packets show), and requests with a reserved RC opcode, which the
// auditor notes on their connection (Conn.ReservedOps). Whether an R_Key
// can be invalidated is not on the wire: a SEND with Invalidate that
// failed is judged by the active scenarios only.
//
// An Only or Last seen while the path MTU is not known, longer than the
// smallest one, is held too: the MTU a full First or Middle shows later,
// by the time an answer covers it, decides it. An ACK that covered it
// before the MTU was known is judged too, once a later covering ACK finds
// the MTU known, where the requester's first packet after that ACK showed
// by its IDs that the capture missed no valid copy before it.
//
// Such a request, new to the responder (at its expected PSN, as the
// connection's reconstruction proves; or, the first copy of its PSN, at
// or after the PSN a sequence NAK named, the requester's IPv4
// Identifications then deciding from the NAK on), must draw a NAK
// invalid request:
//   - a positive ACK whose PSN covers it is a violation: the responder
//     took it as executed. Only a valid copy of the request that the
//     capture missed (sent before the ACK) could explain the ACK, so on a
//     trace not known to be complete the instance is decided by the
//     requester's IPv4 Identifications (ViolationUnlessMissed);
//   - a sequence NAK naming its PSN, drawn by a later request, shows the
//     responder dropped it without an answer: a violation on a complete
//     trace; elsewhere the request may have been lost after the capture
//     point, and the instance stays open;
//   - a NAK invalid request after it is the answer owed: checked.
//
// A request whose standing the trace does not prove (it may have been a
// duplicate of one executed unseen) is left open when an ACK covers it. A
// reserved-opcode request is not in its sender's IPv4 Identification run
// (the model does not take it in), so off a complete trace its instances
// stay open.
type monitor struct {
	open []*pending
	// reserved is how many of the connection's reserved-opcode
	// requests (Conn.ReservedOps) the monitor took in.
	reserved int
}

// pending is a request the responder cannot execute, not yet answered.
// A SEND or WRITE Only or Last longer than the smallest path MTU, seen
// while the MTU was not known, is held with why "" and rec set: the MTU
// shown by then (a full First or Middle later in the trace) decides it
// when its answer comes.
type pending struct {
	psn   wire.PSN
	why   string
	rec   *trace.Record // the request, where why waits for the path MTU
	seq   uint64        // Conn.Seq when it was seen
	inSeq bool          // at the expected PSN the trace proves
	later bool          // a request with a later PSN was seen after it
	// ack is the first positive ACK that covered the request while the
	// path MTU was not known (nil: none). nextSeen is set once the
	// requester's first packet after it was seen (no copy of an earlier
	// one), and ranOn says whether that packet left the ACK unexplained
	// by a valid copy the capture missed: the requester's IDs had run on
	// by ones since seq, and the packet was no valid copy of the request
	// that may have passed the capture point before the ACK (what
	// ViolationUnlessMissed waits for, taken while the MTU that decides
	// whether there is an instance at all was not yet known). That proves
	// it once the requester is seen to number its packets one by one
	// (Conn.NumbersByOne), then or later.
	ack             *trace.Record
	nextSeen, ranOn bool
}

// maxOpen bounds the requests the monitor holds per connection.
const maxOpen = 64

// covers bounds how far past a request's PSN an ACK covering it may lie
// (beyond, the PSNs have wrapped or the QPs were made anew).
const covers = 1 << 20

// Kinds implements harness.KindFilter: requests and Acknowledges.
func (*monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsRequest(op) || op == wire.Acknowledge
})

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	m.takeReserved(c)
	p := r.Packet
	if opc.IsRequest(p.Opcode) {
		m.request(c, r)
		return
	}
	switch {
	case p.AETH.IsNAK(wire.NAKInvalidRequest):
		for _, e := range m.open {
			if beyond, _ := resolved(c, e); beyond {
				c.Checked(ID)
			}
		}
		m.open = m.open[:0]
	case p.AETH.IsACK():
		m.acked(c, r)
	case p.AETH.IsNAK(wire.NAKPSNSequence):
		m.stillExpected(c, r)
	default:
		// An RNR NAK or another NAK naming the request: refused, for a
		// reason this rule does not weigh.
		m.forget(func(e *pending) bool { return e.psn == p.PSN })
	}
}

// request takes in a request: a new one the responder cannot execute is
// held; a valid copy of a held one ends its case (an ACK may answer the
// copy).
func (m *monitor) request(c *harness.Conn, r *trace.Record) {
	p := r.Packet
	why := c.BeyondMTU(r)
	for _, e := range m.open {
		if p.PSN.After(e.psn) {
			e.later = true
		}
		if e.ack != nil && !e.nextSeen && !c.MaybeCopy(r) {
			e.nextSeen = true
			validCopy := p.PSN == e.psn && why == "" && harness.MayBeReordered(e.ack, r)
			e.ranOn = c.RanOnSince(trace.ToResponder, e.seq) && !validCopy
		}
	}
	maybe := why == "" && mayBeBeyond(c, r)
	if why == "" && !maybe {
		m.forget(func(e *pending) bool { return e.psn == p.PSN })
		return
	}
	cls := c.Classify(p.PSN)
	if cls == harness.ReqAhead || cls == harness.ReqBehind {
		return // refused by its PSN, or a duplicate: other rules' matter
	}
	// On a complete trace the first request carries the expected PSN (the
	// reconstruction pins it there once it has taken the request in).
	inSeq := cls == harness.ReqInSeq || !c.HaveReq && c.Complete()
	e := &pending{psn: p.PSN, why: why, seq: c.Seq(), inSeq: inSeq}
	if _, _, _, seen := c.Req(p.PSN); !inSeq && !seen && c.LastSeqNAK != nil && p.PSN.AtOrAfter(c.LastSeqNAK.Packet.PSN) && p.PSN.Diff(c.LastSeqNAK.Packet.PSN) < covers {
		// A sequence NAK showed the responder expecting a PSN at or
		// before this one: it had not executed this PSN then, and the
		// trace shows no other copy of it. If no request reached the
		// responder since that the trace does not show (the requester's
		// IDs decide, from the NAK on), this copy is the one an ACK
		// covering the PSN took as executed.
		e.inSeq, e.seq = true, c.LastSeqNAKSeq
	}
	if maybe {
		e.rec = r
	}
	m.hold(e)
}

// mayBeBeyond reports whether r, a SEND or RDMA WRITE Only or Last seen
// while the path MTU is not known, carries more than the smallest path
// MTU: a full First or Middle packet later in the trace may show it
// longer than the path MTU.
func mayBeBeyond(c *harness.Conn, r *trace.Record) bool {
	cl, pos := opc.Class(r.Packet.Opcode), opc.Position(r.Packet.Opcode)
	return c.MTU() == 0 && !r.Truncated && (cl == wire.ClassSend || cl == wire.ClassWrite) &&
		(pos == wire.PosOnly || pos == wire.PosLast) && r.PayloadLen > minMTU
}

// minMTU is the smallest path MTU.
const minMTU = 256

// resolved reports whether e is a request the responder cannot execute,
// deciding one held while the path MTU was not known by the MTU shown
// since; known is false while the MTU is still not known (then e waits
// for a later answer that covers it too).
func resolved(c *harness.Conn, e *pending) (beyond, known bool) {
	if e.why == "" && e.rec != nil {
		if c.MTU() == 0 {
			return false, false
		}
		e.why = c.BeyondMTU(e.rec)
	}
	return e.why != "", true
}

// takeReserved holds the reserved-opcode requests noted on the
// connection since the last call (those the routing noted with the
// responder's expected PSN, or whose standing the trace does not prove).
func (m *monitor) takeReserved(c *harness.Conn) {
	latest, total := c.ReservedOps()
	n := min(total-m.reserved, len(latest))
	m.reserved = total
	for _, op := range latest[len(latest)-n:] {
		p := op.Rec.Packet
		if cls := c.Classify(p.PSN); !op.InSeq && (cls == harness.ReqAhead || cls == harness.ReqBehind) {
			continue
		}
		m.hold(&pending{psn: p.PSN, inSeq: op.InSeq, seq: c.Seq(),
			why: fmt.Sprintf("a request with the reserved RC opcode 0x%02x, PSN %d (frame %d), which no responder can execute", uint8(p.Opcode), p.PSN, op.Rec.Frame)})
	}
}

// hold holds e, unless a request with its PSN is held already (the
// first copy stands).
func (m *monitor) hold(e *pending) {
	for _, o := range m.open {
		if o.psn == e.psn {
			return
		}
	}
	if len(m.open) == maxOpen {
		m.open = append(m.open[:0], m.open[1:]...)
	}
	m.open = append(m.open, e)
}

// forget drops the held requests drop selects.
func (m *monitor) forget(drop func(*pending) bool) {
	k := 0
	for _, e := range m.open {
		if !drop(e) {
			m.open[k] = e
			k++
		}
	}
	clear(m.open[k:])
	m.open = m.open[:k]
}

// acked judges a positive ACK against the held requests it covers.
func (m *monitor) acked(c *harness.Conn, r *trace.Record) {
	a := r.Packet.PSN
	m.forget(func(e *pending) bool {
		if !a.AtOrAfter(e.psn) || a.Diff(e.psn) >= covers {
			return false
		}
		if beyond, known := resolved(c, e); !beyond {
			if !known && e.ack == nil {
				e.ack = r
			}
			return known
		}
		judgeCovered(c, e, r)
		return true
	})
}

// judgeCovered judges held request e, which the responder cannot
// execute, covered by the positive ACK r.
func judgeCovered(c *harness.Conn, e *pending, r *trace.Record) {
	a := r.Packet.PSN
	switch {
	case c.ResponsePSNFault() != "":
		c.Unresolved(ID, "a positive ACK covers a request the responder cannot execute, but the responder's ACK PSNs are already at fault ("+c.ResponsePSNFault()+"): what it covers is not known")
	case !e.inSeq:
		c.Unresolved(ID, "a positive ACK covers a request the responder cannot execute, but the trace does not show that the request was new to the responder (it may repeat one executed unseen): a capture holding the connection from its start (--complete) decides")
	default:
		msg := fmt.Sprintf("%s, yet the positive ACK with PSN %d covers it, as if it had been executed: a request the responder cannot execute is owed a NAK invalid request", e.why, a)
		expected := []string{fmt.Sprintf("a NAK invalid request answering the request at PSN %d", e.psn)}
		if c.Complete() {
			c.Violation(ID, r, msg, expected, r.Packet.String())
			break
		}
		if e.ack != nil && e.ranOn && c.NumbersByOne(trace.ToResponder) {
			// The path MTU, shown only after an earlier ACK covered
			// the request, decides that ACK too, and the requester's
			// packet after it proved that the capture missed no valid
			// copy before it: judged there, with no wait for the
			// requester's next packet after this one (for example,
			// the MTU shown by a First after the first covering ACK,
			// the requester silent after the last; and its IDs seen
			// to count by ones only a packet later).
			c.Violation(ID, e.ack, fmt.Sprintf("%s, yet the positive ACK with PSN %d covers it, as if it had been executed (the requester's IPv4 Identifications ran on unbroken: the capture missed none of its packets): a request the responder cannot execute is owed a NAK invalid request", e.why, e.ack.Packet.PSN),
				expected, e.ack.Packet.String())
			break
		}
		psn := e.psn
		c.ViolationUnlessMissed(ID, trace.ToResponder, e.seq, r, msg, expected, r.Packet.String(),
			"a positive ACK covers a request the responder cannot execute: only a valid copy of the request that the capture missed explains it (--complete decides)",
			func(next *trace.Record) bool { return next.Packet.PSN == psn && c.BeyondMTU(next) == "" })
	}
}

// stillExpected judges a sequence NAK naming a held request's PSN, drawn
// by a later request: the responder still expects that PSN, so it
// neither executed the request nor refused it with a NAK of its own.
func (m *monitor) stillExpected(c *harness.Conn, r *trace.Record) {
	n := r.Packet.PSN
	m.forget(func(e *pending) bool {
		if e.psn != n || !e.later || !e.inSeq {
			return false
		}
		if beyond, known := resolved(c, e); !beyond {
			return known
		}
		if !c.Complete() {
			c.Unresolved(ID, "a sequence NAK names the PSN of a request the responder cannot execute: the responder dropped it without an answer, unless it was lost before reaching the responder (a capture taken at the responder, --complete, decides)")
			return true
		}
		c.Violation(ID, r, fmt.Sprintf("%s; it drew no answer, and a later request drew the sequence NAK with PSN %d: the responder dropped it silently, though a request it cannot execute is owed a NAK invalid request", e.why, n),
			[]string{fmt.Sprintf("a NAK invalid request answering the request at PSN %d", e.psn)}, r.Packet.String())
		return true
	})
}

// End judges the requests an ACK covered while the path MTU was not
// known, where the MTU shown since (after the last ACK that covered them)
// puts them beyond it: on that first ACK, as a later ACK would have.
func (m *monitor) End(c *harness.Conn) {
	for _, e := range m.open {
		if e.ack == nil {
			continue
		}
		if beyond, known := resolved(c, e); known && beyond {
			judgeCovered(c, e, e.ack)
		}
	}
	m.open = nil
}
