package dupnak

import (
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// Judge is a clause's verdict logic over the model's events.
type Judge interface {
	// Event is called for every record of the connection with what the
	// record meant to the model (state before the record).
	Event(k *Checker, c *harness.Conn, ev *receive.Event)
	// End is called once when the trace ends.
	End(k *Checker, c *harness.Conn)
}

// Checker hands one clause's Judge the events of the connection's Tracker.
// Every clause of the group shares one Tracker per connection, so the
// model is built once per packet whatever the number of clauses. Responder
// rules judge only connections whose responder is the device
// (harness.Conn.JudgesResponder).
type Checker struct {
	ID    string
	T     *receive.Tracker
	Judge Judge
	// feeder: the first checker of the connection, which feeds the shared
	// Tracker every record (the Auditor calls it first for each).
	feeder bool
}

// Kinds implements harness.KindFilter: the feeder sees every record; the
// others see the records of the kinds their Judge handles, when it says
// which (a Judge may implement harness.KindFilter: its Event then does
// nothing with events of other kinds).
func (k *Checker) Kinds() harness.Kinds {
	if !k.feeder {
		if f, ok := k.Judge.(harness.KindFilter); ok {
			return f.Kinds()
		}
	}
	return harness.AllKinds
}

// Observe implements harness.Checker.
func (k *Checker) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	k.Judge.Event(k, c, k.T.Observe(c, r))
}

// End implements harness.Checker.
func (k *Checker) End(c *harness.Conn) {
	if !c.JudgesResponder() {
		return
	}
	k.Judge.End(k, c)
}

// Monitor returns the passive monitor of clause id built on judges made by
// newJudge (one per connection).
func Monitor(id string, newJudge func() Judge) harness.Monitor {
	return harness.Monitor{Clause: id, New: func(c *harness.Conn) harness.Checker {
		t, first := receive.Join(c)
		return &Checker{ID: id, Judge: newJudge(), T: t, feeder: first}
	}}
}

// Violation reports a violation of the checker's clause.
func (k *Checker) Violation(c *harness.Conn, r *trace.Record, msg string, expected []string, seen string) {
	c.Violation(k.ID, r, msg, expected, seen)
}

// ViolationUnlessMissed raises an instance on r that is a violation unless
// the capture missed a packet of direction dir (harness.Conn.ViolationUnlessMissed).
func (k *Checker) ViolationUnlessMissed(c *harness.Conn, dir trace.Dir, since uint64, r *trace.Record, msg string, expected []string, seen, reason string, excuse func(next *trace.Record) bool) {
	c.ViolationUnlessMissed(k.ID, dir, since, r, msg, expected, seen, reason, excuse)
}

// BehindUnlessResendMissed is WrongUnlessResendMissed for the NAK of ev,
// naming a PSN behind the expected PSN a response's PSN proved
// (ev.Lower): it rests on that response (UnlessBlamed).
func BehindUnlessResendMissed(k *Checker, c *harness.Conn, ev *receive.Event, msg string, expected []string, reason string, either harness.Either) {
	r := ev.Rec
	UnlessBlamed(k, c, ev, msg, func() { WrongUnlessResendMissed(k, c, r, msg, expected, reason, either) })
}

// WrongUnlessResendMissed judges a NAK (r) that names a PSN the responder
// had left behind, which only a resend of that PSN the capture missed
// explains (a refused duplicate is judged elsewhere): a violation once the
// requester's next packet shows, by its IPv4 Identifications, that the
// capture missed none of its packets over the connection (a next packet
// that resends the PSN may have passed the capture point first, where the
// capture's order between the directions is not certain). Otherwise it
// is either (no Alts: open, with reason): the clauses that a missed
// resend, a duplicate at the responder, would make the one broken
// (harness.Conn.ViolationUnlessMissedElse).
func WrongUnlessResendMissed(k *Checker, c *harness.Conn, r *trace.Record, msg string, expected []string, reason string, either harness.Either) {
	x := r.Packet.PSN
	c.ViolationUnlessMissedElse(k.ID, r, msg, expected, Seen(r), reason, either,
		harness.MissedProof{Dir: trace.ToResponder, Excuse: func(next *trace.Record) bool { return next.Packet.PSN == x }})
}

// Checked counts a held instance of the checker's clause.
func (k *Checker) Checked(c *harness.Conn) { c.Checked(k.ID) }

// Indeterminate records an undecided instance with a reason.
func (k *Checker) Indeterminate(c *harness.Conn, reason string) { c.Indeterminate(k.ID, reason) }

// IsNAKCode reports whether p is an Acknowledge carrying NAK code code.
func IsNAKCode(p *wire.Packet, code uint8) bool {
	return p.Opcode == wire.Acknowledge && p.AETH.IsNAK(code)
}

// IsErrorNAK reports an Acknowledge whose syndrome is a NAK other than a
// PSN sequence error (invalid request, remote access or remote operational
// error, or a reserved code).
func IsErrorNAK(p *wire.Packet) bool {
	return p.Opcode == wire.Acknowledge && p.AETH.Kind() == wire.KindNAK && p.AETH.Value() != wire.NAKPSNSequence
}

// Seen renders a response for "seen:" lines.
func Seen(r *trace.Record) string { return r.Packet.String() }

// DupList renders duplicates for messages.
func DupList(recs []*trace.Record) string {
	var s []string
	for i, r := range recs {
		if i == 4 {
			s = append(s, fmt.Sprintf("… (%d in all)", len(recs)))
			break
		}
		s = append(s, fmt.Sprintf("%s at PSN %d", r.Packet.Opcode.ShortName(), r.Packet.PSN))
	}
	return strings.Join(s, ", ")
}

// ---- C9-111 / C9-121 / C9-125: NAK PSN = expected PSN ----

// NAKPSNJudge checks that every NAK of the given codes (0 sequence error,
// 1 invalid request) carries the responder's expected PSN: on complete
// traces, one of the expected PSNs the responder could have had when it
// built the NAK; on other traces, at least the PSN after the newest
// request it had acknowledged (its expected PSN never goes back). A NAK
// behind the expected PSN right after a duplicate is, on complete traces,
// left to C9-103 (the duplicate moved the expected PSN); on other traces
// it is one finding naming both clauses (MovedOrWrongNAK).
type NAKPSNJudge struct {
	Codes []uint8
}

// NewNAKPSN returns the judge for the NAK codes given.
func NewNAKPSN(codes ...uint8) func() Judge {
	return func() Judge { return &NAKPSNJudge{Codes: codes} }
}

func nakName(code uint8) string {
	switch code {
	case wire.NAKPSNSequence:
		return "PSN sequence error NAK"
	case wire.NAKInvalidRequest:
		return "invalid request NAK"
	case wire.NAKRemoteAccess:
		return "remote access error NAK"
	case wire.NAKRemoteOp:
		return "remote operational error NAK"
	}
	return fmt.Sprintf("NAK code %d", code)
}

// Kinds implements harness.KindFilter: the NAKs of the judge's codes.
func (j *NAKPSNJudge) Kinds() harness.Kinds {
	var set harness.Kinds
	for _, cd := range j.Codes {
		set |= 1 << harness.NAKKind(cd)
	}
	return set
}

var (
	responseOpcodes = harness.KindsWhere(wire.Opcode.IsResponse)
	// reqErrorNAKs are the requests and the NAKs other than sequence
	// errors (IsErrorNAK).
	reqErrorNAKs  = harness.KindsWhere(opc.IsRequest) | 1<<harness.KindErrorNAK
	answerOpcodes = harness.KindsWhere(func(op wire.Opcode) bool {
		return opc.Class(op) == wire.ClassReadResponse || op == wire.AtomicAcknowledge
	})
)

// Event implements Judge.
func (j *NAKPSNJudge) Event(k *Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead || p.Opcode != wire.Acknowledge {
		return
	}
	code, match := uint8(0), false
	for _, cd := range j.Codes {
		if p.AETH.IsNAK(cd) {
			code, match = cd, true
		}
	}
	if !match {
		return
	}
	name := nakName(code)
	x := p.PSN
	// A second sequence NAK naming the previous one's PSN is a repeat
	// (Event.RepeatsNAK): whether the responder may send it at all is the
	// NAK latch's rule (C9-114/C9-122, LatchJudge); its PSN, stale by
	// then, is no second fault (one root cause, one clause). One that
	// answers a new request ahead while x is still expected is judged as
	// any NAK; one sent after a positive response showed the responder
	// past x, off complete traces, is one finding with the latch's
	// clauses (PassedNAK).
	switch {
	case ev.RepeatsPassed:
		PassedNAK(k, c, ev)
	case ev.RepeatsNAK && !(ev.Exact && ev.InWindow && ev.AheadOf):
		k.Indeterminate(c, fmt.Sprintf("the %s names PSN %d again, as the previous one did: whether the responder may NAK the same gap twice is the NAK latch's rule, judged under C9-114/C9-122", name, x))
	case ev.Exact && ev.InWindow && code == wire.NAKPSNSequence && !ev.AheadOf:
		// The responder may have expected x, but no request beyond x
		// arrived while it did: nothing it received was out of sequence
		// there.
		k.Violation(c, ev.Rec, fmt.Sprintf("the %s carries PSN %d, but no request beyond PSN %d reached the responder while it expected %d: a sequence NAK answers a request ahead of the expected PSN and names that PSN", name, x, x, x),
			[]string{fmt.Sprintf("a %s only after a request beyond the expected PSN, naming the expected PSN", name)},
			Seen(ev.Rec))
	case ev.Exact && ev.InWindow && code == wire.NAKInvalidRequest && !ev.ReqSinceBase:
		// The invalid request itself may be a packet the trace does not
		// hold as a request (a reserved opcode, a malformed frame).
		k.Indeterminate(c, fmt.Sprintf("the %s names PSN %d, which no request the trace decodes carried: only an invalid packet the capture does not decode as a request (a reserved opcode, a malformed frame) at that PSN explains it", name, x))
	case ev.Exact && ev.InWindow:
		k.Checked(c)
	case ev.Exact && ev.Behind && len(ev.DupsSinceBase) > 0:
		k.Indeterminate(c, "a NAK named a PSN behind the expected PSN right after a duplicate: judged under C9-103 (a duplicate must not move the expected PSN)")
	case ev.Exact && c.ResponsePSNFault() != "":
		// The expected PSN is placed with the READ ranges the responses
		// showed, and these are at fault: one root cause, judged there.
		k.Indeterminate(c, fmt.Sprintf("the %s names PSN %d, not the expected PSN %s as the trace places it, but that placement rests on response PSNs at fault: %s", name, x, receive.FormatPSNs(ev.Window), c.ResponsePSNFault()))
	case ev.Exact:
		k.Violation(c, ev.Rec, fmt.Sprintf("the %s carries PSN %d, but the responder's expected PSN when it built the NAK was %s (from the requests it had received)", name, x, receive.FormatPSNs(ev.Window)),
			[]string{fmt.Sprintf("a %s with the expected PSN %s", name, receive.FormatPSNs(ev.Window))},
			Seen(ev.Rec))
	case BehindAfterDup(k, ev):
		MovedOrWrongNAK(k, c, ev)
	case !k.T.Complete() && ev.HaveLower && ev.Behind:
		msg := fmt.Sprintf("the %s carries PSN %d, behind PSN %d that the responder had already acknowledged: its expected PSN was at least %d and never goes back", name, x, ev.Lower.Add(-1), ev.Lower)
		expected := []string{fmt.Sprintf("a %s with the responder's expected PSN, at least %d", name, ev.Lower)}
		r := ev.Rec
		UnlessBlamed(k, c, ev, msg, func() { k.Violation(c, r, msg, expected, Seen(r)) })
	default:
		k.Indeterminate(c, "the "+name+"'s PSN cannot be checked: "+k.T.Why())
	}
}

// End implements Judge.
func (j *NAKPSNJudge) End(*Checker, *harness.Conn) {}

// UnlessBlamed raises a NAK naming a PSN behind ev.Lower, the expected PSN
// a response's PSN proved (violation), unless a finding blames that
// response's PSN: a NAK right where the responder stood is then the same
// root cause, reported once (undecided, naming it). Where a later packet
// may still show that PSN at fault (blamable), the NAK waits for it.
func UnlessBlamed(k *Checker, c *harness.Conn, ev *receive.Event, message string, violation func()) {
	e := c.Expected()
	if !e.HaveLo || e.Lo != ev.Lower || e.LoBy == nil {
		violation()
		return
	}
	by := e.LoBy
	clause := psnClause(by.Packet.Opcode)
	if clause == "" {
		violation()
		return
	}
	judge := func(c *harness.Conn) {
		if c.Blamed(by, clause) {
			k.Indeterminate(c, harness.RestsOnBlamed(message, "PSN", by, clause))
		} else {
			violation()
		}
	}
	settled := blamable(c, by)
	if settled == nil {
		judge(c)
		return
	}
	c.Await(func(c *harness.Conn, next *trace.Record) bool {
		if next != nil && !settled(c) {
			return false
		}
		judge(c)
		return true
	})
}

// psnClause is the clause that judges the PSN of a response of opcode op
// where a finding on it makes a NAK resting on it the same root cause: an
// ACK's C9-95, an ATOMIC Acknowledge's o9-58 ("" none). (Not a READ
// response's C9-96: a capture cut after the READ, which shows nothing of
// its answer's PSN at fault, fails the NAK, and cutting a capture's start
// must not make a clause fail that the whole capture passes.)
func psnClause(op wire.Opcode) string {
	switch opc.Class(op) {
	case wire.ClassAtomicAck:
		return "o9-58"
	case wire.ClassAck:
		return "C9-95"
	}
	return ""
}

// blamable returns, where a packet after response by may still show its
// PSN at fault (psnClause), what tells that no later packet can any more
// (nil: none may): an ATOMIC Acknowledge at a PSN no ATOMIC the trace
// showed so far carried (a request seen later may show another kind
// there; the end of the trace settles it), or an ACK at a PSN no request
// carried, past the first PSN of a READ whose last PSN the trace has not
// shown (the READ's answer, showing its range, settles it).
func blamable(c *harness.Conn, by *trace.Record) func(*harness.Conn) bool {
	p := by.Packet
	op, _, _, ok := c.Req(p.PSN)
	switch {
	case p.Opcode == wire.AtomicAcknowledge && (!ok || opc.Class(op) != wire.ClassAtomic):
		return func(*harness.Conn) bool { return false }
	case p.Opcode == wire.Acknowledge && !ok:
		s := c.ReadSpanAt(p.PSN)
		if s == nil || s.Known() || !p.PSN.After(s.First) {
			return nil
		}
		first := s.First
		return func(c *harness.Conn) bool {
			s := c.ReadSpanAt(p.PSN)
			return s == nil || s.First != first || s.Known()
		}
	}
	return nil
}

// BehindAfterDup reports whether a sequence or invalid-request NAK (ev)
// names a PSN behind one the responder had already acknowledged, on a
// trace that may miss packets, with a duplicate since that
// acknowledgment: MovedOrWrongNAK's instance.
func BehindAfterDup(k *Checker, ev *receive.Event) bool {
	return !k.T.Complete() && ev.HaveLower && ev.Behind && len(ev.DupsSinceBase) > 0
}

// MovedOrWrongNAK judges, under clause k.ID, a NAK BehindAfterDup holds
// for (the caller has set a repeated NAK aside). The responder's expected
// PSN was past the PSN it acknowledged, and a duplicate never moves it
// back: either the duplicate did (C9-103), and the NAK names the moved
// PSN, or it did not, and the NAK names a PSN the responder did not expect
// (C9-111, with C9-121 or C9-125 for its code). The trace tells neither
// apart, and both are violations: one finding names the three, which each
// of their monitors lists under its own clause (harness.Conn.ViolationOf).
// A NAK the network delayed or copied is left open there, as any NAK is;
// one resting on a response whose PSN a finding blames is the same root
// cause (UnlessBlamed).
func MovedOrWrongNAK(k *Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	name := nakName(p.AETH.Value())
	dups := ev.DupsSinceBase
	last := dups[len(dups)-1].Packet
	stayed := fmt.Sprintf("the duplicate left the expected PSN at %d or beyond: the NAK names a PSN the responder did not expect", ev.Lower)
	r := ev.Rec
	msg := fmt.Sprintf("the %s carries PSN %d, behind PSN %d that the responder had already acknowledged, after the duplicate %s (%s): its expected PSN was at least %d, and a duplicate never moves it back",
		name, p.PSN, ev.Lower.Add(-1), last.Opcode.ShortName(), DupList(dups), ev.Lower)
	expected := []string{fmt.Sprintf("a %s with the responder's expected PSN, at least %d, where the duplicate left it", name, ev.Lower)}
	alts := []reports.Alternative{
		{ID: "C9-111", If: stayed},
		{ID: nakClause(p), If: stayed},
		{ID: "C9-103", If: fmt.Sprintf("the duplicate moved the expected PSN back to PSN %d: the NAK names the moved PSN", p.PSN)}}
	UnlessBlamed(k, c, ev, msg, func() { c.ViolationOf(k.ID, r, msg, expected, Seen(r), alts...) })
}

// PassedNAK judges, under clause k.ID, a sequence NAK that names the PSN
// of the responder's previous one again after a positive response showed
// the responder past it, off complete traces (Event.RepeatsPassed). The
// responder had executed the request at that PSN, so its expected PSN was
// past it: either it built the NAK after that, naming a PSN it had passed
// (C9-111/C9-121), or it built it before, while its previous NAK's latch
// held, and sent it late (C9-114/C9-122), or a duplicate since moved its
// expected PSN back there (C9-103). The trace tells none apart, and each
// is a violation: one finding names them, which each of their monitors
// lists under its own clause (harness.Conn.ViolationOf). It rests on the
// response that showed the responder past the PSN (UnlessBlamed).
func PassedNAK(k *Checker, c *harness.Conn, ev *receive.Event) {
	x := ev.Rec.Packet.PSN
	built := fmt.Sprintf("the responder built it after the request at PSN %d arrived: it names an expected PSN the responder had passed", x)
	latched := fmt.Sprintf("the responder built it before that request arrived, while its sequence NAK of frame %d latched, and sent it after: a second sequence NAK while latched", ev.PrevNAK.Frame)
	alts := []reports.Alternative{{ID: "C9-111", If: built}, {ID: "C9-121", If: built}, {ID: "C9-114", If: latched}, {ID: "C9-122", If: latched}}
	if len(ev.DupsSinceBase) > 0 {
		alts = append(alts, reports.Alternative{ID: "C9-103", If: fmt.Sprintf("a duplicate since (%s) moved its expected PSN back to %d", DupList(ev.DupsSinceBase), x)})
	}
	r := ev.Rec
	msg := fmt.Sprintf("the sequence NAK names PSN %d again, as its sequence NAK of frame %d did, after the request at PSN %d reached the responder and a positive response acknowledged it (the responder's expected PSN was at least %d)",
		x, ev.PrevNAK.Frame, x, ev.Lower)
	expected := []string{fmt.Sprintf("no further sequence NAK naming PSN %d; a new one only for a new gap, naming the expected PSN, at least %d", x, ev.Lower)}
	UnlessBlamed(k, c, ev, msg, func() { c.ViolationOf(k.ID, r, msg, expected, Seen(r), alts...) })
}

// ---- C9-114 / C9-122: the NAK latch ----

// LatchJudge checks the NAK latch: after a sequence NAK with PSN x, no
// other sequence NAK until a request with PSN x has reached the
// responder, no new request executed past the gap meanwhile, and no second
// sequence NAK naming x again once x has arrived (the responder then has
// either moved past x or was still latched when it built the NAK).
//
// A request seen before the NAK in the trace may still have reached the
// responder after it built the NAK; the model counts such a request as
// clearing the latch (it shows it accepted after the NAK's point). A
// second NAK identical down to the IP identification is one packet the
// network duplicated, not a second NAK; where the IP identification cannot
// tell (IPv6, or constant), the case is indeterminate. On traces that may
// miss packets (captures without --complete), a resend the capture missed
// could have cleared the latch, so a second NAK is indeterminate there.
type LatchJudge struct {
	episodes int
}

// NewLatch returns the latch judge.
func NewLatch() Judge { return &LatchJudge{} }

// Kinds implements harness.KindFilter: responses (positive ones may pass
// the gap, sequence NAKs open episodes).
func (j *LatchJudge) Kinds() harness.Kinds { return responseOpcodes }

// Event implements Judge.
func (j *LatchJudge) Event(k *Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead {
		return
	}
	if l := ev.PastGap; l != nil {
		k.Violation(c, ev.Rec, fmt.Sprintf("after the sequence NAK with PSN %d the responder executed a new request past the gap (this response covers PSN %d) before any request with PSN %d reached it", l.PSN, p.PSN, l.PSN),
			[]string{fmt.Sprintf("no new request executed (and none acknowledged) until the request with PSN %d arrives; only duplicates answered meanwhile", l.PSN)},
			Seen(ev.Rec))
		return
	}
	if !IsNAKCode(p, wire.NAKPSNSequence) {
		return
	}
	if ev.NetDupUnknown {
		// A copy the network or the capture made is legal, the responder
		// sending it again is not: only the unseen copy explains it, so
		// the instance stays open.
		c.Unresolved(k.ID, "a sequence NAK was repeated identically and its IP identification cannot tell a resend from a network duplicate: only a copy the network or the capture made makes it legal")
		return
	}
	if ev.RepeatsPassed {
		// Whether or not its latch is still open (an RNR NAK may have
		// ended the episode), the responder had passed the PSN.
		PassedNAK(k, c, ev)
		return
	}
	prev := ev.PrevLatch
	y := p.PSN
	// passed: the request with PSN y reached the responder after its
	// sequence NAK with that PSN, as the complete trace shows.
	passed := func() {
		k.Violation(c, ev.Rec, fmt.Sprintf("a second PSN sequence error NAK names PSN %d again after the request with PSN %d reached the responder: it was either built before that request arrived, while the latch held, or names an expected PSN the responder had already passed", y, y),
			[]string{fmt.Sprintf("one sequence NAK with PSN %d per gap; a new NAK only for a new gap after the request with PSN %d arrived", y, y)},
			Seen(ev.Rec))
	}
	if prev == nil {
		if ev.RepeatsNAK && ev.Exact && ev.Behind {
			// An RNR NAK ended the episode once its PSN had arrived
			// (without this the repeat would go unjudged here, and
			// C9-111 leaves a repeat to the latch).
			passed()
		}
		return
	}
	switch {
	case !prev.Cleared && prev.Exact:
		k.Violation(c, ev.Rec, fmt.Sprintf("a second PSN sequence error NAK (PSN %d) while the NAK latch had to hold: no request with PSN %d had reached the responder since its sequence NAK with that PSN", y, prev.PSN),
			[]string{fmt.Sprintf("no further sequence NAK until a request with PSN %d arrives (later out-of-sequence requests are dropped silently)", prev.PSN)},
			Seen(ev.Rec))
	case !prev.Cleared:
		// Only a resend of prev.PSN the capture missed explains it: once
		// the requester's next packet shows its IPv4 Identifications ran
		// on unbroken over the whole connection, none was missed (one
		// that carries prev.PSN may have passed the capture point before
		// this NAK, where the capture's order between the directions is
		// not certain). Naming the same PSN again, the responder's own
		// Identifications prove it too where they show it sent nothing
		// between its two NAKs: a request with that PSN that reached it
		// unseen would have been executed (its expected PSN then moves
		// on, and a NAK could not name it again) or refused with an RNR
		// NAK (a packet in between).
		x := prev.PSN
		// A resend that reached the responder after it built its first
		// NAK was sent after every requester packet that arrived before
		// that: since the requester's first packet captured where the
		// NAK came beyond the reordering after it (SinceFirst).
		since, _ := c.SinceFirst(trace.ToResponder, prev.NAK)
		proofs := []harness.MissedProof{{Dir: trace.ToResponder, Since: since, Excuse: func(next *trace.Record) bool { return next.Packet.PSN == x }}}
		if y == x {
			proofs = append(proofs, harness.MissedProof{Dir: trace.ToRequester, Since: prev.Seq, Now: true})
		}
		c.ViolationUnlessMissedAny(k.ID, ev.Rec,
			fmt.Sprintf("a second PSN sequence error NAK (PSN %d) while the NAK latch had to hold: no request with PSN %d reached the responder since its sequence NAK with that PSN", y, x),
			[]string{fmt.Sprintf("no further sequence NAK until a request with PSN %d arrives (later out-of-sequence requests are dropped silently)", x)},
			Seen(ev.Rec),
			fmt.Sprintf("a second sequence NAK followed the one with PSN %d with no resend of that PSN in the capture: only a resend the capture missed, which would have cleared the latch, makes it legal", x),
			proofs...)
	case y == prev.PSN && prev.Exact:
		passed()
	case y == prev.PSN:
		// Whether or not the request with PSN y reached the responder
		// after its first NAK, the second is wrong (passed): built
		// before it arrived, while latched, or naming a PSN the
		// responder had passed once it executed it. Only that request
		// refused with an RNR NAK the capture missed makes it legal,
		// which the responder's own Identifications rule out where they
		// show it sent nothing between its two NAKs.
		c.ViolationUnlessMissedAny(k.ID, ev.Rec,
			fmt.Sprintf("a second PSN sequence error NAK names PSN %d again after its first, with nothing sent between: it was built while the latch held, or after the request with PSN %d arrived, naming an expected PSN the responder had passed", y, y),
			[]string{fmt.Sprintf("one sequence NAK with PSN %d per gap; a new NAK only for a new gap after the request with PSN %d arrived", y, y)},
			Seen(ev.Rec),
			fmt.Sprintf("a second sequence NAK names PSN %d again: only the request with that PSN reaching the responder and refused by an RNR NAK the capture missed makes it legal", y),
			harness.MissedProof{Dir: trace.ToRequester, Since: prev.Seq, Now: true})
	default:
		// The previous episode ended properly: its PSN arrived before
		// this new gap.
		k.Checked(c)
		j.episodes++
	}
}

// End implements Judge.
func (j *LatchJudge) End(k *Checker, c *harness.Conn) {
	if held, _ := k.T.End(); held != nil {
		k.Checked(c)
	}
}

// ---- C9-106 / C9-115: no NAK for an error met while answering a duplicate ----

// DupErrorJudge flags an error NAK (invalid request, remote access,
// remote operational) about a duplicate: its PSN names a duplicate request
// and the responder had passed that PSN at every moment it could have
// built the NAK (so the NAK cannot be about the original request), or it
// lies in the range of a duplicate READ whose replay was being sent, or
// (complete traces) it names a PSN no request carried since the
// responder's last proven point while a duplicate did arrive. A NAK
// inside a new READ's response stream is a mid-stream failure (C9-100) and
// a NAK naming a duplicate ATOMIC is judged under o9-67.
type DupErrorJudge struct {
	dups, naked int
}

// NewDupError returns the judge.
func NewDupError() Judge { return &DupErrorJudge{} }

// Kinds implements harness.KindFilter: requests (duplicates are counted)
// and error NAKs.
func (j *DupErrorJudge) Kinds() harness.Kinds { return reqErrorNAKs }

// Event implements Judge.
func (j *DupErrorJudge) Event(k *Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead {
		return
	}
	if opc.IsRequest(p.Opcode) {
		if ev.Class == receive.ReqDup {
			j.dups++
		}
		return
	}
	if !IsErrorNAK(p) {
		return
	}
	if ev.InNewReadStream {
		return
	}
	if d := ev.DupNamed; d != nil && opc.Class(d.Packet.Opcode) == wire.ClassAtomic {
		return // o9-67
	}
	if ev.WaitingDupAtomic != nil && ev.Exact && !ev.ReqSinceBase {
		return // o9-67
	}
	var about *trace.Record
	var nonAtomic []*trace.Record
	for _, d := range ev.DupsSinceBase {
		if opc.Class(d.Packet.Opcode) != wire.ClassAtomic {
			nonAtomic = append(nonAtomic, d)
		}
	}
	switch {
	case ev.InDupReadStream != nil:
		about = ev.InDupReadStream.Rec
	case ev.DupNamed != nil && ev.Exact && !ev.Accepted && ev.Behind:
		about = ev.DupNamed
	case ev.DupNamed != nil && !k.T.Complete() && ev.HaveLower && ev.Behind:
		about = ev.DupNamed
	case ev.Exact && !ev.ReqSinceBase && !ev.Accepted && len(nonAtomic) > 0:
		// No request with the NAK's PSN arrived since the responder's
		// last proven point: the NAK answers no new request, and a
		// duplicate did arrive.
		about = nonAtomic[len(nonAtomic)-1]
	case ev.DupNamed != nil && !ev.Exact:
		k.Indeterminate(c, "an error NAK names the PSN of a duplicate, and the model cannot tell whether it is about the duplicate or the original request: "+k.T.Why())
		return
	default:
		return
	}
	j.naked++
	k.Violation(c, ev.Rec, fmt.Sprintf("the responder sent a %s about the duplicate %s at PSN %d (frame %d): an error met while answering a duplicate is never NAKed, the duplicate is dropped", nakName(p.AETH.Value()), about.Packet.Opcode.ShortName(), about.Packet.PSN, about.Frame),
		[]string{"silence: the duplicate dropped, the connection left as it was",
			"the duplicate answered as usual (an ACK with the newest completed PSN, a READ replay, a saved ATOMIC result)"},
		Seen(ev.Rec))
}

// End implements Judge.
func (j *DupErrorJudge) End(k *Checker, c *harness.Conn) {
	for i := j.naked; i < j.dups; i++ {
		k.Checked(c)
	}
}

// ---- C9-104 / C9-110: answers in PSN order; an older duplicate preempts ----

// OrderJudge checks the order of answers that name their request (READ
// response streams, ATOMIC acknowledgments): a request that arrived first
// and is logically earlier is answered before a logically later one, and
// an answer interrupted by another is not resumed (interrupted by an older
// duplicate it is abandoned; interrupted by a later request, the order
// was already wrong). A duplicate SEND or WRITE is answered by an ACK that
// does not name it, so its order cannot be seen.
//
// That the older request arrived first is known only on complete traces;
// elsewhere the older copy may have been lost before the responder and a
// resend missed by the capture, so out-of-order answers are indeterminate.
// A stream that goes on after an older duplicate arrived but before its
// answer began may have been in flight; only the active scenarios, which
// know when the duplicate was sent, judge that.
type OrderJudge struct{}

// NewOrder returns the judge.
func NewOrder() Judge { return OrderJudge{} }

// Kinds implements harness.KindFilter: the answers that name their request
// (READ responses, ATOMIC Acknowledges).
func (OrderJudge) Kinds() harness.Kinds { return answerOpcodes }

// Event implements Judge.
func (OrderJudge) Event(k *Checker, c *harness.Conn, ev *receive.Event) {
	a := ev.Answer
	if a == nil || ev.Dead {
		return
	}
	switch a.Kind {
	case receive.AnsStart:
		if s := a.SkippedBy; s != nil {
			if !k.T.Complete() {
				k.Indeterminate(c, "an older request was answered after a newer one, but the capture cannot show that the older copy reached the responder first")
				return
			}
			k.Violation(c, ev.Rec, fmt.Sprintf("the %s at PSN %d (frame %d) is answered only after the %s at PSN %d (frame %d), although it is logically earlier and arrived first", a.Req.Kind(), a.Req.PSN, a.Req.Rec.Frame, s.Kind(), s.PSN, s.Rec.Frame),
				[]string{fmt.Sprintf("the answer to PSN %d before the answer to PSN %d (oldest first)", a.Req.PSN, s.PSN)},
				Seen(ev.Rec))
			return
		}
		in := a.Interrupted
		preempts := in != nil && in.Req != nil && a.Req.PSN.Before(in.Req.PSN)
		if a.OthersDup && (a.Others > 0 || preempts) {
			k.Checked(c) // an ordering decision among duplicates, taken in PSN order
		}
	case receive.AnsResume:
		st := a.Stream
		by := st.InterruptedBy
		what := "a READ response stream"
		if st.Req != nil {
			what = fmt.Sprintf("the answer to the %s at PSN %d", st.Req.Kind(), st.Req.PSN)
		}
		why := "an answer is abandoned when a logically earlier duplicate preempts it, and is not resumed mid-stream"
		if by != nil && by.Req != nil && st.Req != nil && by.Req.PSN.After(st.Req.PSN) {
			why = fmt.Sprintf("the answer to the later request at PSN %d must not start while an earlier one is being answered", by.Req.PSN)
		}
		byText := "another answer"
		if by != nil && by.Req != nil {
			byText = fmt.Sprintf("the answer to the %s at PSN %d", by.Req.Kind(), by.Req.PSN)
		}
		if !k.T.Complete() {
			// Packets the capture dropped explain it: a duplicate READ and
			// the start of its answer (this packet then continues a new
			// answer), or the middle of the interrupting answer.
			c.Unresolved(k.ID, fmt.Sprintf("%s resumes at PSN %d after %s interrupted it: a duplicate READ and the start of its answer, or the rest of the interrupting answer, that the capture dropped would explain it (a capture need not report its drops); --complete decides", what, ev.Rec.Packet.PSN, byText))
			return
		}
		k.Violation(c, ev.Rec, fmt.Sprintf("%s resumes at PSN %d after %s interrupted it: %s", what, ev.Rec.Packet.PSN, byText, why),
			[]string{"the interrupted answer abandoned (answered again only from the start when requested again)", "answers in PSN order, never interleaved"},
			Seen(ev.Rec))
	}
}

// End implements Judge.
func (OrderJudge) End(*Checker, *harness.Conn) {}
