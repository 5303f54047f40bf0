package harness

import (
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file keeps what the responses' MSNs show of their order and of the
// messages completed between them (C9-148's counts as the reconstruction
// reads them).

// ackCounts keeps what the positive ACKs absorbed in place (not late)
// show of their order by their MSNs: top is the highest MSN, topPSN the
// newest PSN an ACK carrying it named and topOldest the oldest,
// belowPSN the newest PSN an ACK carrying a lower one named (haveBelow).
// An ACK carries the count of messages completed when it was sent, which
// never goes back (C9-148): an ACK whose MSN is above another's was sent
// after it, whatever the capture's order.
//
// base is the highest count any positive response carried (a positive
// ACK, an ATOMIC Acknowledge, a READ response ending its answer: each
// counts the messages up to its PSN at least), baseOldest the oldest PSN
// such a response named: Conn.CompletedByMSN counts from there, as from
// top and topOldest. topRec and baseRec are the responses that named
// topOldest and baseOldest with those counts.
type ackCounts struct {
	top                         uint32
	topPSN, topOldest, belowPSN wire.PSN
	topRec                      *trace.Record
	haveTop, haveBelow          bool
	base                        uint32
	baseOldest                  wire.PSN
	baseRec                     *trace.Record
	haveBase                    bool
	// late is the MSN of the latest positive ACK that came late
	// (Conn.IsLate, lateRec), latePSN the PSN it named (haveLate):
	// whenever it was sent, its count covered the messages up to its
	// PSN at least, and Conn.CompletedByMSN counts from there too.
	late     uint32
	latePSN  wire.PSN
	lateRec  *trace.Record
	haveLate bool
}

// noteLate takes in positive ACK r, late (Conn.IsLate).
func (a *ackCounts) noteLate(r *trace.Record) {
	a.late, a.latePSN, a.lateRec, a.haveLate = r.Packet.AETH.MSN&0xFFFFFF, r.Packet.PSN, r, true
}

// noteCount takes in positive response r, whose MSN counts the messages
// up to its PSN at least (Conn.countsUpTo).
func (a *ackCounts) noteCount(r *trace.Record) {
	p := r.Packet
	msn := p.AETH.MSN & 0xFFFFFF
	switch {
	case !a.haveBase || MSNAfter(msn, a.base):
		a.base, a.baseOldest, a.baseRec, a.haveBase = msn, p.PSN, r, true
	case msn == a.base && p.PSN.Before(a.baseOldest):
		a.baseOldest, a.baseRec = p.PSN, r
	}
}

// note takes in positive ACK r.
func (a *ackCounts) note(r *trace.Record) {
	p := r.Packet
	msn := p.AETH.MSN & 0xFFFFFF
	a.noteCount(r)
	switch {
	case !a.haveTop:
		a.top, a.topPSN, a.topOldest, a.topRec, a.haveTop = msn, p.PSN, p.PSN, r, true
	case MSNAfter(msn, a.top):
		if !a.haveBelow || a.topPSN.After(a.belowPSN) {
			a.belowPSN, a.haveBelow = a.topPSN, true
		}
		a.top, a.topPSN, a.topOldest, a.topRec = msn, p.PSN, p.PSN, r
	case msn == a.top && p.PSN.After(a.topPSN):
		a.topPSN = p.PSN
	case msn == a.top && p.PSN.Before(a.topOldest):
		a.topOldest, a.topRec = p.PSN, r
	}
}

// countsUpTo reports whether response r, not late, carries in its MSN a
// count of every message up to its PSN at least, which the trace fixes:
// a positive ACK (exactly that count: it names the newest request
// completed), an ATOMIC Acknowledge at an ATOMIC's PSN, a READ
// response ending its answer at its READ's known last PSN, as an Only or
// a Last as the READ's length asks (either may replay an answer with the
// count of a later moment). A response PSN no request gives is its own
// clause's fault, not a count.
func (c *Conn) countsUpTo(r *trace.Record) bool {
	p := r.Packet
	if !opc.Has(p.Opcode, wire.HdrAETH) || !p.AETH.IsACK() || c.IsLate(r) {
		return false
	}
	switch opc.Class(p.Opcode) {
	case wire.ClassAck:
		return true
	case wire.ClassReadResponse:
		// An Only answers a READ of one packet, a Last one of more: a
		// Last at a one-packet READ's PSN belongs to another READ's
		// answer, at a wrong PSN (C9-96's fault, not a count).
		s := c.ReadSpanAt(p.PSN)
		return opc.EndsMessage(p.Opcode) && s != nil && s.Known() && s.LastMax == p.PSN &&
			(p.Opcode == wire.ReadResponseOnly) == (s.First == p.PSN)
	case wire.ClassAtomicAck:
		rop, _, _, ok := c.Req(p.PSN)
		return ok && opc.Class(rop) == wire.ClassAtomic
	}
	return false
}

// countClash is a positive ACK whose count leaves no room for the
// messages the trace shows ending between its PSN and that of a later
// response (pairCounts), found when response r was delivered.
type countClash struct {
	r, ack, later *trace.Record
	end           wire.PSN
}

// maxOpenCounts bounds the ACKs pairCounts keeps unconfirmed.
const maxOpenCounts = 8

// pairCounts pairs positive response r, whose MSN counts the messages up
// to its PSN (an ACK exactly, an ATOMIC acknowledgment or a READ's last
// response at least: countsUpTo), with the responses kept before it, for
// CountClash. A positive ACK at PSN a carries exactly the count when a
// was the newest request completed, and any such response at a later PSN
// b at least that count plus the messages the trace shows ending in
// (a, b] (countedBy: a READ right after a may be counted at a already),
// whenever each was sent.
//
// r is paired with the ACKs at earlier PSNs not yet confirmed (open): an
// ACK whose count a later ACK of a later PSN showed no higher than it
// leaves room for is confirmed and paired no more, since a response too
// low for its count is too low for the later ACK's too (their counts are
// exact). An ACK r is also paired with the ATOMIC acknowledgments and
// READ answers kept at later PSNs (an ACK going back behind an earlier
// ACK is judged as such by C9-95). A late ACK (IsLate) is paired with
// the responses at later PSNs only: one whose count falls short of an
// earlier ACK's went back, which the MSN's own clause judges.
func (c *Conn) pairCounts(r *trace.Record) {
	c.clash = countClash{r: r}
	isAck := r.Packet.Opcode == wire.Acknowledge
	late := c.IsLate(r)
	if isAck && c.countedTop.After(r.Packet.PSN) {
		for i := 1; i <= min(c.nCounted, countedDepth); i++ {
			x := c.counted[(c.nCounted-i)%countedDepth]
			if x.Packet.Opcode == wire.Acknowledge || !x.Packet.PSN.After(r.Packet.PSN) {
				continue
			}
			if end, ok := c.countPasses(r, x, true); ok {
				c.clash.ack, c.clash.later, c.clash.end = r, x, end
				break
			}
		}
	}
	// An ACK beyond every request shown may be its own PSN's fault
	// (C9-95's, judged on its own): no count past it is taken from it.
	beyond := isAck && c.HaveReq && !r.Packet.PSN.Before(c.NextReq)
	keep := c.openCounts[:0]
	for _, x := range c.openCounts {
		if c.readInterior(x.Packet.PSN) {
			continue // inside a READ's range known since: no count of a completion
		}
		if !beyond && !late && x.Packet.PSN.Before(r.Packet.PSN) {
			end, ok := c.countPasses(x, r, false)
			switch {
			case ok && c.clash.ack == nil:
				c.clash.ack, c.clash.later, c.clash.end = x, r, end
				continue // found: not paired again
			case isAck && !ok && msnAhead(r.Packet.AETH.MSN, x.Packet.AETH.MSN) >= 0:
				continue // confirmed
			}
		}
		keep = append(keep, x)
	}
	c.openCounts = keep
	if isAck && c.clash.ack != r {
		if len(c.openCounts) == maxOpenCounts {
			c.openCounts = append(c.openCounts[:0], c.openCounts[1:]...)
		}
		c.openCounts = append(c.openCounts, r)
	}
}

// CountClash returns, for response r being delivered, a positive ACK
// whose count leaves no room for the messages the trace shows ending
// between its PSN and that of a later positive response, one of them r
// (pairCounts): the ACK's count held a message past its PSN, so it was
// sent after the responder completed the request at PSN end (by the
// first such message: firstCountedBy; the later response's PSN where the
// ACK's count passes its count) and names a PSN behind it; or one of the
// counts is wrong. nil when there is none. Where the later response came
// first in the trace with the lower count, the count went back, which
// the MSN's own clause judges: not returned.
func (c *Conn) CountClash(r *trace.Record) (ack, later *trace.Record, end wire.PSN) {
	if c.clash.r != r {
		return nil, nil, 0
	}
	return c.clash.ack, c.clash.later, c.clash.end
}

// countPasses reports whether positive ACK ack counts more than response
// later, at a later PSN, leaves room for (CountClash), and the PSN of the
// first request it shows completed past its own. above: ack may carry a
// higher count than later (ack came after it in the trace).
func (c *Conn) countPasses(ack, later *trace.Record, above bool) (wire.PSN, bool) {
	a, b := ack.Packet, later.Packet
	if b.PSN.Diff(a.PSN) > maxEndsScan {
		return 0, false
	}
	switch room := msnAhead(b.AETH.MSN, a.AETH.MSN); { // how far the count may have risen
	case room < 0:
		return b.PSN, above
	case room < b.PSN.Diff(a.PSN) && c.countedBy(a.PSN, b.PSN, room+1) > room:
		return c.firstCountedBy(a.PSN, b.PSN), true
	}
	return 0, false
}

// countedBy counts, up to limit, the messages a response at PSN b has
// counted that a positive ACK at PSN a had not (countPasses): those of
// the requests the trace shows in (a, b] ending one (a SEND or WRITE Last
// or Only, an ATOMIC), and the READs among them, which the responder
// counts by their last response at the latest, before any later request
// executes (newReadAt: not a partial retry). A READ right after a is left out: the responder may have
// counted it as it validated it, while a was still the newest completed.
func (c *Conn) countedBy(a, b wire.PSN, limit int) int {
	n := 0
	span := min(b.Diff(a), maxEndsScan)
	for p, i := a.Next(), 0; i < span && n < limit; p, i = p.Next(), i+1 {
		switch e := c.reqAt(p); {
		case !e.holds(p):
		case e.op != wire.ReadRequest:
			if opc.EndsMessage(e.op) {
				n++
			}
		case i > 0 && c.newReadAt(p):
			n++
		}
	}
	return n
}

// newReadAt reports whether the trace shows a READ at PSN p that begins
// a new message: the PSN before it is another request's, or a READ's
// known last (a READ request inside an earlier READ's range is a partial
// retry of that READ).
func (c *Conn) newReadAt(p wire.PSN) bool {
	if e := c.reqAt(p); !e.holds(p) || e.op != wire.ReadRequest {
		return false
	}
	q := p.Add(-1)
	if e := c.reqAt(q); e.holds(q) && e.op != wire.ReadRequest {
		return true
	}
	return c.readEndsAt(q)
}

// firstCountedBy is the first PSN in (a, b] the responder had completed
// by its first message countedBy counts: that message's end, or the PSN
// before a READ (which was counted once every request before it had
// completed); b where there is none.
func (c *Conn) firstCountedBy(a, b wire.PSN) wire.PSN {
	for q, i := a.Next(), 0; q.Before(b) && i < maxEndsScan; q, i = q.Next(), i+1 {
		switch e := c.reqAt(q); {
		case !e.holds(q):
		case e.op == wire.ReadRequest && q != a.Next() && c.newReadAt(q):
			return q.Add(-1)
		case e.op != wire.ReadRequest && opc.EndsMessage(e.op):
			return q
		}
	}
	return b
}

// msnAhead is how far MSN a is ahead of MSN b (negative: behind), in the
// MSN's 24-bit serial arithmetic.
func msnAhead(a, b uint32) int { return int(int32((a-b)<<8) >> 8) }

// AckDatedPast returns the newest PSN that a positive ACK absorbed before
// positive ACK r, with an MSN lower than r's, named, when it is past r's:
// that ACK was sent before r, which goes back behind it.
func (c *Conn) AckDatedPast(r *trace.Record) (wire.PSN, bool) {
	a := &c.ackCounts
	p := r.Packet
	msn := p.AETH.MSN & 0xFFFFFF
	var last wire.PSN
	have := false
	switch {
	case !a.haveTop:
	case MSNAfter(msn, a.top):
		last, have = a.topPSN, true
		if a.haveBelow && a.belowPSN.After(last) {
			last = a.belowPSN
		}
	case msn == a.top:
		last, have = a.belowPSN, a.haveBelow
	}
	return last, have && last.After(p.PSN)
}

// MSNAfter reports whether MSN a is after MSN b (24-bit serial order).
func MSNAfter(a, b uint32) bool {
	d := (a - b) & 0xFFFFFF
	return d != 0 && d < 1<<23
}

// EndsMessageIn reports whether the trace showed a request that ends a
// message other than a READ (a SEND or RDMA WRITE Only or Last, an
// ATOMIC) with a PSN after a, up to b.
func (c *Conn) EndsMessageIn(a, b wire.PSN) bool { return c.endsIn(a.Next(), b, 1) > 0 }
