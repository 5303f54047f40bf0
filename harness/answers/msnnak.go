package answers

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file holds C9-149's side of the MSN model (msn.go): a NAK's MSN
// judged against every account of the count, which NAKs never shape.

// NAK judges the MSN of an Acknowledge carrying a NAK or RNR syndrome
// (C9-149): it must be the MSN of the moment, so not below an MSN already
// sent, not below the count of SEND/WRITE/ATOMIC messages that ended
// before the NAK's PSN (for a sequence or other NAK), and not above what
// could have completed. The NAK then bounds where the count started
// (nakBound); Model takes a NAK through NAK, so that every model is
// shaped by the same packets.
func (m *MSNModel) NAK(c *harness.Conn, r *trace.Record) Judgement {
	m.readSpanShown(c)
	j := m.judgeNAK(c, r)
	if !j.Skip {
		m.nakBound(c, r, !j.Violation)
	}
	if j.PastPSN {
		// One root cause, one finding: the NAKs after it that go past
		// the same answer's count are its consequence.
		m.pastFrom = j.Other
	}
	return j
}

// judgeNAK is NAK's judgement.
func (m *MSNModel) judgeNAK(c *harness.Conn, r *trace.Record) Judgement {
	p := r.Packet
	if p.Opcode != wire.Acknowledge || !NAKKind(p) {
		return Judgement{Skip: true}
	}
	m.pin(c)
	if !m.started && !c.Complete() {
		return Judgement{Undecided: true, Reason: "a NAK before any request: the capture began mid-connection"}
	}
	u := m.unwrap(p.AETH.MSN)
	// A sequence NAK names the responder's expected PSN: it received every
	// PSN before it and none from it on, so missing PSNs before it have
	// completed and missing PSNs from it on have not.
	S, missing, haveS := m.reached(c)
	if a := p.AETH; a.Kind() == wire.KindNAK && a.Value() == wire.NAKPSNSequence && m.unresolved && p.PSN.AtOrBefore(m.gapFirst) {
		S, missing, haveS = m.Seen(), 0, true
	}
	if !c.Complete() && c.HaveReq && p.PSN.After(c.NextReq) {
		// The NAK names a PSN beyond every request in the capture: the
		// requests before it that it dropped reached the responder and
		// count.
		haveS = false
	}
	seen := fmt.Sprintf("%s with MSN %d", p.AETH, msn24(u))
	// ownPSN: the NAK names the request the responder stopped at (a
	// sequence NAK its expected PSN, an RNR NAK the request it could not
	// take): no message at or past that PSN had completed. (A PSN behind
	// the expected PSN the trace proves is the NAK's own fault, judged
	// under its clause, whatever it says of the count.)
	ownPSN := p.AETH.Kind() == wire.KindRNR || p.AETH.IsNAK(wire.NAKPSNSequence)
	if e := c.Expected(); e.HaveLo && p.PSN.Before(e.Lo) {
		ownPSN = false
	}
	back := func(b *basis) Judgement {
		if b.haveMono && u < b.mono {
			return Judgement{Violation: true, Other: b.monoRec,
				Message: fmt.Sprintf("the NAK carries MSN %d, below the MSN %d the responder had already sent (frame %d): a NAK completes nothing and un-completes nothing, so its MSN is the current one",
					msn24(u), msn24(b.mono), b.monoRec.Frame),
				Expected: []string{fmt.Sprintf("MSN %d or more (the current MSN)", msn24(b.mono))}, Seen: seen}
		}
		return Judgement{}
	}
	// A NAK that fits any account still open is no fault of its own
	// (basis): where the accounts differ, a packet they rest on is.
	if j := m.fitsNone(back); j.Violation {
		j.OtherUnchecked = !c.Complete() && m.unchecked(j.Other)
		return j
	}
	if why := wrongNAKPSN(c, p); why != "" {
		// One root cause, one clause: the NAK's PSN is itself wrong
		// (C9-111, C9-113, C9-124 judge it), so which messages had
		// completed before it is open.
		return Judgement{Undecided: true, Reason: why}
	}
	if j := m.fitsNone(func(b *basis) Judgement {
		if j := back(b); j.Violation {
			return j
		}
		if b.haveLo && p.AETH.Kind() == wire.KindNAK {
			if a, ok := m.count(p.PSN, false, true); ok && u < b.lo.v+int64(a) {
				return Judgement{Violation: true, Other: b.lo.rec,
					Message: fmt.Sprintf("the NAK carries MSN %d, but %d SEND/WRITE/ATOMIC messages ending before its PSN %d had completed, and %s shows the count started no lower than %d",
						msn24(u), a, p.PSN, describe(b.lo), msn24(b.lo.v)),
					Expected: []string{fmt.Sprintf("MSN %d or more (the current MSN)", msn24(b.lo.v+int64(a)))}, Seen: seen}
			}
		}
		if ownPSN && b.haveFirm && b.firmRec != m.pastFrom && !insideRead(c, b.firmRec) {
			// From the newest answer whose MSN no later one goes below
			// (firm): the responder completed since at most the
			// messages ending from the PSN after it to the NAK's.
			from := b.firmRec.Packet.PSN
			if !b.firmNAK {
				from = from.Next()
			}
			// A request behind that PSN sent again since is a
			// duplicate, which the responder may have counted (C9-148's
			// fault, the count's to judge): the NAK then carries the
			// count of the moment.
			dup := m.resent != nil && m.resent.Frame > b.firmRec.Frame && m.resent.Packet.PSN.Before(from)
			if n, ok := endsBetween(c, from, p.PSN); ok && !dup && u > b.firm+int64(n) {
				return Judgement{Violation: true, Other: b.firmRec, OtherNAK: b.firmNAK, PastPSN: true,
					Message: fmt.Sprintf("the NAK carries MSN %d, while frame %d (PSN %d) carried MSN %d and only %d messages end from PSN %d up to the NAK's PSN %d: it counts a message at or past the PSN it names",
						msn24(u), b.firmRec.Frame, b.firmRec.Packet.PSN, msn24(b.firm), n, from, p.PSN),
					Expected: []string{fmt.Sprintf("MSN %d or less (no message at or past PSN %d completed)", msn24(b.firm+int64(n)), p.PSN)}, Seen: seen, Upper: true}
			}
		}
		if b.haveHi && haveS {
			if u > b.hi.v+int64(S) {
				n := fmt.Sprint(S)
				if missing > 0 {
					n = "at most " + n
				}
				return Judgement{Violation: true, Other: b.hi.rec,
					Message: fmt.Sprintf("the NAK carries MSN %d, above the %s new messages that had reached the responder%s, counted from %s",
						msn24(u), n, m.reachedNote(S, missing), describe(b.hi)),
					Expected: []string{fmt.Sprintf("MSN %d or less (the current MSN)", msn24(b.hi.v+int64(S)))}, Seen: seen, Upper: true}
			}
		}
		return Judgement{}
	}); j.Violation {
		j.OtherUnchecked = !c.Complete() && j.Other != nil && !j.OtherNAK && m.unchecked(j.Other)
		if j.Upper && !j.PastPSN && !c.Complete() && m.MissedAfter(p.PSN) {
			// As for an ACK-kind AETH (C9-148): the capture missed requests
			// after the NAK's PSN that a response showed completed, and
			// the requests it shows there may be retransmissions the
			// responder took as duplicates: the count of new messages
			// that had reached it is open (for example, an ACK beyond every
			// request, C9-95's fault).
			return Judgement{Undecided: true, Open: true, Reason: "the NAK's MSN exceeds the new messages the capture showed had reached the responder, but the capture missed requests after the NAK's PSN that a response showed completed: the MSN may count them; " + j.Message}
		}
		return j
	}
	if !m.haveMono && !m.haveLo && (!m.haveHi || !haveS) {
		if m.unresolved {
			return Judgement{Undecided: true, Reason: m.gapReason()}
		}
		return Judgement{Undecided: true, Reason: "a NAK before any ACK-kind AETH: nothing yet fixes the MSN it should carry"}
	}
	return Judgement{}
}

// maxEndsSpan bounds the PSNs endsBetween walks.
const maxEndsSpan = 4096

// endsBetween bounds from above how many messages end from PSN from up
// to (not at) PSN to, from what the trace shows of each PSN (mayEndAt).
// ok is false for an empty or long span.
func endsBetween(c *harness.Conn, from, to wire.PSN) (int, bool) {
	if !from.AtOrBefore(to) || to.Diff(from) > maxEndsSpan {
		return 0, false
	}
	n := 0
	for q := from; q != to; q = q.Next() {
		if mayEndAt(c, q) {
			n++
		}
	}
	return n, true
}

// mayEndAt reports whether a message may end at PSN q, as far as the
// trace shows: a READ ends at its last PSN (any PSN its range may end at,
// while the path MTU leaves it open), a request seen there where it ends
// a message (an ATOMIC does), and a PSN no request was seen at may.
func mayEndAt(c *harness.Conn, q wire.PSN) bool {
	if s := c.ReadSpanAt(q); s != nil && q.AtOrAfter(s.First) && q.AtOrBefore(s.LastMax) {
		if s.Known() {
			return q == s.LastMax
		}
		return q.AtOrAfter(s.LastMin)
	}
	if op, _, _, ok := c.Req(q); ok {
		return op.EndsMessage() || op == wire.ReadRequest || opc.Class(op) == wire.ClassAtomic
	}
	return true
}

// nakBound takes what NAK r shows of the count: the responder names the
// PSN it expected (a sequence NAK) or the request it could not execute,
// so every message ending before that PSN had completed, but a READ
// whose answer may still be streaming (C9-148 lets the responder count a
// READ once its data is sent). Its MSN, the current one (C9-149), is
// therefore at least MSN0 plus the SEND, WRITE and ATOMIC messages the
// trace shows ending before it: an upper bound on MSN0, as a positive
// ACK gives (so an ACK whose MSN rose six past a sequence NAK's, one PSN
// on, is judged even where the READ answer before the NAK might replay
// one).
//
// Its MSN is also a floor for every MSN after it (basis.firm), where
// the NAK fits the model (fits): the count never goes back.
//
// The bound is taken only into the accounts the NAK fits (one it does
// not fit is C9-149's finding), never on a complete trace (the count is
// known from the QP's creation), and not from a NAK that may be late or
// whose PSN no legal responder gives.
func (m *MSNModel) nakBound(c *harness.Conn, r *trace.Record, fits bool) {
	p := r.Packet
	if !m.started || c.Complete() {
		return
	}
	if why, _ := c.LateWhy(r); why != "" || wrongNAKPSN(c, p) != "" {
		return
	}
	if p.AETH.Kind() == wire.KindRNR || p.AETH.IsNAK(wire.NAKPSNSequence) {
		if e := c.Expected(); !e.HaveLo || p.PSN.AtOrAfter(e.Lo) {
			m.stop, m.stopSeq = r, c.Seq()
		}
	}
	u := m.unwrap(p.AETH.MSN)
	if fits {
		m.eachBasis(func(b *basis) {
			if !(b.haveMono && u < b.mono) && (!b.haveFirm || u > b.firm) {
				b.firm, b.firmRec, b.haveFirm, b.firmNAK = u, r, true, true
			}
		})
	}
	if !c.FromStart() && c.HaveReq && p.PSN.Before(c.FirstReq) {
		// The count takes requests before the capture's first as done
		// before it began; this NAK shows some were not (for example,
		// a NAK of a READ the capture missed).
		return
	}
	a, ok := m.count(p.PSN, false, true)
	if !ok {
		return
	}
	hi := bound{v: u - int64(a) + int64(m.unseenFrom(c, p.PSN)), rec: r, u: u, n: a, nak: true,
		pastShown: m.haveNext && p.PSN.After(m.nextLo)}
	m.eachBasis(func(b *basis) {
		if b.haveLo && hi.v < b.lo.v {
			return
		}
		if !b.haveHi || hi.v < b.hi.v {
			b.hi, b.haveHi = hi, true
		}
	})
}

// fitsNone returns check's violation on the model's account when check
// finds one on every open account (and no Judgement otherwise).
func (m *MSNModel) fitsNone(check func(b *basis) Judgement) Judgement {
	j := check(&m.basis)
	if !j.Violation {
		return j
	}
	for i := range m.alts {
		if !check(&m.alts[i]).Violation {
			return Judgement{}
		}
	}
	return j
}

// wrongNAKPSN says why the PSN of NAK p cannot be the one a legal
// responder gives it ("" when it can): beyond every expected PSN the
// connection's reconstruction allows, or a PSN no request in the trace
// carried for a NAK that must name a request (on a trace holding every
// request, harness.Conn.SeesEveryRequest, the PSN is wrong; on any other,
// a request the capture dropped may carry it).
func wrongNAKPSN(c *harness.Conn, p *wire.Packet) string {
	if e := c.Expected(); e.HaveHi && p.PSN.After(e.Hi) {
		return fmt.Sprintf("the NAK names PSN %d, beyond any PSN the responder could have expected (at most %d): its PSN is judged under its own clause, and the MSN it should carry is open", p.PSN, e.Hi)
	}
	if _, _, _, ok := c.Req(p.PSN); !ok && !p.AETH.IsNAK(wire.NAKPSNSequence) && c.ReadSpanAt(p.PSN) == nil {
		if c.SeesEveryRequest() {
			return fmt.Sprintf("the NAK names PSN %d, which no request carried: its PSN is judged under its own clause, and the MSN it should carry is open", p.PSN)
		}
		// Off the responder's complete view, a request the capture
		// dropped may be the one the NAK names (every message before
		// it then completed), or the NAK's PSN is wrong: which
		// messages it follows is open.
		return fmt.Sprintf("the NAK names PSN %d, which no request in the capture carried: a request the capture dropped may carry it, or its PSN is wrong (judged under its own clause), so the MSN it should carry is open", p.PSN)
	}
	return ""
}

// insideRead reports whether r is an Acknowledge whose PSN a READ's range,
// known since, holds strictly inside (Conn.ReadInterior): no completion
// has such a PSN, so its count fixes nothing (for example, an ACK inside a
// READ's range seen while the path MTU was unknown: a later NAK is not
// held to its count).
func insideRead(c *harness.Conn, r *trace.Record) bool {
	return r.Packet.Opcode == wire.Acknowledge && c.ReadInterior(r.Packet.PSN) != nil
}

// unchecked reports whether answer r's count is one nothing checked from
// above (Judgement.OtherUnchecked).
func (m *MSNModel) unchecked(r *trace.Record) bool {
	return r.Frame == m.firstAck || r.Frame == m.unbounded
}
