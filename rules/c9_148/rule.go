// Package c9_148 checks C9-148 (§9.7.7.1): the responder's MSN rises by
// one for every new request message it completes and never for a
// duplicate; for an RDMA READ the responder picks the moment, either as
// soon as the READ is validated (its first response packet already shows
// the new MSN) or once all its data has been sent (only its last packet
// does).
package c9_148

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
const ID = "C9-148"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		return &monitor{t: answers.Shared(c), m: answers.SharedMSNModel(c)}
	}})
}

// monitor keeps a model of message completions (answers.MSNModel): the
// new messages the requester sent (SEND and WRITE by their Last or Only
// packet, READ, ATOMIC; never a duplicate), and checks the MSN of every
// ACK-kind AETH (Acknowledge, READ Response First/Last/Only, ATOMIC
// Acknowledge) against it:
//   - the MSN never goes back (answers repeated for duplicates excepted,
//     since whether they carry the original MSN is open);
//   - it counts at least every message the AETH acknowledges (a READ's
//     Last or Only counts the READ, its First may or may not);
//   - it counts no more messages than had reached the responder (so a
//     duplicate, or a READ counted twice, shows).
//
// Where the count starts is unknown in a capture, so the checks bound it
// from both sides and flag only MSNs that no starting point explains. An
// active run shows the QP from its creation, when the MSN is 0.
// Indeterminate: a capture that misses requests (a PSN gap, or a request
// seen for the first time behind newer ones) cannot count completions,
// unless it is known complete (--complete).
//
// One root cause, one clause: the counts rest on the PSNs of the
// responses (which messages an AETH acknowledges). Where the connection
// shows a response PSN no legal responder gives (Conn.ResponsePSNFault:
// an ACK beyond every request, an ATOMIC Acknowledge or a READ response
// at another request's PSN), the count the MSN is judged against is no
// longer forced, and that fault is its own clause's (C9-95, o9-58,
// C9-96). As it may show only after the MSN it undermines, violations
// are held until the connection ends and are then left undecided where
// they rest on such a response (Conn.PSNFaultUndermines: the packet
// judged, or the one that set the bound it breaks; every one, for a
// fault not pinned to one response).
type monitor struct {
	t    *answers.Tracker
	m    *answers.SharedMSN // shared with C9-149
	held []heldViolation
	// answerHigh counts the held violations that are a READ's answer
	// too high (readAnswerHigh), whose behind later responses set.
	answerHigh int
}

// heldViolation is a violation, or an instance open unless IPv4 IDs date
// it (answers.Judgement.After), awaiting the connection's end.
type heldViolation struct {
	r *trace.Record
	j answers.Judgement
	// stop: an open instance that is a violation where the responder's
	// IDs ran on unbroken from the NAK of j.StopSeq to r (unbroken) and
	// it is seen to number its packets one by one (answers.Judgement).
	stop, unbroken bool
	at             harness.Judged // when r was judged (hold)
	// behind: a later response carried an MSN below r's (readAnswerHigh).
	// tail: r is a READ answer's Last that the responder's IDs show sent
	// right after its previous packet (nothing missed between).
	behind, tail bool
}

// readAnswerHigh reports whether h is an MSN too high on a READ's answer
// judged as new: the first the trace shows (a First or Only), or a Last
// the responder may have sent after packets the capture missed (not
// tail). Off a complete trace it may replay an answer, with the count of
// the moment, to a copy of the READ the capture missed, sent before
// requests after it that the capture missed too (the Last, the end of
// that replay): legal unless the requester's IDs show the capture missed
// none of its packets, or a later response's MSN shows the count was
// never that high (the replay reading then needs that response to be
// wrong as well: one root cause, this answer's).
// Only on a trace showing the connection's start: on one begun
// mid-connection, a positive ACK naming a PSN before the READ, sent
// after the READ's first copy could have been, shows it not yet executed,
// and the requester's IDs from then on would decide; not done, so such an
// answer is failed as before (docs/verdicts-detail.md).
func readAnswerHigh(h heldViolation) bool {
	op := h.r.Packet.Opcode
	return h.j.Violation && h.j.Upper && (op == wire.ReadResponseFirst || op == wire.ReadResponseOnly || op == wire.ReadResponseLast && !h.tail)
}

// maxHeld bounds the violations held per connection; past it they are
// reported at once.
const maxHeld = 1024

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	if opc.IsRequest(r.Packet.Opcode) {
		m.m.Request(c, r, ev.MTU)
		return
	}
	if m.answerHigh > 0 && opc.Has(r.Packet.Opcode, wire.HdrAETH) {
		for i := range m.held {
			if h := &m.held[i]; readAnswerHigh(*h) && h.r != r {
				if d := (h.r.Packet.AETH.MSN - r.Packet.AETH.MSN) & 0xFFFFFF; d != 0 && d < 1<<23 {
					h.behind = true
				}
			}
		}
	}
	j := m.m.Model(c, r, ev)
	switch {
	case j.Skip:
	case j.Undecided && j.Open && j.HaveStop:
		// Legal only as a replay of an answer sent since the NAK that
		// showed its ATOMIC not yet executed: held, a violation where
		// the responder's IDs show the capture missed nothing since.
		m.hold(c, heldViolation{r: r, j: j, stop: true, unbroken: c.RanOnSince(r.Dir, j.StopSeq)})
	case j.Undecided && j.Open && j.After != nil && c.MayBeDatedByID(r):
		// Below an answer that may replay one, unless the responder's
		// IDs, once seen to count up, date r after it: held.
		m.hold(c, heldViolation{r: r, j: j})
	case j.Undecided && j.Open:
		c.Unresolved(ID, j.Reason)
	case j.Undecided:
		c.Indeterminate(ID, j.Reason)
	case j.Violation && j.OwnPSN && (c.Settings.Active || j.MayHaveFailed):
		// An active run's own scenarios judge the ACK's PSN against the
		// expected PSN the harness knows (C9-95's alone: one root cause,
		// one clause). (Or the request named may have failed, a third
		// account.)
		c.Unresolved(ID, "an ACK's MSN is lower than the messages its PSN acknowledges: either its PSN (judged under C9-95) or its MSN is wrong; "+j.Message)
	case j.Violation && j.MayHaveFailed:
		// Which keys the responder can invalidate is not on the wire: a
		// failed request, positively acknowledged, is §9.7.5.1.5's.
		c.Indeterminate(ID, "an ACK naming a SEND with Invalidate carries an MSN that does not count it: the SEND failed if the responder could not invalidate the key it names (then the MSN is right and the positive ACK is §9.7.5.1.5's fault), which the trace does not show; "+j.Message)
	case j.Violation:
		m.hold(c, heldViolation{r: r, j: j, tail: r.Packet.Opcode == wire.ReadResponseLast && c.SentAllSince(trace.ToRequester, c.Seq()-1)})
	default:
		c.Checked(ID)
	}
}

// hold keeps h until the connection ends (report).
func (m *monitor) hold(c *harness.Conn, h heldViolation) {
	h.at = c.Judging(h.r)
	if len(m.held) == maxHeld {
		m.report(c, m.held[0])
		if readAnswerHigh(m.held[0]) {
			m.answerHigh--
		}
		m.held = m.held[1:]
	}
	m.held = append(m.held, h)
	if readAnswerHigh(h) {
		m.answerHigh++
	}
}

// report judges a held violation, or a held open instance (After): a
// violation where the responder's IPv4 IDs show r was sent after that
// answer, open otherwise.
func (m *monitor) report(c *harness.Conn, h heldViolation) {
	// The model judged h when r was observed: what follows only excuses.
	defer c.JudgedAt(h.at)()
	if h.stop {
		// Where a response's PSN is at fault, the earlier answer may be
		// one at another PSN, or the bound may rest on it (one root
		// cause, one clause: an ACK inside a READ's range the trace
		// showed only later is C9-95's): open.
		o := h.j.Other
		inside := o != nil && o.Packet.Opcode == wire.Acknowledge && c.ReadInterior(o.Packet.PSN) != nil
		if !h.unbroken || !c.NumbersByOne(h.r.Dir) || c.ResponsePSNFault() != "" || inside {
			c.Unresolved(ID, h.j.Reason)
			return
		}
		if o != nil && answers.CountBlamed(c, o) {
			// The bound rests on a count a finding already blamed (this
			// clause's too, reported before it): one root cause.
			c.Indeterminate(ID, harness.RestsOnBlamed(h.j.Message, "count", o, answers.CountClause(c, o)))
			return
		}
		if !h.j.OtherNAK {
			c.Violation(ID, h.r, h.j.Message, h.j.Expected, h.j.Seen)
			return
		}
		c.ViolationEither(h.r, h.j.Message, h.j.Expected, h.j.Seen,
			reports.Alternative{ID: ID, If: "the NAK's MSN was right: this MSN counts messages past the ATOMIC's PSN"},
			reports.Alternative{ID: "C9-149", If: fmt.Sprintf("this MSN is right: the NAK (frame %d) carried an MSN below the messages it followed", h.j.Other.Frame)})
		return
	}
	if m.blamedElsewhere(c, h.j.Other) {
		if h.j.Firm == nil || m.blamedElsewhere(c, h.j.Firm.Other) {
			c.Indeterminate(ID, harness.RestsOnBlamed(h.j.Message, "count", h.j.Other, answers.CountClause(c, h.j.Other)))
			return
		}
		h.j = *h.j.Firm
	}
	if h.j.After != nil {
		if before, known := c.SentBeforeByID(h.j.After, h.r); !known || !before {
			c.Unresolved(ID, h.j.Reason)
			return
		}
	}
	if f := c.ResponsePSNFault(); f != "" && undermined(c, h) {
		if h.j.Firm == nil || undermined(c, heldViolation{r: h.r, j: *h.j.Firm}) {
			c.Indeterminate(ID, "the MSN disagrees with the count of messages its response's PSN acknowledges, but response PSNs on this connection are at fault: "+f)
			return
		}
		// Below an earlier count that rests on no faulty PSN: that
		// violation stands.
		h.j = *h.j.Firm
	}
	p := h.r.Packet
	missedAfter := h.j.Upper && !c.Complete() && m.m.MissedAfter(p.PSN)
	if missedAfter && (p.Opcode != wire.Acknowledge || !p.AETH.IsACK()) {
		// The capture later showed it missed new requests beyond this
		// response's PSN: the request it answers may be a retransmission
		// the responder took as a duplicate after completing them.
		c.Unresolved(ID, "the MSN exceeds the new messages the capture showed had reached the responder, but the capture missed requests after this response's PSN: if the request it answers was a retransmission sent after them, the MSN counts them; "+h.j.Message)
		return
	}
	if readAnswerHigh(h) && !c.Complete() && c.FromStart() && !h.behind && !c.SentAllSince(trace.ToResponder, 0) {
		c.Unresolved(ID, "a READ's answer carries an MSN above the new messages that had reached the responder: legal only if it replays an answer to a copy of the READ sent before, with the count of the moment, after requests past it, all missed by the capture, which the requester's IPv4 Identifications do not rule out; "+h.j.Message)
		return
	}
	if a := h.j.Other; h.j.AckBefore {
		// Below the count of an ACK that names a PSN before the request
		// this answers again: this MSN is wrong, or that ACK names a
		// PSN behind a request already executed (one root cause, one
		// finding naming both).
		alts := []reports.Alternative{
			{ID: ID, If: fmt.Sprintf("the ACK of frame %d names the right PSN: the request this answers was executed after it, and this MSN or that ACK's is wrong", a.Frame)},
			{ID: "C9-95", If: fmt.Sprintf("this MSN is right: the ACK of frame %d names PSN %d, behind the request this answers, which the responder had executed", a.Frame, a.Packet.PSN)}}
		if c.ReqSends(a.Packet.PSN) > 1 || !c.Complete() {
			alts = append(alts, reports.Alternative{ID: "C9-105", If: fmt.Sprintf("this MSN is right and the ACK of frame %d answers a duplicate: it names PSN %d, behind the newest request the responder had completed", a.Frame, a.Packet.PSN)})
		}
		c.ViolationEitherOn(a, "C9-95", h.r, h.j.Message, h.j.Expected, h.j.Seen, alts...)
		return
	}
	// A positive ACK names the newest request completed, a duplicate's
	// answer too: one counting requests past its PSN that the capture
	// missed names the wrong PSN (C9-95, or C9-105 where the request it
	// names was sent again and it may answer a duplicate), or its MSN is
	// wrong (an ACK's MSN far ahead is not left open as maybe answering
	// a retransmission).
	if !h.j.OtherNAK && !h.j.OwnPSN && !missedAfter {
		c.Violation(ID, h.r, h.j.Message, h.j.Expected, h.j.Seen)
		return
	}
	// One root cause, one finding: the count it exceeds, or the MSN it
	// falls below, rests on a NAK's MSN, which may be the one at fault
	// (C9-149); an ACK's MSN too low for its PSN may be right, its PSN
	// naming requests the responder had not completed (C9-95).
	mine := "this MSN is wrong"
	var alts []reports.Alternative
	if h.j.OtherNAK {
		var nak string
		mine, nak = "the NAK's MSN was right: this MSN counts more messages than the PSNs since it leave room for",
			fmt.Sprintf("this MSN is right: the NAK (frame %d) carried an MSN below the messages it followed", h.j.Other.Frame)
		if !h.j.Upper {
			mine, nak = "the NAK's MSN was right: this MSN went back below it",
				fmt.Sprintf("this MSN is right: the NAK (frame %d) carried an MSN above the messages completed", h.j.Other.Frame)
		}
		alts = append(alts, reports.Alternative{ID: "C9-149", If: nak})
	}
	if h.j.OwnPSN && c.Blamed(h.r, "C9-95") {
		// C9-95 found the ACK's PSN wrong (on a trace showing the
		// responder's expected PSN exactly, it judges it against that):
		// the same root cause, that clause's alone.
		c.Indeterminate(ID, harness.RestsOnBlamed(h.j.Message, "PSN", h.r, "C9-95"))
		return
	}
	if h.j.OwnPSN {
		mine = "the ACK's PSN is right: its MSN counts too few of the messages it acknowledges"
		alts = append(alts, reports.Alternative{ID: "C9-95", If: fmt.Sprintf("the MSN is right: the ACK names PSN %d, past the newest request the responder had completed", h.r.Packet.PSN)})
	}
	if missedAfter {
		mine = "the ACK's PSN is right: its MSN counts more messages than had reached the responder"
		alts = append(alts, reports.Alternative{ID: "C9-95", If: fmt.Sprintf("the MSN is right and the ACK answers a new request: it names PSN %d, behind requests past it, missing from the capture, that the responder had completed", p.PSN)})
		if c.ReqSends(p.PSN) > 1 {
			alts = append(alts, reports.Alternative{ID: "C9-105", If: fmt.Sprintf("the MSN is right and the ACK answers the request sent again as a duplicate: it names PSN %d, behind the newest the responder had completed", p.PSN)})
		}
	}
	c.ViolationEither(h.r, h.j.Message, h.j.Expected, h.j.Seen, append([]reports.Alternative{{ID: ID, If: mine}}, alts...)...)
}

// blamedElsewhere reports whether a finding of another clause's monitor
// already blamed the count r carries (answers.CountBlamed): a fault this
// monitor found itself is one the model already set aside (it goes on
// from the accounts with and without it), so a later packet that fits
// none of them is a fault of its own.
func (m *monitor) blamedElsewhere(c *harness.Conn, r *trace.Record) bool {
	if !answers.CountBlamed(c, r) {
		return false
	}
	for _, h := range m.held {
		if h.r == r && h.j.Violation {
			return false
		}
	}
	return true
}

// undermined reports whether a response PSN fault undermines held
// violation h (harness.Conn.PSNFaultUndermines): one resting on the PSN
// of the packet judged or of the one that set the bound it breaks. An
// MSN below an earlier answer's went back whatever the packet's own PSN
// (docs/verdicts-detail.md: were its PSN wrong too, the count still went back):
// only that answer's PSN fault undermines it, as its count may be the
// one its wrong PSN made.
func undermined(c *harness.Conn, h heldViolation) bool {
	if h.j.WentBack && h.j.Other != nil {
		return c.PSNFaultUndermines(h.j.Other)
	}
	return c.PSNFaultUndermines(h.r, h.j.Other)
}

func (m *monitor) End(c *harness.Conn) {
	for _, h := range m.held {
		m.report(c, h)
	}
	m.held, m.answerHigh = nil, 0
}
