package receive

import (
	"fmt"
	"strings"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ReqClass is how the responder classified a request packet against its
// expected PSN (the PSN check of §9.7.4, as the specification's Response
// Generation text describes its verdicts), as the connection's reconstruction
// sees it.
type ReqClass = harness.ReqClass

// Request classes.
const (
	ReqUnknown = harness.ReqUnknown // the reconstruction cannot tell
	ReqNew     = harness.ReqInSeq   // the expected PSN: executed in sequence (unless refused)
	ReqAhead   = harness.ReqAhead   // ahead of the expected PSN: a PSN sequence error
	ReqDup     = harness.ReqBehind  // behind it: a duplicate
)

// Bounds on what the model remembers; past them it gives up exactness
// (indeterminate) rather than guess.
const (
	maxDupSeen = 1024 // duplicates remembered by PSN
	maxAnsReqs = 512  // READ/ATOMIC requests remembered
)

// Tracker follows one connection's responder from its trace for the
// duplicate and NAK clauses. What the responder expected and how it
// classified each request come from the connection's reconstruction
// (harness.Conn.Window); the tracker adds the NAK latch, the duplicates
// seen and the READ/ATOMIC answers owed. Observe it with every record, in
// trace order, before the harness's connection model absorbs the record;
// it returns what the record meant.
type Tracker struct {
	inited   bool
	complete bool // the trace is complete: exact judgments are possible

	w   *harness.Window // the reconstruction's expected-PSN window
	seq int             // requests seen so far

	// Bounds that hold on every trace.
	// The lower bound of the responder's expected PSN is the
	// reconstruction's (harness.Conn.Expected); lowerSeen is the value
	// last seen, to tell when it rose.
	lowerSeen     wire.PSN
	haveLowerSeen bool
	acked         wire.PSN // the newest PSN a positive response showed executed
	haveAcked     bool

	dead bool // the responder sent a NAK that ends the connection (codes 1–3)

	latch   *Latch
	prevNAK *trace.Record // the previous sequence NAK (network-duplicate test)
	// prevStale: prevNAK's PSN was behind the lower bound when it came.
	prevStale bool

	dupSeen       map[wire.PSN]*trace.Record // duplicates seen, by PSN
	dupSinceLower []*trace.Record            // incomplete traces: duplicates since the lower bound rose

	ans answers
	ev  Event // the event of the latest record (reused: valid until the next)

	// fed: a monitor joined as the feeder (Join). memoRec is the record
	// ev describes, memoN the connection's packet count then: the
	// monitors sharing the tracker get the same event for a record.
	fed     bool
	memoRec *trace.Record
	memoN   int
}

// sharedKey keys the connection's shared Tracker (harness.Conn.Shared).
type sharedKey struct{}

// Join returns the Tracker of connection c that every monitor judging
// its responder's answers shares, built once per packet whatever the
// number of monitors, and reports whether the caller (a monitor being
// made, from its Monitor.New) is the first to join: the tracker's feeder.
// The Auditor calls the feeder first for every record of the connection;
// the feeder passes every record to Observe (its Kinds, if it is a
// harness.KindFilter, are harness.AllKinds), so the others need to see
// only the records they judge, and get the feeder's event for them.
func Join(c *harness.Conn) (t *Tracker, feeder bool) {
	t = c.Shared(sharedKey{}, func() any { return &Tracker{} }).(*Tracker)
	feeder = !t.fed
	t.fed = true
	return t, feeder
}

// Latch is one NAK-latch episode: a sequence NAK was sent with PSN PSN;
// the responder must ignore new requests, and send no other sequence NAK,
// until a request with that PSN arrives (C9-114/C9-122).
type Latch struct {
	PSN wire.PSN
	NAK *trace.Record
	// Cleared: a request carrying PSN reached the responder after it
	// built the NAK (the window shows it accepted after the NAK's point,
	// or it was seen after the NAK).
	Cleared bool
	// Exact: the trace is complete, so a request not seen did not arrive.
	Exact bool
	// Seq is the NAK's sequence number among the connection's records
	// (harness.Conn.Seq), for the responder's continuity since it.
	Seq uint64
}

// Event is what one record meant to the model. Fields not relevant to the
// record's kind are zero.
type Event struct {
	Rec   *trace.Record
	Exact bool // complete trace and confirmed window: exact judgments
	Dead  bool // the responder had already ended the connection with a NAK

	// A request: its class against the expected PSN (complete traces;
	// on other traces ReqDup only when it is behind the lower bound).
	Class ReqClass
	E     wire.PSN // expected PSN when it arrived (Class != ReqUnknown)

	// A response: the expected PSNs the responder could have had when it
	// built it (exact only), and what its PSN names.
	Window []wire.PSN
	// InWindow: the PSN equals one of Window. Behind: it is behind all of
	// them (exact), or behind the lower bound (inexact, HaveLower).
	InWindow, Behind bool
	Lower            wire.PSN
	HaveLower        bool
	// Accepted: the PSN names a request accepted in sequence inside the
	// window (the responder received it at its expected PSN). NamesStep
	// also counts the window's base (a request already acknowledged).
	Accepted, NamesStep bool
	// AckedAlready: the PSN is at or before a request already positively
	// acknowledged (a positive ACK, READ response or ATOMIC acknowledgment).
	AckedAlready bool
	AckedPSN     wire.PSN
	// Named is the opcode of the request seen with this PSN; NamedSeen
	// says whether one was seen at all.
	Named     wire.Opcode
	NamedSeen bool
	// DupNamed is a duplicate request carrying this PSN (nil: none seen).
	DupNamed *trace.Record
	// ReqSinceBase (exact only): a request carrying this PSN arrived since
	// the window's base. An error NAK naming a PSN no request since the
	// base carried is about no new request.
	ReqSinceBase bool
	// AheadOf (exact only): a request beyond this PSN arrived since the
	// window's base while this PSN was the expected one: what a sequence
	// NAK naming it answers.
	AheadOf bool
	// WaitingDupAtomic is the newest duplicate ATOMIC still waiting for an
	// answer (nil: none).
	WaitingDupAtomic *AnsReq
	// DupsSinceBase lists the duplicates that arrived since the window's
	// base (exact), or since the lower bound last rose (inexact).
	DupsSinceBase []*trace.Record
	// InNewReadStream: the PSN lies strictly inside a new READ's range
	// whose response stream is still open (a mid-stream failure, C9-100).
	InNewReadStream bool
	// InDupReadStream: the PSN lies in the range of a duplicate READ whose
	// replay is open (an error met while replaying it).
	InDupReadStream *AnsReq

	// A sequence NAK and the latch.
	PrevLatch *Latch // the episode open before this NAK (nil: none)
	// PrevNAK is the responder's previous sequence NAK (nil: none).
	// RepeatsNAK: the sequence NAK names the PSN PrevNAK named. Whether
	// it may be sent at all is the NAK latch's rule (C9-114/C9-122); its
	// PSN, stale by then, is no sign of a second fault. RepeatsPassed:
	// off complete traces, it does so after a positive response showed
	// the responder past that PSN (the PSN is behind the lower bound now
	// and was not at PrevNAK): then the request at that PSN had reached
	// the responder, no latch explains the NAK alone, and its PSN is
	// wrong too (a finding naming C9-111 and the latch's clauses).
	PrevNAK                   *trace.Record
	RepeatsNAK, RepeatsPassed bool
	NetDupUnknown             bool // identical to the previous NAK and the IP ID cannot tell (copies the ID tells never reach the checkers)
	// PastGap: a positive response naming a PSN at or past the latch's
	// PSN while the latch had to be set (exact).
	PastGap *Latch

	// READ/ATOMIC answers (valid, like the event, until the next record).
	Answer *Answer
}

// Observe feeds one record and returns what it meant: the same event to
// every monitor sharing the tracker (Join) for that record. The event is
// valid until the next record.
func (t *Tracker) Observe(c *harness.Conn, r *trace.Record) *Event {
	if t.memoRec == r && t.memoN == c.Packets {
		return &t.ev
	}
	t.memoRec, t.memoN = r, c.Packets
	if !t.inited {
		t.inited = true
		t.complete = c.Complete()
		t.w = c.Window()
		t.dupSeen = map[wire.PSN]*trace.Record{}
	}
	t.syncLower(c)
	t.ev = Event{Rec: r, Dead: t.dead}
	ev := &t.ev
	p := r.Packet
	if opc.IsRequest(p.Opcode) {
		t.request(c, r, ev)
		return ev
	}
	if !opc.IsResponse(p.Opcode) || t.dead {
		c.StepWindow(r)
		return ev
	}
	// What the response is judged against is the window before it.
	t.describe(c, ev, p.PSN)
	c.StepWindow(r)
	t.response(c, r, ev)
	return ev
}

// Reaction returns the longest interval the trace has shown so far from a
// READ or ATOMIC request, the first at its PSN, to the first packet of its
// answer (ok false: none yet): a bound, from the capture's own evidence,
// on how long a request takes from the capture point to the responder and
// its answer back.
func (t *Tracker) Reaction() (d time.Duration, ok bool) { return t.ans.react, t.ans.haveReact }

// ReactionBesides is Reaction shown by the requests at PSNs other than q:
// the bound against which the answer to the request at q is judged.
func (t *Tracker) ReactionBesides(q wire.PSN) (d time.Duration, ok bool) {
	if t.ans.haveReact && t.ans.reactPSN == q {
		return t.ans.react2, t.ans.haveReact2
	}
	return t.ans.react, t.ans.haveReact
}

// Owed is when, by the capture, the responder had a new READ whose
// answer a response took to be still to come (Tracker.ReadOwed): the
// READ request it had received, or (Begun) the latest packet of the
// READ's answer, begun and not ended. From then on the answer, or its
// rest, was owed at once.
type Owed struct {
	Frame int
	At    time.Duration
	Begun bool
}

// ReadOwed returns when the responder had the new READ at PSN q owed,
// for a response at frame before that takes its answer to be still to
// come (ok false: the capture does not show it): the latest packet of
// the READ's answer where it began and has not reached its last PSN;
// otherwise, where no request at q has had its answer begun, a READ
// request at q captured before frame before: the latest (first false),
// or the first of them (first), which the responder received unless it
// was lost where nothing shows it.
func (t *Tracker) ReadOwed(q wire.PSN, before int, first bool) (o Owed, ok bool) {
	if r, begun := t.answerBegun(q); begun {
		return Owed{Frame: r.Frame, At: r.Time, Begun: true}, true
	}
	var r *trace.Record
	for i := len(t.ans.reqs) - 1; i >= 0; i-- {
		a := t.ans.reqs[i]
		if a.Atomic || a.PSN != q {
			continue
		}
		if a.Answered {
			return Owed{}, false
		}
		if a.Rec.Frame < before && (r == nil || first) {
			r = a.Rec
		}
	}
	if r == nil {
		return Owed{}, false
	}
	return Owed{Frame: r.Frame, At: r.Time}, true
}

// Overdue reports whether a response captured at time at, taking the
// answer to the READ at PSN q owed since o (ReadOwed) to be still to
// come, came longer after o than the longest interval the capture shows
// the responder taking to begin an answer to another READ or ATOMIC
// (ReactionBesides): legal then only if the READ was lost on its way, or
// the rest of its answer before the capture point, or the answer was
// delayed beyond anything the capture shows. why says so, in the words
// of an undecided instance's reason.
func (t *Tracker) Overdue(o Owed, q wire.PSN, at time.Duration) (why string, overdue bool) {
	bound, ok := t.ReactionBesides(q)
	gap := at - o.At
	if !ok || gap <= max(bound, time.Microsecond) {
		return "", false
	}
	if o.Begun {
		return fmt.Sprintf("its answer had begun and paused %v after its packet of frame %d, while the capture shows the responder beginning an answer to a READ or ATOMIC within %v: only if the rest of that answer was lost before the capture point, or paused beyond that", gap, o.Frame, bound), true
	}
	return fmt.Sprintf("the responder had received it %v before (frame %d), while the capture shows it beginning an answer to a READ or ATOMIC within %v: only if that copy was lost on its way, or its answer delayed beyond that", gap, o.Frame, bound), true
}

// answerBegun returns the latest packet of an answer to the new READ at
// PSN q that began and has not reached the READ's last PSN (ok false:
// none): the responder was executing the READ when it sent that packet.
func (t *Tracker) answerBegun(q wire.PSN) (last *trace.Record, ok bool) {
	begun := func(st *Stream) bool {
		return st != nil && st.Req != nil && !st.Req.Dup && !st.Req.Atomic && st.Req.PSN == q && !st.Req.Done && st.LastRec != nil
	}
	if st := t.ans.cur; begun(st) {
		return st.LastRec, true
	}
	for i := len(t.ans.interrupted) - 1; i >= 0; i-- {
		if st := t.ans.interrupted[i]; begun(st) {
			return st.LastRec, true
		}
	}
	return nil, false
}

// Exact reports whether the model currently makes exact judgments.
func (t *Tracker) Exact() bool { return t.w != nil && t.w.Exact() }

// Complete reports whether the trace is complete.
func (t *Tracker) Complete() bool { return t.complete }

// Why returns why the model is not exact (for indeterminate reasons).
func (t *Tracker) Why() string {
	if t.w == nil {
		return "no record seen yet"
	}
	return t.w.Why()
}

// ReadOpen reports whether a new READ request with PSN q was seen whose
// response stream has not been completed: while it is owed, the newest
// completed request is the one before it (C9-101).
func (t *Tracker) ReadOpen(q wire.PSN) bool {
	for i := len(t.ans.reqs) - 1; i >= 0; i-- {
		a := t.ans.reqs[i]
		if !a.Atomic && !a.Dup && a.PSN == q && !a.Done && !a.Superseded {
			return true
		}
	}
	return false
}

// Latch returns the open latch episode (nil: none).
func (t *Tracker) Latch() *Latch { return t.latch }

// Dead reports whether the responder ended the connection with a NAK.
func (t *Tracker) Dead() bool { return t.dead }

// packets returns the PSNs a request occupies at the connection's MTU, or
// 0 when unknown (a READ longer than the smallest MTU on a connection
// whose MTU is not known).
func packets(c *harness.Conn, p *wire.Packet) int {
	if p.Opcode != wire.ReadRequest {
		return 1
	}
	if p.RETH.Length <= 256 {
		return 1
	}
	if m := c.MTU(); m != 0 {
		return wire.ReadResponsePackets(p.RETH.Length, m)
	}
	return 0
}

// windowE lists the expected PSNs of the window.
func (t *Tracker) windowE() []wire.PSN {
	steps := t.w.Steps()
	out := make([]wire.PSN, 0, len(steps))
	for _, s := range steps {
		out = append(out, s.E)
	}
	return out
}

func (t *Tracker) request(c *harness.Conn, r *trace.Record, ev *Event) {
	p := r.Packet
	n := packets(c, p)
	st := c.StepWindow(r)
	t.seq = st.Seq
	switch {
	case st.Class != ReqUnknown:
		ev.Class, ev.E = st.Class, st.E
	case c.Classify(p.PSN) == harness.ReqBehind:
		// Behind the responder's expected PSN as the trace proves it (a
		// PSN it acknowledged, or behind the one a NAK named): a
		// duplicate on any trace.
		ev.Class = ReqDup
	}
	if ev.Class == ReqDup {
		t.noteDup(r)
	}
	if t.latch != nil && p.PSN == t.latch.PSN {
		t.latch.Cleared = true
	}
	t.ans.request(c, t, r, ev, n)
}

func (t *Tracker) noteDup(r *trace.Record) {
	if len(t.dupSeen) >= maxDupSeen {
		for k := range t.dupSeen {
			delete(t.dupSeen, k)
			break
		}
	}
	t.dupSeen[r.Packet.PSN] = r
	if !t.complete {
		t.dupSinceLower = append(t.dupSinceLower, r)
		if len(t.dupSinceLower) > maxDupSeen {
			t.dupSinceLower = t.dupSinceLower[1:]
		}
	}
}

// dupsSinceBase lists the duplicates since the window's base (exact), or
// since the lower bound last rose (other traces).
func (t *Tracker) dupsSinceBase() []*trace.Record {
	if !t.complete {
		return append([]*trace.Record(nil), t.dupSinceLower...)
	}
	if !t.Exact() {
		return nil
	}
	var out []*trace.Record
	for _, q := range t.w.Reqs() {
		if q.Class == ReqDup {
			out = append(out, q.Rec)
		}
	}
	return out
}

// syncLower notes the reconstruction's lower bound of the expected PSN
// before the record: the duplicates since it rose are forgotten when it
// rises.
func (t *Tracker) syncLower(c *harness.Conn) {
	e := c.Expected()
	if e.HaveLo && (!t.haveLowerSeen || e.Lo.After(t.lowerSeen)) {
		t.lowerSeen, t.haveLowerSeen = e.Lo, true
		t.dupSinceLower = t.dupSinceLower[:0]
	}
}

func (t *Tracker) raiseAcked(x wire.PSN) {
	if !t.haveAcked || x.After(t.acked) {
		t.acked, t.haveAcked = x, true
	}
}

// describe fills the response's common fields: the window, what its PSN
// names, and the bounds.
func (t *Tracker) describe(c *harness.Conn, ev *Event, x wire.PSN) {
	ev.Exact = t.Exact()
	ev.Lower, ev.HaveLower = t.lowerSeen, t.haveLowerSeen
	if op, _, _, ok := c.Req(x); ok {
		ev.Named, ev.NamedSeen = op, true
	} else if rd := c.ReadCovering(x); rd != nil && rd.First == x {
		ev.Named, ev.NamedSeen = wire.ReadRequest, true
	}
	ev.DupNamed = t.dupSeen[x]
	if t.haveAcked && x.AtOrBefore(t.acked) {
		ev.AckedAlready, ev.AckedPSN = true, t.acked
	}
	ev.InNewReadStream = t.ans.inNewReadStream(x)
	ev.InDupReadStream = t.ans.inDupReadStream(x)
	if t.haveLowerSeen && !ev.Exact {
		ev.Behind = x.Before(t.lowerSeen)
	}
	if ev.Rec.Packet.Opcode != wire.Acknowledge {
		// The rest (windows, duplicates since the base) is judged only
		// for Acknowledge packets: left out elsewhere to keep the
		// per-packet cost low.
		if ev.Exact {
			ev.Accepted = t.w.StepBy(x, false) >= 0
		}
		return
	}
	for _, a := range t.ans.waitq {
		if a.Atomic && a.Dup {
			ev.WaitingDupAtomic = a
		}
	}
	ev.DupsSinceBase = t.dupsSinceBase()
	if ev.Exact {
		ev.Window = t.windowE()
		ev.InWindow = t.w.FirstE(x) >= 0
		ev.Behind = x.Before(t.w.Steps()[0].E)
		ev.Accepted = t.w.StepBy(x, false) >= 0
		ev.NamesStep = t.w.StepBy(x, true) >= 0
		// A request at x that no responder can execute for its length
		// may have been dropped (without the NAK invalid request it is
		// owed: §9.7.5.1.5's matter): the requests after it then met
		// the expected PSN x, ahead of it.
		dropped := ev.Rec.Packet.AETH.IsNAK(wire.NAKPSNSequence) && t.w.TookBeyondMTU(c, x)
		took := false
		for _, q := range t.w.Reqs() {
			psn := q.Rec.Packet.PSN
			if psn == x {
				ev.ReqSinceBase = true
				took = took || dropped && c.BeyondMTU(q.Rec) != ""
			}
			if q.Class == ReqAhead && q.E == x || took && psn.After(x) {
				ev.AheadOf = true
			}
		}
	}
}

func (t *Tracker) response(c *harness.Conn, r *trace.Record, ev *Event) {
	p := r.Packet
	switch op := p.Opcode; {
	case op == wire.Acknowledge && p.AETH.IsACK():
		t.positive(c, ev, p.PSN, p.PSN, p.PSN)
	case op == wire.Acknowledge && p.AETH.IsNAK(wire.NAKPSNSequence):
		t.seqNAK(c, r, ev)
	case op == wire.Acknowledge && p.AETH.IsRNR():
		if l := t.latch; l != nil && (l.Cleared || l.PSN == p.PSN) {
			// The refused request carried the latch's PSN (or the latch
			// was already cleared): the episode is over, and the
			// expected PSN stays where a new sequence NAK may name it.
			t.latch = nil
		}
	case op == wire.Acknowledge:
		// NAK codes 1–3 (and reserved ones): the responder ends the
		// connection once it is sent.
		t.dead = true
	case opc.Class(op) == wire.ClassReadResponse:
		if rd := c.ReadCovering(p.PSN); rd != nil {
			t.positive(c, ev, rd.First, rd.LastMin, p.PSN)
		}
	case op == wire.AtomicAcknowledge:
		t.positive(c, ev, p.PSN, p.PSN, p.PSN)
	}
	t.ans.response(c, t, r, ev)
}

// positive handles a response proving the request at psn was executed (a
// positive ACK, a READ response, an ATOMIC acknowledgment): last is the
// last PSN that request reserved, and acked the newest PSN the response
// shows done.
func (t *Tracker) positive(c *harness.Conn, ev *Event, psn, last, acked wire.PSN) {
	if c.SentBefore(psn) {
		t.raiseAcked(acked)
	}
	if l := t.latch; l != nil && l.Exact && !l.Cleared && acked.AtOrAfter(l.PSN) && c.SentBefore(acked) {
		ev.PastGap = l
	}
}

// seqNAK handles a PSN sequence error NAK.
func (t *Tracker) seqNAK(c *harness.Conn, r *trace.Record, ev *Event) {
	x := r.Packet.PSN
	if prev := t.prevNAK; prev != nil && sameResponse(prev, r) {
		if !r.HasIPID || !prev.HasIPID || r.IPID == prev.IPID {
			// IPv6, or an IP identification the sender keeps constant:
			// a network duplicate cannot be told from a second NAK.
			ev.NetDupUnknown = true
		}
	}
	stale := !t.complete && ev.HaveLower && ev.Behind // behind a PSN acknowledged
	ev.PrevNAK = t.prevNAK
	ev.RepeatsNAK = t.prevNAK != nil && t.prevNAK.Packet.PSN == x
	ev.RepeatsPassed = ev.RepeatsNAK && stale && !t.prevStale && !ev.NetDupUnknown
	t.prevNAK, t.prevStale = r, stale
	ev.PrevLatch = t.latch
	if t.complete && t.w.Holds() && t.w.FirstE(x) < 0 {
		// No expected PSN the responder could have had is x: the NAK's
		// PSN is wrong (C9-111's fault), and which PSN the responder
		// latched the trace does not tell. No episode is judged on it
		// (one root cause, one clause).
		t.latch = nil
		return
	}
	// The reconstruction's window already took the NAK in (Observe).
	l := &Latch{PSN: x, NAK: r, Exact: t.complete && t.w.Holds(), Seq: c.Seq()}
	// A request with PSN x accepted in the window after the NAK's point
	// reached the responder after it built the NAK.
	if t.w.Holds() {
		steps := t.w.Steps()
		if i := t.w.FirstE(x); i >= 0 && i+1 < len(steps) && steps[i+1].By == x {
			l.Cleared = true
		}
	}
	t.latch = l
}

// sameResponse reports whether two responses carry the same headers.
func sameResponse(a, b *trace.Record) bool {
	x, y := a.Packet, b.Packet
	return x.Opcode == y.Opcode && x.PSN == y.PSN && x.AETH == y.AETH && x.DestQP == y.DestQP
}

// End closes the model at the end of the trace: the open latch episode,
// if it ended properly, and the requests still waiting for an answer.
func (t *Tracker) End() (held *Latch, waiting []*AnsReq) {
	if l := t.latch; l != nil && l.Cleared {
		held = l
	}
	return held, t.ans.waitingList()
}

// FormatPSNs renders a list of PSNs for messages ("1000", "1000, 1001 or 1002").
func FormatPSNs(ps []wire.PSN) string {
	if len(ps) == 0 {
		return "none"
	}
	if len(ps) > 6 {
		return fmt.Sprintf("%d … %d (%d values)", ps[0], ps[len(ps)-1], len(ps))
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
