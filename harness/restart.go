package harness

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// This file keeps a capture's verdicts honest where QPs destroyed and made
// anew with the same numbers start again near the PSNs the old ones used.
// The pairing splits such a capture into two connections only where the
// new requests jump rebornJump or more (Auditor.reborn); nearer, a device
// that starts every QP at the same PSN (PSN 0 is common on FPGA stacks,
// with fixed QP numbers) or a random start that falls close shows the
// second run's requests as resends of the first run's, and every monitor
// judged them so: duplicates answered as new requests, an MSN gone back
// (C9-105, C9-95, C9-148, o9-66, go-back-n failed on conformant traffic).
//
// What the trace shows at such a request cannot tell the two apart: a
// requester that lost acknowledgments after the capture point resends
// PSNs the capture shows acknowledged, and a capture that missed requests
// shows a jump ahead. The responder's next MSN can: the responder of the
// same QPs never moves its MSN back (§9.7.7.1; a duplicate leaves it where
// it was), while new QPs count their messages from zero. So the findings
// raised from such a request on are held back until the next response
// with an AETH (restartStep): an MSN that kept its place or went on
// releases them as violations; an MSN that went back to no more than the
// messages sent since makes QPs made anew the explanation, and every
// finding of the connection from the request on is left undecided, with
// the reason (Conn.Unresolved), for a violation remains possible but no
// longer is the only explanation; and no instance is counted as checked
// from then on (Conn.Checked): the model that checked it took the new
// QPs' records for resends. A request that may begin new QPs is one
// that begins a message, at least minRestartGap after the connection's
// previous packet, while the responder had acknowledged every request
// before it, at a PSN other than the next: one the responder
// already acknowledged, or one past the next PSN and past every PSN
// acknowledged. Active runs make their own QPs and are not concerned.

// restartPhase is where a connection stands with a request that may have
// begun QPs made anew (restart).
type restartPhase uint8

const (
	restartNone    restartPhase = iota
	restartPending              // such a request was seen; no AETH since
	restartAnew                 // the MSN went back: QPs made anew explain the rest
)

// minRestartGap is the least silence on a connection before a request
// that may begin QPs made anew: destroying QPs, making new ones and
// telling the peer their numbers takes longer than this on any stack,
// while a requester may resend at once (a duplicate sent on purpose, an
// ACK that came too late).
const minRestartGap = 100 * time.Microsecond

// maxHeldFindings bounds the findings a pending restart holds back; past
// it the rest are left undecided at once.
const maxHeldFindings = 4096

// restart is a connection's state for a request that may have begun QPs
// made anew with the same numbers.
type restart struct {
	phase  restartPhase
	frame  int      // the request's frame
	psn    wire.PSN // its PSN
	next   wire.PSN // the next request PSN before it
	oldMSN uint32   // the responder's MSN before it
	msgs   uint32   // messages whose last packet was sent since (it included)
	// nextNew is the next PSN of the QPs made anew, if they were (unless
	// !nextKnown: after a READ of a path MTU not known, any PSN past last,
	// the latest request's, is).
	nextNew   wire.PSN
	nextKnown bool
	last      wire.PSN
	// msnFrame and msn: the response whose MSN went back (restartAnew).
	msnFrame int
	msn      uint32
	held     []heldFinding
	// ackThrough is the newest PSN a response acknowledged (an ACK, a READ
	// response or an ATOMIC acknowledgment: its PSN; a NAK: the one
	// before), valid once haveAck.
	ackThrough wire.PSN
	haveAck    bool
}

// heldFinding is a violation held back while a restart is pending.
type heldFinding struct {
	clause, message string
	r               *trace.Record
	expected        []string
	seen            string
	alts            []reports.Alternative
	recent          []*trace.Record
}

// restartStep follows r, about to be shown to the checkers, for requests
// that may begin QPs made anew and for the responses that decide it.
func (c *Conn) restartStep(r *trace.Record) {
	if c.Settings.Active {
		return
	}
	p := r.Packet
	rs := &c.rs
	op := p.Opcode
	gap := r.Time - time.Duration(c.lastRecTime)
	c.lastRecTime = int64(r.Time)
	if opc.IsRequest(op) {
		switch rs.phase {
		case restartPending:
			// New QPs send their PSNs in order from the first (a resend
			// goes back, no further than it): a request anywhere else is
			// the old QPs' (a PSN skipped, say), and decides.
			switch {
			case !rs.nextKnown && p.PSN.After(rs.last), p.PSN == rs.nextNew:
				rs.last = p.PSN
				rs.nextNew, rs.nextKnown = c.restartNext(p)
			case rs.nextKnown && p.PSN.AtOrAfter(rs.psn) && p.PSN.Before(rs.nextNew):
			default:
				c.restartRelease()
				return
			}
			if opc.EndsMessage(op) {
				rs.msgs++
			}
			return
		case restartAnew:
			return
		}
		if !rs.haveAck || !c.HaveReq || !c.HaveMSN || p.PSN == c.NextReq || gap < minRestartGap ||
			opc.Position(op) != wire.PosFirst && opc.Position(op) != wire.PosOnly {
			return
		}
		// The responder acknowledged every request before it: nothing of
		// the old QPs is outstanding as the trace shows them.
		if !c.NextReq.Add(-1).AtOrBefore(rs.ackThrough) {
			return
		}
		back := p.PSN.Before(c.NextReq) && p.PSN.AtOrBefore(rs.ackThrough)
		ahead := p.PSN.After(c.NextReq) && p.PSN.After(rs.ackThrough.Next())
		if !back && !ahead {
			return
		}
		*rs = restart{phase: restartPending, frame: r.Frame, psn: p.PSN, next: c.NextReq,
			oldMSN: c.LastMSN & 0xFFFFFF, ackThrough: rs.ackThrough, haveAck: true, last: p.PSN}
		rs.nextNew, rs.nextKnown = c.restartNext(p)
		if opc.EndsMessage(op) {
			rs.msgs = 1
		}
		return
	}
	if !opc.IsResponse(op) {
		return
	}
	k, maybe := c.maybeCopies[r]
	if maybe && k == lateByID {
		return // sent before responses already seen: it decides nothing
	}
	if rs.phase == restartPending && opc.Has(op, wire.HdrAETH) {
		msn := p.AETH.MSN & 0xFFFFFF
		if maybe && k == maybeCopy {
			// A repeat of an earlier response: the old QPs' answer to a
			// duplicate, or a copy the network made of it. Only one whose
			// MSN kept its place or went on decides (the old QPs).
			if d := (rs.oldMSN - msn) & 0xFFFFFF; d == 0 || d >= 1<<23 {
				c.restartRelease()
			}
			return
		}
		// QPs made anew: the MSN went back to no more than the messages
		// sent since, in a response to one of them (at or past the
		// request's PSN: a sequence NAK naming the old next PSN is the old
		// QPs' answer to a skipped PSN).
		if d := (rs.oldMSN - msn) & 0xFFFFFF; d != 0 && d < 1<<23 && msn <= rs.msgs &&
			p.PSN.AtOrAfter(rs.psn) && p.PSN.Diff(rs.psn) < rebornJump {
			rs.phase, rs.msnFrame, rs.msn = restartAnew, r.Frame, msn
			held := rs.held
			rs.held = nil
			for _, h := range held {
				c.Unresolved(h.clause, c.restartReason(h.r, h.message))
			}
		} else {
			c.restartRelease()
		}
	}
	if maybe && k != maybeCopy {
		return // late (IsLate, from the lookup above): it moves nothing
	}
	var through wire.PSN
	switch opc.Class(op) {
	case wire.ClassAck:
		through = p.PSN
		if !p.AETH.IsACK() {
			through = p.PSN.Add(-1)
		}
	case wire.ClassReadResponse, wire.ClassAtomicAck:
		through = p.PSN
	default:
		return
	}
	if !rs.haveAck || through.After(rs.ackThrough) {
		rs.ackThrough, rs.haveAck = through, true
	}
}

// restartRelease decides a pending restart for the old QPs: the findings
// it held are violations after all.
func (c *Conn) restartRelease() {
	rs := &c.rs
	rs.phase = restartNone
	held := rs.held
	rs.held = nil
	for _, h := range held {
		c.sink.violationIn(c, h.clause, h.r, h.message, h.expected, h.seen, h.alts, h.recent)
	}
}

// restartNext is the PSN that follows request p among the PSNs of QPs made
// anew, and whether it is known (a READ's length in PSNs needs the path
// MTU).
func (c *Conn) restartNext(p *wire.Packet) (wire.PSN, bool) {
	if p.Opcode != wire.ReadRequest {
		return p.PSN.Next(), true
	}
	if mtu := c.MTU(); mtu != 0 {
		return p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu)), true
	}
	return p.PSN, false
}

// restartHold takes the violation a monitor raised, shown among recent,
// where a restart is pending (held back) or has shown QPs made anew (left
// undecided); false when neither is so.
func (c *Conn) restartHold(clause string, r *trace.Record, message string, expected []string, seen string, alts []reports.Alternative, recent []*trace.Record) bool {
	if j := c.judged; j != nil && j.r.Frame < c.rs.frame {
		// Judged on records the old QPs sent before the request: QPs
		// made anew since explain none of them.
		return false
	}
	switch c.rs.phase {
	case restartPending:
		if len(c.rs.held) >= maxHeldFindings {
			c.Unresolved(clause, fmt.Sprintf("frame %d: request PSN %d began a message at a PSN other than the next one (%d) after the responder had acknowledged every request, and more than %d findings followed before a response told resent requests from QPs made anew with the same numbers: %s",
				c.rs.frame, c.rs.psn, c.rs.next, maxHeldFindings, message))
			return true
		}
		c.rs.held = append(c.rs.held, heldFinding{clause: clause, message: message, r: r, expected: expected, seen: seen, alts: alts,
			recent: append([]*trace.Record(nil), recent...)})
		return true
	case restartAnew:
		c.Unresolved(clause, c.restartReason(r, message))
		return true
	}
	return false
}

// restartReason explains a finding left undecided because QPs made anew
// explain the trace (restartAnew).
func (c *Conn) restartReason(r *trace.Record, message string) string {
	at := ""
	if r != nil {
		at = fmt.Sprintf("frame %d: ", r.Frame)
	}
	return fmt.Sprintf("%s%s; but at frame %d the requester began a message at PSN %d, not at the next PSN %d, after the responder had acknowledged every request, and the responder's next MSN (frame %d) went back from %d to %d, no more than the messages sent since: QPs destroyed and made anew with the same numbers, starting near the old PSNs, explain the trace (the audit splits them only %d PSNs or more apart)",
		at, message, c.rs.frame, c.rs.psn, c.rs.next, c.rs.msnFrame, c.rs.oldMSN, c.rs.msn, rebornJump)
}

// restartEnd leaves the findings a restart still holds at the end
// undecided: no response told.
func (c *Conn) restartEnd() {
	if c.rs.phase != restartPending {
		return
	}
	held := c.rs.held
	c.rs.held, c.rs.phase = nil, restartNone
	for _, h := range held {
		at := ""
		if h.r != nil {
			at = fmt.Sprintf("frame %d: ", h.r.Frame)
		}
		c.Unresolved(h.clause, fmt.Sprintf("%s%s; but at frame %d the requester began a message at PSN %d, not at the next PSN %d, after the responder had acknowledged every request, and no response with an MSN followed to tell a resend (the MSN keeps its place) from QPs made anew with the same numbers (it starts again)",
			at, h.message, c.rs.frame, c.rs.psn, c.rs.next))
	}
}
