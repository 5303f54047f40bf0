// Package c9_95 checks C9-95 (§9.7.5.1.1): an acknowledgment of SEND and
// RDMA WRITE requests carries in its BTH the PSN of the newest new request
// it covers; ACKs may be coalesced, so their PSNs need not be consecutive.
package c9_95

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-95"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := receive.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor checks every positive Acknowledge:
//   - its PSN names a request already sent: an ACK for a PSN no request
//     has used yet covers nothing that could have completed;
//   - ACK PSNs never go backwards (a later ACK covers at least as much:
//     duplicates are answered with the newest completed PSN, C9-105);
//   - it is not inside the reserved range of a READ whose responses are
//     not complete (an ACK there would name a READ response PSN).
//
// Capture caveat: a request the capture missed (capture loss, a capture
// that began mid-connection, or a capture that records the two directions
// out of order) is not evidence of anything, so an ACK for a PSN beyond
// every request seen is a violation only in a complete trace (active runs,
// or an audit told --complete). Elsewhere it is held until a request that
// may carry its PSN: one recorded within the reordering the capture shows
// elsewhere (harness.MayBeReordered) explains it, as does the capture's
// end within that reordering where the ACK's MSN counts messages beyond
// the requests shown (the responder says it completed them); otherwise
// only requests nothing in the capture shows explain it, and the
// instance is open (the clause cannot pass).
//
// An ACK behind an earlier one is judged where it was sent after it: the
// responder's IPv4 IDs count up, or an ACK with a lower MSN named a PSN
// past it (the count an ACK carries never goes back); and where its MSN
// is no lower than the earlier one's though a message ends between their
// PSNs (its count is too high for its PSN, whenever it was sent).
// Otherwise (the packets of one message acknowledged one by one) it may
// have been sent first and delayed by the network or the capture, and
// the instance is open.
//
// One root cause, one clause: an ACK that goes back to the PSN of a
// duplicate request received since answers that duplicate, and how a
// duplicate SEND or WRITE is answered (with the newest completed PSN) is
// C9-105's rule; such an ACK is left undecided here. On a capture, where
// it was sent after the ACK it goes behind, either that ACK named
// requests not completed (C9-95; the request was new) or the duplicate
// was answered behind the newest completed PSN (C9-105): one finding
// names both. Also left undecided, before any ACK, is one that names the
// PSN just past every request seen: on a fresh QP whose first expected
// PSN is that one, the requests were duplicates and the ACK acknowledges
// nothing (an active run knows the QP's start and decides; a capture
// does not show it). A trace showing the QP from its creation counts its
// messages from 0, and such a QP completed none: where a response by then
// carried a count, the ACK is that clause's fault or the count C9-148's,
// one finding naming both (on a complete trace; elsewhere the capture may
// have dropped the request the ACK names, and the instance is open).
type monitor struct {
	acked bool // a positive ACK was seen
	// dups holds the PSNs of duplicate SENDs and WRITEs (behind the
	// responder's expected PSN, or at or before an ACKed PSN) not yet
	// answered.
	dups []wire.PSN
	// dupSinceAck: a duplicate was noted since the latest positive ACK
	// (the receive model takes it as one too, and C9-105 judges the ACK
	// after it); resent: a SEND or WRITE was sent again since then,
	// which the responder may have taken as a duplicate.
	dupSinceAck, resent bool
	// t is the responder's answers as the shared receive model reads
	// them (when the responder had a READ owed, how long it takes to
	// answer one); feeder: this monitor feeds it (receive.Join).
	t      *receive.Tracker
	feeder bool
}

// countClash reports ACK e, whose count leaves no room for the messages
// other than READs that end between its PSN and that of response later
// (harness.Conn.CountClash): e's count covered the message at PSN end, so
// e was sent after it completed and names a PSN behind it; or one of the
// counts is wrong (for example, the answer to a duplicate naming the PSN
// before it, then an ACK or an ATOMIC acknowledgment counting too few
// past it). Each count is its PSN's whenever its response was sent, so no
// order of the packets explains the clash: a response that may have been
// delayed or copied is judged all the same.
func countClash(c *harness.Conn, e, later *trace.Record, end wire.PSN) {
	ep, lp := e.Packet, later.Packet
	first := fmt.Sprintf("the MSNs are right and the ACK of frame %d acknowledges new requests: it names PSN %d, behind PSN %d the responder had completed", e.Frame, ep.PSN, end)
	if lp.Opcode == wire.Acknowledge {
		first += fmt.Sprintf(", or the ACK of frame %d names PSN %d, past those the responder had completed", later.Frame, lp.PSN)
	}
	alts := []reports.Alternative{{ID: ID, If: first}}
	if c.ReqSends(end) > 1 {
		alts = append(alts, reports.Alternative{ID: "C9-105", If: fmt.Sprintf("the MSNs are right and the ACK of frame %d answers a request sent again as a duplicate: its PSN %d is behind PSN %d, the newest the responder had completed", e.Frame, ep.PSN, end)})
	}
	alts = append(alts, reports.Alternative{ID: "C9-148", If: fmt.Sprintf("PSN %d is right: one of the two counts is wrong (the %s of frame %d counts too few for PSN %d, or the ACK of frame %d too many)", ep.PSN, lp.Opcode.ShortName(), later.Frame, lp.PSN, e.Frame)})
	c.ViolationEitherInAnyOrder(e, fmt.Sprintf("ACK PSN %d carries MSN %d, while the %s of frame %d carries MSN %d for PSN %d, which leaves no room for the messages the trace shows ending between them: this ACK's count held the message ending at PSN %d, completed when it was sent",
		ep.PSN, ep.AETH.MSN&0xFFFFFF, lp.Opcode.ShortName(), later.Frame, lp.AETH.MSN&0xFFFFFF, lp.PSN, end),
		[]string{fmt.Sprintf("an ACK PSN of at least %d, the newest request its MSN counts as completed", end)}, fmt.Sprintf("ACK PSN %d", ep.PSN), alts...)
}

// maxDups bounds the duplicates remembered.
const maxDups = 64

// noteDup remembers request PSN p when it is a duplicate.
func (m *monitor) noteDup(c *harness.Conn, p wire.PSN) {
	if c.SentBefore(p) {
		m.resent = true
	}
	if c.Classify(p) != harness.ReqBehind && !(c.HaveAck && p.AtOrBefore(c.LastAckPSN)) {
		return
	}
	m.dupSinceAck = true
	if len(m.dups) == maxDups {
		m.dups = m.dups[1:]
	}
	m.dups = append(m.dups, p)
}

// answersDup reports, and forgets, a duplicate request with PSN p.
func (m *monitor) answersDup(p wire.PSN) bool {
	for i, d := range m.dups {
		if d == p {
			m.dups = append(m.dups[:i], m.dups[i+1:]...)
			return true
		}
	}
	return false
}

// wentBack reports positive ACK r, sent after a response (what: an
// ACK or an ATOMIC Acknowledge) naming PSN last (past its own), as a
// violation.
func wentBack(c *harness.Conn, r *trace.Record, what string, last wire.PSN) {
	p := r.Packet.PSN
	c.Violation(ID, r, fmt.Sprintf("ACK PSN %d goes back behind the earlier %s PSN %d", p, what, last),
		[]string{fmt.Sprintf("an ACK PSN at or after %d (an ACK covers everything before its PSN)", last)},
		fmt.Sprintf("ACK PSN %d", p))
}

// Kinds implements harness.KindFilter: the monitor judges Acknowledges,
// follows requests, and pairs counts with ATOMIC Acknowledges and the
// READ responses that end an answer.
// The feeder of the shared receive model sees every record.
func (m *monitor) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return opcodes
}

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsRequest(op) || op == wire.Acknowledge || op == wire.AtomicAcknowledge ||
		opc.Class(op) == wire.ClassReadResponse && opc.EndsMessage(op) // their counts (countClash)
})

// inRead holds ack, which may lie inside the range of the READ at PSN
// first asking for length bytes, whose answer had not ended, the path
// MTU not known: the READ's last PSN, once its answer or the MTU shows
// it, decides it (open if the trace never shows it).
func inRead(ack *trace.Record, first wire.PSN, length uint32) harness.Decide {
	return func(c *harness.Conn, next *trace.Record) bool {
		s := c.ReadSpanOf(first, length)
		a := ack.Packet.PSN
		switch {
		case s != nil && s.Known() && a.Before(s.LastMin):
			c.Violation(ID, ack, fmt.Sprintf("ACK PSN %d lies inside the PSN range %d..%d reserved by the RDMA READ at PSN %d, whose responses were not complete (the READ's answer later showed its last PSN)", a, first, s.LastMin, first),
				[]string{"the PSN of a SEND or RDMA WRITE request, or the newest completed request's PSN"},
				fmt.Sprintf("ACK PSN %d", a))
		case s != nil && s.Known():
			if o := c.ReadSpanAt(a); o != nil && o.First != first && a.After(o.First) && !(o.Known() && !a.Before(o.LastMin)) {
				// Past this READ's range, but inside another READ's
				// (two READs outstanding, the path MTU unknown):
				// that one decides.
				first, length = o.First, o.Length
				return false
			}
			_, _, _, ok := c.Req(a)
			switch {
			case ok:
				c.Checked(ID)
			case !a.Before(c.NextReq):
				// Past the READ's range now known, and past every
				// request the trace has shown: an ACK ahead of
				// them.
				aheadOf(c, ack, next == nil)
			case c.Complete():
				c.Checked(ID)
			default:
				c.Indeterminate(ID, "ACK PSN names a request the capture did not show")
			}
		case s == nil || next == nil:
			c.Unresolved(ID, fmt.Sprintf("frame %d: ACK PSN %d may lie inside the range of the READ at PSN %d, whose response had not ended (a violation), or past its end: the path MTU, which fixes how many packets the READ's answer takes, is not known and the trace never showed the READ's last PSN (--mtu decides it)", ack.Frame, a, first))
		default:
			return false
		}
		return true
	}
}

// aheadOf judges ack, which names a PSN beyond every request the trace
// has shown: a violation on a complete trace, held (ahead) on others
// (decided at once at the trace's end).
func aheadOf(c *harness.Conn, ack *trace.Record, end bool) {
	switch {
	case c.Complete():
		c.Violation(ID, ack, fmt.Sprintf("ACK PSN %d is beyond every request sent so far (newest %d)", ack.Packet.PSN, c.NextReq.Add(-1)),
			[]string{fmt.Sprintf("the PSN of the newest request covered, at most %d", c.NextReq.Add(-1))},
			fmt.Sprintf("ACK PSN %d", ack.Packet.PSN))
	case end:
		ahead(c, ack)(c, nil)
	default:
		c.Await(ahead(c, ack))
	}
}

// freshAhead judges the first ACK, naming the PSN just past every
// request, on a trace showing the QP from its creation, where a
// response (this ACK or one before it) carried the count msn, not 0.
// Were the QP's first expected PSN the one after the ACK's, every
// request was a duplicate and nothing completed, so that count is
// wrong (C9-148); otherwise the requests were new and the ACK names a
// PSN past them (C9-95, decided where the trace is complete, open
// where the capture may have missed the request it names).
func freshAhead(c *harness.Conn, r *trace.Record, msn uint32) {
	a := r.Packet.PSN
	if !c.Complete() {
		aheadOf(c, r, false)
		return
	}
	c.ViolationEither(r, fmt.Sprintf("ACK PSN %d is beyond every request sent so far (newest %d), and a response by then carried MSN %d, though a QP taking only duplicates completes nothing", a, c.NextReq.Add(-1), msn),
		[]string{fmt.Sprintf("the PSN of the newest request covered, at most %d", c.NextReq.Add(-1))},
		fmt.Sprintf("ACK PSN %d", a),
		reports.Alternative{ID: ID, If: fmt.Sprintf("the requests were new: the ACK names PSN %d, past every request sent", a)},
		reports.Alternative{ID: "C9-148", If: fmt.Sprintf("the QP's first expected PSN was %d: every request was a duplicate, and MSN %d counts messages none of them completed", a.Next(), msn)})
}

// ahead holds ack, which names a PSN beyond every request the capture
// has shown, until a request that may carry its PSN, or the end.
//
// Without --complete a capture may miss requests or show packets out of
// the order they crossed the wire (capture order is not processing
// order). A request recorded after the ACK within the reordering the
// capture itself shows (harness.MayBeReordered) explains it; further
// behind, the ACK is legal only if the capture dropped the request, or
// began while the requester resent requests executed before it: nothing
// the capture shows, so the instance stays open.
func ahead(c *harness.Conn, ack *trace.Record) harness.Decide {
	// reqAfter: a request that does not reach the ACK's PSN was recorded
	// after it (the capture went on showing the requester).
	reqAfter := false
	a := ack.Packet.PSN
	counts := c.CountsPastShown(ack)
	// read: a READ behind a, recorded within the reordering, whose span
	// may reach a while its last PSN is not known; direct: a request at
	// or past a recorded meanwhile (reorder: within the reordering).
	var read, direct *trace.Record
	reorder := false
	// decide judges the ACK by a request that reaches its PSN.
	decide := func(c *harness.Conn, within bool) {
		if within {
			c.Indeterminate(ID, "an ACK named a PSN the capture had not yet shown a request for, and a request came within the reordering between packets the capture shows elsewhere: capture reordering explains it; --complete decides it")
			return
		}
		c.Unresolved(ID, "an ACK named a PSN the capture had not yet shown a request for: legal only if the capture dropped that request or began during a resend of requests already executed (the request came later than the reordering the capture shows elsewhere explains); --complete decides it")
	}
	return func(c *harness.Conn, next *trace.Record) bool {
		if read != nil {
			// Its span, once known, tells (for example, a READ recorded
			// just after an ACK far ahead, which reaches it only at the
			// smallest path MTU, its answer later showing a larger one).
			s := c.ReadSpanOf(read.Packet.PSN, read.Packet.RETH.Length)
			switch {
			case s != nil && s.Known() && s.LastMin.Before(a):
				read, reqAfter = nil, true
				if direct != nil {
					decide(c, reorder)
					return true
				}
			case s != nil && s.Known() || next == nil:
				decide(c, true)
				return true
			default:
				if direct == nil && next != nil && opc.IsRequest(next.Packet.Opcode) && next.Packet.PSN.AtOrAfter(a) {
					direct, reorder = next, harness.MayBeReordered(ack, next)
				}
				return false
			}
		}
		if next != nil {
			switch {
			case !opc.IsRequest(next.Packet.Opcode):
				return false
			case !reaches(c, next.Packet, a):
				reqAfter = true
				return false
			case next.Packet.Opcode == wire.ReadRequest && next.Packet.PSN.Before(a) && harness.MayBeReordered(ack, next):
				if s := c.ReadSpanOf(next.Packet.PSN, next.Packet.RETH.Length); s == nil || !s.Known() {
					read = next
					return false
				}
				decide(c, true)
			default:
				decide(c, harness.MayBeReordered(ack, next))
			}
			return true
		}
		switch {
		case c.SeesEveryRequest() && !a.Before(c.NextReq):
			// The trace is the responder's complete view and never shows a
			// request with that PSN: no request the responder received used it.
			c.Violation(ID, ack, fmt.Sprintf("ACK PSN %d names no request: the trace holds every request the responder received and none used that PSN (newest %d)", a, c.NextReq.Add(-1)),
				[]string{fmt.Sprintf("the PSN of the newest request covered, at most %d", c.NextReq.Add(-1))},
				fmt.Sprintf("ACK PSN %d", a))
		case c.FromStart() && !c.MissedRequests() && !a.Before(c.NextReq):
			// The capture shows the connection from its start and no sign of
			// missed requests, but it may have dropped the requests up to
			// that PSN (a capture need not report its drops): the ACK is
			// right if it did, wrong if not.
			c.Unresolved(ID, fmt.Sprintf("ACK PSN %d names no request the capture showed (newest %d), although the capture shows the connection from its start: only requests the capture dropped explain it (--complete decides it)", a, c.NextReq.Add(-1)))
		case !reqAfter && counts && c.EndsWithinReorder(ack):
			c.Indeterminate(ID, "an ACK named a PSN beyond every request the capture showed, its MSN counting messages beyond them, and the capture shows no request of the connection after it, and nothing of it beyond the reordering it shows elsewhere: requests recorded after the ACK, past the capture's end, explain it")
		default:
			// A violation unless the capture missed the requests up to that
			// PSN or began while the requester resent requests executed
			// before it: nothing the capture shows, so open.
			c.Unresolved(ID, fmt.Sprintf("an ACK named PSN %d, beyond every request the capture showed by its end (newest %d): legal only if the capture missed the requests up to it or began during a resend of requests already executed (--complete decides it)", a, c.NextReq.Add(-1)))
		}
		return true
	}
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	if m.feeder {
		m.t.Observe(c, r)
		if opcodes&(1<<harness.KindOf(p)) == 0 {
			return
		}
	}
	if opc.IsRequest(p.Opcode) {
		if cl := opc.Class(p.Opcode); cl == wire.ClassSend || cl == wire.ClassWrite {
			m.noteDup(c, p.PSN) // C9-105 judges how these are answered
		}
		return
	}
	if e, later, end := c.CountClash(r); e != nil && !c.Complete() && !c.FromStart() {
		// (Where the trace shows the count from the QP's creation,
		// C9-148 judges each MSN against it, and tells which is wrong.)
		countClash(c, e, later, end)
		if e == r {
			return // one root cause, one finding
		}
	}
	if p.Opcode != wire.Acknowledge || !p.AETH.IsACK() {
		return
	}
	if !c.HaveReq {
		c.Indeterminate(ID, "ACKs seen before any request: the capture began mid-connection")
		return
	}
	first := !m.acked
	m.acked = true
	dupSinceAck, resent := m.dupSinceAck, m.resent || len(m.dups) > 0
	m.dupSinceAck, m.resent = false, false
	// Where the path MTU is not known, NextReq counts a READ as one
	// PSN: its range is judged first.
	if s := c.ReadSpanAt(p.PSN); s != nil && c.MTU() == 0 && !s.Known() && !s.Closed && p.PSN.AtOrAfter(s.LastMin) && p.PSN.Before(s.LastMax) {
		// Inside the READ's range unless the READ asks for fewer
		// packets than the smallest path MTU gives: its last PSN decides.
		c.Await(inRead(r, s.First, s.Length))
		return
	}
	if s := c.OpenReadBefore(p.PSN); s != nil {
		c.Violation(ID, r, fmt.Sprintf("ACK PSN %d lies inside the PSN range %d..%d at least that the RDMA READ of frame %d reserved (its length asks for that many response packets even at the largest path MTU), whose responses are not complete", p.PSN, s.First, s.LastMin, s.Frame),
			[]string{"the PSN of a SEND or RDMA WRITE request, or the newest completed request's PSN"},
			fmt.Sprintf("ACK PSN %d", p.PSN))
		return
	}
	if !p.PSN.Before(c.NextReq) {
		s := c.Settings
		if s.StartKnown && p.PSN == s.StartPSN.Add(-1) && c.NextReq.AtOrBefore(s.StartPSN) {
			// The PSN before the QP's first expected one, while no new
			// request has been taken: an ACK that covers nothing (the
			// answer to a duplicate on a fresh QP, judged under C9-105).
			return
		}
		if !s.StartKnown && first && p.PSN == c.NextReq {
			if msn, ok := c.NewestMSN(); ok && msn != 0 && c.FromStart() {
				// The trace shows the QP from its creation, whose count
				// starts at 0: a fresh QP that took every request as a
				// duplicate completed nothing, yet a response counted
				// messages. Either the requests were new and the PSN is
				// past them, or the count is wrong.
				freshAhead(c, r, msn)
				return
			}
			c.Indeterminate(ID, fmt.Sprintf("the first ACK names PSN %d, just past every request seen: on a fresh QP expecting that PSN first, those requests were duplicates and the ACK covers nothing; the trace does not show the QP's first PSN", p.PSN))
			return
		}
		aheadOf(c, r, false)
		return
	}
	if p.PSN.Before(c.FirstReq) && !(c.HaveAck && p.PSN.Before(c.LastAckPSN)) && c.ReadInterior(p.PSN) == nil {
		// (Behind an earlier ACK it goes back, whatever it covers: below.
		// Inside the range of a READ the trace shows, resent from before
		// the capture's first request, no request has the PSN: below
		// too.)
		c.Indeterminate(ID, "ACK for a PSN before the first request the capture shows")
		return
	}
	// behind says why an ACK behind the latest one may be late: then
	// only what makes it illegal whenever it was sent is judged.
	behind := ""
	// last: the PSN of an earlier ACK this one goes behind, the newest
	// one dated before it by MSN, else the latest one.
	last, byMSN := c.AckDatedPast(r)
	byOrder := c.Settings.Active || c.Settings.Complete || c.DatedByID(r)
	behindLatest := c.HaveAck && p.PSN.Before(c.LastAckPSN)
	if behindLatest && (byOrder || !byMSN) {
		last = c.LastAckPSN
	}
	// what names the earlier response, lastMSN its MSN: where no ACK is
	// past this one, an ATOMIC acknowledgment may be (Conn.LastAnswer):
	// it showed its ATOMIC completed, and an ACK after it names that PSN
	// or a later one (so an ACK going back behind an ATOMIC
	// acknowledgment does not pass).
	what, lastMSN := "ACK", c.LastAckMSN
	if a := c.LastAnswer(); a != nil && !behindLatest && !byMSN && p.PSN.Before(a.Packet.PSN) {
		behindLatest, last, lastMSN = true, a.Packet.PSN, a.Packet.AETH.MSN&0xFFFFFF
		what = "ATOMIC Acknowledge"
	}
	// Nor behind a NAK where the request just before the PSN it names
	// ends a SEND or WRITE, or is an ATOMIC: the responder had completed
	// it (a NAK names the first request it had not executed: a sequence
	// NAK its expected PSN, an RNR or other NAK the request it refused),
	// so an ACK after the NAK names that request's PSN or a later one.
	// (Not where it is a READ, whose answer may still have been going
	// out: an ACK may then name the PSN before the READ, C9-101; nor in
	// the middle of a message, which is not complete.)
	if n := c.LastNAK; n != nil && !behindLatest && !byMSN && p.PSN.Before(n.Packet.PSN.Add(-1)) {
		if op, _, _, ok := c.Req(n.Packet.PSN.Add(-1)); ok && op != wire.ReadRequest && opc.EndsMessage(op) {
			behindLatest, last, lastMSN = true, n.Packet.PSN.Add(-1), n.Packet.AETH.MSN&0xFFFFFF
			what = fmt.Sprintf("NAK of frame %d, naming PSN %d, acknowledging", n.Frame, n.Packet.PSN)
		}
	}
	if behindLatest || byMSN {
		// Dated after the response it goes behind by its IPv4 ID, or by
		// its count: whenever it was sent, it carries a count no lower
		// than that response's though a message ends between their
		// PSNs, and an ACK's count is that of the messages up to the
		// request it names.
		dated := byMSN || byOrder || !harness.MSNAfter(lastMSN, p.AETH.MSN&0xFFFFFF) && c.EndsMessageIn(p.PSN, last)
		if m.answersDup(p.PSN) {
			// (Behind an ATOMIC acknowledgment, which shows its ATOMIC
			// completed, only the duplicate's answer can be wrong:
			// C9-105's alone.)
			judge := func(c *harness.Conn, sentAfter bool) {
				if !sentAfter {
					c.Indeterminate(ID, fmt.Sprintf("ACK PSN %d goes back behind the earlier %s PSN %d to answer the duplicate request with that PSN: how a duplicate is answered is judged under C9-105", p.PSN, what, last))
					return
				}
				// Sent after the earlier ACK: either that ACK named
				// requests the responder had not completed (then the
				// request here was new, and the earlier ACK is at
				// fault), or the request was a duplicate, answered with
				// a PSN behind the newest completed one (C9-105).
				c.ViolationEither(r, fmt.Sprintf("ACK PSN %d answers the request with that PSN, received after the %s with PSN %d, and was sent after it", p.PSN, what, last),
					[]string{fmt.Sprintf("an ACK PSN at or after %d", last)}, fmt.Sprintf("ACK PSN %d", p.PSN),
					reports.Alternative{ID: ID, If: fmt.Sprintf("the %s naming PSN %d named requests the responder had not completed (the request here was new)", what, last)},
					reports.Alternative{ID: "C9-105", If: fmt.Sprintf("the request was a duplicate, whose answer carries the newest completed PSN, at least %d", last)})
			}
			judged := what == "ACK" && !c.Settings.Active && !c.Settings.Complete
			if judged && !dated && c.LastAck != nil && c.LastAckPSN == last && c.MayBeDatedByID(r) {
				// Too few of the responder's packets have shown yet
				// whether its IDs count up: the later ones tell which
				// of the two ACKs it sent first.
				earlier := c.LastAck
				c.AwaitDated(r, func(c *harness.Conn) {
					before, known := c.SentBeforeByID(earlier, r)
					judge(c, known && before)
				})
				return
			}
			judge(c, judged && dated)
			return
		}
		if dated {
			wentBack(c, r, what, last)
			return
		}
		// No IPv4 Identification dates the two ACKs (yet) and their
		// MSNs do not either: this one may have been sent first (no
		// message ended between them, as in a multi-packet message
		// acknowledged packet by packet) and delayed by the network or
		// the capture.
		behind = fmt.Sprintf("frame %d: ACK PSN %d goes back behind the earlier %s PSN %d, and neither an IPv4 Identification nor a lower MSN on a response past it shows it was sent after: a violation unless it was sent first and delayed by the network or the capture", r.Frame, p.PSN, what, last)
	}
	if rd := c.ReadCovering(p.PSN); rd != nil && p.PSN != rd.LastMin {
		c.Violation(ID, r, fmt.Sprintf("ACK PSN %d lies inside the PSN range %d..%d reserved by the RDMA READ of frame %d, whose responses are not complete", p.PSN, rd.First, rd.LastMin, rd.Frame),
			[]string{"the PSN of a SEND or RDMA WRITE request, or the newest completed request's PSN"},
			fmt.Sprintf("ACK PSN %d", p.PSN))
		return
	}
	if s := c.ReadInteriorUnended(p.PSN); s != nil {
		// The READ's answer, or the path MTU shown since the READ,
		// showed its range: no completion has a PSN inside it (a READ
		// asking for the rest of the answer from there ends where the
		// READ does).
		c.Violation(ID, r, fmt.Sprintf("ACK PSN %d lies inside the PSN range %d..%d of the RDMA READ of frame %d, which no completion has", p.PSN, s.First, s.LastMin, s.Frame),
			[]string{"the PSN of a SEND or RDMA WRITE request, or the newest completed request's PSN"},
			fmt.Sprintf("ACK PSN %d", p.PSN))
		return
	}
	if s := c.ReadFirstNumbered(p.PSN); s != nil {
		c.Violation(ID, r, fmt.Sprintf("ACK PSN %d is the first PSN of the RDMA READ of frame %d, whose answer takes PSNs %d..%d: the READ completes at its last PSN, and no completion has its first", p.PSN, s.Frame, s.First, s.LastMin),
			[]string{"the PSN of a SEND or RDMA WRITE request, or the newest completed request's PSN"},
			fmt.Sprintf("ACK PSN %d", p.PSN))
		return
	}
	if behind != "" {
		c.AwaitDated(r, func(c *harness.Conn) {
			if c.DatedByID(r) {
				wentBack(c, r, what, last)
				return
			}
			c.Unresolved(ID, behind)
		})
		return
	}
	k, ok := c.CompletedByMSN(r)
	if ok && p.PSN.Before(k.Done) && !dupSinceAck && !c.Settings.Active {
		// Its own MSN counts the message of a request past its PSN:
		// the responder had completed that request, and an ACK names
		// the newest new request it covers; or the MSN is wrong. An ACK
		// answering a duplicate names the newest completed PSN too
		// (C9-105): after a request sent again, which the responder may
		// have taken as a duplicate, the finding names that clause as
		// well. (After a duplicate the trace proves, C9-105 judges the
		// ACK. On a complete trace, which shows every duplicate, a
		// request sent again was new, and C9-105 is not named. There too
		// an ACK may name a PSN behind requests the capture shows before
		// it, sent before they reached the responder, and its MSN may be
		// the count of a later moment: each field has its excuse alone,
		// not both together. Not in an active run: there the harness
		// knows when each request reached the device, which leaves the
		// ACK's PSN no such excuse, and each clause judges its field.)
		done := k.Done
		alts := []reports.Alternative{{ID: ID, If: fmt.Sprintf("the MSNs are right and the ACK acknowledges new requests: it names PSN %d, behind PSN %d the responder had completed", p.PSN, done)}}
		if resent && !c.Complete() {
			alts = append(alts, reports.Alternative{ID: "C9-105", If: fmt.Sprintf("the MSNs are right and the ACK answers a request sent again as a duplicate: its PSN %d is behind PSN %d, the newest the responder had completed", p.PSN, done)})
		}
		alts = append(alts, reports.Alternative{ID: "C9-148", If: fmt.Sprintf("PSN %d is right: this ACK's MSN counts more messages than the requests up to it end, or the earlier ACK's counted too few", p.PSN)})
		msg := fmt.Sprintf("ACK PSN %d, while its MSN %d counts messages past the response with PSN %d (MSN %d) up to PSN %d at least", p.PSN, p.AETH.MSN&0xFFFFFF, k.From, k.FromMSN, done)
		restingOnCount(c, r, k.FromRec, msg, func(c *harness.Conn) {
			c.ViolationEither(r, msg, []string{fmt.Sprintf("an ACK PSN of at least %d, the newest request its MSN counts as completed", done)}, fmt.Sprintf("ACK PSN %d", p.PSN), alts...)
		})
		return
	}
	if n, from, fromMSN := k.Past, k.PastFrom, k.PastFromMSN; n > 0 && !dupSinceAck && !c.Complete() {
		// Its own MSN counts more messages than every PSN up to it may
		// end: it counts messages past its PSN, which the capture may
		// not show (for example, an ACK below the count of an ACK
		// before it, whose count the later ACKs bear out).
		alts := []reports.Alternative{{ID: ID, If: fmt.Sprintf("the MSNs are right and the ACK acknowledges new requests: it names PSN %d, behind requests the responder had completed", p.PSN)}}
		if resent {
			alts = append(alts, reports.Alternative{ID: "C9-105", If: fmt.Sprintf("the MSNs are right and the ACK answers a request sent again as a duplicate: its PSN %d is behind the newest the responder had completed", p.PSN)})
		}
		alts = append(alts, reports.Alternative{ID: "C9-148", If: fmt.Sprintf("PSN %d is right: this ACK's MSN counts more messages than the requests up to it end, or the earlier response's counted too few", p.PSN)})
		msg := fmt.Sprintf("ACK PSN %d, while its MSN %d counts %d message(s) more than every PSN from the response with PSN %d (MSN %d) up to it may end", p.PSN, p.AETH.MSN&0xFFFFFF, n, from, fromMSN)
		restingOnCount(c, r, k.PastFromRec, msg, func(c *harness.Conn) {
			c.ViolationEither(r, msg, []string{fmt.Sprintf("an MSN of at most %d for PSN %d, or the PSN of the newest request the MSN counts", (p.AETH.MSN-uint32(n))&0xFFFFFF, p.PSN)}, fmt.Sprintf("ACK PSN %d", p.PSN), alts...)
		})
		return
	}
	if _, _, _, ok := c.Req(p.PSN); !ok && c.ReadCovering(p.PSN) == nil {
		if !c.Complete() {
			c.Indeterminate(ID, "ACK PSN names a request the capture did not show")
			return
		}
	}
	if m.unprompted(c, r) {
		return
	}
	if k.Past == 0 && k.Beyond > 0 && !dupSinceAck && !c.Complete() && !c.Settings.Active && readUnanswered(c, p.PSN.Next()) {
		m.readCounted(c, r, resent)
		return
	}
	c.Checked(ID)
}

// readUnanswered reports whether a new READ the trace shows begins at PSN
// q, whose answer the trace has not shown end.
func readUnanswered(c *harness.Conn, q wire.PSN) bool {
	op, _, _, ok := c.Req(q)
	return ok && op == wire.ReadRequest && c.ReadUnendedAt(q) != nil
}

// readCounted judges ACK r, whose MSN counts one message past every PSN
// up to its own that may end one: the new READ right after its PSN,
// counted as the responder validated it (Conn.CompletedByMSN allows
// that), its answer not yet sent. The responder executes in PSN order,
// so that answer comes after r and before any response completing a PSN
// past the READ (Conn.AwaitReadOwed). A response past the READ with
// none of its answer since r shows the answer went out before r, so that
// r names a PSN behind the READ the responder had completed (this
// clause; C9-105 where r may answer a request sent again), or never,
// and that response passed the READ unanswered (C9-101): one finding
// names them, where the responder's IPv4 IDs show the capture missed
// none of its packets in between (open otherwise). The answer coming
// after r settles nothing alone: the responder had the READ since its
// first copy captured before r (receive.Tracker.ReadOwed) unless that
// copy was lost, and where r came longer after it than the capture shows
// the responder taking to begin any other answer (Overdue), the ACK is
// legal only if something unseen happened: open at the trace's end.
func (m *monitor) readCounted(c *harness.Conn, r *trace.Record, resent bool) {
	p := r.Packet
	read, seq := p.PSN.Next(), c.Seq()
	// What the verdict at the trace's end needs of the ACK.
	frame, at, psn := r.Frame, r.Time, p.PSN
	owed, timed := m.t.ReadOwed(read, r.Frame, true)
	c.AwaitReadOwed(read, harness.ReadOwed{
		Answered: func(c *harness.Conn) bool {
			if !timed {
				c.Checked(ID)
			}
			return !timed
		},
		Ended: func(c *harness.Conn) {
			if why, overdue := m.t.Overdue(owed, read, at); timed && overdue {
				c.Unresolved(ID, fmt.Sprintf("frame %d: ACK PSN %d carries an MSN that counts the RDMA READ at PSN %d after it, legal only while the READ's answer was still to come: %s", frame, psn, read, why))
				return
			}
			c.Checked(ID)
		},
		Passed: func(c *harness.Conn, next *trace.Record) {
			np := next.Packet
			alts := []reports.Alternative{{ID: ID, If: fmt.Sprintf("the READ's answer went out before this ACK: it names PSN %d, behind the READ the responder had completed", p.PSN)}}
			if resent {
				alts = append(alts, reports.Alternative{ID: "C9-105", If: fmt.Sprintf("the READ's answer went out before this ACK, which answers a request sent again as a duplicate: its PSN %d is behind the READ, the newest the responder had completed", p.PSN)})
			}
			alts = append(alts, reports.Alternative{ID: "C9-101", If: fmt.Sprintf("the READ was never answered: the %s of frame %d (PSN %d) acknowledged past it", np.Opcode.ShortName(), next.Frame, np.PSN)})
			msg := fmt.Sprintf("ACK PSN %d carries MSN %d, which counts the RDMA READ at PSN %d after it: that fits only while the READ's answer was still to come, yet the %s of frame %d (PSN %d) shows the responder past the READ with no packet of its answer since this ACK",
				p.PSN, p.AETH.MSN&0xFFFFFF, read, np.Opcode.ShortName(), next.Frame, np.PSN)
			reason := fmt.Sprintf("frame %d: ACK PSN %d carries an MSN that counts the RDMA READ at PSN %d after it, legal only while the READ's answer was still to come: its answer, owed before the %s of frame %d, was then lost before the capture point", r.Frame, p.PSN, read, np.Opcode.ShortName(), next.Frame)
			c.ViolationEitherUnlessMissed(ID, r, harness.Either{Message: msg, Alts: alts},
				[]string{fmt.Sprintf("an ACK PSN at or past the READ's last PSN, or an MSN that does not count the READ at PSN %d", read)}, fmt.Sprintf("ACK PSN %d", p.PSN), reason,
				harness.MissedProof{Dir: trace.ToRequester, Since: seq, Now: true})
		},
	})
}

// restingOnCount raises ACK r's finding (raise), which rests on the count
// response base carried: where the MSN model judged that count wrong,
// the finding waits for C9-148's verdict at the connection's end, and is
// none of its own where C9-148 blamed the count (one root cause, one
// finding; the instance stays undecided here, resting on it).
func restingOnCount(c *harness.Conn, r, base *trace.Record, message string, raise func(c *harness.Conn)) {
	answers.AwaitCount(c, r, base, func(c *harness.Conn, held bool) {
		if cl := answers.CountClause(c, base); held && cl != "" {
			c.Indeterminate(ID, harness.RestsOnBlamed(message, "count", base, cl))
			return
		}
		raise(c)
	})
}

// unprompted judges ACK r at the PSN of an ATOMIC the trace showed
// answered. An ATOMIC is answered with an ATOMIC Acknowledge, so a plain
// ACK there acknowledges no new request: it answers a duplicate SEND or
// RDMA WRITE at or before its PSN, with the newest completed PSN. Where
// the trace shows no SEND or WRITE at or before its PSN since the
// ATOMIC's first copy or first answer, whichever came first (what came
// before reached the responder before the ATOMIC), only one the capture
// did not show prompted it: a violation where the requester's IPv4 IDs
// ran on unbroken from there, open otherwise. It reports whether it
// judged r. (Not a copy of an earlier ACK, nor one sent before responses
// the trace shows earlier, nor in an active run, where the harness knows
// every request.)
func (m *monitor) unprompted(c *harness.Conn, r *trace.Record) bool {
	p := r.Packet
	op, _, frame, ok := c.Req(p.PSN)
	if !ok || opc.Class(op) != wire.ClassAtomic || c.Settings.Active || c.MaybeCopy(r) || c.IsLate(r) {
		return false
	}
	a, answered := c.AtomicFirstAnswer(p.PSN)
	if !answered {
		return false
	}
	frame = min(frame, int(a.Frame))
	if c.SendOrWriteSince(p.PSN, frame) {
		return false
	}
	msg := fmt.Sprintf("ACK PSN %d names an ATOMIC its ATOMIC Acknowledge had answered (frame %d): a plain ACK there answers only a duplicate SEND or RDMA WRITE at or before that PSN, and the trace shows none since frame %d", p.PSN, a.Frame, frame)
	expected := []string{"an ACK prompted by a request: an ATOMIC is answered with an ATOMIC Acknowledge, a duplicate with the newest completed PSN"}
	seen := fmt.Sprintf("ACK PSN %d with no request to answer", p.PSN)
	if c.Complete() {
		c.Violation(ID, r, msg, expected, seen)
		return true
	}
	c.ViolationUnlessMissedAny(ID, r, msg, expected, seen,
		fmt.Sprintf("frame %d: ACK PSN %d names an ATOMIC already answered, and the trace shows no SEND or WRITE at or before it since frame %d, which it could answer as a duplicate: legal only if the capture missed one (the requester's IPv4 Identifications do not show that it missed none since)", r.Frame, p.PSN, frame),
		harness.MissedProof{Dir: trace.ToResponder, Since: uint64(frame), Frame: true, Now: true})
	return true
}

func (m *monitor) End(*harness.Conn) {}

// reaches reports whether request p may carry PSN a or show that a
// request with PSN a was sent before it: its own PSN is at or past a, or
// it is a READ, whose response PSNs may reach a (unless its known range
// ends short of a, as for a READ resent). A request behind a says
// nothing about an ACK naming a.
func reaches(c *harness.Conn, p *wire.Packet, a wire.PSN) bool {
	if p.PSN.AtOrAfter(a) {
		return true
	}
	if p.Opcode != wire.ReadRequest {
		return false
	}
	s := c.ReadSpanOf(p.PSN, p.RETH.Length)
	if s == nil {
		// A READ that opened no span of its own (a duplicate, or a
		// partial retry from inside another READ's range) reaches what
		// its length needs at the path MTU, where that is known.
		if mtu := c.MTU(); mtu != 0 {
			return !p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1).Before(a)
		}
		return true
	}
	return !s.Known() || !s.LastMax.Before(a)
}
