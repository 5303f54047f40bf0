package answers

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// The MSN model's judgement of one AETH against the count (msn.go).

// Judgement is the model's verdict on one AETH.
type Judgement struct {
	// Skip: the AETH does not concern this check.
	Skip bool
	// Undecided: the model cannot judge it, for Reason.
	Undecided bool
	Reason    string
	// Open (with Undecided): a violation remains possible, so the clause
	// cannot pass on it (harness.Conn.Unresolved).
	Open bool
	// Violation: Message, Expected and Seen describe it; Other is the
	// earlier packet it conflicts with (nil: the QP's creation).
	// OtherNAK: Other is a NAK whose MSN bounded the count or the MSNs
	// after it (its MSN may be the fault, C9-149's).
	Violation bool
	OtherNAK  bool
	Message   string
	Expected  []string
	Seen      string
	Other     *trace.Record
	// Upper: the violation is an MSN above the count of the new messages
	// the trace shows had reached the responder.
	Upper bool
	// PastPSN (with Upper): the NAK's MSN counts a message at or past the
	// PSN it names, where it stopped: either its PSN is wrong (the
	// clause of its syndrome) or its MSN is (C9-149).
	PastPSN bool
	// OwnPSN: the violation is an MSN too low for the messages the
	// packet's own PSN acknowledges, and that packet is a plain
	// Acknowledge, whose PSN nothing else in the trace fixes: either its
	// PSN (C9-95's) or its MSN is wrong, and the trace does not tell which:
	// on a capture, one finding names both.
	// An ACK naming a request that carried AckReq has its PSN fixed by
	// that request, and is not suspect.
	OwnPSN bool
	// MayHaveFailed: the violation is an MSN too low for an Acknowledge
	// naming a SEND with Invalidate, which fails when the responder
	// cannot invalidate its key (invalidateAt): the MSN is then right and
	// the positive ACK is the fault (§9.7.5.1.5's), and which keys the
	// responder can invalidate is not on the wire.
	MayHaveFailed bool
	// WentBack: the violation is an MSN below that of Other, an earlier
	// answer: the count went back whatever this packet's own PSN (a fault
	// in it undermines nothing). Firm (with WentBack) is the same
	// violation against another earlier answer whose MSN this one is
	// below too, one that cannot be late (nil: none): it stands where
	// Other's PSN is at fault and this answer's is not what it rests on.
	WentBack bool
	Firm     *Judgement
	// AckBefore (with WentBack): the packet answers again (or may) a
	// request at a PSN past the one Other, a positive ACK, named. Were
	// that ACK right, the responder had not executed the request when
	// it sent it, so every answer to the request, a replay too, carries
	// a count no lower: either this MSN is wrong (C9-148) or the ACK's
	// PSN is behind a request already executed (C9-95's, or C9-105's
	// where it may answer a duplicate).
	AckBefore bool
	// OtherUnchecked: Other's count is one nothing checked from above,
	// off a complete trace: the first answer's with a count that the
	// model took, one that came while no bound was known, one that fit
	// only another account, or one above the count that only a replay
	// explained (left open): it may be the one at fault (C9-148's) as
	// well as this packet's.
	OtherUnchecked bool
	// After (with Undecided and Open): the packet is open only because
	// nothing dates it after this earlier answer, which may replay one
	// with the count of a later moment; where the responder's IPv4 IDs
	// show it was sent after (harness.Conn.SentBeforeByID), Message,
	// Expected and Seen describe the violation it then is (the MSN went
	// back).
	After *trace.Record
	// StopSeq (with Undecided and Open, where HaveStop): the packet is
	// legal only as a replay of an answer the responder sent after the
	// NAK whose Seq (harness.Conn.Seq) this is, a NAK that showed the
	// request not yet executed, and the capture missed; where the
	// responder's IPv4 IDs show the capture missed none of its packets
	// since, Message, Expected and Seen describe the violation it then
	// is (OtherNAK: with the NAK's MSN, C9-149's, the other account).
	StopSeq  uint64
	HaveStop bool
}

func msn24(v int64) int64 { return v & 0xFFFFFF }

// cutStart reports whether the capture may have begun after the
// connection's first requests, with response p: it does not show the
// connection's start, as far as the trace has told, and p's MSN is more
// than a QP the capture showed from its creation could count yet (the
// messages shown so far).
func (m *MSNModel) cutStart(c *harness.Conn, p *wire.Packet) bool {
	switch {
	case c.Complete() || c.FromStart():
		return false
	case c.StartKnown():
		return true
	}
	return int64(p.AETH.MSN&0xFFFFFF) > int64(m.Seen())
}

// before reports whether response r's PSN is before x (within half the
// PSN space): r answers a request before x.
func before(r *trace.Record, x wire.PSN) bool {
	return r != nil && r.Packet.PSN.Before(x) && x.Diff(r.Packet.PSN) < 1<<22
}

// ackBefore reports whether r is a positive ACK naming a PSN before x:
// the request at x was not executed when the responder sent it, were its
// PSN right.
func ackBefore(r *trace.Record, x wire.PSN) bool {
	return before(r, x) && r.Packet.Opcode == wire.Acknowledge && r.Packet.AETH.IsACK()
}

// early reports whether the capture showed the request at PSN p first
// before any acknowledging response on the connection.
func (m *MSNModel) early(c *harness.Conn, p wire.PSN) bool {
	_, _, frame, ok := c.Req(p)
	return ok && (m.firstAck == 0 || frame < m.firstAck)
}

// unexecutedAtStop reports whether the latest sequence or RNR NAK the
// count took (stop) names PSN p or one before it: the responder had not
// executed the request at p when it sent that NAK, so an answer to it
// after the NAK replays none given before the capture began.
func (m *MSNModel) unexecutedAtStop(p wire.PSN) bool {
	s := m.stop
	return s != nil && s.Packet.PSN.AtOrBefore(p) && p.Diff(s.Packet.PSN) < 1<<22
}

// ackReqAt reports whether the request with PSN p carried AckReq.
func ackReqAt(c *harness.Conn, p wire.PSN) bool {
	_, ackReq, _, ok := c.Req(p)
	return ok && ackReq
}

// invalidateAt reports whether the request at p is a SEND with
// Invalidate: a responder that cannot invalidate its key fails it, and
// an ACK naming it is then §9.7.5.1.5's fault (a failed request is owed a
// NAK invalid request), which no packet tells from a wrong MSN.
func invalidateAt(c *harness.Conn, p wire.PSN) bool {
	op, _, _, ok := c.Req(p)
	return ok && opc.Has(op, wire.HdrIETH)
}

func describe(b bound) string {
	if b.rec == nil {
		return "the QP's creation (a new QP's MSN is 0)"
	}
	what := b.rec.Packet.Opcode.ShortName()
	if isNAK(b.rec.Packet) {
		what = "NAK"
	}
	d := fmt.Sprintf("the %s with PSN %d (frame %d, MSN %d)", what, b.rec.Packet.PSN, b.rec.Frame, msn24(b.u))
	if b.missed > 0 {
		d += fmt.Sprintf(", allowing one message more for each of the %d request PSNs the capture missed after it,", b.missed)
	}
	return d
}

// Model judges an AETH that shapes the model: a positive ACK, a READ
// response First/Last/Only with an ACK syndrome, or an ATOMIC
// acknowledgment. ev is the READ tracker's event for r.
func (m *MSNModel) Model(c *harness.Conn, r *trace.Record, ev *Event) Judgement {
	p := r.Packet
	op := p.Opcode
	m.readSpanShown(c)
	if opc.Class(op) == wire.ClassReadResponse && !opc.Has(op, wire.HdrAETH) && (ev.Stream == nil || ev.Kind == EvOrphan) && !c.Complete() && m.started {
		// A READ Middle no READ in the capture explains: the capture
		// dropped the READ, which the responder counts unseen.
		m.gap(p.PSN, p.PSN)
	}
	if op == wire.Acknowledge && NAKKind(p) {
		// A NAK shapes the count too (NAK), judged under C9-149.
		m.NAK(c, r)
		return Judgement{Skip: true}
	}
	if !opc.Has(op, wire.HdrAETH) || !ACKKind(p) {
		return Judgement{Skip: true}
	}
	if m.firstAck == 0 {
		m.firstAck = r.Frame
	}
	m.pin(c)
	if !m.started && !c.Complete() {
		// What it acknowledges was executed before the capture's first
		// request: a request at or before that PSN, seen later, is a
		// retransmission, and its answer a replay (for example, a
		// capture cut to begin after an ATOMIC's answer that its resend
		// then got again, with the MSN of the moment).
		if x, ok := acknowledges(p); ok && (!m.haveCovered || x.After(m.covered)) {
			m.covered, m.haveCovered = x, true
		}
		return Judgement{Undecided: true, Reason: "a response before any request: the capture began mid-connection"}
	}
	if why, open := c.LateWhy(r); why != "" {
		// Sent before responses already counted (its IPv4 ID shows it),
		// or maybe (its MSN goes back and no ID tells): its MSN belongs
		// to an earlier moment than the trace's order says, so it
		// neither shapes the count nor is judged by it. Nor is the rest
		// of a READ answer it begins, whose MSN is of the same moment
		// or the READ's (for example, a replayed answer whose First is
		// marked late before the responder's IDs are shown to count: its
		// Last, dated by then, is not judged as the MSN going back).
		if ev.Kind == EvStart && ev.Stream != nil {
			m.replayStream = ev.Stream
		}
		return Judgement{Undecided: true, Open: open, Reason: why + ", so its MSN may belong to an earlier moment"}
	}
	// What the AETH acknowledges (A), and whether it repeats an old answer.
	// executed (haveExec): a replay's own request, which the responder
	// had executed before it answered it again (and, in order, every
	// request before it).
	// unseen: the answer is taken as a replay for what the capture may
	// not show (it began during a resend, or an earlier answer
	// acknowledged the request), not for a duplicate it shows.
	// unshown: a replay, or an answer that may be one, to an ATOMIC sent
	// more than once or shown before any acknowledgment, where the trace
	// shows no earlier answer to it.
	// again: an answer to an ATOMIC the trace shows, given again (or
	// that may be).
	// readAgain: a READ's answer that replays one, or may.
	replay, firstAtomic, unseen, unshown, again, readAgain := false, false, false, false, false, false
	covers, incl, haveA := wire.PSN(0), true, false
	executed, haveExec := wire.PSN(0), false
	switch opc.Class(op) {
	case wire.ClassAck:
		covers, haveA = p.PSN, true
	case wire.ClassAtomicAck:
		op2, _, _, ok := c.Req(p.PSN)
		switch {
		case !ok && !c.Complete() && m.started:
			// An ATOMIC Acknowledge no request in the capture explains:
			// the capture dropped the ATOMIC, which the responder counts
			// unseen.
			m.gap(p.PSN, p.PSN)
			replay, executed, haveExec = true, p.PSN, true
			m.misplaced = r
		case !ok || (op2 != wire.CompareSwap && op2 != wire.FetchAdd):
			replay = true // not an ATOMIC's PSN (o9-58's concern): only S bounds it
			m.misplaced = r
		case c.ReqSends(p.PSN) > 1 && !c.ResentAfterDrop(p.PSN):
			// Sent again, not after a copy a NAK showed dropped (then
			// the latest copy is the first executed, and an ATOMIC
			// acknowledgment whose MSN skips ahead does not pass as a
			// replay).
			replay, executed, haveExec, again = true, p.PSN, true, true
			_, answered := c.AtomicOriginal(p.PSN)
			unshown = !answered
		case !c.Complete() && m.haveCovered && p.PSN.AtOrBefore(m.covered):
			// An earlier response already acknowledged the ATOMIC's PSN:
			// the ATOMIC had completed and been answered before it (a
			// responder answers new requests in PSN order), so this
			// answers a duplicate, one the capture may not show as
			// such (as where the capture begins during a retransmission:
			// the ATOMIC's first copy in the capture is already a
			// resend).
			replay, unseen, again = true, true, true
		case m.cutStart(c, p) && m.early(c, p.PSN) && !m.unexecutedAtStop(p.PSN):
			// The capture begins mid-connection and showed the ATOMIC
			// before any acknowledgment: the capture may have begun
			// while the requester resent it, after the responder had
			// executed it, and this may answer the duplicate, with the
			// original MSN or the current one.
			replay, executed, haveExec, unseen, again = true, p.PSN, true, true, true
			_, answered := c.AtomicOriginal(p.PSN)
			unshown = !answered
		case !c.Complete() && !c.FromStart() && c.HaveReq && p.PSN.Before(c.FirstReq):
			// An ATOMIC before the first request the capture shows,
			// resent: the responder may have executed it before the
			// capture began, and this answers its duplicate, with the
			// original MSN or the current one.
			replay, executed, haveExec, unseen = true, p.PSN, true, true
		default:
			if _, seen := c.AtomicOriginal(p.PSN); seen {
				replay, executed, haveExec, again = true, p.PSN, true, true
			} else {
				// The first answer the trace shows, which acknowledges
				// every message up to it. Off a complete trace it may
				// still answer a duplicate the capture missed, its
				// first answer missed too, after new requests it missed
				// (an ATOMIC acknowledgment whose MSN skips ahead is
				// not failed where no IPv4 ID shows nothing was
				// missed): an MSN above the count is open, as for a
				// replay (overIfNew).
				covers, haveA = p.PSN, true
				firstAtomic = !c.Complete()
			}
		}
	case wire.ClassReadResponse:
		s := ev.Stream
		switch {
		case ev.Kind == EvExtAnswer:
			// The answer to an RDMA FLUSH or ATOMIC WRITE (a later
			// release's operations) acknowledges them and what came
			// before, as an ATOMIC acknowledgment does.
			covers, haveA = p.PSN, true
		case (s == nil || ev.Kind == EvOrphan) && !c.Complete() && m.started:
			// A READ response no READ in the capture explains: the capture
			// dropped the READ (or shows it late), which the responder
			// counts unseen.
			m.gap(p.PSN, p.PSN)
			replay = true
		case s == nil || ev.Kind == EvOrphan || ev.Kind == EvSkip || ev.Kind == EvBeyond || ev.Kind == EvAfterNAK || s.Resynced:
			replay = true // numbering broken (C9-96's concern): only S bounds it
		case s.Replay, ev.MaybeReplay, s == m.replayStream:
			replay, executed, haveExec, readAgain = true, s.Start, true, true
		case ev.Kind == EvStart && s.Req.Early && m.cutStart(c, p) && !m.unexecutedAtStop(s.Start):
			// As for an ATOMIC above: a READ the capture showed before
			// any acknowledgment may resend one answered before it, and
			// its whole answer may be the replay.
			replay, m.replayStream, unseen = true, s, true
			executed, haveExec, readAgain = s.Start, true, true
		case ev.Kind == EvStart && !c.Complete() && m.haveCovered && s.Start.AtOrBefore(m.covered):
			// An earlier response already acknowledged the READ's PSN:
			// the READ had been answered before (as for an ATOMIC
			// above), so this whole answer answers a duplicate.
			replay, m.replayStream, unseen = true, s, true
		case ev.Kind == EvStart && op == wire.ReadResponseFirst:
			covers, incl, haveA = s.Start, false, true
		case ev.Kind == EvStart && op == wire.ReadResponseOnly:
			covers, haveA = s.Start, true
		case op == wire.ReadResponseLast && ev.Kind != EvStart && s.EndKnown && p.PSN == s.End:
			// The READ's end is known from the path MTU or, with it
			// unknown, from the connection's reconstruction: its span,
			// which this Last closes when reached from the READ's First
			// without a gap (Tracker). A Last that starts an answer is in
			// the wrong place (below): it shows what the READ's answer
			// numbering broke, not which messages completed (for example,
			// a READ answer skipping a PSN onto the next READ's: the MSN
			// is not held to that READ's count).
			covers, haveA = p.PSN, true
		default:
			replay = true // a Last in the wrong place (C9-96's concern)
		}
	}
	if again && (!m.haveCovered || p.PSN.AtOrAfter(m.covered)) {
		// Whichever MSN it carries, an answer given again went out after
		// the responder executed the ATOMIC: it counts every message up
		// to its PSN, as the first answer does. (Not behind a response
		// that acknowledged past it: requests between, executed before
		// the capture began, are not among the messages the model counts.)
		covers, haveA = p.PSN, true
	}
	if readAgain && (!m.haveCovered || executed.After(m.covered)) {
		// Likewise a READ's answer given again went out after the
		// responder executed the READ, and every request before it:
		// whichever MSN it carries (the first answer's, or the count of
		// the moment, which only rises), it counts every message before
		// the READ's PSN. (Not where an earlier response showed the READ
		// executed: executed before the capture began, it is not among
		// the messages the model counts from its start.)
		covers, incl, haveA = executed, false, true
	}
	u := m.unwrap(p.AETH.MSN)
	if haveA && (!m.haveCovered || covers.After(m.covered)) && !(op == wire.Acknowledge && c.AckPSNFault(r) != "") {
		// (An ACK whose PSN no legal responder gives shows nothing
		// acknowledged: requests first seen behind it are still new,
		// and an ACK inside a READ's range does not make the Last of
		// a WRITE first seen after it a retransmission.)
		m.covered, m.haveCovered = covers, true
	}
	if haveExec && !c.Complete() && (!m.haveCovered || executed.After(m.covered)) {
		// A replay, or an answer that may be one, shows its request
		// executed before: a request at or before it the capture shows
		// later is a retransmission, and its answer a replay too (for
		// example, on a capture begun during a retransmission, an
		// ATOMIC's first copy missed, its resend's answer carrying its
		// first MSN, below a replayed READ's after it).
		m.covered, m.haveCovered = executed, true
	}
	var A int
	if haveA {
		n, ok := m.count(covers, incl, false)
		if !ok {
			haveA = false
		}
		A = n
	}
	if haveA && !c.Complete() && m.haveNext && covers.AtOrAfter(m.nextLo) && covers.AtOrBefore(m.nextHi) && m.nextIsRead && opc.Class(op) == wire.ClassReadResponse {
		// Inside the span of the newest READ, whose end the MTU left
		// open: the READ response closes it, no request is missing.
		// (Only the newest READ's span: an older READ whose end is open
		// too ended before the requests after it. An ACK there may name
		// the READ's last PSN or a request after it the capture missed:
		// that counts as a gap, below.)
		if s := c.ReadSpanAt(covers); s != nil && s.First == m.nextRead {
			m.nextLo, m.nextHi = covers.Next(), covers.Next()
		}
	}
	pastShown := haveA && !c.Complete() && m.haveNext && covers.AtOrAfter(m.nextLo)
	if pastShown {
		// The response acknowledges PSNs no request in the capture used
		// yet: the capture missed requests, or shows them late (capture
		// order is not processing order). Whatever they were, they have
		// completed by now.
		m.gap(m.nextLo, covers)
		m.nextLo, m.nextHi = covers.Next(), covers.Next()
	}
	if haveA && !c.Complete() && !c.FromStart() && c.HaveReq && covers.Next().Before(c.FirstReq) {
		// The capture began after requests between the response's PSN
		// and the first request it shows were sent: they complete
		// unseen, like requests the capture missed.
		m.gap(covers.Next(), c.FirstReq.Add(-1))
	}
	if haveA {
		m.resolve(c, covers.Next())
	}
	S, missing, reached := m.reached(c)
	haveS := reached
	// mayReplay: a replay, or an answer that may be one although it
	// acknowledges what its PSN covers (firstAtomic).
	mayReplay := replay || firstAtomic
	// unordered: the trace may show responses out of the order the
	// responder sent them, and r's IPv4 Identification does not tell
	// (harness.Conn.DatedByID: where it does, lateResponse finds a
	// response sent before one delivered earlier).
	unordered := !c.Complete() && !c.Settings.Active && !c.DatedByID(r)
	// origOff: r answers an ATOMIC again with an MSN other than the
	// first answer's the trace showed at its PSN, so not the original
	// one. exempt: a replay, exempt from "the MSN never goes back", unless
	// the responder's ATOMIC replays are shown to carry the count of the
	// moment. neither: r fits neither way of numbering a replay, the other
	// ruled out before.
	var first harness.AtomicAnswer
	origOff := false
	if again {
		if a, ok := c.AtomicFirstAnswer(p.PSN); ok && a.MSN&0xFFFFFF != p.AETH.MSN&0xFFFFFF {
			first, origOff = a, true
		}
	}
	exempt := replay && !(again && (origOff || m.origOut != nil))
	neither := origOff && m.currOut != nil
	if b := &m.basis; again && m.origOut == nil && m.currOut == nil {
		switch {
		case origOff:
			m.origOut, m.origFirst = r, first
		case b.haveMono && u < b.mono && !(b.monoLate && unordered):
			m.currOut, m.currAbove, m.currAboveRec = r, b.mono, b.monoRec
		}
	}
	heldNote := "" // why a replay is held to "never goes back"
	if replay && !exempt && m.origOut != nil {
		heldNote = m.countOfTheMoment(r)
	}
	if mayReplay && !c.Complete() {
		// A replayed answer carries the MSN of the moment, which counts
		// requests newer than any in the capture if it dropped them: S
		// bounds nothing.
		haveS = false
	}
	loC := bound{v: u - int64(S), rec: r, u: u, n: S}
	from := covers
	if incl {
		from = covers.Next()
	}
	hiC := bound{v: u - int64(A) + int64(m.unseenFrom(c, from)), rec: r, u: u, n: A, pastShown: pastShown}
	m.ref = u
	// wentBack is the violation of an MSN below that of account b's
	// latest answer.
	wentBack := func(mono int64, monoRec *trace.Record, nak bool) Judgement {
		return Judgement{Violation: true, Other: monoRec, OtherNAK: nak, WentBack: true,
			Message: fmt.Sprintf("the MSN went back from %d (frame %d) to %d: completed messages cannot un-complete",
				msn24(mono), monoRec.Frame, msn24(u)),
			Expected: []string{fmt.Sprintf("an MSN of at least %d (the MSN only counts up)", msn24(mono))},
			Seen:     fmt.Sprintf("MSN %d", msn24(u))}
	}
	// exemptFrom tells whether r, a replay (exempt), is exempt from "the
	// MSN never goes back" against account b's latest answer (mono) and
	// firm count (firm). A replay may carry its first answer's count,
	// below the count of the moment, but not below an answer to a request
	// before its own (a first answer's count grows with the PSN, the count
	// of the moment with time: legal only if sent first), nor below a
	// positive ACK naming a PSN before its request (were that ACK right,
	// the request executed after it was sent: AckBefore).
	exemptFrom := func(b *basis) (mono, firm bool) {
		return exempt && !(haveExec && before(b.monoRec, executed)), exempt && !(haveExec && ackBefore(b.firmRec, executed))
	}
	// replayNote says why a replay below count v of response o is judged.
	replayNote := func(o *trace.Record) string {
		if !exempt {
			return ""
		}
		if o.Packet.Opcode == wire.Acknowledge {
			return fmt.Sprintf(", and it answers the request at PSN %d, past PSN %d that ACK named: were that ACK right, the responder executed the request after sending it, so even a replayed answer counts no fewer messages", executed, o.Packet.PSN)
		}
		return fmt.Sprintf(", and it answers the request at PSN %d again, past PSN %d of that answer: a replay carries its first answer's count, no lower than that answer's, or the count of the moment", executed, o.Packet.PSN)
	}
	// check judges the MSN against account b.
	check := func(b *basis) Judgement {
		exMono, exFirm := exemptFrom(b)
		switch {
		case neither:
			return Judgement{Violation: true, Other: m.currOut,
				Message: fmt.Sprintf("MSN %d answers the ATOMIC at PSN %d again by neither rule a responder may keep for such a replay: not with its first answer's MSN %d (frame %d), nor with the count of the moment, which the ATOMIC answered again in frame %d did not carry (its MSN %d is below MSN %d of frame %d, sent before it)",
					msn24(u), p.PSN, first.MSN&0xFFFFFF, first.Frame, m.currOut.Frame, m.currOut.Packet.AETH.MSN&0xFFFFFF, msn24(m.currAbove), m.currAboveRec.Frame),
				Expected: []string{fmt.Sprintf("MSN %d, its first answer's: this responder answers an ATOMIC again with the MSN it first gave", first.MSN&0xFFFFFF)},
				Seen:     fmt.Sprintf("MSN %d", msn24(u))}
		case !exMono && b.haveMono && u < b.mono && !(b.monoLate && unordered):
			j := wentBack(b.mono, b.monoRec, false)
			j.Message += heldNote + replayNote(b.monoRec)
			if !exFirm && b.haveFirm && u < b.firm && b.firmRec != b.monoRec && b.firmRec != nil {
				// Below the firm count too (for example, an ACK two
				// behind the count just after an ACK at a READ's last PSN
				// whose Last the capture lost: that PSN fault undermines
				// the violation, but a READ answer before that ACK had
				// carried the same count).
				f := wentBack(b.firm, b.firmRec, b.firmNAK)
				f.Message += heldNote + replayNote(b.firmRec)
				f.AckBefore = exempt
				j.Firm = &f
			}
			return j
		case haveA && b.haveLo && hiC.v < b.lo.v:
			j := Judgement{Violation: true, Other: b.lo.rec,
				Message: fmt.Sprintf("MSN %d is too low: by this packet at least %d new messages had completed (it acknowledges every message up to PSN %d), while %s shows the count started no lower than %d",
					msn24(u), A, covers, describe(b.lo), msn24(b.lo.v)),
				Expected:      []string{fmt.Sprintf("an MSN of at least %d: one increment per completed new message, a READ counted no later than its last response packet", msn24(b.lo.v+int64(A)))},
				Seen:          fmt.Sprintf("MSN %d", msn24(u)),
				OwnPSN:        opc.Class(op) == wire.ClassAck && !ackReqAt(c, covers),
				MayHaveFailed: opc.Class(op) == wire.ClassAck && invalidateAt(c, covers)}
			if (j.OwnPSN || j.MayHaveFailed) && !replay && b.haveFirm && u < b.firm {
				// Whatever its PSN, the MSN went back.
				return wentBack(b.firm, b.firmRec, b.firmNAK)
			}
			return j
		case !exFirm && b.haveFirm && u < b.firm:
			j := wentBack(b.firm, b.firmRec, b.firmNAK)
			j.Message += heldNote + replayNote(b.firmRec)
			j.AckBefore = exempt
			return j
		case haveS && b.haveHi && loC.v > b.hi.v:
			return Judgement{Violation: true, Other: b.hi.rec,
				Message: fmt.Sprintf("MSN %d is too high: %s new messages had reached the responder by this packet%s, while %s shows the count started no higher than %d; duplicates never move the MSN",
					msn24(u), atMost(S, missing), m.reachedNote(S, missing), describe(b.hi), msn24(b.hi.v)),
				Expected: []string{fmt.Sprintf("an MSN of at most %d: one increment per new message, none for duplicates", msn24(b.hi.v+int64(S)))},
				Seen:     fmt.Sprintf("MSN %d", msn24(u)), Upper: true, OtherNAK: b.hi.nak}
		}
		return Judgement{}
	}
	// Too high for the new messages the capture shows, were it no replay:
	// only a replayed answer (of a request executed before the capture
	// began, or one it missed) explains it, and nothing shows one.
	//
	// The first answer the trace shows to an ATOMIC it shows once, were it
	// new, was sent when the responder executed the ATOMIC, in PSN order:
	// its MSN counts no message ending after its PSN (so an ATOMIC
	// acknowledgment five past the ACK just before it does not pass
	// because the requests after it had reached the responder).
	//
	// So is one to an ATOMIC sent more than once, where the trace shows
	// no answer to it before: the replay reading needs an earlier answer
	// the capture missed (so an ATOMIC acknowledgment skipping ahead does
	// not pass as the replay of a copy sent before, whose answer nothing
	// showed).
	asNew, upToPSN := S, false
	if firstAtomic || unshown {
		if n, ok := m.count(p.PSN, true, false); ok {
			asNew, upToPSN = n+m.missingUpTo(c, p.PSN), true
		}
	}
	overIfNew := func(b *basis) bool {
		return mayReplay && !c.Complete() && reached && b.haveHi && u-int64(asNew) > b.hi.v
	}
	judged := false
	m.eachBasis(func(b *basis) {
		judged = judged || (!replay && b.haveMono) || (haveA && b.haveLo) || (haveS && b.haveHi)
	})
	j := check(&m.basis)
	fits := !j.Violation
	if !m.basis.haveHi || replay && !upToPSN || !fits {
		// No bound checked its count from above (none yet; or it
		// replays an answer, whose count of the moment only the
		// requests that had reached the responder bound, and a NAK may
		// show some of them unexecuted; or it fits only another
		// account): a NAK below it may show it too high.
		m.unbounded = r.Frame
	}
	// below: an earlier answer that may replay one, unordered against
	// this packet, carried a higher MSN (basis.monoLate).
	var below *trace.Record
	var belowMSN int64
	var belowJ Judgement
	if b := &m.basis; fits && b.haveMono && b.monoLate && unordered && u < b.mono {
		exMono, _ := exemptFrom(b)
		if !exMono {
			below, belowMSN, belowJ = b.monoRec, b.mono, wentBack(b.mono, b.monoRec, false)
		}
	}
	n := 0 // the other accounts the packet fits, kept
	// dropped: an answer only a replay now explains (basis.newAt), and
	// why; overNew: r too may be the replay.
	var dropped *trace.Record
	var droppedWhy string
	overNew := false
	for _, b := range m.alts {
		bj := check(&b)
		if !bj.Violation {
			m.alts[n] = b
			n++
		}
		switch {
		case b.newAt == nil || dropped != nil:
		case bj.Violation:
			dropped, droppedWhy = b.newAt, bj.Message
		case overIfNew(&b):
			dropped, overNew = b.newAt, true
			droppedWhy = fmt.Sprintf("MSN %d is above the %d new messages that may end at or before its PSN, counted from %s", msn24(u), asNew, describe(b.hi))
		}
	}
	if !fits && n == 0 {
		// A fault: hold the accounts before the packet (it is the
		// fault) beside one from it alone (they were wrong), so that one
		// fault is reported once.
		alone := basis{lo: loC, haveLo: haveS,
			hi: hiC, haveHi: haveA && !j.OwnPSN && !j.MayHaveFailed, // a suspect PSN bounds nothing
			mono: m.mono, monoRec: m.monoRec, haveMono: m.haveMono, monoLate: m.monoLate,
			firm: m.firm, firmRec: m.firmRec, haveFirm: m.haveFirm, firmNAK: m.firmNAK}
		if !replay {
			alone.mono, alone.monoRec, alone.haveMono, alone.monoLate = u, r, true, false
			alone.firm, alone.firmRec, alone.haveFirm, alone.firmNAK = u, r, true, false
		}
		m.alts = append(m.alts, m.basis)
		if len(m.alts) > maxAlts {
			m.alts = append(m.alts[:0], m.alts[len(m.alts)-maxAlts:]...)
		}
		m.basis, m.split = alone, true
		return j
	}
	if !fits {
		// The packet fits only other accounts: the model goes on with
		// them. Where they stand beside it by a fault already reported,
		// it is no new fault; where only by an answer that may have been
		// a replay, the fault shows now.
		m.basis = m.alts[0]
		copy(m.alts, m.alts[1:n])
		n--
		if !m.split {
			m.alts = m.alts[:0]
			m.basis.take(loC, hiC, haveS, haveA, u, r, mayReplay, !overIfNew(&m.basis), !c.Complete() && !c.Settings.Active)
			return j
		}
	}
	m.alts = m.alts[:n]
	m.split = m.split && n > 0
	open := overIfNew(&m.basis)
	for i := range m.alts {
		open = open && overIfNew(&m.alts[i])
	}
	hi := m.basis.hi // the account the open doubt is stated against
	m.eachBasis(func(b *basis) {
		// A replay's MSN bounds the ones after it from below, but not
		// where it is above the count were it new in this account
		// alone (that MSN may be the fault); where it is in every
		// account, only the replay reading is left, and an answer after
		// it with a lower MSN breaks either (the finding names this
		// count, unchecked: MSNModel.unchecked).
		b.take(loC, hiC, haveS, haveA, u, r, mayReplay, open || !overIfNew(b), !c.Complete() && !c.Settings.Active)
	})
	if (unseen || firstAtomic || unshown) && !open && reached && len(m.alts) == 0 {
		m.asNew(c, r, u, loC)
	}
	switch {
	case open:
		if len(m.alts) == 0 {
			// Open beside the model's account: the one where the answer
			// is new, and right (and, but for a READ's First, counts every
			// message up to its PSN).
			alt := basis{lo: loC, haveLo: true, mono: u, monoRec: r, haveMono: true, firm: u, firmRec: r, haveFirm: true}
			if op != wire.ReadResponseFirst {
				if n, ok := m.count(p.PSN, true, false); ok {
					alt.hi, alt.haveHi = bound{v: u - int64(n), rec: r, u: u, n: n}, true
				}
			}
			m.alts = append(m.alts, alt)
		}
		above := fmt.Sprintf("the %d new messages the capture shows had reached the responder", asNew)
		if upToPSN {
			above = fmt.Sprintf("the %d new messages that may end at or before its PSN %d", asNew, p.PSN)
		}
		j := Judgement{Undecided: true, Open: true, Reason: fmt.Sprintf("MSN %d is above %s (%s shows the count started no higher than %d): legal only if the answer replays a request executed before the capture began, or one the capture missed (--complete decides)",
			msn24(u), above, describe(hi), msn24(hi.v))}
		m.unbounded = r.Frame
		if s := m.stop; upToPSN && m.unexecutedAtStop(p.PSN) &&
			(m.misplaced == nil || m.misplaced.Frame < s.Frame) && (hi.rec == nil || !insideRead(c, hi.rec)) {
			// (Not where an ATOMIC acknowledgment at a PSN no ATOMIC
			// the capture shows used came since the NAK: it may be the
			// first answer, its PSN at fault, o9-58's; nor where the
			// bound rests on an ACK inside a READ's range, C9-95's: one
			// root cause, one clause.)
			// The NAK named a PSN at or before the ATOMIC's: the
			// responder had not executed it then, so a replay answers a
			// copy executed since, whose first answer went out after the
			// NAK. Where the responder's IDs show the capture missed none
			// of its packets since, there was none: this is that first
			// answer, new.
			j.StopSeq, j.HaveStop = m.stopSeq, true
			j.Message = fmt.Sprintf("MSN %d is above %s (%s shows the count started no higher than %d), and it is the ATOMIC's first answer: the NAK of frame %d showed it not yet executed, and the responder's IPv4 IDs show the capture missed none of its packets since, so no earlier answer it could replay went out",
				msn24(u), above, describe(hi), msn24(hi.v), s.Frame)
			j.Expected = []string{fmt.Sprintf("an MSN of at most %d: a new ATOMIC's answer counts no message past its PSN", msn24(hi.v+int64(asNew)))}
			j.Seen = fmt.Sprintf("MSN %d", msn24(u))
			j.Other, j.OtherNAK = hi.rec, hi.nak
		}
		return j
	case below != nil:
		return Judgement{Undecided: true, Open: true, After: below,
			Message: belowJ.Message, Expected: belowJ.Expected, Seen: belowJ.Seen,
			Reason: fmt.Sprintf("MSN %d is below MSN %d of frame %d, an answer that may replay one with the count of a later moment: legal only if the responder sent that answer after this packet and the network delayed this one past it, which no IPv4 Identification tells", msn24(u), msn24(belowMSN), below.Frame)}
	case dropped != nil:
		which, were := fmt.Sprintf("the %s of frame %d", dropped.Packet.Opcode.ShortName(), dropped.Frame), "it"
		if overNew {
			which, were = which+" or this answer", "both"
		}
		return Judgement{Undecided: true, Open: true,
			Reason: fmt.Sprintf("MSN %d fits the count only if %s replayed an earlier answer the capture does not show (to a request executed before the capture began, or one whose first answer it missed), which nothing shows: were %s new, %s",
				msn24(u), which, were, droppedWhy)}
	case judged:
		return Judgement{}
	case m.unresolved:
		return Judgement{Undecided: true, Reason: m.gapReason()}
	}
	return Judgement{Undecided: true, Reason: "the first MSN a capture shows only fixes where the count starts"}
}

// countOfTheMoment tells, for an ATOMIC answered again (r) held to "the
// MSN never goes back" as a new answer, why: the ATOMIC answered again
// in frame origOut showed this responder's replays carry the count of the
// moment, not their first answer's MSN.
func (m *MSNModel) countOfTheMoment(r *trace.Record) string {
	if m.origOut == r {
		return fmt.Sprintf(", and this ATOMIC answered again does not carry its first answer's MSN %d (frame %d) either", m.origFirst.MSN&0xFFFFFF, m.origFirst.Frame)
	}
	return fmt.Sprintf(", though it answers an ATOMIC again: frame %d answered the ATOMIC at PSN %d again with MSN %d, not its first answer's %d (frame %d), so this responder gives such answers the count of the moment",
		m.origOut.Frame, m.origOut.Packet.PSN, m.origOut.Packet.AETH.MSN&0xFFFFFF, m.origFirst.MSN&0xFFFFFF, m.origFirst.Frame)
}

// asNew keeps, beside the model's basis, the account where answer r
// (MSN u), taken as a replay for what the capture may not show (or as
// the first answer to an ATOMIC, which may yet be one, or the first one
// shown to an ATOMIC sent more than once), is new:
// its MSN then counts the messages that had reached the responder (loC)
// and, but for a READ's First, every message up to its PSN. A later packet
// that fits the basis but not this account is legal only if r was a
// replay, which nothing shows: suspect (for example, an ATOMIC
// acknowledgment whose MSN skips ahead of a READ answer's, which would
// otherwise pass at the responder because that READ, shown before any
// acknowledgment, might have been a resend; or an ACK of the messages
// after an ATOMIC, no higher than the ATOMIC's first answer shown, which
// passes only if that answer replayed one with the count of a later
// moment).
func (m *MSNModel) asNew(c *harness.Conn, r *trace.Record, u int64, loC bound) {
	p := r.Packet
	covers, incl := p.PSN, true
	switch p.Opcode {
	case wire.ReadResponseFirst:
		incl = false
	case wire.ReadResponseOnly, wire.AtomicAcknowledge:
	default:
		return
	}
	alt := m.basis
	// Were it new, it was sent when the responder executed the ATOMIC or
	// READ, in PSN order: it counts no message ending after its PSN (as
	// Model's asNew for a first answer; a READ's First may count the READ
	// or not), though later requests had reached the responder (for
	// example, an ACK two behind the count after three ATOMIC answers the
	// capture showed before any acknowledgment, each taken for a replay:
	// bounding their account as new only by the requests seen would pass
	// it; or an ACK of the messages after a READ the capture showed first,
	// carrying that READ's answer's MSN).
	if n, ok := m.count(covers, true, false); ok {
		k := n + m.missingUpTo(c, covers)
		if v := u - int64(k); v > loC.v {
			loC = bound{v: v, rec: r, u: u, n: k}
		}
	}
	if !alt.haveLo || loC.v > alt.lo.v {
		alt.lo, alt.haveLo = loC, true
	}
	if n, ok := m.count(covers, incl, false); ok {
		if h := (bound{v: u - int64(n), rec: r, u: u, n: n}); !alt.haveHi || h.v < alt.hi.v {
			alt.hi, alt.haveHi = h, true
		}
	}
	if alt.haveHi && alt.lo.v > alt.hi.v || alt.haveMono && u < alt.mono || alt.haveFirm && u < alt.firm {
		return // no account where it is new (Model judged that)
	}
	alt.mono, alt.monoRec, alt.haveMono, alt.monoLate = u, r, true, false
	alt.firm, alt.firmRec, alt.haveFirm, alt.firmNAK = u, r, true, false
	alt.newAt = r
	m.alts = append(m.alts, alt)
}

// take narrows account b by an AETH it fits: MSN u, the bounds loC (from
// the messages that had reached the responder, haveS) and hiC (from those
// it acknowledges, haveA).
//
// An answer that repeats an earlier one (replay) may carry the MSN of its
// first sending, so it may be behind the newest MSN; but neither that MSN
// nor the current one is above the count when it was sent, so the MSNs
// after it are not below it (for example, an ACK going back below a
// replayed READ answer the responder's IPv4 IDs date before it). Not so
// for one whose MSN is above the count, were it new (overIfNew): that MSN
// may be the fault.
//
// capture: the trace may show responses out of the responder's order
// (basis.monoLate).
func (b *basis) take(loC, hiC bound, haveS, haveA bool, u int64, r *trace.Record, replay, floor, capture bool) {
	if haveS && (!b.haveLo || loC.v > b.lo.v) {
		b.lo, b.haveLo = loC, true
	}
	if haveA && (!b.haveHi || hiC.v < b.hi.v) {
		b.hi, b.haveHi = hiC, true
	}
	if !replay || floor && (!b.haveMono || u > b.mono) {
		b.mono, b.monoRec, b.haveMono, b.monoLate = u, r, true, replay && capture
		if !b.monoLate && (!b.haveFirm || u > b.firm) {
			b.firm, b.firmRec, b.haveFirm, b.firmNAK = u, r, true, false
		}
	}
}

func (m *MSNModel) gapReason() string {
	return fmt.Sprintf("request PSNs %d..%d are missing from the capture (lost before the capture point, or missed by it) and no response has acknowledged past them yet: how many messages the responder completed cannot be counted (a capture holding every request, --complete, decides it)",
		m.gapFirst, m.gapLast)
}
