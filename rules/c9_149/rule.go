// Package c9_149 checks C9-149 (§9.7.7.1): the MSN field is valid in
// every AETH the responder sends, whatever its syndrome: ACK, RNR NAK or
// NAK. A NAK completes nothing, so its MSN is the MSN of the moment.
package c9_149

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
const ID = "C9-149"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		return &monitor{t: answers.Shared(c), shared: answers.SharedMSNModel(c)}
	}})
}

// monitor keeps the same model of message completions as C9-148
// (answers.MSNModel), shaped only by ACK-kind AETHs, and checks the MSN
// of every Acknowledge carrying a NAK or RNR NAK syndrome against it:
//   - not below an MSN the responder already sent (nothing un-completes);
//   - not below the count of SEND, WRITE and ATOMIC messages ending
//     before a NAK's PSN (the responder had received, so completed, them;
//     READs before it may still be streaming and are not counted; an RNR
//     NAK's PSN is not used this way);
//   - not above the count of new messages that had reached the responder.
//
// Indeterminate: a NAK before any ACK-kind AETH in a capture whose start
// is unknown (nothing fixes the MSN yet), and captures that miss requests
// (as for C9-148; also a NAK whose MSN is above the count where the
// capture missed requests after its PSN that a response showed
// completed). An active run shows the QP from its creation, when the MSN
// is 0, so every NAK there is judged.
//
// One root cause, one clause: where an AETH's MSN disagreed with the
// count (C9-148's fault, or an answer that may replay an old one), a NAK
// that fits the count before it or the one it starts is no fault of its
// own (responses.MSNModel holds both).
type monitor struct {
	t      *answers.Tracker
	shared *answers.SharedMSN // C9-148's too
	// stops are the sequence and RNR NAKs not yet followed by a
	// positive ACK at or past their PSN (stoppedBefore).
	stops []*trace.Record
}

// maxStops bounds the NAKs stoppedBefore keeps.
const maxStops = 8

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	if opc.IsRequest(r.Packet.Opcode) {
		m.shared.Request(c, r, ev.MTU)
		return
	}
	if j := m.shared.NAK(c, r); !j.Skip {
		if j.Violation {
			// Where it rests on a count the shared model judged wrong,
			// which C9-148 holds to the connection's end, it is judged
			// then, once that clause has said whether it blamed the
			// count (heldJudge). (The closure takes copies: capturing
			// the judgement itself would put every NAK's on the heap.)
			nak, v := r, j
			answers.AwaitCount(c, nak, v.Other, func(c *harness.Conn, held bool) {
				if held {
					heldJudge(c, nak, v)
					return
				}
				judge(c, nak, v)
			})
		} else {
			judge(c, r, j)
		}
		if k := c.NAKCountPast(r); !j.Violation && k.Past > 0 && !c.Complete() {
			// It rests on the count k.PastFromRec carried: where C9-148
			// blames that count, no finding of its own (AwaitCount).
			nak := r
			answers.AwaitCount(c, nak, k.PastFromRec, func(c *harness.Conn, held bool) {
				if cl := answers.CountClause(c, k.PastFromRec); held && cl != "" {
					c.Indeterminate(ID, harness.RestsOnBlamed(pastMessage(nak, k), "count", k.PastFromRec, cl))
					return
				}
				countsPast(c, nak, k)
			})
		}
		if a := r.Packet.AETH; !j.Violation && !c.Complete() && !c.IsLate(r) && (a.Kind() == wire.KindRNR || a.IsNAK(wire.NAKPSNSequence)) {
			if len(m.stops) == maxStops {
				m.stops = m.stops[1:]
			}
			m.stops = append(m.stops, r)
		}
		return
	}
	m.shared.Model(c, r, ev)
	if _, _, _, shown := c.Req(r.Packet.PSN); harness.IsAck(r.Packet) && len(m.stops) > 0 && !c.IsLate(r) && shown && c.AckPSNFault(r) == "" {
		// (An ACK whose PSN names no request the trace shows, or one
		// no legal responder gives, covers nothing certain: C9-95's.)
		m.stoppedBefore(c, r)
	}
}

// stoppedBefore judges the NAKs kept against positive ACK b at or past
// their PSNs: a sequence or RNR NAK names where the responder stopped, so
// its MSN counts the messages before its PSN x only; b acknowledges every
// request up to its PSN, whenever it was sent, so its MSN counts those
// and every message ending from x to b's PSN too. A NAK's MSN above b's
// less the messages the trace shows ending from x to b (READs left out:
// they may be counted early) is wrong in any order of the two (for
// example, an RNR NAK naming a request it had completed, with no answer
// before it to bound its count).
func (m *monitor) stoppedBefore(c *harness.Conn, b *trace.Record) {
	bp := b.Packet
	k := 0
	for _, n := range m.stops {
		np := n.Packet
		if !np.PSN.AtOrBefore(bp.PSN) {
			m.stops[k] = n
			k++
			continue
		}
		ends := c.EndsShownIn(np.PSN, bp.PSN)
		mn, mb := np.AETH.MSN&0xFFFFFF, bp.AETH.MSN&0xFFFFFF
		if top := (mn + uint32(ends)) & 0xFFFFFF; !harness.MSNAfter(top, mb) {
			continue
		}
		alts := pastAlts(np, fmt.Sprintf("the NAK is right: the ACK of frame %d counts too few messages for its PSN %d", b.Frame, bp.PSN))
		c.ViolationEitherOn(b, "C9-148", n, fmt.Sprintf("the NAK carries MSN %d, while the ACK of frame %d, which covers every request up to PSN %d, carries MSN %d and %d messages end from the NAK's PSN %d up to it: the NAK counts a message at or past the PSN it names", mn, b.Frame, bp.PSN, mb, ends, np.PSN),
			[]string{fmt.Sprintf("MSN %d or less (no message at or past PSN %d completed)", (mb-uint32(ends))&0xFFFFFF, np.PSN)}, fmt.Sprintf("%s with MSN %d", np.AETH, mn), alts...)
	}
	clear(m.stops[k:])
	m.stops = m.stops[:k]
}

// countsPast reports sequence or RNR NAK n, whose MSN counts k.Past
// messages more than every PSN before its own may end, from the count
// of the response at PSN k.PastFrom (harness.Conn.NAKCountPast): it
// counts a message at or past the PSN it names, or a count is wrong
// (for example, an ACK's MSN too low, which a sequence NAK after it
// shows where no answer between is firm enough to tell).
func countsPast(c *harness.Conn, n *trace.Record, k harness.Completed) {
	np := n.Packet
	mn := np.AETH.MSN & 0xFFFFFF
	alts := pastAlts(np, fmt.Sprintf("the NAK is right: the response with PSN %d counts too few messages (MSN %d)", k.PastFrom, k.PastFromMSN))
	c.ViolationEither(n, pastMessage(n, k),
		[]string{fmt.Sprintf("MSN %d or less (no message at or past PSN %d completed)", (mn-uint32(k.Past))&0xFFFFFF, np.PSN)}, fmt.Sprintf("%s with MSN %d", np.AETH, mn), alts...)
}

// pastMessage is countsPast's message for NAK n.
func pastMessage(n *trace.Record, k harness.Completed) string {
	np := n.Packet
	return fmt.Sprintf("the NAK carries MSN %d, %d more than the messages that may end from the response with PSN %d (MSN %d) up to the PSN before its own %d leave room for: it counts a message at or past the PSN it names", np.AETH.MSN&0xFFFFFF, k.Past, k.PastFrom, k.PastFromMSN, np.PSN)
}

// pastAlts are the clauses a sequence or RNR NAK np whose MSN counts a
// message at or past its PSN may break: C9-149 (its MSN), its PSN's
// clause (C9-111 and C9-121, or C9-113), and C9-148 (the other
// response's count, as other says).
func pastAlts(np *wire.Packet, other string) []reports.Alternative {
	mn := np.AETH.MSN & 0xFFFFFF
	psnClause, stopped := "C9-111", "its expected PSN"
	if np.AETH.Kind() == wire.KindRNR {
		psnClause, stopped = "C9-113", "the request it could not take"
	}
	alts := []reports.Alternative{
		{ID: ID, If: fmt.Sprintf("PSN %d is right: no message at or past it had completed, so the count of the moment was lower", np.PSN)},
		{ID: psnClause, If: fmt.Sprintf("MSN %d is right: the responder had completed a message at or past PSN %d, which is then not %s", mn, np.PSN, stopped)}}
	if psnClause == "C9-111" {
		alts = append(alts, reports.Alternative{ID: "C9-121", If: alts[1].If})
	}
	return append(alts, reports.Alternative{ID: "C9-148", If: other})
}

// judge reports the judgement of a NAK's MSN.
func judge(c *harness.Conn, r *trace.Record, j answers.Judgement) {
	switch {
	case j.Violation && answers.CountBlamed(c, j.Other):
		c.Indeterminate(ID, harness.RestsOnBlamed(j.Message, "count", j.Other, answers.CountClause(c, j.Other)))
	case j.Undecided && j.Open:
		c.Unresolved(ID, j.Reason)
	case j.Undecided:
		c.Indeterminate(ID, j.Reason)
	case j.Violation && j.PastPSN:
		// One root cause, two readings: the NAK names where the
		// responder stopped, or its MSN is the count of the moment.
		p := r.Packet
		psnClause, stopped := "C9-111", "its expected PSN"
		if p.AETH.Kind() == wire.KindRNR {
			psnClause, stopped = "C9-113", "the request it could not take"
		}
		alts := []reports.Alternative{
			{ID: ID, If: fmt.Sprintf("PSN %d is right: no message at or past it had completed, so the count of the moment is lower", p.PSN)},
			{ID: psnClause, If: fmt.Sprintf("MSN %d is right: the responder had completed a message at or past PSN %d, which is then not %s", p.AETH.MSN&0xFFFFFF, p.PSN, stopped)}}
		if psnClause == "C9-111" {
			// The sequence-error case of the same meaning.
			alts = append(alts, reports.Alternative{ID: "C9-121", If: alts[1].If})
		}
		var counted *trace.Record // the other count the finding may blame
		if j.Other != nil && !j.OtherNAK {
			counted = j.Other
			alts = append(alts, reports.Alternative{ID: "C9-148", If: fmt.Sprintf("the NAK is right: the answer of frame %d counted too few messages for the PSN it names", j.Other.Frame)})
		}
		c.ViolationEitherOn(counted, "C9-148", r, j.Message, append(j.Expected, "a NAK PSN past every message its MSN counts"), j.Seen, alts...)
	case j.Violation && j.OtherUnchecked:
		// The count it disagrees with is one nothing before it checked
		// (the first the capture shows, or one above the count that
		// only a replay explained): one of the two is wrong.
		eitherCount(c, r, j, "a count nothing before it checked")
	case j.Violation:
		c.Violation(ID, r, j.Message, j.Expected, j.Seen)
	default:
		c.Checked(ID)
	}
}

// heldJudge reports the violation j of NAK r, which rested on a count
// the shared model judged wrong, at the connection's end (AwaitCount).
func heldJudge(c *harness.Conn, r *trace.Record, j answers.Judgement) {
	if !j.PastPSN && !answers.CountBlamed(c, j.Other) {
		// C9-148 left that count open (it is wrong unless something
		// unseen happened): one of the two is wrong.
		eitherCount(c, r, j, "whose count disagreed with the responses before it")
		return
	}
	judge(c, r, j)
}

// eitherCount reports the violation j of NAK r as one finding naming
// C9-149 (the NAK's MSN) and C9-148 (the count of j.Other, which what
// says is in doubt).
func eitherCount(c *harness.Conn, r *trace.Record, j answers.Judgement, what string) {
	c.ViolationEitherOn(j.Other, "C9-148", r, j.Message, j.Expected, j.Seen,
		reports.Alternative{ID: ID, If: fmt.Sprintf("the MSN of frame %d is right: the NAK's is not the count of the moment", j.Other.Frame)},
		reports.Alternative{ID: "C9-148", If: fmt.Sprintf("the NAK's MSN is right: frame %d, %s, counted wrong", j.Other.Frame, what)})
}

func (m *monitor) End(*harness.Conn) {}
