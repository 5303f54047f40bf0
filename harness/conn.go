package harness

import (
	"fmt"
	"math"
	"net/netip"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file holds the connection itself: what it remembers of each
// request PSN and READ, its settings, and how it absorbs a record after
// the monitors saw it.

// reqEntry is what the model remembers of one request PSN (16 bytes: a
// connection keeps up to reqWindow of them).
type reqEntry struct {
	frame int
	psn   wire.PSN
	sends uint16 // how many times this PSN was seen (first send + resends), at most 65535
	op    wire.Opcode
	flags reqFlags
}

// reqFlags are a reqEntry's flags.
type reqFlags uint8

const (
	reqValid  reqFlags = 1 << iota // the entry holds a request
	reqAckReq                      // the request asked for an acknowledgment
	// reqDropped: the latest copy was not executed (Conn.Dropped).
	reqDropped
	// reqAfterDrop: the latest copy followed one that was not
	// executed (Conn.ResentAfterDrop).
	reqAfterDrop
)

// holds reports whether e is the entry of request PSN p.
func (e *reqEntry) holds(p wire.PSN) bool { return e != nil && e.flags&reqValid != 0 && e.psn == p }

// setDropped sets or clears reqDropped.
func (e *reqEntry) setDropped(d bool) {
	if d {
		e.flags |= reqDropped
	} else {
		e.flags &^= reqDropped
	}
}

// reqWindow is how many request PSNs the model remembers: PSN p in entry
// p mod reqWindow, kept in pages of reqPage entries allocated as PSNs
// reach them (a connection with few requests takes little memory).
const (
	reqWindow = 1 << 14
	reqPage   = 1 << 8
)

// reqAt returns the entry of PSN p (nil when its page was never used).
func (c *Conn) reqAt(p wire.PSN) *reqEntry {
	i := uint32(p) % reqWindow
	pg := c.reqs[i/reqPage]
	if pg == nil {
		return nil
	}
	return &pg[i%reqPage]
}

// Conn is the model of one RC connection (one requester QP talking to one
// responder QP) built from the trace, shared by every monitor.
type Conn struct {
	ID          int
	Requester   netip.Addr
	Responder   netip.Addr
	ResponderQP uint32 // DestQP of requests
	RequesterQP uint32 // DestQP of responses (0 until a response is seen)
	Settings    Settings
	Capture     string
	// Follows is the connection whose addresses and responder QP this one
	// took over (0: none): its requests jumped to PSNs that no requester
	// of that QP could send (Auditor.reborn), so the QPs were made anew
	// with the same numbers. FollowsAt is the frame of the request that
	// showed it, FollowsWhy says what it showed.
	Follows    int
	FollowsAt  int
	FollowsWhy string
	// FirstFrame is the capture frame of the first record the auditor
	// gave the connection (0 on an active run, whose records have none).
	FirstFrame int

	// Requests.
	HaveReq  bool
	FirstReq wire.PSN // first request PSN seen
	NextReq  wire.PSN // one past the highest PSN a request used (READ: its reserved range)
	reqs     [reqWindow / reqPage]*[reqPage]reqEntry
	MTUGuess int // largest payload of a First/Middle request or response seen (0: none)
	// sw holds the capture frames and PSNs of the latest SEND and WRITE
	// packets, nSW how many were seen (SendOrWriteSince).
	sw         [swRing]swSeen
	nSW        int
	atomicOrig map[wire.PSN]AtomicAnswer

	// Responses.
	HaveResp   bool
	LastAck    *trace.Record // the newest positive Acknowledge
	LastAckPSN wire.PSN      // its PSN
	LastAckMSN uint32        // its MSN
	HaveAck    bool
	ackCounts  ackCounts // the counts the positive ACKs carried (AckDatedPast)
	// lastAnswer is the ATOMIC Acknowledge with the newest PSN, at an
	// ATOMIC's PSN (LastAnswer).
	lastAnswer *trace.Record
	LastMSN    uint32
	HaveMSN    bool
	LastNAK    *trace.Record // most recent NAK (any code)
	// LastSeqNAK is the most recent sequence NAK (nil: none), and
	// LastSeqNAKSeq its place among the connection's records (Seq): the
	// responder expected its PSN then, having executed no request from it
	// on.
	LastSeqNAK    *trace.Record
	LastSeqNAKSeq uint64
	Packets       int
	recent        []*trace.Record // the last records, at most recentMax, in recentBuf
	cur           *trace.Record   // the record being delivered to the monitors
	recentBuf     []*trace.Record
	sink          *Sink
	checkers      []Checker
	// route says, for each packet kind, which checkers see its records
	// (KindFilter), in order: a run of calls, which holds the checkers
	// in the route's order. Connections whose checkers ask for the same
	// kinds share one route.
	route       *route
	calls       []Checker
	lastRecTime int64 // the latest delivered record's Time (restartStep)
	shared      []sharedValue

	// The reconstruction (reads.go, responder.go, copies.go).
	// spans is a ring of the latest READ spans, nSpans of them made so
	// far; it grows (a power of two) with the spans up to spanRing, so
	// that a connection with few READs holds little.
	spans  []ReadSpan
	nSpans int
	// spansNumbered counts the spans numbered (numberSpan).
	spansNumbered int
	// nOwed counts the spans in the ring whose READ's answer is owed
	// (ReadSpan.owed).
	nOwed int
	// unordered counts the spans in the ring, the oldest left out, that
	// are not ordered (ReadSpan.ordered).
	unordered int
	exp       ExpectedPSN
	win       Window
	ids       [2]idOrder
	idsVary   [2]idVary // at routing time (IDsVary)
	// seq numbers the records delivered to the checkers (Seq); runs
	// follows each direction's IPv4 Identifications in that order, and
	// missed holds the instances waiting for a sender's next record
	// (evidence.go).
	seq    uint64
	runs   [2]idRun
	missed []unlessMissed
	// awaited holds the instances waiting for a later record (Await).
	awaited []Decide
	// held is a ring of the records held back to restore the senders'
	// order: nHeld of them from held[heldHead] on (Conn.heldAt).
	held     [heldRing]*trace.Record
	heldHead int
	nHeld    int
	chains   [2]idChain
	out      [1]*trace.Record
	// Reordered counts the records the Auditor put back into their
	// sender's order (IPv4 IDs counting up showed the network reordered
	// them after the sender).
	Reordered int
	// Copies counts the responses not shown to the checkers because they
	// repeat a recent one of the same sender, IPv4 ID included: the
	// network or the capture made them (copyOf).
	Copies    int
	copies    CopyRing // the latest responses, for copyOf
	reqCopies CopyRing // the latest requests, for copyOf
	// For adoptRequests, as routed (connFor): whether a request and a
	// response were routed to the connection, and the latest response's
	// PSN.
	reqRouted, respRouted bool
	// reqKeyed: the connection has a request key (its responder QP came
	// from a request).
	reqKeyed bool
	respPSN  wire.PSN
	respPort uint16 // the latest routed response's UDP source port (0: unknown)
	// routedNext is one past the highest PSN a routed request reserved
	// (a READ: its range at the configured path MTU, or at the
	// smallest), valid once reqRouted: the pairing's view of NextReq.
	routedNext wire.PSN
	// routedLow is the lowest PSN a routed request carried (valid once
	// reqRouted): the requester's resends lie from there to routedNext.
	routedLow wire.PSN
	// replaced: a later connection took over this one's keys (Follows):
	// routing passes it by.
	replaced bool
	// adopted: the connection, begun by responses, took requests of a key
	// (adoptRequests), the first at adoptFirst; respSinceAdopt: a
	// response was routed to it since (which makes the adoption stick:
	// unadopt).
	adopted, respSinceAdopt bool
	adoptFirst              wire.PSN
	// lastReqFrame is the frame of the latest request routed here.
	lastReqFrame int
	// For walkResponse, as routed: the latest requests routed here, each
	// with the PSNs it reserved (a READ's whole range, at the configured
	// path MTU or at the smallest), until a response pairs the
	// connection.
	routed  [routedDepth]routedReq
	nRouted int
	// Late counts the responses shown to the checkers after a response
	// their sender sent later, as its IPv4 ID counting up shows, or (where
	// no ID tells) as an MSN behind one already delivered may show:
	// delayed (or copied) by the network or the capture past the reorder
	// buffer (lateResponse, staleMSN).
	Late int
	// newestRsp is the ID of the newest response delivered, by its
	// sender's count (haveRsp once there is one).
	newestRsp uint16
	haveRsp   bool
	// newestMSN is the newest MSN a response carried (haveMSN once one
	// did), for staleMSN.
	newestMSN    uint32
	newestMSNPSN wire.PSN // the PSN of the response that carried it
	haveMSN      bool
	// newestMSNTop is the newest PSN whose completion a response carrying
	// newestMSN counted (countedAt).
	newestMSNTop wire.PSN
	// counted holds the latest responses whose counts the trace fixes
	// (noteCounted; a ring, the newest at nCounted-1), for countPinned
	// and CountClash.
	counted  [countedDepth]*trace.Record
	nCounted int
	// countedTop is the newest PSN a response kept in counted named
	// (it stays when that response leaves the ring).
	countedTop wire.PSN
	// openCounts are the positive ACKs not yet confirmed by a later one,
	// clash the latest response's pairing (pairCounts).
	openCounts []*trace.Record
	clash      countClash
	// maybeCopies holds the packets that may be copies (MaybeCopy), or
	// late, with which, in the order of maybeOrder.
	maybeCopies map[*trace.Record]maybeKind
	maybeOrder  []*trace.Record
	start       startState
	startMsgs   []wire.PSN // message ends seen before the start test was decided
	// Request gaps (SeesEveryRequest): fresh requests skipping PSNs, and
	// whether a response showed one of them executed unseen.
	gaps           []reqGap
	nextLo, nextHi wire.PSN
	haveNext       bool
	missedReq      bool
	// psnFault: ResponsePSNFault. psnFaultAt: the ACKs and ATOMIC
	// Acknowledges whose own PSN was at fault, up to maxPSNFaults;
	// psnFaultAll: a fault not pinned to them (a READ answer's numbering,
	// or more of them), which undermines every conclusion
	// (PSNFaultUndermines).
	psnFault string
	// ackFault: AckPSNFault's latest answer, for record rec while the
	// connection's record counter was seq.
	ackFault struct {
		rec *trace.Record
		seq uint64
		why string
	}
	psnFaultAt  []*trace.Record
	psnFaultAll bool
	// found: the latest records findings blamed, with the clause each
	// named (Blamed).
	found  [maxFound]blame
	nFound int
	// respIndexed: the Auditor's resps holds the connection's key.
	respIndexed bool
	// rs follows a request that may have begun QPs made anew with the
	// same numbers near the old PSNs (restart.go); judged, while set
	// (JudgedAt), the moment the findings being raised were judged at.
	rs     restart
	judged *Judged
	// reservedOps are the latest requests with a reserved RC opcode,
	// nReserved how many were noted (ReservedOps).
	reservedOps []ReservedOp
	nReserved   int
}

// sharedValue is one entry of Conn.Shared.
type sharedValue struct {
	key any
	val any
}

// Shared returns the connection's value for key, made by make the first
// time key is asked for. Monitors use it to share one model of the
// connection among themselves (for example, all the checkers of a group
// of clauses feeding one tracker), keyed by a package-level key of their
// own. Every checker of a connection sees each record in turn before the
// next record, so a shared model can compute what a record means once and
// hand the result to each checker that asks. The value lives as long as
// the connection.
func (c *Conn) Shared(key any, make func() any) any {
	for i := range c.shared {
		if c.shared[i].key == key {
			return c.shared[i].val
		}
	}
	v := make()
	c.shared = append(c.shared, sharedValue{key: key, val: v})
	return v
}

// recentMax is how many records a finding's ladder shows.
const recentMax = 16

// Req returns what the model remembers of request PSN p.
func (c *Conn) Req(p wire.PSN) (op wire.Opcode, ackReq bool, frame int, ok bool) {
	e := c.reqAt(p)
	if !e.holds(p) {
		return 0, false, 0, false
	}
	return e.op, e.flags&reqAckReq != 0, e.frame, true
}

// ReqSends returns how many times request PSN p was seen.
func (c *Conn) ReqSends(p wire.PSN) int {
	e := c.reqAt(p)
	if !e.holds(p) {
		return 0
	}
	return int(e.sends)
}

// SentBefore reports whether a request used PSN p (a READ counts for its
// whole reserved range) before now: one between the first PSN the trace
// showed and the next new one, or a request the trace showed at p before
// its first (a resend of a PSN sent before the capture began).
func (c *Conn) SentBefore(p wire.PSN) bool {
	if !c.HaveReq {
		return false
	}
	return p.AtOrAfter(c.FirstReq) && p.Before(c.NextReq) || c.reqAt(p).holds(p)
}

// swRing bounds the SEND and WRITE packets Conn.sw remembers.
const swRing = 32

// swSeen is a SEND or WRITE packet: its capture frame and PSN.
type swSeen struct {
	frame int32
	psn   wire.PSN
}

// SendOrWriteSince reports whether a SEND or WRITE packet at or before
// PSN p came after capture frame f, or may have (the latest swRing of them
// no longer reach back to f): one the responder may have answered as a
// duplicate since (the request table keeps each PSN's first frame only).
func (c *Conn) SendOrWriteSince(p wire.PSN, f int) bool {
	n := min(c.nSW, swRing)
	for i := 1; i <= n; i++ {
		e := c.sw[(c.nSW-i)%swRing]
		if int(e.frame) <= f {
			return false
		}
		if e.psn.AtOrBefore(p) {
			return true
		}
	}
	return c.nSW > swRing
}

// AtomicAnswer is the first ATOMIC acknowledgment the trace showed at a
// PSN: the original value it returned, its MSN and its capture frame (16
// bytes: a connection keeps up to 4096 of them).
type AtomicAnswer struct {
	Orig  uint64
	MSN   uint32
	Frame int32
}

// AtomicOriginal returns the original value first returned for the
// ATOMIC at PSN p.
func (c *Conn) AtomicOriginal(p wire.PSN) (uint64, bool) {
	v, ok := c.atomicOrig[p]
	return v.Orig, ok
}

// AtomicFirstAnswer returns the first ATOMIC acknowledgment the trace
// showed at PSN p.
func (c *Conn) AtomicFirstAnswer(p wire.PSN) (AtomicAnswer, bool) {
	v, ok := c.atomicOrig[p]
	return v, ok
}

// MTU returns the path MTU: the configured one, else the inferred one
// (0 if neither is known).
func (c *Conn) MTU() int {
	if c.Settings.MTU != 0 {
		return c.Settings.MTU
	}
	return c.MTUGuess
}

// BeyondMTU says why request r is one no responder can execute for its
// length: a SEND or RDMA WRITE packet carrying more than the path MTU (the
// connection's, configured or announced by its handshake, or, for an Only
// or Last packet, the one its full First and Middle packets show), or
// more than the largest path MTU whatever the connection's. It returns ""
// when r is not such a packet, or the MTU is not known.
func (c *Conn) BeyondMTU(r *trace.Record) string {
	p := r.Packet
	if cl := opc.Class(p.Opcode); r.Truncated || cl != wire.ClassSend && cl != wire.ClassWrite {
		return ""
	}
	mtu, how := c.Settings.MTU, "the connection's path MTU"
	if mtu == 0 && r.PayloadLen > maxMTU {
		mtu, how = maxMTU, "the largest path MTU"
	}
	if mtu == 0 {
		if pos := opc.Position(p.Opcode); pos != wire.PosOnly && pos != wire.PosLast {
			return ""
		}
		mtu, how = c.MTUGuess, "the path MTU its full First and Middle packets show"
	}
	if mtu == 0 || r.PayloadLen <= mtu {
		return ""
	}
	return fmt.Sprintf("a %s with PSN %d (frame %d) carries %d bytes, more than %s, %d", p.Opcode, p.PSN, r.Frame, r.PayloadLen, how, mtu)
}

// JudgesResponder reports whether responder-side monitors should judge
// this connection's responses: always for captures, and in active runs
// only when the device is the responder (the harness, playing the
// responder for requester rules, breaks responder rules on purpose).
func (c *Conn) JudgesResponder() bool { return !(c.Settings.Active && c.Settings.DeviceIsRequester) }

// JudgesRequester reports whether requester-side monitors should judge
// this connection's requests.
func (c *Conn) JudgesRequester() bool { return !c.Settings.Active || c.Settings.DeviceIsRequester }

// Complete reports whether the trace is known to hold the whole
// connection from its first packet with nothing lost before the capture
// point: true for active runs and for audits told so (--complete, for
// every connection; Settings.Complete set per connection, e.g. from a
// captured connection handshake), not for an active run whose adapter
// lost some of the device's packets (Settings.ReceiveLoss). A trace that merely shows the
// connection's beginning (FromStart) may still have lost packets on
// either side of the capture point, so it is not complete.
func (c *Conn) Complete() bool {
	return c.Settings.Active && !c.Settings.ReceiveLoss || c.Settings.Complete
}

// Recent returns the last records of the connection (for ladders).
func (c *Conn) Recent() []*trace.Record { return c.recent }

// absorb updates the model with r after the monitors saw it.
func (c *Conn) absorb(r *trace.Record) {
	p := r.Packet
	c.Packets++
	if len(c.recent) == recentMax {
		c.recent = c.recent[1:]
	}
	if len(c.recent) == cap(c.recent) {
		// No room left behind the last records: move them to the front
		// of the buffer (once every 3*recentMax records).
		if c.recentBuf == nil {
			c.recentBuf = make([]*trace.Record, 4*recentMax)
		}
		n := copy(c.recentBuf, c.recent)
		clear(c.recentBuf[n:])
		c.recent = c.recentBuf[:n]
	}
	c.recent = append(c.recent, r)
	c.StepWindow(r)
	defer c.syncExpected(r)
	c.reconStart(r)
	op := p.Opcode
	if opc.IsRequest(op) {
		if cl := opc.Class(op); cl == wire.ClassSend || cl == wire.ClassWrite {
			c.sw[c.nSW%swRing] = swSeen{int32(r.Frame), p.PSN}
			c.nSW++
		}
		last := p.PSN
		if op == wire.ReadRequest {
			mtu := c.MTU()
			if mtu != 0 {
				last = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1)
			}
		}
		e := c.reqAt(p.PSN)
		if e == nil {
			i := uint32(p.PSN) % reqWindow
			c.reqs[i/reqPage] = new([reqPage]reqEntry)
			e = c.reqAt(p.PSN)
		}
		if e.holds(p.PSN) {
			if e.sends < math.MaxUint16 {
				e.sends++
			}
			if e.flags&reqDropped != 0 {
				e.flags |= reqAfterDrop
			} else {
				e.flags &^= reqAfterDrop
			}
		} else {
			*e = reqEntry{flags: reqValid, psn: p.PSN, op: op, frame: r.Frame, sends: 1}
			if p.AckReq {
				e.flags |= reqAckReq
			}
		}
		// A request behind NextReq is a resend or a duplicate: it uses
		// PSNs already counted and reserves nothing new, even when a
		// duplicate READ asks for more than the original did.
		fresh := !c.HaveReq || p.PSN.AtOrAfter(c.NextReq)
		lastMin, lastMax := last, last
		var span *ReadSpan
		if op == wire.ReadRequest {
			if s := c.ReadSpanAt(p.PSN); s != nil && s.First == p.PSN {
				span = s
			} else if fresh || c.ReadSpanAt(p.PSN) == nil {
				span = c.newSpan(r)
				if !fresh {
					c.boundBySeen(span)
				}
			}
			if span != nil {
				lastMin, lastMax = span.LastMin, span.LastMax
				if fresh {
					// A new READ uses at least the PSNs its length
					// needs at the largest MTU, the MTU known or not:
					// the next new request comes after them, and a
					// READ asked from inside them is its partial retry.
					last = lastMin
				}
			}
		}
		if fresh && c.HaveReq {
			// The newest READ's span ends right before the next new
			// request's PSN (the requester numbers its requests
			// consecutively; a lost one only moves the bound back).
			if c.nSpans > 0 {
				if s := &c.spans[(c.nSpans-1)&(len(c.spans)-1)]; !s.Known() && s.First.Before(p.PSN) && p.PSN.AtOrBefore(s.LastMax.Next()) && !(op == wire.ReadRequest && s.First == p.PSN) {
					if end := p.PSN.Add(-1); end.AtOrAfter(s.LastMin) {
						s.LastMax = end
					}
				}
			}
		}
		c.reconRequest(e, p.PSN, lastMin, lastMax)
		c.reconGap(p.PSN, lastMin, lastMax, fresh)
		if !c.HaveReq {
			c.HaveReq, c.FirstReq, c.NextReq = true, p.PSN, last.Next()
		} else if fresh && last.AtOrAfter(c.NextReq) {
			c.NextReq = last.Next()
		}
		if span != nil && fresh && c.MTU() != 0 && span.LastMin == last {
			c.oweAnswer(span)
		}
		if pos := opc.Position(op); (pos == wire.PosFirst || pos == wire.PosMiddle) && !r.Truncated {
			if n := r.PayloadLen; n > c.MTUGuess && wire.ValidMTU(n) {
				c.MTUGuess = n
				c.mtuLearnt()
			}
		}
		return
	}
	if !opc.IsResponse(op) {
		return
	}
	c.HaveResp = true
	c.reconResponse(r)
	if c.IsLate(r) {
		// Sent before responses already absorbed (lateResponse): it
		// tells nothing newer than they did, so the latest ACK, MSN and
		// NAK stay theirs. Its count still covers the messages up to
		// its PSN, whenever it was sent (ackCounts.late).
		if opc.Class(op) == wire.ClassAck && p.AETH.IsACK() && c.AckPSNFault(r) == "" {
			c.ackCounts.noteLate(r)
		}
		return
	}
	if opc.Has(op, wire.HdrAETH) {
		c.LastMSN, c.HaveMSN = p.AETH.MSN, true
	}
	switch opc.Class(op) {
	case wire.ClassAck:
		if p.AETH.IsACK() {
			c.LastAck, c.LastAckPSN, c.LastAckMSN, c.HaveAck = r, p.PSN, p.AETH.MSN&0xFFFFFF, true
			if c.AckPSNFault(r) == "" {
				// (A PSN no legal responder gives fixes no count.)
				c.ackCounts.note(r)
			}
			if c.nOwed > 0 {
				c.answered(p.PSN, false, true)
			}
		} else {
			c.LastNAK = r
			if p.AETH.IsNAK(wire.NAKPSNSequence) {
				c.LastSeqNAK, c.LastSeqNAKSeq = r, c.seq
			}
		}
	case wire.ClassReadResponse:
		if pos := opc.Position(op); pos == wire.PosFirst || pos == wire.PosMiddle {
			if n := r.PayloadLen; n > c.MTUGuess && wire.ValidMTU(n) && !r.Truncated {
				c.MTUGuess = n
				c.mtuLearnt()
			}
		}
		if opc.EndsMessage(op) && c.nOwed > 0 {
			c.answered(p.PSN, true, false)
		}
		if c.countsUpTo(r) {
			// At its READ's last PSN, which the request fixes (a
			// response PSN no READ ends at is C9-96's fault, not a count).
			c.ackCounts.noteCount(r)
		}
	case wire.ClassAtomicAck:
		if c.countsUpTo(r) {
			c.ackCounts.noteCount(r)
		}
		if rop, _, _, ok := c.Req(p.PSN); ok && opc.Class(rop) == wire.ClassAtomic && (c.lastAnswer == nil || p.PSN.After(c.lastAnswer.Packet.PSN)) {
			c.lastAnswer = r
		}
		if c.atomicOrig == nil {
			c.atomicOrig = map[wire.PSN]AtomicAnswer{}
		}
		if _, ok := c.atomicOrig[p.PSN]; !ok {
			c.atomicOrig[p.PSN] = AtomicAnswer{Orig: p.AtomicAck, MSN: p.AETH.MSN, Frame: int32(r.Frame)}
			if len(c.atomicOrig) > 4096 {
				for k := range c.atomicOrig {
					if k.Before(p.PSN.Add(-2048)) {
						delete(c.atomicOrig, k)
					}
				}
			}
		}
	}
}

// LastAnswer returns the ATOMIC Acknowledge with the newest PSN the
// trace has shown at the PSN of an ATOMIC request (nil: none): it proves
// the ATOMIC completed when it was sent, as the responder executes it at
// once. A response that may be late is not taken. (A READ's answer
// proves no such thing of the responses after it: an ACK the responder
// built while it streamed the answer may leave after the answer's last
// packet.)
func (c *Conn) LastAnswer() *trace.Record { return c.lastAnswer }

// ReservedOp is a request with a reserved RC opcode (wire.Opcode.ReservedRC)
// the connection's requester sent, which no responder can execute. The
// connection model takes no state from it (it is no request of the RC
// operations), so it is noted apart, as the auditor routes it (before the
// records held back to restore the senders' order are delivered).
type ReservedOp struct {
	Rec *trace.Record
	// InSeq: it carried the responder's expected PSN as the trace proved
	// it when the request was routed (or it is the first request of a
	// complete trace).
	InSeq bool
}

// maxReservedOps bounds the reserved-opcode requests a connection keeps.
const maxReservedOps = 16

// noteReserved notes a reserved-opcode request.
func (c *Conn) noteReserved(r *trace.Record) {
	op := ReservedOp{Rec: r, InSeq: c.Classify(r.Packet.PSN) == ReqInSeq || !c.HaveReq && c.Complete()}
	if len(c.reservedOps) == maxReservedOps {
		c.reservedOps = append(c.reservedOps[:0], c.reservedOps[1:]...)
	}
	c.reservedOps = append(c.reservedOps, op)
	c.nReserved++
}

// ReservedOps returns the latest reserved-opcode requests noted on the
// connection, oldest first, and how many were noted in all (a monitor
// takes those it has not seen from the count).
func (c *Conn) ReservedOps() (latest []ReservedOp, total int) { return c.reservedOps, c.nReserved }
