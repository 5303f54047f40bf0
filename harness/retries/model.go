// Package retries is the reconstruction of one connection's request
// stream as its requester drives it (first transmissions, resends,
// go-back-N sweeps, what is acknowledged, which responses could have
// triggered a retry), which the passive monitors of C9-140, the retry
// counter, the RNR retry counter, go-back-N, §9.7.5.1.2 and §9.9.2.2
// judge.
//
// The model follows the requester's retry machinery as
// docs/interpretations.md ("Go-back-N", "What a response acknowledges") reads
// it: a transport retry (a timeout or a PSN-sequence-error NAK) goes back to
// the oldest unacknowledged PSN (or the NAK's PSN) and resends in order with
// the same PSNs; an RNR NAK makes the requester wait its advertised delay and
// resend; an acknowledgment whose PSN passes an outstanding READ (or ATOMIC)
// is an implied NAK (§9.7.5.1.2); invalid-request, remote-access and
// remote-operational NAKs end the QP (§9.9.2.2).
//
// What requests were sent is the connection's reconstruction's
// (harness.Conn): the model reads from it which PSN is new and which a
// resend (Conn.NextReq, counting the PSNs of a READ whose span was learnt
// after it was sent) and the PSN range a READ reserves (Conn.ReadSpanAt:
// from the MTU, the next new request or the READ's Last response). It keeps
// what is the requester's own: what each PSN carried (to compare resends
// with), what the responses told the requester is complete, the retry
// episodes with their causes and counters, and the transmissions the timers
// are measured from.
package retries

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Tracker is a model of a connection's request stream. Call Request or
// Response for every packet, in trace order, from a monitor's Observe
// (the Tracker reads the connection's reconstruction as it stands before
// the record). The monitors of a connection share one (see Shared).
type Tracker struct {
	c *harness.Conn

	// What requests were sent, what is new and what is a resend, and
	// which PSNs a READ reserves are the connection's reconstruction's
	// (harness.Conn: NextReq, ReadSpanAt); the Tracker keeps what the
	// requester sent in them (for the content of resends) and what is
	// acknowledged.
	have   bool
	origin wire.PSN // PSN of ents[0]
	ents   []*Sent  // ents[i] is PSN origin+i (a READ's reserved PSNs share its entry)
	base   int      // index of the oldest entry not Done
	// starts has a bit per entry of ents, set for every entry that may
	// begin a run of live entries: one not nil and not Done that differs
	// from the entry before it. Bits may also be set for entries that do
	// not (they are cleared when a walk meets them), so that walks over
	// the window (cover, Outstanding) visit only the entries that can
	// matter and skip acknowledged stretches and a READ's reserved PSNs.
	starts []uint64
	// exhaustive makes the walks visit every entry (tests: the model as
	// it is defined, to compare with).
	exhaustive bool

	// The events of the record seen last: Request and Response hand them
	// out, and shared trackers give them to each monitor of the
	// connection without recomputing them.
	shared   bool
	fed      bool // a monitor has joined as the feeder
	memoRec  *trace.Record
	memoN    int
	memoReq  ReqEvent
	memoResp RespEvent

	prev     *trace.Record // the previous request (network duplicates excluded)
	prevEnd  wire.PSN      // the last PSN it occupies
	prevKind Kind
	prevSeq  uint64 // prev's place among the connection's records

	trig []Trigger // responses since the last retry start that may trigger one

	ep struct {
		transport, transportUnsure, rnr, rnrUnsure int
		timeouts                                   int
	}
	lastResp *trace.Record // latest READ response or ATOMIC acknowledgment
	slab     []Sent        // where the next Sents are allocated
}

// sentSlab is how many Sents are allocated at once.
const sentSlab = 32

// Memory bounds per connection: the PSNs remembered (outstanding ones and
// a little history behind the oldest, for resends of what was just
// acknowledged), and the responses kept as possible retry triggers.
const (
	maxEnts    = 1 << 13
	keepBehind = 256
	maxTrig    = 64
)

// NewTracker returns an empty model for connection c.
func NewTracker(c *harness.Conn) *Tracker { return &Tracker{c: c} }

// sharedKey keys the connection's shared Tracker (harness.Conn.Shared).
type sharedKey struct{}

// Shared returns the Tracker of connection c that every requester-side
// monitor of c shares. Each monitor calls Request or Response for the
// packets of c, in trace order, as with its own Tracker: the first call
// for a packet updates the model and the others get the same event. The
// monitors must not change what the events point to.
func Shared(c *harness.Conn) *Tracker {
	t, _ := Join(c)
	return t
}

// Join is Shared for a monitor being made (from its Monitor.New): it also
// reports whether the monitor is the first of the connection to join, the
// tracker's feeder. The Auditor calls the feeder first for every record
// of the connection; the feeder passes every packet to the tracker (its
// Kinds, if it is a harness.KindFilter, are harness.AllKinds), so
// the other monitors need to see only the packets they judge.
func Join(c *harness.Conn) (t *Tracker, feeder bool) {
	t = c.Shared(sharedKey{}, func() any {
		t := NewTracker(c)
		t.shared = true
		return t
	}).(*Tracker)
	feeder = !t.fed
	t.fed = true
	return t, feeder
}

// memo reports whether r is the record whose event the shared tracker
// remembers (the record being observed on the connection).
func (t *Tracker) memo(r *trace.Record) bool {
	return t.shared && t.memoRec == r && t.memoN == t.c.Packets
}

func (t *Tracker) remember(r *trace.Record) {
	if t.shared {
		t.memoRec, t.memoN = r, t.c.Packets
	}
}

// Next returns one past the highest PSN a request used before the
// record being observed: the connection's reconstruction's
// (harness.Conn.NextReq), which counts the PSNs of a READ whose span it
// learnt after the READ was sent (from its Last response, the path MTU
// unknown) as used.
func (t *Tracker) Next() (wire.PSN, bool) { return t.c.NextReq, t.c.HaveReq }

// Lookup returns what is remembered of PSN p (a READ's reserved PSNs map
// to the READ, including those of a span the connection's reconstruction
// learnt after the READ was sent: see readSpan).
func (t *Tracker) Lookup(p wire.PSN) *Sent {
	if s := t.entry(p); s != nil {
		return s
	}
	return t.readSpan(p)
}

// entry returns the entry of PSN p (nil if none).
func (t *Tracker) entry(p wire.PSN) *Sent {
	if !t.have {
		return nil
	}
	i := p.Diff(t.origin)
	if i < 0 || i >= len(t.ents) {
		return nil
	}
	return t.ents[i]
}

// readSpan returns the READ whose PSN range holds p when no entry maps p,
// as the connection's reconstruction knows the range
// (harness.Conn.ReadSpanAt): a READ sent while the path MTU was unknown
// reserves only its own PSN in the window, and its span is learnt later,
// from the MTU, from the next new request or from its Last response.
// Once the span's end is known, the READ takes it (End, EndOK) and its
// PSNs map to it.
func (t *Tracker) readSpan(p wire.PSN) *Sent {
	if !t.have || p.Before(t.origin) {
		return nil
	}
	sp := t.c.ReadSpanAt(p)
	if sp == nil || !p.After(sp.First) {
		return nil
	}
	rd := t.entry(sp.First)
	if rd == nil || rd.Op != wire.ReadRequest || rd.PSN != sp.First || rd.EndOK {
		return nil
	}
	if last, ok := sp.Last(); ok {
		t.learnEnd(rd, last)
	}
	return rd
}

// learnSpan gives READ rd, sent before its span was known, the span's end
// once the connection's reconstruction knows it.
func (t *Tracker) learnSpan(rd *Sent) {
	if rd.EndOK || rd.Op != wire.ReadRequest {
		return
	}
	if sp := t.c.ReadSpanAt(rd.PSN); sp != nil && sp.First == rd.PSN {
		if last, ok := sp.Last(); ok {
			t.learnEnd(rd, last)
		}
	}
}

// learnEnd gives READ rd, seen before its span was known, the span's last
// PSN, and maps the PSNs of the span to it.
func (t *Tracker) learnEnd(rd *Sent, last wire.PSN) {
	rd.End, rd.EndOK = last, true
	for q := rd.PSN.Next(); q.AtOrBefore(last); q = q.Next() {
		i := q.Diff(t.origin)
		if i < 0 || i >= maxEnts*2 {
			return
		}
		if i = t.slot(q); i >= 0 && t.ents[i] == nil {
			t.set(i, rd)
		}
	}
}

// Base returns the oldest unacknowledged PSN as far as the trace shows.
func (t *Tracker) Base() (wire.PSN, bool) {
	t.advanceBase()
	for i := t.base; i < len(t.ents); i++ {
		if e := t.ents[i]; e != nil && !e.Done {
			return e.Outstanding(), true
		}
	}
	return 0, false
}

// OldestOutstanding returns the oldest request not Done.
func (t *Tracker) OldestOutstanding() *Sent {
	t.advanceBase()
	for i := t.base; i < len(t.ents); i++ {
		if e := t.ents[i]; e != nil && !e.Done {
			return e
		}
	}
	return nil
}

func (t *Tracker) advanceBase() {
	for t.base < len(t.ents) && (t.ents[t.base] == nil || t.ents[t.base].Done) {
		t.base++
	}
}

// Outstanding returns the requests not Done, oldest first.
func (t *Tracker) Outstanding() []*Sent {
	t.advanceBase()
	var out []*Sent
	var last *Sent
	// Only the entry at base and those that may begin a run of live
	// entries can be added: any other is nil, Done, or the entry before
	// it (added already, or Done).
	for i := t.base; i < len(t.ents); i = t.nextStart(i + 1) {
		e := t.ents[i]
		if e == nil || e.Done || (i > t.base && e == t.ents[i-1]) {
			if i > t.base {
				t.clearStart(i)
			}
			continue
		}
		if e != last {
			out = append(out, e)
			last = e
		}
	}
	return out
}

// readPackets returns the number of response packets a READ of length
// bytes takes, if the MTU is known.
func (t *Tracker) readPackets(length uint32) (int, bool) {
	mtu := t.c.MTU()
	if length == 0 {
		return 1, true
	}
	if mtu == 0 {
		return 0, false
	}
	return wire.ReadResponsePackets(length, mtu), true
}

// endOf returns the last PSN a request packet occupies.
func (t *Tracker) endOf(p *wire.Packet) (wire.PSN, bool) {
	if p.Opcode != wire.ReadRequest {
		return p.PSN, true
	}
	n, ok := t.readPackets(p.RETH.Length)
	if !ok {
		return p.PSN, false
	}
	return p.PSN.Add(n - 1), true
}

// Request reads a request packet and updates the model. The event is
// the Tracker's, good until its next Request or Response: a monitor that
// keeps it copies it. (Handed out by pointer: the monitors of a
// connection each read the shared tracker's event of every request, and
// copying its 150 bytes for each cost more than reading it.)
func (t *Tracker) Request(r *trace.Record) *ReqEvent {
	if !t.memo(r) {
		t.request(r, &t.memoReq)
		t.remember(r)
	}
	return &t.memoReq
}

// request fills ev with the reading of request packet r.
func (t *Tracker) request(r *trace.Record, ev *ReqEvent) {
	p := r.Packet
	*ev = ReqEvent{Rec: r}
	ev.Base, ev.HaveBase = t.Base()
	if r.Copy {
		// A copy the network made or a frame the capture recorded
		// twice (the connection's copy detector marked it), also when a
		// newer transmission of the PSN came in between.
		ev.Kind = KindNetDup
		return
	}
	first := !t.have
	if first {
		t.start(r)
	}
	// New or resent is the reconstruction's call: a PSN at or after every
	// PSN a request used (READ spans learnt since included) is new.
	if next, ok := t.Next(); !ok || p.PSN.AtOrAfter(next) {
		ev.Kind = KindNew
		t.absorbNew(r)
		if !first {
			t.fillEpisode(ev)
		}
		return
	}
	ev.Kind = KindResend
	orig := t.Lookup(p.PSN)
	if orig != nil && orig.PSN != p.PSN && !orig.EndOK {
		// A request at a PSN only maybe the READ's: its end is open (the
		// MTU unknown) and p lies past the part it surely reserved (found
		// by a conformant exchange: a SEND right after a READ, resent).
		if sp := t.c.ReadSpanAt(p.PSN); sp == nil || (!sp.Known() && p.PSN.After(sp.LastMin)) {
			orig = nil
		}
	}
	if orig != nil {
		cp := *orig
		ev.Orig = &cp
		if orig.PSN == p.PSN {
			ev.PrevSend, ev.PrevSeq = orig.Last, orig.LastSeq
		}
		ev.Answered = orig.Done || (orig.Op == wire.ReadRequest && p.PSN.Before(orig.ReadNext))
		if ev.PrevSend != nil && t.lastResp != nil && t.lastResp.Time > ev.PrevSend.Time {
			ev.RespSince = true
		}
	} else if p.PSN.Diff(t.origin) < 0 {
		// Before everything remembered: long acknowledged.
		ev.Answered = true
	}
	// A resend gets a new IPv4 Identification (copies were told above):
	// one repeating the previous transmission's ID, or a repeat with no
	// ID to tell, may be either.
	if ev.PrevSend != nil && r.HasIPID && ev.PrevSend.HasIPID && r.IPID == ev.PrevSend.IPID {
		ev.Ambiguous = true
	} else if ev.PrevSend != nil && (!r.HasIPID || !ev.PrevSend.HasIPID) && samePacket(ev.PrevSend.Packet, p) {
		ev.Ambiguous = true
	}
	cont, gap, maybe := t.continues(r)
	ev.Start, ev.SweepGap, ev.MaybeStart = !cont, gap, maybe
	switch {
	case gap:
		ev.GapFrom = t.prevEnd.Next()
		t.swept(ev.GapFrom, p.PSN.Diff(ev.GapFrom), r)
	case !cont && t.prevKind == KindResend && r.HasIPID && t.prev.HasIPID:
		// The requester's IDs say it sent packets after the previous
		// resend that the trace lacks: the sweep going on, where
		// requests were outstanding past it.
		if d := r.IPID - t.prev.IPID; d > 1 && d < 1<<15 {
			t.swept(t.prevEnd.Next(), int(d)-1, r)
		}
	}
	// A go-back-N begins at the requester's oldest unacknowledged request:
	// one past the PSN resent was not the oldest it knew of (the
	// acknowledgments the trace shows up to it did not reach it, or it
	// went back behind them), unless the trace shows no earlier
	// transmission of that PSN (a READ asked again from inside its range).
	if oldest := t.OldestOutstanding(); oldest != nil && oldest.Last != nil && (ev.PrevSend == nil || !oldest.PSN.After(p.PSN)) {
		ev.OldestLast, ev.OldestLastSeq = oldest.Last, oldest.LastSeq
		if oldest.Swept != nil {
			ev.OldestSwept, ev.OldestSweptSeq, ev.OldestSweptNext, ev.OldestSweptSkipped = oldest.Swept, oldest.SweptSeq, oldest.SweptNext, oldest.SweptSkipped
		}
	}
	if ev.Start {
		ev.Cause, ev.Trigger = t.cause(r)
		t.count(ev)
		t.trig = t.trig[:0]
	} else if ev.MaybeStart {
		// Taken as the sweep going on, but it may have been a timeout's
		// retry: the transport counter may have paid for it.
		t.ep.transportUnsure++
	}
	t.absorbResend(r, orig)
	t.fillEpisode(ev)
}

// swept notes, on the requests outstanding at the n PSNs from PSN from,
// which a sweep passed after the previous resend without the trace
// showing them before request r, that it went by after their latest
// transmission (Sent.Swept).
func (t *Tracker) swept(from wire.PSN, n int, r *trace.Record) {
	for q := from; q != from.Add(n); q = q.Next() {
		if e := t.Lookup(q); e != nil && !e.Done && e.PSN == q {
			e.Swept, e.SweptSeq, e.SweptNext, e.SweptSkipped = t.prev, t.prevSeq, r, n
		}
	}
}

func samePacket(a, b *wire.Packet) bool {
	return a.Opcode == b.Opcode && a.PSN == b.PSN && a.AckReq == b.AckReq && len(a.Payload) == len(b.Payload) &&
		a.RETH == b.RETH && a.Atomic == b.Atomic
}

// continues reports whether a resend carries on the go-back-N sweep of
// the previous request: a later PSN than the previous resend's, with no
// new trigger naming this PSN in between and no pause as long as a
// transport timer. gap reports PSNs skipped since the previous resend:
// packets lost before the capture point in a capture, but in a complete
// trace a sweep that left PSNs out. maybe reports a continuation that
// could also be a new start (ReqEvent.MaybeStart).
func (t *Tracker) continues(r *trace.Record) (cont, gap, maybe bool) {
	if t.prev == nil || t.prevKind != KindResend {
		return false, false, false
	}
	d := r.Packet.PSN.Diff(t.prevEnd)
	if d < 1 {
		return false, false, false
	}
	for _, tr := range t.trig {
		if tr.Rec.Time > t.prev.Time && tr.Cause != CauseNone && tr.PSN == r.Packet.PSN {
			return false, false, false
		}
	}
	// A timer may have fired in between only if the pause reaches the
	// interval less the timing slack. When the slack swallows the whole
	// interval (a live device whose adapter measured a tolerance above
	// it), the pause cannot tell a new start from the sweep going on, and
	// the sweep going on in order is the legal reading. On a real clock
	// the timer surely fired only when the pause exceeds the interval
	// plus the tolerance; short of that the sweep may be going on.
	if iv, _, known := AckTimeout(t.c); known && iv > 0 {
		pause := r.Time - t.prev.Time
		floor := TimerFloor(t.c, iv)
		switch {
		case floor <= 0, pause < floor:
		case t.c.Settings.Active && t.c.Settings.Tolerance > 0 && pause < iv+t.c.Settings.Tolerance:
			return true, d > 1, true
		default:
			return false, false, false
		}
	}
	return true, d > 1, false
}

// cause explains a retry start at r by the latest trigger since the last
// retry start, or by the latest naming r's own PSN where there is one: a
// retry begins at the PSN its trigger names, so one naming another PSN
// (an implied NAK of an older READ or ATOMIC that the same RNR NAK passed)
// did not start it. A trigger naming a PSN before r's whose requests up
// to r's were all acknowledged or answered before r asks for nothing any
// more (found by the recall test: an implied NAK of an ATOMIC answered
// since, and a resend past it that only the timer explains).
func (t *Tracker) cause(r *trace.Record) (Cause, *Trigger) {
	var latest *Trigger
	for i := len(t.trig) - 1; i >= 0; i-- {
		g := &t.trig[i]
		switch g.Cause {
		case CauseSeqNAK, CauseRNR, CauseImplied, CauseFatal:
		default:
			continue
		}
		if g.PSN.Before(r.Packet.PSN) && t.settled(g.PSN, r.Packet.PSN) {
			continue
		}
		if g.PSN == r.Packet.PSN {
			latest = g
			break
		}
		if latest == nil {
			latest = g
		}
	}
	if latest == nil {
		return CauseTimeout, nil
	}
	cp := *latest
	return latest.Cause, &cp
}

// settled reports whether every request from PSN from up to (not at) PSN
// to is known acknowledged or answered.
func (t *Tracker) settled(from, to wire.PSN) bool {
	for q, i := from, 0; q != to; q, i = q.Next(), i+1 {
		if e := t.Lookup(q); e == nil || !e.Done || i > maxSettledScan {
			return false
		}
	}
	return true
}

// maxSettledScan bounds the PSNs settled walks.
const maxSettledScan = 4096

// count charges a retry start to the episode's counters.
func (t *Tracker) count(ev *ReqEvent) {
	unsure := ev.Ambiguous
	switch ev.Cause {
	case CauseTimeout, CauseSeqNAK:
		// A NAK lost after the capture point leaves a timeout: the same
		// counter either way. A "timeout" start sooner after the PSN's
		// previous transmission than any transport timer could expire is
		// no timeout the requester may count: it breaks C9-140, which
		// judges it; whether it spent a transport retry cannot be told.
		if ev.Cause == CauseTimeout && ev.PrevSend != nil {
			if d, zero, known := AckTimeout(t.c); known && !zero && ev.Rec.Time-ev.PrevSend.Time < TimerFloor(t.c, d) {
				unsure = true
			}
		}
		if unsure {
			t.ep.transportUnsure++
		} else {
			t.ep.transport++
			if ev.Cause == CauseTimeout {
				t.ep.timeouts++
			}
		}
	case CauseRNR:
		// An RNR NAK lost after the capture point would leave a
		// timeout instead, charged to the other counter.
		if !Delivered(t.c) {
			if d, zero, known := AckTimeout(t.c); !known || (!zero && ev.PrevSend != nil && ev.Rec.Time-ev.PrevSend.Time >= TimerFloor(t.c, d)) {
				unsure = true
			}
		}
		if unsure {
			t.ep.rnrUnsure++
		} else {
			t.ep.rnr++
		}
	}
}

func (t *Tracker) fillEpisode(ev *ReqEvent) {
	ev.Transport, ev.TransportUnsure = t.ep.transport, t.ep.transportUnsure
	ev.RNR, ev.RNRUnsure = t.ep.rnr, t.ep.rnrUnsure
	ev.Timeouts = t.ep.timeouts
}

func (t *Tracker) resetEpisode() {
	t.ep.transport, t.ep.transportUnsure, t.ep.rnr, t.ep.rnrUnsure, t.ep.timeouts = 0, 0, 0, 0, 0
}

func (t *Tracker) start(r *trace.Record) {
	t.have = true
	t.origin = r.Packet.PSN
	clear(t.ents) // no stale Sent (and its records) kept alive behind len
	t.ents = t.ents[:0]
	t.starts = t.starts[:0]
	t.base = 0
}

// slot returns the index of PSN p, growing the window; -1 if it cannot be
// kept.
func (t *Tracker) slot(p wire.PSN) int {
	i := p.Diff(t.origin)
	if i < 0 {
		return -1
	}
	if i >= maxEnts*2 {
		// A jump far beyond the window: start over from here.
		clear(t.ents)
		t.origin, t.ents, t.base = p, t.ents[:0], 0
		t.starts = t.starts[:0]
		i = 0
	}
	if len(t.ents) <= i {
		for len(t.ents) <= i {
			t.ents = append(t.ents, nil)
		}
		t.resizeStarts()
	}
	return i
}

// outstanding reports whether the connection's reconstruction proves
// that the responder has not executed PSN p (its expected PSN at most p),
// so that no response can have acknowledged it.
func (t *Tracker) outstanding(p wire.PSN) bool {
	e := t.c.Expected()
	return e.HaveHi && p.AtOrAfter(e.Hi)
}

// growBack extends the window back to PSN p, before its origin, for a
// resend of a PSN older than the first the capture showed that is still
// outstanding (the capture began during a retransmission): the resend is
// a transmission of that PSN, which the timers are measured from (found
// by the recall test: an early resend judged from an older transmission,
// before the responder's first packet in the capture). It returns p's
// index, or -1 when p lies too far back.
func (t *Tracker) growBack(p wire.PSN) int {
	k := t.origin.Diff(p)
	if k <= 0 || k > keepBehind || len(t.ents)+k >= maxEnts*2 {
		return -1
	}
	n := len(t.ents)
	t.ents = append(t.ents, make([]*Sent, k)...)
	copy(t.ents[k:], t.ents[:n])
	clear(t.ents[:k])
	t.origin, t.base = p, 0
	// Every entry may begin a run now: walks clear the marks that do not.
	t.resizeStarts()
	for w := range t.starts {
		t.starts[w] = ^uint64(0)
	}
	t.resizeStarts()
	return 0
}

// trim forgets what lies far behind the oldest outstanding request.
func (t *Tracker) trim() {
	t.advanceBase()
	if drop := t.base - keepBehind; drop >= keepBehind || (len(t.ents) > maxEnts && drop > 0) {
		n := copy(t.ents, t.ents[drop:])
		clear(t.ents[n:]) // the backing array must not keep dropped Sents alive
		t.ents = t.ents[:n]
		t.dropStarts(drop)
		t.origin = t.origin.Add(drop)
		t.base -= drop
	}
}

func (t *Tracker) newSent(r *trace.Record) *Sent {
	p := r.Packet
	// Sents are allocated sentSlab at a time: the window holds runs of
	// consecutive ones, and few are kept from elsewhere, so a slab rarely
	// outlives most of its Sents.
	if len(t.slab) == 0 {
		t.slab = make([]Sent, sentSlab)
	}
	s := &t.slab[0]
	t.slab = t.slab[1:]
	*s = Sent{PSN: p.PSN, Op: p.Opcode, First: r, Last: r, LastSeq: t.c.Seq(), Sends: 1, ReadNext: p.PSN}
	s.Sum, s.HasSum = PayloadSum(r)
	s.End, s.EndOK = t.endOf(p)
	return s
}

func (t *Tracker) absorbNew(r *trace.Record) {
	p := r.Packet
	s := t.newSent(r)
	n := s.End.Diff(p.PSN) + 1
	for k := 0; k < n; k++ {
		if i := t.slot(p.PSN.Add(k)); i >= 0 {
			t.set(i, s)
		}
	}
	t.prev, t.prevEnd, t.prevKind, t.prevSeq = r, s.End, KindNew, t.c.Seq()
	t.trim()
}

func (t *Tracker) absorbResend(r *trace.Record, orig *Sent) {
	p := r.Packet
	end, ok := t.endOf(p)
	if !ok {
		end = p.PSN
	}
	if orig == nil {
		// A PSN never seen (lost before the capture point, or the
		// capture began later): remember it now.
		i, back := t.slot(p.PSN), false
		if i < 0 && t.outstanding(p.PSN) {
			i = t.growBack(p.PSN)
			back = i >= 0
		}
		if i >= 0 && (back || t.c.SentBefore(p.PSN)) {
			s := t.newSent(r)
			s.Sends = 2
			n := s.End.Diff(p.PSN) + 1
			for k := 0; k < n; k++ {
				if j := t.slot(p.PSN.Add(k)); j >= 0 && t.ents[j] == nil {
					t.set(j, s)
				}
			}
		}
	} else if orig.PSN == p.PSN {
		orig.Last, orig.LastSeq = r, t.c.Seq()
		orig.Swept = nil
		orig.Sends++
	} else if orig.Op == wire.ReadRequest && p.Opcode == wire.ReadRequest {
		// A partial re-request of a READ: count it on the READ.
		orig.Last, orig.LastSeq = r, t.c.Seq()
		orig.Sends++
	}
	t.prev, t.prevEnd, t.prevKind, t.prevSeq = r, end, KindResend, t.c.Seq()
}

// Response reads a response packet and updates the model. The event is
// the Tracker's, good until its next Request or Response (as Request's).
func (t *Tracker) Response(r *trace.Record) *RespEvent {
	if !t.memo(r) {
		t.response(r, &t.memoResp)
		t.remember(r)
	}
	return &t.memoResp
}

// response fills ev with the reading of response packet r.
func (t *Tracker) response(r *trace.Record, ev *RespEvent) {
	p := r.Packet
	*ev = RespEvent{Rec: r}
	op := p.Opcode
	ev.BaseBefore, ev.HaveBaseBefore = t.Base()
	ev.NextBefore, _ = t.Next()
	if !t.have {
		return
	}
	switch opc.Class(op) {
	case wire.ClassAck:
		a := p.AETH
		switch {
		case a.IsACK():
			ev.Positive = true
			ev.Implied, _ = t.cover(p.PSN, true, nil)
		case a.IsRNR():
			ev.OutstandingBefore = t.Outstanding()
			ev.NAK, ev.Code = CauseRNR, a.Value()
			ev.Implied, ev.Progress = t.cover(p.PSN, false, nil)
			t.trig = append(t.trig, Trigger{Cause: CauseRNR, Rec: r, PSN: p.PSN, Code: a.Value()})
		case a.Kind() == wire.KindNAK && a.Value() == wire.NAKPSNSequence:
			ev.OutstandingBefore = t.Outstanding()
			ev.NAK = CauseSeqNAK
			ev.Implied, ev.Progress = t.cover(p.PSN, false, nil)
			t.trig = append(t.trig, Trigger{Cause: CauseSeqNAK, Rec: r, PSN: p.PSN})
		case a.Kind() == wire.KindNAK && a.Value() <= wire.NAKRemoteOp:
			ev.NAK, ev.Code = CauseFatal, a.Value()
			ev.Implied, ev.Progress = t.cover(p.PSN, false, nil)
			t.trig = append(t.trig, Trigger{Cause: CauseFatal, Rec: r, PSN: p.PSN, Code: a.Value()})
		default:
			// Reserved syndromes and NAK codes: what a requester does with
			// them is not settled here.
			return
		}
	case wire.ClassReadResponse:
		ev.Positive = true
		rd := t.Lookup(p.PSN)
		if rd == nil || rd.Op != wire.ReadRequest {
			break
		}
		// The AETH of a READ response acknowledges what came before the
		// READ (C9-97), and passes any older READ still incomplete.
		ev.Implied, _ = t.cover(rd.PSN, false, rd)
		switch d := p.PSN.Diff(rd.ReadNext); {
		case d == 0:
			rd.ReadNext = p.PSN.Next()
			if rd.EndOK && p.PSN == rd.End || (!rd.EndOK && opc.EndsMessage(op)) {
				rd.Done = true
			}
		case d > 0:
			ev.Gap = rd
		}
		t.lastResp = r
	case wire.ClassAtomicAck:
		ev.Positive = true
		at := t.Lookup(p.PSN)
		if at == nil || opc.Class(at.Op) != wire.ClassAtomic {
			break
		}
		ev.Implied, _ = t.cover(at.PSN, false, at)
		at.Done = true
		t.lastResp = r
	}
	for _, s := range ev.Implied {
		t.trig = append(t.trig, Trigger{Cause: CauseImplied, Rec: r, PSN: s.PSN, Target: s})
	}
	if ev.Gap != nil {
		t.trig = append(t.trig, Trigger{Cause: CauseImplied, Rec: r, PSN: ev.Gap.PSN, Target: ev.Gap})
	}
	if n := len(t.trig); n > maxTrig {
		t.trig = append(t.trig[:0], t.trig[n-maxTrig:]...)
	}
	if ev.Positive || ev.Progress {
		// Any positive response, and a NAK that acknowledges something,
		// may reload the retry counters (when the specification reloads
		// them is not settled: docs/interpretations.md, "When the retry
		// counters reload"), so an episode of
		// retries ends here.
		t.resetEpisode()
	}
}

// cover applies a response with PSN psn: SENDs and WRITEs before it (and
// at it, when inclusive) are acknowledged; READs and ATOMICs it passes
// whose answers are incomplete are returned as implicitly NAKed. self is
// the READ/ATOMIC the response belongs to, which it does not pass. A
// response beyond every PSN sent covers nothing. progress reports that
// something became acknowledged.
func (t *Tracker) cover(psn wire.PSN, inclusive bool, self *Sent) (implied []*Sent, progress bool) {
	if next, _ := t.Next(); psn.Diff(next) > 0 || (psn == next && inclusive) {
		return nil, false
	}
	t.advanceBase()
	// The walk visits the entry at base and then only the entries that
	// may begin a run of live entries: every other one is nil, Done or the
	// same as the entry before it, and would be passed over.
	for i := t.base; i < len(t.ents); i = t.nextStart(i + 1) {
		e := t.ents[i]
		var last *Sent // the entry before, as a walk over every entry would have it
		if i > t.base {
			last = t.ents[i-1]
		}
		if e == nil || e == last || e.Done || e == self {
			if i > t.base && (e == nil || e == last || e.Done) {
				t.clearStart(i)
			}
			continue
		}
		if !e.PSN.Before(psn) && !(inclusive && e.PSN == psn) {
			break
		}
		if e.IsReadOrAtomic() {
			t.learnSpan(e)
			if e.EndOK && e.End.Before(psn) {
				implied = append(implied, e)
			}
			continue
		}
		e.Done = true
		progress = true
	}
	return implied, progress
}
