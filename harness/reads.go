package harness

import (
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file holds the PSN ranges READ requests reserve, learnt from the
// requests and from the responses that close them: the engine's one
// table of READ spans, which also marks the READs whose answer is still
// owed (ReadCovering). With the responder's
// expected PSN (responder.go), the copies (copies.go) and the capture's
// evidence (evidence.go) it makes the connection's reconstruction that
// every monitor reads (docs/verdicts.md). Conn.absorb keeps it up to date
// after the monitors saw a record, so during Observe it describes the
// trace before the record.

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
	// Numbered is set once the responder's answer showed which PSNs are
	// the span's: a Last or Only at its last PSN (Closed), or a First at
	// its first PSN, whose payload is the path MTU, which with the READ's
	// length fixes its last PSN (the responder numbers its answer so,
	// C9-96). None of its PSNs is another request's.
	Numbered bool
	// owed: a new READ seen with the path MTU known (its range exact
	// from the start) whose answer is still owed: no Last or Only at its
	// last PSN yet, and no positive acknowledgment beyond it (which
	// tells the requester the READ was lost). ReadCovering finds these.
	owed bool
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

// closeSpan marks span s closed: a Last or Only response at its last PSN
// was seen.
func (c *Conn) closeSpan(s *ReadSpan) {
	s.Closed = true
	c.numberSpan(s)
}

// numberSpan marks span s numbered by the responder's answer
// (ReadSpan.Numbered).
func (c *Conn) numberSpan(s *ReadSpan) {
	if !s.Numbered {
		s.Numbered = true
		c.spansNumbered++
	}
}

// SpansNumbered counts the READ spans the responder's answers numbered so
// far (a version of what ReadSpanAt tells of them).
func (c *Conn) SpansNumbered() int { return c.spansNumbered }

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

// fixSpan narrows span s to the last PSN last (ReadSpan.fix) and counts
// the PSNs it then reserves as used: NextReq passes them. (A READ seen
// while the path MTU was unknown surely used the PSNs its length needs at
// the largest MTU; the rest shows once its end is known.)
func (c *Conn) fixSpan(s *ReadSpan, last wire.PSN) {
	s.fix(last)
	if c.HaveReq && s.LastMin.AtOrAfter(c.NextReq) {
		c.NextReq = s.LastMin.Next()
	}
}

// mtuLearnt narrows the READ spans once the path MTU is inferred, so
// that NextReq passes the PSNs they reserve from then on, whatever asks
// what (the READ at the highest PSN need not be the newest seen: a READ
// resent from behind newer requests is newer), and the newest READ's
// answer, not yet ended, is owed.
func (c *Conn) mtuLearnt() {
	n := min(c.nSpans, len(c.spans))
	for i := 1; i <= n; i++ {
		s := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]
		if s.Known() {
			continue
		}
		c.fixSpan(s, s.First.Add(wire.ReadResponsePackets(s.Length, c.MTU())-1))
		if i == 1 && s.Known() && !s.Closed {
			// Owed its answer, as had the MTU been known when it was
			// seen: an ACK inside its range names no PSN a responder
			// gives (AckPSNFault).
			c.oweAnswer(s)
		}
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
	if c.nSpans >= spanRing && c.spans[c.nSpans&(len(c.spans)-1)].owed {
		c.nOwed-- // the oldest leaves the ring
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
// before the first request already seen after it that is no partial
// retry of it: the requester numbered that request after the READ's last
// PSN. A READ there is such a retry only where it asks for fewer bytes
// (the rest of the answer from its PSN); one the trace took as new,
// asking for as many bytes or more, bounds s too. (Without that bound,
// the resent READ's span, left open to the smallest path MTU, covered
// the READs after it and hid their own spans.)
func (c *Conn) boundBySeen(s *ReadSpan) {
	if s.Known() {
		return
	}
	n := min(s.LastMax.Diff(s.First), maxBoundScan)
	for i := 1; i <= n; i++ {
		x := s.First.Add(i)
		if e := c.reqAt(x); e.holds(x) && (e.op != wire.ReadRequest || c.newReadAsking(x, s.Length, s)) {
			if end := x.Add(-1); end.AtOrAfter(s.LastMin) {
				s.LastMax = end
			}
			return
		}
	}
}

// newReadAsking reports whether a new READ other than s, at PSN x, asked
// for at least length bytes.
func (c *Conn) newReadAsking(x wire.PSN, length uint32, s *ReadSpan) bool {
	n := min(c.nSpans, len(c.spans))
	for i := 1; i <= n; i++ {
		if o := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]; o != s && o.First == x {
			return o.Length >= length
		}
	}
	return false
}

// ReadInterior returns the READ whose known range holds PSN p strictly
// between its first and last PSNs (nil: none): the requester numbers no
// request there, and no completion has such a PSN.
func (c *Conn) ReadInterior(p wire.PSN) *ReadSpan {
	if s := c.ReadSpanAt(p); s != nil && s.Known() && p.After(s.First) && p.Before(s.LastMin) {
		return s
	}
	return nil
}

// ReadInteriorUnended is ReadInterior(p) where no request the trace shows
// at p ends a message there: none, or only a READ (the requester asking
// for the rest of the READ's answer from p, as far as the same last PSN):
// an acknowledgment naming p names no completion.
func (c *Conn) ReadInteriorUnended(p wire.PSN) *ReadSpan {
	s := c.ReadInterior(p)
	if s == nil {
		return nil
	}
	if op, _, _, ok := c.Req(p); ok && op != wire.ReadRequest {
		return nil
	}
	return s
}

// ReadFirstNumbered returns the new READ at PSN p whose answer the
// responder numbered over more than one PSN (ReadSpan.Numbered; nil:
// none): the READ completes at its last PSN, so no completion has its
// first, before its answer or after it.
func (c *Conn) ReadFirstNumbered(p wire.PSN) *ReadSpan {
	s := c.ReadSpanAt(p)
	if s == nil || !s.Numbered || !s.Known() || p != s.First || !s.LastMin.After(s.First) {
		return nil
	}
	if op, _, _, ok := c.Req(p); !ok || op != wire.ReadRequest {
		return nil
	}
	return s
}

// readInterior is ReadInterior(p) != nil, answered at once where the
// trace shows a request other than a READ at p (the common case of an
// acknowledged PSN).
func (c *Conn) readInterior(p wire.PSN) bool {
	if e := c.reqAt(p); e.holds(p) && e.op != wire.ReadRequest {
		return false
	}
	return c.ReadInterior(p) != nil
}

// ReadCovering returns the span of the READ whose answer is owed (seen
// new with the path MTU known, not answered to its last PSN, not passed
// by a positive acknowledgment) and whose range holds p (nil: none).
func (c *Conn) ReadCovering(p wire.PSN) *ReadSpan {
	for i, seen := 1, 0; seen < c.nOwed; i++ {
		s := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]
		if !s.owed {
			continue
		}
		if p.InRange(s.First, s.LastMin) {
			return s
		}
		seen++
	}
	return nil
}

// oweAnswer marks span s, of a new READ seen with the path MTU known and
// inside no other owed READ's range, as owed its answer.
func (c *Conn) oweAnswer(s *ReadSpan) {
	if !s.owed && s.Known() && c.ReadCovering(s.First) == nil {
		s.owed = true
		c.nOwed++
	}
}

// answered notes a response at PSN psn: a Last or Only (ends) at the last
// PSN of an owed READ ends what it owed; a positive ACK (ack) beyond an
// owed READ's last PSN ends it too (the READ is implicitly NAKed, and the
// requester will issue it again).
func (c *Conn) answered(psn wire.PSN, ends, ack bool) {
	for i, seen, n := 1, 0, c.nOwed; seen < n; i++ {
		s := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]
		if !s.owed {
			continue
		}
		seen++
		if ends && psn == s.LastMin || ack && psn.After(s.LastMin) {
			s.owed = false
			c.nOwed--
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
					// The MTU narrowed the span to end before p (on a
					// lossy capture, where the READ's end had been bounded
					// only by the next request seen): an older READ
					// seen before it, at a higher PSN, may hold p.
					if sorted {
						return nil
					}
					continue
				}
			}
		}
		return s
	}
	return nil
}

// readEndsAt reports whether a READ span whose end is known ends at PSN
// p. It fixes no span's end (ReadSpanAt does, once the MTU is known).
func (c *Conn) readEndsAt(p wire.PSN) bool {
	n := min(c.nSpans, len(c.spans))
	for i := 1; i <= n; i++ {
		if s := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]; s.Holds(p) {
			return s.Known() && s.LastMax == p
		}
	}
	return false
}

// InsideRead reports whether p lies after the first PSN of a new READ's
// span, in the part it surely reserved (up to LastMin): a request with
// that PSN is a partial retry of the READ, not a new message. Where the
// span's end is still open, p beyond LastMin is not counted as inside.
func (c *Conn) InsideRead(p wire.PSN) bool {
	s := c.ReadSpanAt(p)
	return s != nil && p.After(s.First) && p.AtOrBefore(s.LastMin)
}

// OpenReadBefore returns the span of a READ whose answer has not ended
// and that surely reserves p before its last PSN (from its first PSN up
// to LastMin, exclusive), where the path MTU is not known (ReadCovering
// gives the exact range where it is): an ACK there names no request a
// responder completed (C9-95). Nil otherwise.
func (c *Conn) OpenReadBefore(p wire.PSN) *ReadSpan {
	if c.MTU() != 0 {
		return nil
	}
	s := c.ReadSpanAt(p)
	if s == nil || s.Closed || !p.InRange(s.First, s.LastMin) || p == s.LastMin {
		return nil
	}
	return s
}

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

// ReadUnendedAt returns the span of the new READ beginning at PSN q whose
// answer the trace has not shown end (nil: none).
func (c *Conn) ReadUnendedAt(q wire.PSN) *ReadSpan {
	if s := c.ReadSpanAt(q); s != nil && s.First == q && !s.Closed {
		return s
	}
	return nil
}

// ReadOwed is what AwaitReadOwed reports of a READ whose answer a
// response took to be still to come.
type ReadOwed struct {
	// Answered is called at the first packet of the READ's answer
	// recorded after the response; it returns whether that settles the
	// instance (false: held to the end of the trace, Ended).
	Answered func(c *Conn) bool
	// Passed is called at a response showing the responder past the
	// READ's range (next: it names a PSN beyond it completed) with no
	// packet of the READ's answer recorded since: the answer went out
	// before the instance's response, or never (next then passed the
	// READ unanswered).
	Passed func(c *Conn, next *trace.Record)
	// Ended is called at the end of the trace (the answer may still
	// have come after it).
	Ended func(c *Conn)
}

// AwaitReadOwed holds an instance that is legal only if the new READ
// whose span begins at PSN read was not yet completed when the response
// under judgement was sent: its answer was then still to come, and the
// responder, which executes in PSN order, sends it before any response
// completing a PSN past the READ's range. The instance is settled by the
// responder's later responses (o).
func (c *Conn) AwaitReadOwed(read wire.PSN, o ReadOwed) {
	s := c.ReadSpanAt(read)
	if s == nil || s.First != read {
		o.Ended(c)
		return
	}
	last, answered := s.LastMax, false
	c.Await(func(c *Conn, next *trace.Record) bool {
		if next == nil {
			o.Ended(c)
			return true
		}
		p := next.Packet
		if answered || next.Dir != trace.ToRequester || !opc.IsResponse(p.Opcode) {
			return false
		}
		if s := c.ReadSpanAt(read); s != nil && s.First == read {
			last = s.LastMax
		}
		done := p.PSN
		if p.Opcode == wire.Acknowledge && !p.AETH.IsACK() {
			done = done.Add(-1) // a NAK names the PSN not completed
		}
		switch {
		case opc.Class(p.Opcode) == wire.ClassReadResponse && p.PSN.InRange(read, last):
			answered = true
			return o.Answered(c)
		case done.After(last):
			o.Passed(c, next)
			return true
		}
		return false
	})
}
