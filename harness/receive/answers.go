package receive

import (
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// AnsReq is a READ or ATOMIC request, new or duplicate: the requests whose
// answer names them (a READ response stream starting at its PSN, an ATOMIC
// acknowledgment with its PSN), so the order of answers can be judged.
type AnsReq struct {
	Rec    *trace.Record
	Seq    int // arrival order among the connection's requests
	PSN    wire.PSN
	N      int // READ response packets (0 unknown); 1 for an ATOMIC
	Atomic bool
	// Dup: the request was a duplicate when it arrived: the model said so,
	// or an earlier request with these PSNs had already been answered.
	Dup bool
	// Orig is the earlier request this one repeats (a READ whose range
	// holds its PSN, the ATOMIC with its PSN), nil if none was seen.
	Orig *AnsReq
	// Answered: its answer started; Done: a READ's stream reached its
	// last PSN.
	Answered, Done bool
	// Superseded: the same PSN was requested again before any answer, so
	// this copy no longer waits (the responder may have dropped it).
	Superseded bool
	// SkippedBy is a logically later request whose answer started while
	// this one, logically earlier and arrived first, was still waiting.
	SkippedBy *AnsReq
}

// Last returns the READ's last response PSN (ok false when unknown).
func (a *AnsReq) Last() (wire.PSN, bool) {
	if a.N == 0 {
		return 0, false
	}
	return a.PSN.Add(a.N - 1), true
}

func (a *AnsReq) covers(p wire.PSN) bool {
	if l, ok := a.Last(); ok {
		return p.InRange(a.PSN, l)
	}
	return p == a.PSN
}

// Kind names the request for messages.
func (a *AnsReq) Kind() string {
	s := "RDMA READ"
	if a.Atomic {
		s = "ATOMIC"
	}
	if a.Dup {
		s = "duplicate " + s
	}
	return s
}

// Stream is a READ response stream (or, with Atomic, one ATOMIC
// acknowledgment).
type Stream struct {
	Req         *AnsReq // nil for a stream matching no waiting request
	Start, Next wire.PSN
	LastPSN     wire.PSN
	LastKnown   bool
	Open        bool
	StartRec    *trace.Record
	// LastRec is the stream's latest packet.
	LastRec *trace.Record
	// InterruptedBy is the stream that started while this one was open.
	InterruptedBy *Stream
}

// AnswerKind says what a READ response or ATOMIC acknowledgment did.
type AnswerKind uint8

// Answer kinds.
const (
	AnsNone      AnswerKind = iota
	AnsStart                // starts the answer to a waiting request
	AnsContinue             // the next packet of the open stream
	AnsResume               // continues a stream another one interrupted
	AnsUnmatched            // answers no waiting request
)

// Answer describes a READ response packet or ATOMIC acknowledgment.
type Answer struct {
	Kind   AnswerKind
	Req    *AnsReq // the request answered (nil for AnsUnmatched)
	Stream *Stream
	// Start: SkippedBy is set when a logically later request was answered
	// first although this one arrived before it (C9-104/C9-110).
	SkippedBy *AnsReq
	// Interrupted is the open stream this packet's stream interrupted.
	Interrupted *Stream
	// Start: Others counts the other requests waiting for an answer when
	// this one began; OthersDup is set when one of them, or this one, is
	// a duplicate (an ordering decision among duplicates was made).
	Others    int
	OthersDup bool
	// WantOpcode lists the opcodes the packet should have had, when it had
	// another (Start of a multi-packet answer: First; its end: Last; ...).
	WantOpcode []wire.Opcode
	// EndsEarly: a Last/Only before the stream's last PSN. Completed: the
	// stream reached its last PSN.
	EndsEarly, Completed bool
	// Gap: the packet continues the open stream, or (Unstarted) one it
	// began, after PSNs lost before the capture point.
	Gap bool
	// Unstarted: a Middle or Last at the PSN of this waiting request,
	// taken as going on with the answer owed to an older one whose range
	// holds it: otherwise it begins this request's answer without its
	// First.
	Unstarted *AnsReq
	// Covering: for an unmatched READ response, the duplicate READs
	// waiting whose original READ's range holds the packet's PSN.
	Covering []*AnsReq
}

type answers struct {
	reqs        []*AnsReq // READ/ATOMIC requests remembered, in arrival order
	waitq       []*AnsReq // those waiting for an answer (not answered, not superseded)
	cur         *Stream
	interrupted []*Stream
	// ans is the Answer of the current event (an event is valid until
	// the next record, and so is its Answer).
	ans Answer
	// unknownN counts the READs of reqs whose span was not known when
	// they were seen (N 0: the path MTU unknown).
	unknownN int
	// react is the longest interval the trace showed from a READ or
	// ATOMIC request, the first at its PSN, to the first packet of its
	// answer (haveReact): how long a request takes from the capture point
	// to the responder and its answer back, as far as the capture shows
	// it (Tracker.Reaction).
	react     time.Duration
	haveReact bool
	// reactPSN is the request's PSN that showed react; react2 the
	// longest interval another request showed (haveReact2).
	reactPSN   wire.PSN
	react2     time.Duration
	haveReact2 bool
}

// noteReaction takes in the interval d a request at PSN p showed from
// its arrival to its answer.
func (s *answers) noteReaction(p wire.PSN, d time.Duration) {
	switch {
	case !s.haveReact || d > s.react:
		if s.haveReact && s.reactPSN != p {
			s.react2, s.haveReact2 = s.react, true
		}
		s.react, s.reactPSN, s.haveReact = d, p, true
	case s.reactPSN != p && (!s.haveReact2 || d > s.react2):
		s.react2, s.haveReact2 = d, true
	}
}

// learnSpans gives the READs whose span was unknown the span the
// connection's reconstruction has learnt since (from the READ's Last or
// Only response, or from the MTU).
func (s *answers) learnSpans(c *harness.Conn) {
	if s.unknownN == 0 {
		return
	}
	left := 0
	for _, a := range s.reqs {
		if a.N != 0 || a.Atomic {
			continue
		}
		if sp := c.ReadSpanAt(a.PSN); sp != nil && sp.First == a.PSN {
			if l, ok := sp.Last(); ok {
				a.N = l.Diff(a.PSN) + 1
				continue
			}
		}
		left++
	}
	s.unknownN = left
}

// answer returns the current event's Answer, empty.
func (s *answers) answer() *Answer {
	s.ans = Answer{}
	return &s.ans
}

// maxWaiting bounds the requests waiting for an answer that are kept.
const maxWaiting = 256

func (s *answers) request(c *harness.Conn, t *Tracker, r *trace.Record, ev *Event, n int) {
	p := r.Packet
	atomic := opc.Class(p.Opcode) == wire.ClassAtomic
	if p.Opcode != wire.ReadRequest && !atomic {
		return
	}
	if ev.Class == ReqAhead {
		return // out of sequence: the responder drops it
	}
	if atomic {
		n = 1
	}
	s.learnSpans(c)
	if n == 0 {
		s.unknownN++
	}
	a := &AnsReq{Rec: r, Seq: t.seq, PSN: p.PSN, N: n, Atomic: atomic}
	for i := len(s.reqs) - 1; i >= 0; i-- {
		o := s.reqs[i]
		if o.Atomic != atomic || !o.covers(p.PSN) {
			// New requests come in PSN order: once a new one lies
			// wholly behind p, the older ones do too.
			if !o.Dup && o.PSN.Before(p.PSN) && !o.covers(p.PSN) {
				break
			}
			continue
		}
		if a.Orig == nil || (a.Orig.Dup && !o.Dup) {
			a.Orig = o
		}
		if !o.Dup {
			break
		}
	}
	a.Dup = ev.Class == ReqDup || (a.Orig != nil && (a.Orig.Answered || a.Orig.Dup && a.Orig.Orig != nil && a.Orig.Orig.Answered))
	k := 0
	for _, o := range s.waitq {
		if o.Atomic == atomic && o.PSN == p.PSN {
			o.Superseded = true
			continue
		}
		s.waitq[k] = o
		k++
	}
	s.waitq = append(s.waitq[:k], a)
	if len(s.waitq) > maxWaiting {
		s.waitq = s.waitq[1:]
	}
	s.reqs = append(s.reqs, a)
	if len(s.reqs) > 2*maxAnsReqs {
		s.reqs = append(s.reqs[:0], s.reqs[len(s.reqs)-maxAnsReqs:]...)
	}
}

// owedBefore returns the first READ waiting for an answer since before
// request a whose range holds x past its PSN, and whose answer has a
// packet of opcode op there where its range is known (nil: none).
func (s *answers) owedBefore(a *AnsReq, x wire.PSN, op wire.Opcode) *AnsReq {
	for _, d := range s.waitq {
		if d == a {
			return nil
		}
		if !d.Atomic && d.PSN.Before(x) && d.covers(x) && (d.N == 0 || op == wire.ReadResponseOp(x.Diff(d.PSN), d.N)) {
			return d
		}
	}
	return nil
}

// waiting returns the first request waiting for an answer with PSN p.
func (s *answers) waiting(p wire.PSN, atomic bool) *AnsReq {
	for _, a := range s.waitq {
		if a.Atomic == atomic && a.PSN == p {
			return a
		}
	}
	return nil
}

// superseded returns the newest READ requested at PSN p and superseded
// by a later request at p before any answer began, if it is still
// unanswered.
func (s *answers) superseded(p wire.PSN) *AnsReq {
	for i := len(s.reqs) - 1; i >= 0; i-- {
		if o := s.reqs[i]; !o.Atomic && o.PSN == p && o.Superseded && !o.Answered {
			return o
		}
	}
	return nil
}

func (s *answers) waitingList() []*AnsReq { return append([]*AnsReq(nil), s.waitq...) }

// start marks a's answer as begun by response r, noting the waiting
// requests it skips.
func (s *answers) start(a *AnsReq, r *trace.Record, ans *Answer) {
	if !a.Answered && !a.Dup && a.Orig == nil && r.Time >= a.Rec.Time {
		s.noteReaction(a.PSN, r.Time-a.Rec.Time)
	}
	ans.Kind, ans.Req, ans.SkippedBy = AnsStart, a, a.SkippedBy
	a.Answered = true
	ans.OthersDup = a.Dup
	k := 0
	for _, o := range s.waitq {
		if o != a {
			s.waitq[k] = o
			k++
		}
	}
	s.waitq = s.waitq[:k]
	for _, o := range s.waitq {
		ans.Others++
		if o.Dup {
			ans.OthersDup = true
		}
		if o.PSN.Before(a.PSN) && o.Seq < a.Seq && o.SkippedBy == nil {
			o.SkippedBy = a
		}
	}
}

// interrupt closes the open stream because another answer begins.
func (s *answers) interrupt(ans *Answer, by *Stream) {
	if s.cur != nil && s.cur.Open {
		s.cur.Open = false
		s.cur.InterruptedBy = by
		ans.Interrupted = s.cur
		s.interrupted = append(s.interrupted, s.cur)
		if len(s.interrupted) > 64 {
			s.interrupted = s.interrupted[1:]
		}
	}
}

func (s *answers) response(c *harness.Conn, t *Tracker, r *trace.Record, ev *Event) {
	p := r.Packet
	s.learnSpans(c)
	switch opc.Class(p.Opcode) {
	case wire.ClassReadResponse:
		ev.Answer = s.readResponse(c, r)
		ev.Answer.Stream.LastRec = r
	case wire.ClassAtomicAck:
		ans := s.answer()
		st := &Stream{Start: p.PSN, Next: p.PSN.Next(), LastPSN: p.PSN, LastKnown: true, StartRec: r}
		s.interrupt(ans, st)
		if a := s.waiting(p.PSN, true); a != nil {
			st.Req = a
			s.start(a, r, ans)
			a.Done = true
			ans.Completed = true
		} else {
			ans.Kind = AnsUnmatched
		}
		ans.Stream = st
		ev.Answer = ans
	case wire.ClassAck:
		// A NAK taking the place of the next packet ends the stream.
		if !p.AETH.IsACK() && s.cur != nil && s.cur.Open && p.PSN == s.cur.Next {
			s.cur.Open = false
		}
	}
}

func (s *answers) readResponse(c *harness.Conn, r *trace.Record) *Answer {
	p := r.Packet
	op := p.Opcode
	ans := s.answer()
	startOp := op == wire.ReadResponseFirst || op == wire.ReadResponseOnly
	if cur := s.cur; cur != nil && cur.Open && p.PSN == cur.Next &&
		!(startOp && !c.Complete() && s.waiting(p.PSN, false) != nil) {
		ans.Kind, ans.Req, ans.Stream = AnsContinue, cur.Req, cur
		s.advance(cur, op, ans)
		return ans
	}
	// (A First or Only where the open stream goes on, at the PSN a
	// waiting duplicate READ asks from, on a capture that may have lost
	// the rest of the open stream: the waiting READ's answer begins, as
	// with partial READ re-requests.)
	if cur := s.cur; cur != nil && cur.Open && !c.Complete() && lostBefore(c, cur, p) {
		// The open stream goes on past PSNs the capture does not show,
		// with nothing else in between: its packets were lost before
		// the capture point (on a complete trace the skip is C9-96's).
		ans.Kind, ans.Req, ans.Stream, ans.Gap = AnsContinue, cur.Req, cur, true
		cur.Next = p.PSN
		s.advance(cur, op, ans)
		return ans
	}
	if a := s.waiting(p.PSN, false); a != nil {
		if d := s.owedBefore(a, p.PSN, op); d != nil && !startOp && !c.Complete() && !c.SentAllSince(trace.ToRequester, c.Seq()-1) {
			// A Middle or Last at the PSN of a waiting READ, inside the
			// range of a READ waiting since before it: the responder
			// answers that one first, and on a capture that may have
			// lost its answer's first packets (the responder's IDs do
			// not show that it sent nothing since its packet before this
			// one) the packet goes on with it (answers.Tracker reads it
			// so too). Unstarted keeps the READ whose answer the packet
			// would begin otherwise.
			st := &Stream{Req: d, Start: d.PSN, Next: p.PSN, Open: true, StartRec: r}
			st.LastPSN, st.LastKnown = d.Last()
			s.interrupt(ans, st)
			s.start(d, r, ans)
			ans.Kind, ans.Stream, ans.Gap, ans.Unstarted = AnsContinue, st, true, a
			s.cur = st
			s.advance(st, op, ans)
			return ans
		}
		return s.startRead(a, r, ans)
	}
	if a := s.superseded(p.PSN); a != nil && (op == wire.ReadResponseFirst || op == wire.ReadResponseOnly) {
		// A second answer opening at the PSN of a READ requested twice
		// before any answer: the responder received both requests (the
		// network copied one, or the requester sent it again) and answers
		// each, the older too (for example, a request the network copied,
		// from a requester whose IPv4 ID never changes).
		return s.startRead(a, r, ans)
	}
	for i := len(s.interrupted) - 1; i >= 0; i-- {
		o := s.interrupted[i]
		if o.Next != p.PSN {
			continue
		}
		s.interrupted = append(s.interrupted[:i], s.interrupted[i+1:]...)
		s.interrupt(ans, o)
		ans.Kind, ans.Req, ans.Stream = AnsResume, o.Req, o
		o.Open = true
		s.cur = o
		s.advance(o, op, ans)
		return ans
	}
	st := &Stream{Start: p.PSN, Next: p.PSN, Open: true, StartRec: r}
	s.interrupt(ans, st)
	ans.Kind, ans.Stream = AnsUnmatched, st
	for _, a := range s.waitq {
		if a.Dup && !a.Atomic && a.Orig != nil && a.Orig.covers(p.PSN) {
			ans.Covering = append(ans.Covering, a)
		}
	}
	s.cur = st
	s.advanceAfterStart(st, op, ans)
	return ans
}

// startRead begins the answer to READ a with response r, noting a wrong
// opcode for the first packet of an answer.
func (s *answers) startRead(a *AnsReq, r *trace.Record, ans *Answer) *Answer {
	p := r.Packet
	op := p.Opcode
	st := &Stream{Req: a, Start: p.PSN, Next: p.PSN, Open: true, StartRec: r}
	if l, ok := a.Last(); ok {
		st.LastPSN, st.LastKnown = l, true
	}
	s.interrupt(ans, st)
	s.start(a, r, ans)
	switch {
	case a.N == 1 && op != wire.ReadResponseOnly:
		ans.WantOpcode = []wire.Opcode{wire.ReadResponseOnly}
	case a.N > 1 && op != wire.ReadResponseFirst:
		ans.WantOpcode = []wire.Opcode{wire.ReadResponseFirst}
	case a.N == 0 && op != wire.ReadResponseFirst && op != wire.ReadResponseOnly:
		ans.WantOpcode = []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseOnly}
	}
	ans.Stream = st
	s.cur = st
	s.advanceAfterStart(st, op, ans)
	return ans
}

// lostBefore reports whether READ response p continues stream st after
// PSNs the capture does not show: a Middle or Last beyond the stream's
// next PSN, inside the range its READ reserved (as the connection's
// reconstruction knows it), where no waiting request starts.
func lostBefore(c *harness.Conn, st *Stream, p *wire.Packet) bool {
	pos := opc.Position(p.Opcode)
	if pos != wire.PosMiddle && pos != wire.PosLast || !p.PSN.After(st.Next) {
		return false
	}
	if st.LastKnown {
		return p.PSN.AtOrBefore(st.LastPSN)
	}
	sp := c.ReadSpanAt(st.Start)
	return sp != nil && p.PSN.AtOrBefore(sp.LastMax)
}

// advanceAfterStart moves a stream past its first packet.
func (s *answers) advanceAfterStart(st *Stream, op wire.Opcode, ans *Answer) {
	if opc.EndsMessage(op) {
		st.Open = false
		if st.LastKnown {
			ans.Completed = st.Start == st.LastPSN
			ans.EndsEarly = !ans.Completed
		} else {
			ans.Completed = true
		}
		if ans.Completed && st.Req != nil {
			st.Req.Done = true
		}
	}
	st.Next = st.Start.Next()
}

// advance moves the open stream past its next packet, noting a wrong
// opcode for the packet's position.
func (s *answers) advance(st *Stream, op wire.Opcode, ans *Answer) {
	x := st.Next
	final := st.LastKnown && x == st.LastPSN
	switch {
	case final && op != wire.ReadResponseLast:
		ans.WantOpcode = []wire.Opcode{wire.ReadResponseLast}
	case !final && st.LastKnown && op != wire.ReadResponseMiddle:
		ans.WantOpcode = []wire.Opcode{wire.ReadResponseMiddle}
	case !st.LastKnown && op != wire.ReadResponseMiddle && op != wire.ReadResponseLast:
		ans.WantOpcode = []wire.Opcode{wire.ReadResponseMiddle, wire.ReadResponseLast}
	}
	st.Next = x.Next()
	if opc.EndsMessage(op) || final {
		st.Open = false
		ans.Completed = final || !st.LastKnown
		ans.EndsEarly = st.LastKnown && !final
		if ans.Completed && st.Req != nil {
			st.Req.Done = true
		}
	}
}

// inNewReadStream reports whether x lies strictly inside the range of a
// new (not duplicate) READ whose response stream is open.
func (s *answers) inNewReadStream(x wire.PSN) bool {
	cur := s.cur
	if cur == nil || !cur.Open || cur.Req == nil || cur.Req.Dup || cur.Req.Atomic {
		return false
	}
	if cur.LastKnown {
		return x.After(cur.Req.PSN) && x.AtOrBefore(cur.LastPSN)
	}
	return x.After(cur.Req.PSN) && x.AtOrBefore(cur.Next)
}

// inDupReadStream reports whether x lies in the range of a duplicate
// READ whose replay is open (an error met while replaying it).
func (s *answers) inDupReadStream(x wire.PSN) *AnsReq {
	cur := s.cur
	if cur == nil || !cur.Open || cur.Req == nil || !cur.Req.Dup || cur.Req.Atomic {
		return nil
	}
	if cur.LastKnown && x.InRange(cur.Start, cur.LastPSN) || !cur.LastKnown && x.InRange(cur.Start, cur.Next) {
		return cur.Req
	}
	return nil
}
