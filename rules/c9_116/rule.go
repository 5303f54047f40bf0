// Package c9_116 checks C9-116 (§9.7.5.1.6): a valid request whose BTH
// AckReq bit is set obliges the responder to schedule a response carrying
// that request's PSN or a later one. Without AckReq it may wait as long as
// it likes, which is what makes coalescing possible.
package c9_116

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-116"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return &monitor{} }})
}

// monitor keeps the requests that carried AckReq and are not yet covered.
// A request at PSN p is covered by a later response whose PSN is p or
// later: a positive Acknowledge, a READ response packet carrying an AETH
// (its ACK implicitly covers earlier requests), an ATOMIC Acknowledge, a
// READ response Middle at a READ request's own PSN (an answer begun with
// the wrong opcode is C9-97's fault, not a missing answer), or a NAK
// naming p itself. A NAK or RNR NAK naming an earlier PSN releases
// the obligation: the requester must resend from there, and the resent
// request carries its own AckReq. A request resent later (same PSN) takes
// over the obligation of its earlier copy.
//
// A missing response can be proven only where nothing can be lost after
// the capture point and the whole connection was seen (active runs, or
// audits with --complete); elsewhere a lost ACK looks the same as a
// missing one, so an uncovered request at the end is indeterminate.
//
// One root cause, one clause: the obligation is the valid request's. A
// request the connection's reconstruction places beyond the responder's
// expected PSN, or shows was not executed (Conn.Dropped: a later
// sequence or RNR NAK named an earlier PSN), was dropped, and owes
// nothing. A duplicate (behind the expected PSN) left unanswered is
// judged by the rules for answering duplicates (C9-105, C9-107, o9-66,
// which lets a responder drop a duplicate READ it no longer holds), so
// it is undecided here. A SEND or WRITE packet longer than the path MTU
// is no valid request either: its answer is §9.7.5.1.5's matter.
type monitor struct {
	open []openReq // uncovered AckReq requests, oldest first
	// latched is set while a NAK or RNR NAK with PSN latchPSN is
	// outstanding: the responder still expects latchPSN, so requests
	// beyond it are out of sequence, not valid, until it arrives again.
	latched  bool
	latchPSN wire.PSN
	// dead is set after a NAK for invalid request, remote access or
	// remote operational error: the responder's QP is in the error state
	// and owes nothing more (§9.9.2.2, Table 58 class C errors).
	dead bool
	// lastResp is the time of the newest response seen.
	lastResp time.Duration
	haveResp bool
	// started is set once a request at or after the run's known starting
	// PSN arrived: before that, one behind it is a duplicate on a fresh
	// QP.
	started bool
}

// Kinds implements harness.KindFilter: the monitor follows requests and
// the responses that carry an AETH.
func (*monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsRequest(op) || op == wire.Acknowledge || opc.Has(op, wire.HdrAETH) || op == wire.ReadResponseMiddle
})

// isReadPSN reports whether a READ request carried PSN p.
func isReadPSN(c *harness.Conn, p wire.PSN) bool {
	op, _, _, ok := c.Req(p)
	return ok && op == wire.ReadRequest
}

// openReq is an AckReq request not yet covered.
type openReq struct {
	*trace.Record
	dup bool // behind the expected PSN when it arrived
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	if m.dead {
		return
	}
	if opc.IsRequest(p.Opcode) {
		if m.latched && p.PSN == m.latchPSN {
			m.latched = false
		}
		s := c.Settings
		beforeStart := s.StartKnown && !m.started && p.PSN.Before(s.StartPSN)
		m.started = m.started || !beforeStart
		if !p.AckReq && opc.Class(p.Opcode) != wire.ClassReadRequest && opc.Class(p.Opcode) != wire.ClassAtomic {
			return
		}
		if m.latched && p.PSN.After(m.latchPSN) {
			return // out of sequence while the NAK latch holds: not a valid request
		}
		if c.BeyondMTU(r) != "" {
			return // longer than the path MTU: not a valid request (§9.7.5.1.5 judges its answer)
		}
		class := c.Classify(p.PSN)
		if class == harness.ReqAhead {
			return // beyond the expected PSN: dropped, not a valid request
		}
		// A resend supersedes the earlier copy.
		k := 0
		for _, o := range m.open {
			if o.Packet.PSN != p.PSN {
				m.open[k] = o
				k++
			}
		}
		m.open = append(m.open[:k], openReq{r, class == harness.ReqBehind || beforeStart})
		if len(m.open) > 4096 {
			m.open = m.open[1:]
		}
		return
	}
	m.lastResp, m.haveResp = r.Time, true
	var upTo wire.PSN
	switch {
	case p.Opcode == wire.Acknowledge && p.AETH.IsACK():
		upTo = p.PSN
	case p.Opcode == wire.Acknowledge:
		// NAK or RNR NAK: a response carrying the PSN it names, so it
		// covers every request up to that PSN (the requester takes the
		// PSNs before it as acknowledged, and resends from it); it
		// releases the requests after it (resent later, each with its
		// own AckReq).
		for _, o := range m.open {
			if o.Packet.PSN.AtOrBefore(p.PSN) && o.Time <= r.Time {
				c.Checked(ID)
			}
		}
		m.open = m.open[:0]
		switch {
		case p.AETH.IsNAK(wire.NAKPSNSequence) || p.AETH.IsRNR():
			m.latched, m.latchPSN = true, p.PSN
		case p.AETH.Kind() == wire.KindNAK:
			// A fatal NAK ends the responder's QP: requests already on
			// their way get no answer.
			m.open, m.dead = nil, true
		}
		return
	case opc.Has(p.Opcode, wire.HdrAETH):
		upTo = p.PSN // READ response First/Last/Only, ATOMIC Acknowledge
	case isReadPSN(c, p.PSN):
		// A Middle (no AETH) at a READ request's own PSN: the READ's
		// answer, begun with the wrong opcode (C9-97's fault), or a
		// retried READ's PSN inside the answer still being sent. Either
		// way the responder answered (one root cause, one clause).
		upTo = p.PSN
	default:
		return // READ response Middle: no AETH
	}
	k := 0
	for _, o := range m.open {
		if o.Packet.PSN.AtOrBefore(upTo) && o.Time <= r.Time {
			c.Checked(ID)
			continue
		}
		m.open[k] = o
		k++
	}
	m.open = m.open[:k]
}

func (m *monitor) End(c *harness.Conn) {
	for _, o := range m.open {
		if c.Dropped(o.Packet.PSN) {
			c.Indeterminate(ID, fmt.Sprintf("request PSN %d (frame %d) carried AckReq but a later NAK showed the responder had not reached it: it was dropped, not executed, and owes no answer", o.Packet.PSN, o.Frame))
			continue
		}
		if o.dup {
			c.Indeterminate(ID, fmt.Sprintf("request PSN %d (frame %d) carried AckReq but was a duplicate: whether and how a duplicate is answered is judged under C9-105, C9-107 and o9-66", o.Packet.PSN, o.Frame))
			continue
		}
		if c.Complete() {
			c.Violation(ID, o.Record, fmt.Sprintf("the request at PSN %d carried AckReq and no response with PSN %d or later followed", o.Packet.PSN, o.Packet.PSN),
				[]string{fmt.Sprintf("an ACK (or READ response / ATOMIC acknowledgment) with PSN ≥ %d", o.Packet.PSN),
					"a NAK or RNR NAK for that or an earlier PSN"},
				"no such response before the end of the trace")
		} else if m.haveResp && m.lastResp > o.Time {
			// The responder went on answering after the request and
			// never covered it: only a response lost after the capture
			// point explains it, so the clause cannot pass.
			c.Unresolved(ID, fmt.Sprintf("request PSN %d (frame %d) carried AckReq and no later response covered it although the responder kept answering: only a response lost after the capture point (or a request lost before the responder) explains it; a complete capture would fail it", o.Packet.PSN, o.Frame))
		} else {
			c.Unresolved(ID, fmt.Sprintf("request PSN %d (frame %d) carried AckReq and the capture ended before any later response: the response may be lost after the capture point or still scheduled (a complete capture, --complete, would decide)", o.Packet.PSN, o.Frame))
		}
	}
}
