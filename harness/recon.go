package harness

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file is the connection's reconstruction that every monitor reads
// (docs/verdicts.md): what the trace proves about the
// responder's expected PSN, the PSN ranges READ requests reserve (learnt
// from the requests and from the responses that close them), which
// requests the responder dropped as out of sequence, and in what order
// each side sent its packets when it counts its IPv4 Identification up.
// Conn.absorb keeps it up to date after the monitors saw a record, so
// during Observe it describes the trace before the record.

// minMTU and maxMTU bound an unknown path MTU: a READ of L bytes then
// reserves between ceil(L/maxMTU) and ceil(L/minMTU) PSNs.
const (
	minMTU = 256
	maxMTU = 4096
)

// spanRing is how many READ spans a connection remembers.
const spanRing = 256

// ReadSpan is the PSN range a new RDMA READ request reserved: from First
// to a last PSN between LastMin and LastMax (equal once known). The span
// is known from the path MTU, from the READ's Last or Only response (the
// response numbering closes it even when the MTU is not known), or from
// the next new request, whose PSN follows the span directly.
type ReadSpan struct {
	First            wire.PSN
	Length           uint32
	LastMin, LastMax wire.PSN
	Frame            int
	// Closed is set once a Last or Only response at the span's last PSN
	// was seen.
	Closed bool
	// ordered: when the span was recorded, it began after the previous
	// span's furthest end, less than orderedStep PSNs after the previous
	// span's first PSN, and spanned less than orderedStep PSNs (see
	// Conn.ReadSpanAt).
	ordered bool
}

// orderedStep bounds the steps and lengths of ordered spans: a ring of
// spanRing of them covers less than 2^23 PSNs, so that PSN order within
// it is the order of the serial numbers.
const orderedStep = 1 << 15

// Known reports whether the span's last PSN is known.
func (s *ReadSpan) Known() bool { return s.LastMin == s.LastMax }

// Last returns the span's last PSN and whether it is known.
func (s *ReadSpan) Last() (wire.PSN, bool) { return s.LastMin, s.Known() }

// Holds reports whether p may lie in the span (between First and the
// furthest last PSN it can have).
func (s *ReadSpan) Holds(p wire.PSN) bool { return p.InRange(s.First, s.LastMax) }

// fix narrows the span to the last PSN last when that is within its
// bounds.
func (s *ReadSpan) fix(last wire.PSN) {
	if last.InRange(s.LastMin, s.LastMax) {
		s.LastMin, s.LastMax = last, last
	}
}

// newSpan records a new READ request.
func (c *Conn) newSpan(r *trace.Record) *ReadSpan {
	p := r.Packet
	// The order bookkeeping (ReadSpan.ordered, Conn.unordered) counts
	// the spans after the oldest one in the ring that are not ordered.
	ordered := false
	if c.nSpans > 0 {
		prev := &c.spans[(c.nSpans-1)&(len(c.spans)-1)]
		ordered = p.PSN.After(prev.LastMax) && p.PSN.Diff(prev.First) < orderedStep
	}
	if c.nSpans >= spanRing && !c.spans[(c.nSpans+1)&(len(c.spans)-1)].ordered {
		c.unordered-- // the second oldest becomes the oldest
	}
	if c.nSpans == len(c.spans) && len(c.spans) < spanRing {
		// The ring is full, not yet at its largest: double it (the
		// spans keep their places, as nSpans is its length).
		grown := make([]ReadSpan, max(2*len(c.spans), 8))
		copy(grown, c.spans)
		c.spans = grown
	}
	s := &c.spans[c.nSpans&(len(c.spans)-1)]
	*s = ReadSpan{First: p.PSN, Length: p.RETH.Length, Frame: r.Frame}
	if mtu := c.MTU(); mtu != 0 {
		s.LastMin = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1)
		s.LastMax = s.LastMin
	} else {
		s.LastMin = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, maxMTU) - 1)
		s.LastMax = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, minMTU) - 1)
	}
	s.ordered = ordered && (uint32(s.LastMax)-uint32(s.First))&wire.PSNMask < orderedStep
	if c.nSpans > 0 && !s.ordered {
		c.unordered++
	}
	c.nSpans++
	return s
}

// maxBoundScan bounds how many PSNs boundBySeen looks through.
const maxBoundScan = 1 << 12

// boundBySeen ends the open span s of a READ seen first behind newer
// requests (a resend of a READ whose first copy the capture missed)
// before the first request already seen after it that is no READ: the
// requester numbered that request after the READ's last PSN. (A READ
// there may be a partial retry of this one, inside its span.) Found by a
// lossy conformant exchange: the resent READ's span, left open to the
// smallest path MTU, covered the READs after it, whose own spans it hid,
// and their resends were taken for requests beyond the expected PSN.
func (c *Conn) boundBySeen(s *ReadSpan) {
	if s.Known() {
		return
	}
	n := min(s.LastMax.Diff(s.First), maxBoundScan)
	for i := 1; i <= n; i++ {
		x := s.First.Add(i)
		if e := c.reqAt(x); e.holds(x) && e.op != wire.ReadRequest {
			if end := x.Add(-1); end.AtOrAfter(s.LastMin) {
				s.LastMax = end
			}
			return
		}
	}
}

// ReadSpanAt returns the newest new READ whose span may hold p (nil:
// none). With the path MTU learnt since the READ was seen, its span is
// narrowed first.
//
// When every span after the oldest in the ring is ordered (each began
// after the previous one's furthest end, in short steps), the spans are
// disjoint and in PSN order within less than 2^23 PSNs, and a span ending
// before p ends after every older one: the search stops there. Spans only
// ever narrow (their LastMax moves back), which keeps them ordered.
func (c *Conn) ReadSpanAt(p wire.PSN) *ReadSpan {
	n := min(c.nSpans, len(c.spans))
	sorted := c.unordered == 0
	for i := 1; i <= n; i++ {
		s := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]
		if !s.Holds(p) {
			if sorted && p.After(s.LastMax) {
				return nil
			}
			continue
		}
		if !s.Known() {
			if mtu := c.MTU(); mtu != 0 {
				s.fix(s.First.Add(wire.ReadResponsePackets(s.Length, mtu) - 1))
				if !s.Holds(p) {
					// The MTU narrowed the span to end before p (found by
					// a conformant exchange with capture loss: the READ's
					// end had been bounded only by the next request seen).
					return nil
				}
			}
		}
		return s
	}
	return nil
}

// InsideRead reports whether p lies after the first PSN of a new READ's
// span, in the part it surely reserved (up to LastMin): a request with
// that PSN is a partial retry of the READ, not a new message. Where the
// span's end is still open, p beyond LastMin is not counted as inside.
func (c *Conn) InsideRead(p wire.PSN) bool {
	s := c.ReadSpanAt(p)
	return s != nil && p.After(s.First) && p.AtOrBefore(s.LastMin)
}

// ExpectedPSN is what the trace proves about the responder's expected
// PSN: at least Lo (HaveLo) and at most Hi (HaveHi); exact when both are
// known and equal.
type ExpectedPSN struct {
	Lo, Hi         wire.PSN
	HaveLo, HaveHi bool
}

// Exact reports whether the expected PSN is known exactly, and returns it.
func (e ExpectedPSN) Exact() (wire.PSN, bool) {
	return e.Lo, e.HaveLo && e.HaveHi && e.Lo == e.Hi
}

// raise sets the lower bound to at least x (and the upper one with it
// when it falls behind).
func (e *ExpectedPSN) raise(x wire.PSN) {
	if !e.HaveLo || x.After(e.Lo) {
		e.Lo, e.HaveLo = x, true
	}
	if e.HaveHi && e.Hi.Before(e.Lo) {
		e.Hi = e.Lo
	}
}

// pin makes the expected PSN exactly x.
func (e *ExpectedPSN) pin(x wire.PSN) {
	e.Lo, e.Hi, e.HaveLo, e.HaveHi = x, x, true, true
}

// syncExpected makes the expected PSN the window's (window.go) wherever
// the window holds: on a complete trace the two are one.
//
// A positive response showing the responder past the window's expected
// PSN contradicts the window: on a trace said to be complete, the capture
// missed requests that reached the responder. The window is then given
// up (until the responder's own word restarts it), and the expected PSN
// keeps the bounds the evidence gives.
func (c *Conn) syncExpected(r *trace.Record) {
	w := &c.win
	if !w.Holds() {
		return
	}
	op := r.Packet.Opcode
	if ops[op].response && ops[op].headers&wire.HdrAETH != 0 && r.Packet.AETH.IsACK() && c.exp.HaveLo && c.exp.Lo.After(w.Cur()) {
		w.giveUp(fmt.Sprintf("a response (frame %d) shows the responder past PSN %d, beyond the expected PSN %d that the requests in the capture give it: the capture misses requests that reached the responder", r.Frame, c.exp.Lo.Add(-1), w.Cur()))
		return
	}
	c.exp.pin(w.Cur())
}

// Expected returns what the trace proves about the responder's expected
// PSN before the record being observed.
func (c *Conn) Expected() ExpectedPSN { return c.exp }

// ResponsePSNFault says why a response on the connection carried a PSN no
// legal responder gives it ("" when none has so far): a READ response
// stream starting at the PSN of a request that is no READ (C9-96), an
// ATOMIC Acknowledge at the PSN of a request that is no ATOMIC (o9-58),
// an ACK beyond every request on a trace that holds every request
// (C9-95). Conclusions drawn from response PSNs (which messages a
// response completes, where a READ's answer lies, which PSN the responder
// expects) are then no longer forced by the trace: monitors of other
// clauses leave them undecided (one root cause, one clause).
func (c *Conn) ResponsePSNFault() string { return c.psnFault }

// ackPSNFault says why positive ACK r carries a PSN no legal responder
// gives it ("" when it may): beyond every request on a trace that holds
// every request, inside the range of a READ whose response is not
// complete, or at an ATOMIC's PSN before its ATOMIC Acknowledge (an ACK
// cannot carry an ATOMIC's result).
func (c *Conn) ackPSNFault(r *trace.Record) string {
	p := r.Packet
	if !c.HaveReq {
		return ""
	}
	if !p.PSN.Before(c.NextReq) && c.SeesEveryRequest() {
		return fmt.Sprintf("an ACK carries PSN %d, beyond every request sent (frame %d): its PSN is C9-95's fault", p.PSN, r.Frame)
	}
	if rd := c.ReadCovering(p.PSN); rd != nil && !rd.Done {
		return fmt.Sprintf("an ACK carries PSN %d, in the range of the READ at PSN %d whose response is not complete (frame %d): its PSN is C9-95's fault", p.PSN, rd.First, r.Frame)
	}
	if op, _, _, ok := c.Req(p.PSN); ok && ops[op].class == wire.ClassAtomic {
		if _, answered := c.AtomicOriginal(p.PSN); !answered {
			return fmt.Sprintf("an ACK carries PSN %d, an ATOMIC's, before its ATOMIC Acknowledge (frame %d): its PSN is C9-95's fault", p.PSN, r.Frame)
		}
	}
	return ""
}

// ReqClass is how a request stands against the responder's expected PSN.
type ReqClass uint8

// Request classes.
const (
	ReqUnknown ReqClass = iota // the trace does not tell
	ReqInSeq                   // at the expected PSN: executed (unless refused)
	ReqAhead                   // beyond it: dropped, not executed (a PSN sequence error)
	ReqBehind                  // behind it: a duplicate
)

// Classify returns how a request with PSN p stands against the expected
// PSN the trace proves before the record being observed.
func (c *Conn) Classify(p wire.PSN) ReqClass {
	e := c.exp
	switch {
	case e.HaveLo && p.Before(e.Lo):
		return ReqBehind
	case e.HaveHi && p.After(e.Hi):
		return ReqAhead
	}
	if x, ok := e.Exact(); ok && p == x {
		return ReqInSeq
	}
	return ReqUnknown
}

// Dropped reports whether the latest copy of request PSN p seen so far
// is known not to have been executed: it arrived beyond the responder's
// expected PSN, or a later sequence or RNR NAK showed that the responder
// had not reached it. Its next copy is then new to the responder, not a
// duplicate, and it counts in no message count until then.
func (c *Conn) Dropped(p wire.PSN) bool {
	e := c.reqAt(p)
	return e.holds(p) && e.flags&reqDropped != 0
}

// maxDropMark bounds how many request PSNs one NAK marks as dropped.
const maxDropMark = 4096

// markDropped marks the requests seen with PSNs from x up to the newest
// as not executed.
func (c *Conn) markDropped(x wire.PSN) {
	if !c.HaveReq || !x.Before(c.NextReq) {
		return
	}
	n := min(c.NextReq.Diff(x), maxDropMark)
	for i := range n {
		p := x.Add(i)
		if e := c.reqAt(p); e.holds(p) {
			e.setDropped(true)
		}
	}
}

// reconRequest updates the expected PSN with a request at PSN p whose
// span runs to lastMin..lastMax.
func (c *Conn) reconRequest(e *reqEntry, p, lastMin, lastMax wire.PSN) {
	if !c.HaveReq && c.Complete() {
		// The whole connection is in the trace: its first request
		// carries the expected PSN.
		c.exp.pin(p)
	}
	switch c.Classify(p) {
	case ReqInSeq:
		e.setDropped(false)
		if c.Complete() {
			c.exp.Lo, c.exp.Hi = lastMin.Next(), lastMax.Next()
		} else {
			// The request may have been lost after the capture point:
			// the responder expects it still, or has passed it.
			c.exp.Hi = lastMax.Next()
		}
	case ReqAhead:
		e.setDropped(true)
	case ReqBehind:
		e.setDropped(false) // a duplicate, answered as one
	default:
		// Not known to be dropped: the flag speaks of this copy now, not
		// of an earlier one a NAK refused (found by a conformant
		// exchange: a capture's late copy of a refused READ taken as new
		// after its resend had been answered).
		e.setDropped(false)
		if c.exp.HaveHi && p.AtOrBefore(c.exp.Hi) && lastMax.Next().After(c.exp.Hi) {
			// Maybe accepted: the expected PSN may now be past it.
			c.exp.Hi = lastMax.Next()
		}
	}
}

// reconResponse updates the expected PSN and the READ spans with a
// response.
func (c *Conn) reconResponse(r *trace.Record) {
	p := r.Packet
	op := p.Opcode
	switch ops[op].class {
	case wire.ClassAck:
		switch {
		case p.AETH.IsACK():
			if c.psnFault == "" {
				c.psnFault = c.ackPSNFault(r)
			}
			if c.SentBefore(p.PSN) {
				c.exp.raise(p.PSN.Next())
			}
			c.reconCovered(p.PSN)
		case (p.AETH.IsNAK(wire.NAKPSNSequence) || p.AETH.IsRNR()) && c.IsLate(r):
			// Sent before responses already absorbed (or a copy of one
			// whose original the capture lost): the requests seen since
			// it left were not refused by it (found by a conformant
			// exchange: a far copy of an old RNR NAK marked a READ
			// answered since as dropped, and its resend was taken as
			// new).
		case p.AETH.IsNAK(wire.NAKPSNSequence) || p.AETH.IsRNR():
			// A sequence NAK names the expected PSN; an RNR NAK names
			// the refused request, where the expected PSN stays. Every
			// request seen from there on was not executed (yet).
			if !c.exp.HaveLo || p.PSN.AtOrAfter(c.exp.Lo) {
				c.exp.pin(p.PSN)
			}
			c.markDropped(p.PSN)
		}
	case wire.ClassReadResponse:
		if op == wire.ReadResponseFirst || op == wire.ReadResponseOnly {
			if rop, _, _, ok := c.Req(p.PSN); c.psnFault == "" && (ok && rop != wire.ReadRequest || !ok && c.SeesEveryRequest()) {
				c.psnFault = fmt.Sprintf("a READ response stream starts at PSN %d, which no READ request carried (frame %d): its numbering is C9-96's fault", p.PSN, r.Frame)
			}
		}
		s := c.ReadSpanAt(p.PSN)
		if s == nil || !c.SentBefore(s.First) {
			return
		}
		switch op {
		case wire.ReadResponseFirst, wire.ReadResponseOnly:
			if p.PSN == s.First {
				if op == wire.ReadResponseOnly {
					s.fix(p.PSN)
					s.Closed = true
				}
				c.exp.raise(s.LastMin.Next())
				c.reconCovered(p.PSN)
			}
		case wire.ReadResponseLast:
			if p.PSN.After(s.First) {
				s.fix(p.PSN)
				s.Closed = s.Known()
			}
			c.exp.raise(p.PSN.Next())
		default:
			c.exp.raise(p.PSN.Next())
		}
		if s.Known() {
			c.spanUsed(s)
		}
	case wire.ClassAtomicAck:
		if c.psnFault == "" {
			if rop, _, _, ok := c.Req(p.PSN); ok && ops[rop].class != wire.ClassAtomic {
				c.psnFault = fmt.Sprintf("an ATOMIC Acknowledge carries PSN %d, which a request other than an ATOMIC carried (frame %d): its PSN is o9-58's fault", p.PSN, r.Frame)
			} else if c.HaveReq && !p.PSN.Before(c.NextReq) && c.SeesEveryRequest() {
				c.psnFault = fmt.Sprintf("an ATOMIC Acknowledge carries PSN %d, beyond every request sent (frame %d): its PSN is o9-58's fault", p.PSN, r.Frame)
			}
		}
		if c.SentBefore(p.PSN) {
			c.exp.raise(p.PSN.Next())
		}
		c.reconCovered(p.PSN)
	}
}

// spanUsed notes that the READ span s, now known, used every PSN up to its
// last: a request at one of them is a retry of the READ, not a new
// request (the READ was seen before its span was: the path MTU unknown).
func (c *Conn) spanUsed(s *ReadSpan) {
	end := s.LastMin.Next()
	if !c.HaveReq || !end.After(c.NextReq) {
		return
	}
	c.NextReq = end
	if c.haveNext && s.First.Before(c.nextLo) && !c.nextLo.After(end) {
		c.nextLo, c.nextHi = end, end
	}
}

// idOrder learns whether one sender of a connection counts its IPv4
// Identification up from packet to packet.
type idOrder struct {
	last       uint16
	have       bool
	up, others int
}

// idStep bounds the step between consecutive IDs of a sender that counts
// up (other flows of the same host take IDs in between).
const idStep = 1024

// learn takes one packet's ID into account.
func (o *idOrder) learn(r *trace.Record) {
	if !r.HasIPID {
		return
	}
	if o.have {
		d := r.IPID - o.last
		switch {
		case d != 0 && d < idStep:
			o.up++
		case d == 0 || d > 0xFFFF-idStep:
			// The same ID again (a network duplicate) or a little back
			// (reordering): says nothing against counting up.
		default:
			o.others++
		}
	}
	o.last, o.have = r.IPID, true
}

// countsUp reports whether the sender is seen to count its IDs up.
func (o *idOrder) countsUp() bool { return o.up >= 8 && o.others*16 <= o.up }

// CountsIPIDUp reports whether the sender of records going in direction
// d is seen, so far, to count its IPv4 Identification up.
func (c *Conn) CountsIPIDUp(d trace.Dir) bool { return c.ids[d&1].countsUp() }

// IDsVary reports whether the sender of records going in direction d has
// been seen to change its IPv4 Identification: only then does a repeat
// of an ID tell a copy from a second transmission (a sender whose ID
// never changes, at zero or at any other value, gives both the same).
func (c *Conn) IDsVary(d trace.Dir) bool {
	o := &c.ids[d&1]
	return o.up+o.others > 0
}

// SentBeforeByID reports whether a was sent before b by their sender,
// as their IPv4 IDs show (known is false where they cannot tell: other
// senders, IPv6, or a sender not seen to count up).
func (c *Conn) SentBeforeByID(a, b *trace.Record) (before, known bool) {
	if a.Dir != b.Dir || !a.HasIPID || !b.HasIPID || a.Src != b.Src || !c.CountsIPIDUp(a.Dir) {
		return false, false
	}
	d := b.IPID - a.IPID
	switch {
	case d == 0:
		return false, false
	case d < idStep:
		return true, true
	case d > 0xFFFF-idStep:
		return false, true
	}
	return false, false
}

// copyDepth is how many recent packets a CopyRing compares a packet
// with.
const copyDepth = 16

// copyOf reports whether response r repeats one of the connection's
// latest responses, IPv4 Identification included, from a sender whose
// IDs change: a sender gives each packet a new ID, so the repeat is a
// copy the network made or a frame the capture recorded twice, not a
// second transmission (found by the metamorphic tests: duplicated
// frames). A copy of a response says nothing about the responder; a
// requester ignores it as a stale response.
//
// Where no IPv4 Identification tells them apart (IPv6, or a sender whose
// ID does not change), a response repeating a recent one byte for byte
// is shown to the checkers, and a violation they find on it is left
// undecided (Conn.Violation): a copy cannot be told from the responder
// sending it again.
//
// A request repeating a recent one with its IPv4 ID is shown to the
// checkers as well, and remembered as a possible copy: the capture may
// have recorded it twice (the responder received it once) or the network
// copied it (the responder received a duplicate).
func (c *Conn) copyOf(r *trace.Record) bool {
	vary := c.IDsVary(r.Dir)
	if !ops[r.Packet.Opcode].response {
		if r.HasIPID && vary && ops[r.Packet.Opcode].request {
			if cp, _ := c.reqCopies.Check(r, true); cp {
				c.noteMaybeCopy(r)
			}
		}
		return false
	}
	cp, maybe := c.copies.Check(r, vary)
	if maybe {
		c.noteMaybeCopy(r)
	}
	return cp
}

// maxMaybeCopies bounds the possible copies a connection remembers
// (Conn.maybeCopies); past it the oldest are forgotten.
const maxMaybeCopies = 1024

// noteMaybeCopy remembers response r as one that may be a copy.
func (c *Conn) noteMaybeCopy(r *trace.Record) { c.noteMaybe(r, maybeCopy) }

// maybeKind says why a packet is in Conn.maybeCopies.
type maybeKind uint8

const (
	maybeCopy maybeKind = iota // it repeats a recent packet (MaybeCopy)
	lateByID                   // its IPv4 ID shows it was sent before one delivered (lateResponse)
	lateByMSN                  // its MSN is behind one delivered, no ID to tell (staleMSN)
)

// noteMaybe remembers r as a possible copy, or as late.
func (c *Conn) noteMaybe(r *trace.Record, kind maybeKind) {
	if c.maybeCopies == nil {
		c.maybeCopies = map[*trace.Record]maybeKind{}
	}
	if len(c.maybeOrder) == maxMaybeCopies {
		delete(c.maybeCopies, c.maybeOrder[0])
		c.maybeOrder = c.maybeOrder[1:]
	}
	c.maybeCopies[r] = kind
	c.maybeOrder = append(c.maybeOrder, r)
}

// lateResponse notes response r, about to be delivered, as late when its
// sender counts IPv4 IDs up and r's ID is behind the newest response
// already delivered: the responder sent r before that one, and the
// network or the capture delayed r past the reorder buffer (or r is a
// copy of a response whose original the capture lost). The trace's order
// then says nothing of the responder's, so a violation found on r is left
// undecided (Violation), as for a possible copy (MaybeCopy).
func (c *Conn) lateResponse(r *trace.Record) {
	if !c.haveRsp {
		c.newestRsp, c.haveRsp = r.IPID, true
		return
	}
	switch d := c.newestRsp - r.IPID; {
	case d == 0:
	case d < idStep:
		// Less than the reorder buffer asks suffices here: that r may
		// have been sent earlier (nothing shows the sender does not
		// count up) is enough to decide nothing on it.
		if o := &c.ids[r.Dir&1]; o.others*16 <= o.up {
			c.Late++
			c.noteMaybe(r, lateByID)
		}
	default:
		c.newestRsp = r.IPID
	}
}

// staleMSN notes response r, about to be delivered, as late when it
// carries an MSN behind the newest one a response delivered carried, and
// a PSN no later than that response's, where no IPv4 Identification can
// tell when it was sent (IPv6, or a sender whose ID never changes) and
// the trace is a capture that may have lost packets. A responder never lowers its MSN (C9-148), so r was
// either sent again by it (a violation) or sent before that response and
// delayed by the network or the capture, or copied from an original the
// capture lost (none): nothing in the trace tells which, so a violation
// found on r is left undecided (Violation) and r moves none of the
// connection's latest ACK, MSN or NAK. Where the sender's IDs count up,
// lateResponse decides by them instead.
func (c *Conn) staleMSN(r *trace.Record) {
	p := r.Packet
	if ops[p.Opcode].headers&wire.HdrAETH == 0 {
		return
	}
	msn := p.AETH.MSN & 0xFFFFFF
	if !c.haveMSN {
		c.newestMSN, c.newestMSNPSN, c.haveMSN = msn, p.PSN, true
		return
	}
	switch d := (c.newestMSN - msn) & 0xFFFFFF; {
	case d == 0:
	case d < 1<<23:
		// Behind in its PSN too: an earlier moment's response. (One
		// ahead in PSN is judged: after a response whose MSN was too
		// high, the next ones are behind it in MSN only.)
		if c.Settings.Active || c.Settings.Complete || (r.HasIPID && c.IDsVary(r.Dir)) || p.PSN.After(c.newestMSNPSN) {
			return
		}
		switch k, ok := c.maybeCopies[r]; {
		case !ok:
			c.Late++
			c.noteMaybe(r, lateByMSN)
		case k == maybeCopy:
			// A possible copy of an earlier response, and an earlier
			// moment's: late, so that it shapes nothing either.
			c.Late++
			c.maybeCopies[r] = lateByMSN
		}
	default:
		c.newestMSN, c.newestMSNPSN = msn, p.PSN
	}
}

// IsLate reports whether response r came after responses its sender sent
// later (lateResponse): where it stands in the trace says nothing of the
// responder's order.
func (c *Conn) IsLate(r *trace.Record) bool {
	k, ok := c.maybeCopies[r]
	return ok && k != maybeCopy
}

// LateWhy explains why a late response (IsLate) is not judged by where
// it stands in the trace; open says a violation remains possible (the
// responder may have sent it again: no IPv4 Identification tells), so
// its clause cannot pass on it. "" when r is not late.
func (c *Conn) LateWhy(r *trace.Record) (why string, open bool) {
	switch c.maybeCopies[r] {
	case lateByID:
		return fmt.Sprintf("frame %d was sent before responses the trace shows earlier (its IPv4 Identification shows it): the network or the capture delayed it, or copied one whose original the capture lost", r.Frame), false
	case lateByMSN:
		return fmt.Sprintf("frame %d carries an MSN behind one a response the trace shows earlier carried, and no IPv4 Identification tells when it was sent (IPv6, or an ID that never changes): the responder sending it again (a violation) and the network or the capture delaying it, or copying one whose original the capture lost (none), both explain it", r.Frame), true
	}
	return "", false
}

// MaybeCopy reports whether r may be a copy the capture or the network
// made of a recent packet of its sender, not a second transmission: a
// response repeating one byte for byte where no IPv4 Identification tells
// them apart, or a request repeating one with its IPv4 ID (which the
// responder received twice if the network copied it, once if the
// capture recorded it twice).
func (c *Conn) MaybeCopy(r *trace.Record) bool {
	_, ok := c.maybeCopies[r]
	return ok
}

// copyIDs is how many IPv4 Identifications a CopyRing remembers a
// fingerprint for, by their low bits: a copy of a packet whose ID came
// fewer than copyIDs IDs of its sender before is found however many of
// the connection's packets lie between (a capture of two interfaces
// writes each one's packets in batches, so a packet and its copy may be
// far apart in the file).
const copyIDs = 256

// CopyRing remembers a sender's latest packets to tell a copy of one of
// them (the same packet with the same IPv4 Identification) from a new
// transmission.
type CopyRing struct {
	recent [copyDepth]*trace.Record // a ring: the newest at head-1
	n      int                      // how many it holds
	head   int                      // where the next goes
	// byID holds, for packets with an IPv4 ID from a sender whose IDs
	// change, a fingerprint of the latest one by the ID's low bits.
	byID *[copyIDs]idPrint
	// older holds, for a sender whose IDs tell nothing (IPv6, or an ID
	// that never changes), the fingerprints of its copyIDs latest packets
	// past the ring, so that a repeat of one of them is a possible copy
	// however far back its original is.
	older *printSet
}

// printSet is a bounded set of fingerprints: the latest copyIDs added,
// the oldest forgotten first.
type printSet struct {
	ring  [copyIDs]uint64
	n     int
	head  int
	count map[uint64]int32
}

// add remembers fp, forgetting the oldest when full.
func (s *printSet) add(fp uint64) {
	if s.count == nil {
		s.count = make(map[uint64]int32, copyIDs)
	}
	if s.n == copyIDs {
		old := s.ring[s.head]
		if s.count[old]--; s.count[old] == 0 {
			delete(s.count, old)
		}
	} else {
		s.n++
	}
	s.ring[s.head] = fp
	s.head = (s.head + 1) % copyIDs
	s.count[fp]++
}

// has reports whether fp is remembered.
func (s *printSet) has(fp uint64) bool { return s.count[fp] > 0 }

// idPrint is a packet's IPv4 ID and a fingerprint of its sender, headers
// and payload.
type idPrint struct {
	id   uint16
	used bool
	fp   uint64
}

// copySeed seeds the fingerprints' payload hashes in one process.
var copySeed = maphash.MakeSeed()

// fingerprint hashes what samePacket and Check compare of r: its sender,
// headers, payload length and payload.
func fingerprint(r *trace.Record) uint64 {
	p := r.Packet
	bth := p.BTH
	src := r.Src.As16()
	h := mix(0, binary.LittleEndian.Uint64(src[:8]))
	h = mix(h, binary.LittleEndian.Uint64(src[8:]))
	h = mix(h, uint64(bth.Opcode)|uint64(bth.PSN)<<8|uint64(bth.DestQP)<<32)
	h = mix(h, uint64(bth.PKey)|uint64(bth.PadCnt)<<16|uint64(bth.TVer)<<24|b2u(bth.SE)<<32|b2u(bth.M)<<33|b2u(bth.AckReq)<<34|b2u(bth.FECN)<<35|b2u(bth.BECN)<<36|uint64(bth.Resv6)<<40|uint64(bth.Resv7)<<48)
	h = mix(h, uint64(p.AETH.Syndrome)|uint64(p.AETH.MSN)<<8)
	h = mix(h, p.RETH.VA)
	h = mix(h, uint64(p.RETH.RKey)|uint64(p.RETH.Length)<<32)
	h = mix(h, p.Atomic.VA)
	h = mix(h, uint64(p.Atomic.RKey))
	h = mix(h, p.Atomic.SwapAdd)
	h = mix(h, p.Atomic.Compare)
	h = mix(h, p.AtomicAck)
	h = mix(h, uint64(p.Imm)|uint64(p.IETH)<<32)
	h = mix(h, uint64(p.FETH)|uint64(uint32(r.PayloadLen))<<32)
	if len(p.Payload) > 0 {
		h = mix(h, maphash.Bytes(copySeed, p.Payload))
	}
	return h
}

// mix folds v into the hash h (one rotate, xor and multiply: the fields
// are few and the hash only tells packets of one ID apart).
func mix(h, v uint64) uint64 {
	return (bits.RotateLeft64(h, 23) ^ v) * 0x9E3779B97F4A7C15
}

// b2u is 1 for true.
func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// The ring's index wraps with a mask.
var _ [0]struct{} = [copyDepth & (copyDepth - 1)]struct{}{}

// Copy reports whether r repeats one of the packets remembered, IPv4 ID,
// sender and packet alike, when idsVary says the sender's IDs change (a
// sender with one fixed ID may send the same packet twice); it remembers
// r otherwise.
func (k *CopyRing) Copy(r *trace.Record, idsVary bool) bool {
	cp, _ := k.Check(r, idsVary)
	return cp
}

// Check is Copy that also reports, as maybe, a packet repeating one
// remembered (sender and packet alike) where no IPv4 ID can tell: IPv6
// has none, and a sender whose ID does not change gives a second
// transmission the same one. Such a packet is remembered too.
func (k *CopyRing) Check(r *trace.Record, idsVary bool) (cp, maybe bool) {
	ids := r.HasIPID && idsVary
	for i := 1; i <= k.n; i++ { // newest first
		q := k.recent[(k.head-i)&(copyDepth-1)]
		if ids && q.HasIPID && q.IPID != r.IPID {
			continue // another transmission (checked first: the cheap test)
		}
		if q.Src != r.Src || q.PayloadLen != r.PayloadLen || !samePacket(q.Packet, r.Packet) {
			continue
		}
		if ids && q.HasIPID {
			return true, false
		}
		maybe = true
	}
	if ids {
		// Past the ring: the fingerprint of the last packet with r's ID.
		if k.byID == nil {
			k.byID = new([copyIDs]idPrint)
		}
		fp := fingerprint(r)
		slot := &k.byID[r.IPID%copyIDs]
		if slot.used && slot.id == r.IPID && slot.fp == fp {
			return true, false
		}
		*slot = idPrint{id: r.IPID, used: true, fp: fp}
	} else {
		// Past the ring, with no ID to tell: a repeat of an older packet
		// (a capture of two interfaces writes each one's packets in
		// batches) may be a copy as well.
		if k.older == nil {
			k.older = new(printSet)
		}
		if k.n == copyDepth {
			// The packet about to leave the ring.
			k.older.add(fingerprint(k.recent[k.head]))
		}
		if !maybe && k.older.has(fingerprint(r)) {
			maybe = true
		}
	}
	k.recent[k.head] = r
	k.head = (k.head + 1) & (copyDepth - 1)
	if k.n < copyDepth {
		k.n++
	}
	return false, maybe
}

// samePacket reports whether two packets carry the same headers and
// payload.
func samePacket(a, b *wire.Packet) bool {
	return a.BTH == b.BTH && a.AETH == b.AETH && a.RETH == b.RETH && a.Atomic == b.Atomic &&
		a.AtomicAck == b.AtomicAck && a.Imm == b.Imm && a.IETH == b.IETH && a.FETH == b.FETH && bytes.Equal(a.Payload, b.Payload)
}

// reorderDepth is how many records of a connection the Auditor holds
// back to put packets the network reordered after their sender back into
// the sender's order.
const reorderDepth = 8

// heldRing is the size of the reorder buffer's ring: a power of two
// above reorderDepth.
const heldRing = 16

// heldAt returns the i-th record held back, oldest first.
func (c *Conn) heldAt(i int) *trace.Record { return c.held[(c.heldHead+i)&(heldRing-1)] }

// heldSet sets the i-th record held back to r.
func (c *Conn) heldSet(i int, r *trace.Record) { c.held[(c.heldHead+i)&(heldRing-1)] = r }

// hold takes r into the connection's reorder buffer: where its sender
// counts IDs up and r was sent before a record held back from the same
// sender, r goes before it. It returns the records to deliver now, in
// order (valid until the next call).
func (c *Conn) hold(r *trace.Record) []*trace.Record {
	d := r.Dir & 1
	c.ids[d].learn(r)
	if c.nHeld == 0 && !c.ids[0].countsUp() && !c.ids[1].countsUp() {
		c.out[0] = r
		return c.out[:1]
	}
	at := c.nHeld
	if r.HasIPID && c.CountsIPIDUp(r.Dir) {
		// r goes before the earliest held record its sender sent after
		// it (SentBeforeByID, with what does not change along the loop
		// tested once).
		for i := c.nHeld - 1; i >= 0; i-- {
			h := c.heldAt(i)
			if d := h.IPID - r.IPID; d != 0 && d < idStep && h.Dir == r.Dir && h.HasIPID && h.Src == r.Src {
				at = i
			}
		}
	}
	for i := c.nHeld; i > at; i-- {
		c.heldSet(i, c.heldAt(i-1))
	}
	c.heldSet(at, r)
	c.nHeld++
	if at < c.nHeld-1 {
		c.Reordered++
	}
	if c.nHeld <= reorderDepth {
		return nil
	}
	c.out[0] = c.release()
	return c.out[:1]
}

// release takes the first record out of the reorder buffer. The IDs may
// have shown a sender to count up only after its records were taken in
// (a reordering within its first packets): the record its sender sent
// first among those held goes first.
func (c *Conn) release() *trace.Record {
	first := 0
	if f := c.heldAt(0); f.HasIPID && c.ids[f.Dir&1].countsUp() {
		// SentBeforeByID(heldAt(i), f), with what does not change along
		// the loop tested once and the ID test, which in-order traffic
		// fails, first.
		for i := 1; i < c.nHeld; i++ {
			if h := c.heldAt(i); f.IPID-h.IPID-1 < idStep-1 && h.Dir == f.Dir && h.HasIPID && h.Src == f.Src {
				first, f = i, h
			}
		}
	}
	r := c.heldAt(first)
	if first == 0 {
		c.held[c.heldHead] = nil
		c.heldHead = (c.heldHead + 1) & (heldRing - 1)
	} else {
		c.Reordered++
		for i := first; i < c.nHeld-1; i++ {
			c.heldSet(i, c.heldAt(i+1))
		}
		c.heldSet(c.nHeld-1, nil)
	}
	c.nHeld--
	return r
}

// flush returns the records still held back.
func (c *Conn) flush() []*trace.Record {
	out := make([]*trace.Record, 0, c.nHeld)
	for c.nHeld > 0 {
		out = append(out, c.release())
	}
	return out
}

// startState is what the trace shows about the beginning of a
// connection.
type startState uint8

const (
	startUnknown startState = iota // not yet decided
	startSeen                      // the capture holds the connection from its first request
	startMissed                    // the connection began before the capture
)

// maxStartMsgs bounds how many messages the start test waits over.
const maxStartMsgs = 256

// FromStart reports whether the trace shows the connection's beginning
// (nothing of it happened before the capture; packets may still be lost
// on either side of the capture point unless Complete):
// its first request was acknowledged by a response whose MSN counts
// exactly the messages the capture shows from that request on (a new QP
// counts from 0), with no sign of an earlier request or response.
// Settings.Complete (the user's --complete), Settings.FromStart (the
// connection's CM handshake is in the capture, and its first request at
// the starting PSN the handshake announced) and active runs say so from
// the start.
func (c *Conn) FromStart() bool {
	return c.Settings.Active || c.Settings.Complete ||
		(c.Settings.FromStart || c.start == startSeen) && !c.Settings.CaptureDrops
}

// SeesEveryRequest reports whether every request that reached the
// responder is in the trace: only when the trace is complete. A capture
// showing the connection's beginning still holds every request that
// passed its capture point only if it recorded every frame, which it
// cannot prove: a capture drops frames without always saying so (a
// classic pcap has no drop count), so a request the capture dropped
// remains a legal explanation of a response naming a PSN no request in
// the capture carried.
func (c *Conn) SeesEveryRequest() bool { return c.Complete() }

// MissedRequests reports whether the trace shows the capture missed
// requests: a response acknowledged request PSNs that fresh requests
// skipped and none in the trace filled.
func (c *Conn) MissedRequests() bool { return c.missedReq }

// maxGaps bounds the request gaps the reconstruction follows.
const maxGaps = 64

// reqGap is a run of request PSNs the capture skipped: lost before the
// capture point (the requester resends them, from the first) or missed
// by the capture.
type reqGap struct{ first, last wire.PSN }

// reconGap notes the request PSNs a fresh request at p skipped, and the
// ones a request fills.
func (c *Conn) reconGap(p, lastMin, lastMax wire.PSN, fresh bool) {
	for i := range c.gaps {
		if g := &c.gaps[i]; g.first == p {
			if g.first == g.last {
				c.gaps = append(c.gaps[:i], c.gaps[i+1:]...)
			} else {
				g.first = g.first.Next()
			}
			break
		}
	}
	if !fresh {
		return
	}
	if c.haveNext && p.After(c.nextHi) {
		if len(c.gaps) == maxGaps {
			c.missedReq = true
			c.gaps = c.gaps[1:]
		}
		c.gaps = append(c.gaps, reqGap{c.nextLo, p.Add(-1)})
	}
	c.nextLo, c.nextHi, c.haveNext = lastMin.Next(), lastMax.Next(), true
}

// reconCovered notes a positive response showing the responder executed
// every request up to x: a gap at or before x that no request the trace
// shows filled was a request the capture missed.
func (c *Conn) reconCovered(x wire.PSN) {
	for _, g := range c.gaps {
		if g.first.AtOrBefore(x) {
			c.missedReq = true
		}
	}
}

// StartKnown reports whether the test of FromStart has been decided
// (false while the trace has not yet shown an acknowledgment of the first
// request).
func (c *Conn) StartKnown() bool {
	return c.Settings.Active || c.Settings.Complete || c.Settings.FromStart || c.start != startUnknown
}

// reconStart updates the start test with a record (before it is
// absorbed into the request window).
func (c *Conn) reconStart(r *trace.Record) {
	if c.start != startUnknown {
		return
	}
	p := r.Packet
	op := p.Opcode
	if ops[op].request {
		switch {
		case c.HaveResp && !c.HaveReq:
			c.start = startMissed // a response before any request
		case c.HaveReq && p.PSN.Before(c.FirstReq):
			c.start = startMissed // a request from before the first one seen
		case (!c.HaveReq || p.PSN.AtOrAfter(c.NextReq)) && ops[op].ends:
			if len(c.startMsgs) == maxStartMsgs {
				c.start = startMissed // too long without an acknowledgment
				c.startMsgs = nil
				return
			}
			c.startMsgs = append(c.startMsgs, p.PSN)
		}
		return
	}
	if !c.HaveReq {
		c.start = startMissed
		return
	}
	if ops[op].headers&wire.HdrAETH == 0 {
		return
	}
	if !p.AETH.IsACK() {
		// A NAK carries the count of the messages completed before the
		// PSN it names: on a QP the capture shows from its creation, no
		// more than the messages shown ending before it (found by a
		// conformant exchange: an RNR NAK with MSN 2^24-1, then an ACK
		// whose MSN, wrapped to 0, matched the count from 0).
		n := 0
		for _, e := range c.startMsgs {
			if e.Before(p.PSN) {
				n++
			}
		}
		if p.AETH.MSN&0xFFFFFF != uint32(n) {
			c.start = startMissed
			c.startMsgs = nil
		}
		return
	}
	covers, incl := p.PSN, true
	switch {
	case op == wire.ReadResponseFirst:
		incl = false // the READ itself may or may not count yet
	case ops[op].class == wire.ClassReadResponse && op != wire.ReadResponseOnly:
		if s := c.ReadSpanAt(p.PSN); s != nil {
			covers = s.First
		}
	}
	if !covers.AtOrAfter(c.FirstReq) || !c.SentBefore(covers) {
		return
	}
	n := 0
	for _, e := range c.startMsgs {
		if e.Before(covers) || incl && e == covers {
			n++
		}
	}
	msn := p.AETH.MSN & 0xFFFFFF
	switch {
	case msn == uint32(n), op == wire.ReadResponseFirst && msn == uint32(n+1):
		c.start = startSeen
	default:
		c.start = startMissed
	}
	c.startMsgs = nil
}

// READ spans for the READ-stream model (rules/internal/responses): the
// span of one new READ, looked up by the READ's own PSN and length, as
// the reconstruction knows it before the record being observed. These
// read the spans above and change nothing in them (the requester model's
// additions are elsewhere).

// ReadSpanOf returns the span of the new READ whose first PSN is first
// and that asked for length bytes (nil: none remembered, or the READ at
// first asked for another length: a duplicate reserving nothing).
func (c *Conn) ReadSpanOf(first wire.PSN, length uint32) *ReadSpan {
	s := c.ReadSpanAt(first)
	if s == nil || s.First != first || s.Length != length {
		return nil
	}
	return s
}

// ReadSpanMayEnd reports whether the span of the new READ at first of
// length bytes can end at PSN last: a Last response there, reached from
// the READ's own PSN, closes it (reconResponse does so once the record is
// absorbed).
func (c *Conn) ReadSpanMayEnd(first wire.PSN, length uint32, last wire.PSN) bool {
	s := c.ReadSpanOf(first, length)
	return s != nil && last.InRange(s.LastMin, s.LastMax)
}
