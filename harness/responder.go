package harness

import (
	"fmt"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file is what the trace proves about the responder: its expected
// PSN, which requests it dropped as out of sequence, and where the
// connection began.

// ExpectedPSN is what the trace proves about the responder's expected
// PSN: at least Lo (HaveLo) and at most Hi (HaveHi); exact when both are
// known and equal.
type ExpectedPSN struct {
	Lo, Hi         wire.PSN
	HaveLo, HaveHi bool
	// LoBy is the response whose PSN last raised Lo (nil: none, or a
	// NAK or the requests placed it): a bound that rests on that PSN,
	// which a later packet may show at fault.
	LoBy *trace.Record
}

// Exact reports whether the expected PSN is known exactly, and returns it.
func (e ExpectedPSN) Exact() (wire.PSN, bool) {
	return e.Lo, e.HaveLo && e.HaveHi && e.Lo == e.Hi
}

// raise sets the lower bound to at least x (and the upper one with it
// when it falls behind).
func (e *ExpectedPSN) raise(x wire.PSN, by *trace.Record) {
	if !e.HaveLo || x.After(e.Lo) {
		e.Lo, e.HaveLo, e.LoBy = x, true, by
	}
	if e.HaveHi && e.Hi.Before(e.Lo) {
		e.Hi = e.Lo
	}
}

// pin makes the expected PSN exactly x.
func (e *ExpectedPSN) pin(x wire.PSN) {
	e.Lo, e.Hi, e.HaveLo, e.HaveHi, e.LoBy = x, x, true, true, nil
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
	if opc.IsResponse(op) && opc.Has(op, wire.HdrAETH) && r.Packet.AETH.IsACK() && c.exp.HaveLo && c.exp.Lo.After(w.Cur()) {
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

// maxPSNFaults bounds the responses PSNFaultUndermines tells apart.
const maxPSNFaults = 64

// PSNFaultUndermines reports whether a response PSN fault
// (ResponsePSNFault) undermines a conclusion resting on the responses
// recs: one of them is an ACK or ATOMIC Acknowledge whose own PSN was at
// fault, or a fault not pinned to single responses (a READ answer's
// numbering) was seen. A fault in another ACK's PSN undermines nothing
// that rests on other responses (an ACK at a READ's PSN, whose answer
// the capture lost, does not make every MSN finding on the connection
// undecided).
func (c *Conn) PSNFaultUndermines(recs ...*trace.Record) bool {
	if c.psnFaultAll {
		return true
	}
	for _, f := range c.psnFaultAt {
		for _, r := range recs {
			if r == f {
				return true
			}
		}
	}
	return false
}

// notePSNFault records fault ("" none) of response r: an ACK or ATOMIC
// Acknowledge at a PSN among the requests shown (one: inside a READ's
// range, at another request's PSN), or a fault not pinned to r (one
// beyond every request also moves what the count takes as acknowledged,
// and a READ answer's numbering what every later answer is taken for).
func (c *Conn) notePSNFault(r *trace.Record, fault string, one bool) {
	if fault == "" {
		return
	}
	if c.psnFault == "" {
		c.psnFault = fault
	}
	if !one || len(c.psnFaultAt) == maxPSNFaults {
		c.psnFaultAll = true
		return
	}
	c.psnFaultAt = append(c.psnFaultAt, r)
}

// AckPSNFault says why positive ACK r carries a PSN no legal responder
// gives it ("" when it may): beyond every request on a trace that holds
// every request, inside the range of a READ whose response is not
// complete, at the first PSN of a READ whose answer took more than one
// (ReadFirstNumbered), or at an ATOMIC's PSN before its ATOMIC
// Acknowledge (an ACK cannot carry an ATOMIC's result) where the trace is
// complete or holds every response since the ATOMIC came.
func (c *Conn) AckPSNFault(r *trace.Record) string {
	// The MSN model asks before the record is absorbed, and the
	// reconstruction as it absorbs it: one answer for both.
	if c.ackFault.rec == r && c.ackFault.seq == c.seq {
		return c.ackFault.why
	}
	why := c.ackPSNFault(r)
	c.ackFault.rec, c.ackFault.seq, c.ackFault.why = r, c.seq, why
	return why
}

// ackPSNFault is AckPSNFault, computed.
func (c *Conn) ackPSNFault(r *trace.Record) string {
	p := r.Packet
	if !c.HaveReq {
		return ""
	}
	if !p.PSN.Before(c.NextReq) && c.SeesEveryRequest() {
		return fmt.Sprintf("an ACK carries PSN %d, beyond every request sent (frame %d): its PSN is C9-95's fault", p.PSN, r.Frame)
	}
	if rd := c.ReadCovering(p.PSN); rd != nil && (p.PSN != rd.LastMin || c.Complete()) {
		// (At the READ's last PSN, off a complete trace, the READ may
		// have been answered and its answer lost before the capture
		// point: the ACK then acknowledges it, and may answer a
		// duplicate of an earlier request.)
		return fmt.Sprintf("an ACK carries PSN %d, in the range of the READ at PSN %d whose response is not complete (frame %d): its PSN is C9-95's fault", p.PSN, rd.First, r.Frame)
	}
	if s := c.OpenReadBefore(p.PSN); s != nil {
		return fmt.Sprintf("an ACK carries PSN %d, in the range of the READ at PSN %d whose response is not complete (frame %d): its PSN is C9-95's fault", p.PSN, s.First, r.Frame)
	}
	if s := c.ReadInteriorUnended(p.PSN); s != nil {
		// Strictly inside a READ's range, known since the READ (from
		// the path MTU or its answer), where no completion has a PSN.
		return fmt.Sprintf("an ACK carries PSN %d, inside the range of the READ at PSN %d, which no completion has (frame %d): its PSN is C9-95's fault", p.PSN, s.First, r.Frame)
	}
	if s := c.ReadFirstNumbered(p.PSN); s != nil {
		return fmt.Sprintf("an ACK carries PSN %d, the first of the READ's range %d..%d, which no completion has (frame %d): its PSN is C9-95's fault", p.PSN, s.First, s.LastMin, r.Frame)
	}
	if op, _, frame, ok := c.Req(p.PSN); ok && opc.Class(op) == wire.ClassAtomic && (c.Complete() || c.sentAllSinceFrame(trace.ToRequester, frame)) {
		// (An ATOMIC executed with its answer lost before the capture
		// point leaves the responder acknowledging duplicates of earlier
		// requests with the ATOMIC's PSN: legal, unless the trace holds
		// every response since the ATOMIC came.)
		if _, answered := c.AtomicOriginal(p.PSN); !answered {
			return fmt.Sprintf("an ACK carries PSN %d, an ATOMIC's, before its ATOMIC Acknowledge (frame %d): its PSN is C9-95's fault", p.PSN, r.Frame)
		}
	}
	return ""
}

// atomicAckPSNFault says why ATOMIC Acknowledge r carries a PSN no legal
// responder gives it ("" when it may): the PSN of a request other than an
// ATOMIC, or one beyond every request on a trace that holds every request.
func (c *Conn) atomicAckPSNFault(r *trace.Record) string {
	p := r.Packet
	if rop, _, _, ok := c.Req(p.PSN); ok && opc.Class(rop) != wire.ClassAtomic {
		return fmt.Sprintf("an ATOMIC Acknowledge carries PSN %d, which a request other than an ATOMIC carried (frame %d): its PSN is o9-58's fault", p.PSN, r.Frame)
	}
	if c.HaveReq && !p.PSN.Before(c.NextReq) && c.SeesEveryRequest() {
		return fmt.Sprintf("an ATOMIC Acknowledge carries PSN %d, beyond every request sent (frame %d): its PSN is o9-58's fault", p.PSN, r.Frame)
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

// ResentAfterDrop reports whether the latest copy of request PSN p seen
// so far followed a copy known not to have been executed (Dropped when it
// came): the responder executes this copy first, so its answer is no
// replay of an earlier one.
func (c *Conn) ResentAfterDrop(p wire.PSN) bool {
	e := c.reqAt(p)
	return e.holds(p) && e.flags&reqAfterDrop != 0
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
			c.exp.Lo, c.exp.Hi, c.exp.LoBy = lastMin.Next(), lastMax.Next(), nil
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
		// of an earlier one a NAK refused (for example, a capture's late
		// copy of a refused READ after its resend was answered, which is
		// not new).
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
	switch opc.Class(op) {
	case wire.ClassAck:
		switch {
		case p.AETH.IsACK():
			// An ACK whose PSN no legal responder gives says nothing of
			// where the responder stood: it raises no bound, so that
			// what follows it is not blamed for its fault (one root
			// cause, one clause).
			fault := c.AckPSNFault(r)
			c.notePSNFault(r, fault, p.PSN.Before(c.NextReq))
			if fault == "" && c.SentBefore(p.PSN) {
				c.exp.raise(p.PSN.Next(), r)
			}
			c.reconCovered(p.PSN)
		case (p.AETH.IsNAK(wire.NAKPSNSequence) || p.AETH.IsRNR()) && c.IsLate(r):
			// Sent before responses already absorbed (or a copy of one
			// whose original the capture lost): the requests seen since
			// it left were not refused by it (for example, a far copy
			// of an old RNR NAK does not mark a READ answered since as
			// dropped, nor its resend as new).
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
		if rop, _, _, ok := c.Req(p.PSN); ok && rop != wire.ReadRequest {
			// A PSN a request other than a READ carried is in no READ's
			// range: wherever the answer it belongs to lies, the trace
			// cannot place it.
			c.notePSNFault(r, fmt.Sprintf("a READ response carries PSN %d, which a %s carried (frame %d): its numbering is C9-96's fault", p.PSN, rop, r.Frame), false)
		} else if !ok && c.SeesEveryRequest() && (op == wire.ReadResponseFirst || op == wire.ReadResponseOnly) {
			c.notePSNFault(r, fmt.Sprintf("a READ response stream starts at PSN %d, which no READ request carried (frame %d): its numbering is C9-96's fault", p.PSN, r.Frame), false)
		} else if !ok && c.SeesEveryRequest() && c.ReadSpanAt(p.PSN) == nil {
			c.notePSNFault(r, fmt.Sprintf("a READ response carries PSN %d, in no READ's range (frame %d): its numbering is C9-96's fault", p.PSN, r.Frame), false)
		}
		s := c.ReadSpanAt(p.PSN)
		if s == nil || !c.SentBefore(s.First) {
			return
		}
		switch op {
		case wire.ReadResponseFirst, wire.ReadResponseOnly:
			if p.PSN == s.First {
				if op == wire.ReadResponseOnly {
					c.fixSpan(s, p.PSN)
					c.closeSpan(s)
				} else if n := r.PayloadLen; !r.Truncated && wire.ValidMTU(n) && (c.MTU() == 0 || c.MTU() == n) {
					// A First carries a whole path MTU: with the READ's
					// length it numbers the answer's PSNs (the span is
					// narrowed to them as the MTU it shows is learnt).
					if last := s.First.Add(wire.ReadResponsePackets(s.Length, n) - 1); last.InRange(s.LastMin, s.LastMax) {
						c.numberSpan(s)
					}
				}
				c.exp.raise(s.LastMin.Next(), r)
				c.reconCovered(p.PSN)
			}
		case wire.ReadResponseLast:
			if p.PSN.After(s.First) {
				c.fixSpan(s, p.PSN)
				if s.Known() {
					c.closeSpan(s)
				}
			}
			c.exp.raise(p.PSN.Next(), r)
		default:
			c.exp.raise(p.PSN.Next(), r)
		}
		if s.Known() {
			c.spanUsed(s)
		}
	case wire.ClassAtomicAck:
		fault := c.atomicAckPSNFault(r)
		c.notePSNFault(r, fault, p.PSN.Before(c.NextReq))
		if fault == "" && c.SentBefore(p.PSN) {
			c.exp.raise(p.PSN.Next(), r)
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
	if opc.IsRequest(op) {
		switch {
		case c.HaveResp && !c.HaveReq:
			c.start = startMissed // a response before any request
		case c.HaveReq && p.PSN.Before(c.FirstReq):
			c.start = startMissed // a request from before the first one seen
		case (!c.HaveReq || p.PSN.AtOrAfter(c.NextReq)) && opc.EndsMessage(op):
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
	if !opc.Has(op, wire.HdrAETH) {
		return
	}
	if !p.AETH.IsACK() {
		// A NAK carries the count of the messages completed before the
		// PSN it names: on a QP the capture shows from its creation, no
		// more than the messages shown ending before it (for example,
		// an RNR NAK with MSN 2^24-1, then an ACK whose MSN, wrapped to
		// 0, matches the count from 0).
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
	case opc.Class(op) == wire.ClassReadResponse && op != wire.ReadResponseOnly:
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

// Completed is what Conn.CompletedByMSN finds: the responder had
// completed PSN Done, as the ACK's MSN counts past the count FromMSN a
// response at PSN From carried (FromRec). Past is how many messages the
// MSN counts past every one that may end up to the ACK's own PSN, from
// the count PastFromMSN a response at PSN PastFrom carried (PastFromRec;
// 0: none).
type Completed struct {
	Done, From  wire.PSN
	FromMSN     uint32
	FromRec     *trace.Record
	Past        int
	PastFrom    wire.PSN
	PastFromMSN uint32
	PastFromRec *trace.Record
	// Beyond is how many messages the MSN counts past every one that may
	// end up to the ACK's own PSN, with no allowance: counted from any
	// count, the latest ACK's at the same PSN included (a duplicate the
	// responder counted wrongly, or a READ after the PSN, validated).
	Beyond int
}

// CompletedByMSN returns a PSN the responder had completed when it sent
// the positive ACK r, by r's MSN: the MSN counts every message the
// responder completed, so one that counts d messages more than a count
// carried before it (its response's PSN: that count covers the messages
// up to there at least) shows the responder past the first d requests
// after that PSN that may end a message. Two such counts are tried, and
// the one that shows more taken: the highest a positive ACK carried (the
// oldest PSN such an ACK named), and the highest any positive response
// carried (an ATOMIC Acknowledge or a READ response ending its answer
// too, which may replay an old PSN with a newer count). A PSN no request
// in the trace carried may end a message; a READ (or such a PSN) may be
// counted as soon as it is validated, before its answer completes it, so
// the PSN returned is the newest request at or before the d-th end that
// is known to end a message other than a READ (with every PSN between it
// and the d-th end a READ or unseen: those may still be under way). ok
// is false when r's MSN counts nothing past either count, r is a late
// packet, or no such request is shown. An earlier count that was too
// high only lowers the PSN returned; one that went back is not the
// baseline (C9-148 judges it), but for the latest positive ACK that came
// late (IsLate), whose count C9-148 leaves open: a third count, as its
// count covers the messages up to its PSN whenever it was sent.
//
// The same walk gives Past: the messages r's MSN counts beyond every PSN
// up to its own that may end one, less one where a READ may follow r's
// PSN (validated, and counted, while r's PSN was still the newest
// completed). An ACK names the newest request it covers and carries the
// count of that moment, so a count beyond is a PSN behind messages
// completed (the capture may not show them), or a wrong count.
func (c *Conn) CompletedByMSN(r *trace.Record) (Completed, bool) {
	p := r.Packet
	if p.Opcode != wire.Acknowledge || !p.AETH.IsACK() || c.IsLate(r) {
		return Completed{}, false
	}
	slack := 0
	if op, _, _, ok := c.Req(p.PSN.Next()); !ok || op == wire.ReadRequest {
		slack = 1
	}
	return c.countedFrom(p.AETH.MSN, p.PSN, slack)
}

// NAKCountPast is CompletedByMSN's Past for a sequence or RNR NAK r: the
// messages its MSN holds past every PSN before its own that may end one.
// Such a NAK names where the responder stopped (the PSN it expects, or
// the request it could not take), so its MSN counts no message at or
// past its PSN: a count beyond is a wrong MSN, a wrong PSN, or a wrong
// earlier count. Zero where none passes, r is late, or its PSN is behind
// the expected PSN the trace proves.
func (c *Conn) NAKCountPast(r *trace.Record) Completed {
	p := r.Packet
	if p.Opcode != wire.Acknowledge || !(p.AETH.Kind() == wire.KindRNR || p.AETH.IsNAK(wire.NAKPSNSequence)) || c.IsLate(r) {
		return Completed{}
	}
	if e := c.Expected(); e.HaveLo && p.PSN.Before(e.Lo) {
		// A PSN behind the expected PSN the trace proves is the NAK's
		// own fault, judged under its clause.
		return Completed{}
	}
	k, _ := c.countedFrom(p.AETH.MSN, p.PSN.Add(-1), 0)
	return Completed{Past: k.Past, PastFrom: k.PastFrom, PastFromMSN: k.PastFromMSN, PastFromRec: k.PastFromRec}
}

// countedFrom is CompletedByMSN's count of MSN msn, carried by a response
// whose count covers the messages up to PSN at, from the counts kept
// (ackCounts), slack messages allowed past at.
func (c *Conn) countedFrom(msn uint32, at wire.PSN, slack int) (Completed, bool) {
	a := &c.ackCounts
	best, have := Completed{}, false
	try := func(base uint32, from wire.PSN, rec *trace.Record) {
		if c.readInterior(from) {
			// A READ's range known since shows the response's PSN
			// was no completion's: its count fixes nothing.
			return
		}
		done, ok, past := c.completedPast(msn, base, from, at)
		beyond := past
		if from == at {
			beyond = int((msn - base) & 0xFFFFFF)
		}
		if beyond < 1<<23 && beyond > best.Beyond {
			best.Beyond = beyond
		}
		if ok && (!have || done.After(best.Done)) {
			best.Done, best.From, best.FromMSN, best.FromRec, have = done, from, base, rec, true
		}
		if past-slack > best.Past {
			best.Past, best.PastFrom, best.PastFromMSN, best.PastFromRec = past-slack, from, base, rec
		}
	}
	if a.haveTop {
		try(a.top, a.topOldest, a.topRec)
	}
	if a.haveBase {
		try(a.base, a.baseOldest, a.baseRec)
	}
	if a.haveLate {
		// A late ACK's count, which the order of the trace does not
		// date, covers the messages up to its PSN whenever it was sent
		// (for example, an ACK whose MSN went back, maybe late, then
		// the next ACK, one PSN on, counting three messages past it
		// where one ended).
		try(a.late, a.latePSN, a.lateRec)
	}
	return best, have
}

// completedPast is CompletedByMSN's count from one response: MSN msn
// counting d messages past count base, carried by a response at PSN
// from; past is how many of the d are left once every PSN up to at that
// may end a message has taken one (0 where at is not past from). The
// PSNs of a READ's range after its first end no message (the READ is
// one, at its first), where its answer ended at the last PSN its length
// gives: a READ request seen first may be a duplicate asking for another
// length (the first READ lost, say, and its duplicate of twice the
// length taken for it), whose range says nothing until the responder's
// answer bears it out.
func (c *Conn) completedPast(msn, base uint32, from, at wire.PSN) (done wire.PSN, ok bool, past int) {
	d := int((msn - base) & 0xFFFFFF)
	if d == 0 || d >= 1<<23 {
		return 0, false, 0
	}
	q := from
	readTo := from // the last PSN of the READ range walked into (from: none)
	for i := 0; i < maxEndsScan && d > 0; i++ {
		q = q.Next()
		switch e := c.reqAt(q); {
		case readTo != from && q.AtOrBefore(readTo):
			// inside a READ's range
		case e.holds(q) && e.op == wire.ReadRequest:
			d-- // a message, but maybe under way
			if s := c.ReadSpanAt(q); s != nil && s.First == q && s.Closed && s.LastMin.After(q) {
				readTo = s.LastMin
			}
		case !e.holds(q):
			d-- // may end a message, but may be under way
		case opc.EndsMessage(e.op):
			d--
			done, ok = q, true
		}
		if q == at {
			past = d
		}
	}
	return done, ok && d == 0, past
}

// CountsPastShown reports whether the MSN of positive ACK r counts
// messages past the requests the trace has shown: it is higher than the
// latest positive ACK's count plus every request shown ending a message
// (READs included) after that ACK's PSN. The responder then says it
// completed messages the capture did not show, which is evidence of those
// requests (C9-95's ACK ahead of them). Without an earlier ACK, or past a
// span too long to scan, it cannot tell and says yes.
func (c *Conn) CountsPastShown(r *trace.Record) bool {
	if !c.HaveAck || !c.LastAckPSN.Before(c.NextReq) || c.NextReq.Diff(c.LastAckPSN) > maxEndsScan {
		return true
	}
	bound := c.LastAckMSN
	for p := c.LastAckPSN.Next(); p.Before(c.NextReq); p = p.Next() {
		if op, _, _, ok := c.Req(p); ok && op.EndsMessage() {
			bound++
		}
	}
	return MSNAfter(r.Packet.AETH.MSN&0xFFFFFF, bound&0xFFFFFF)
}
