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
	"time"

	"github.com/rcconform/rcconform/harness"
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
	// coverAck is the positive ACK with the highest PSN captured since
	// the previous request (ReqEvent.AckedBefore).
	coverAck *trace.Record
	// nak is the latest sequence NAK whose PSN the requester has not
	// resent since; react the longest interval the trace showed from
	// such a NAK to the requester's first resend of its PSN (haveReact):
	// the time a response takes to reach the requester and change what
	// it sends, as far as the capture shows it (Reaction).
	nak       *trace.Record
	react     time.Duration
	haveReact bool
	// rnr is the RNR NAK whose resend has not been seen (haveRNR): until
	// then the requester waits out the RNR delay, and a sequence NAK's
	// resend measures that wait, not a reaction. The resend, less the
	// delay, bounds one from above (the requester waits at least the
	// delay, often longer): rnrReact, the longest such, stands in for
	// react where the trace shows no sequence NAK's resend (haveRNRReact).
	rnr          *trace.Record
	haveRNR      bool
	rnrReact     time.Duration
	haveRNRReact bool
	// pace is the longest interval the trace showed between consecutive
	// packets of one go-back-N sweep, none skipped (havePace): how fast
	// the requester sends a sweep (ReqEvent.GapUnshown).
	pace     time.Duration
	havePace bool
	acked    []*Sent // the entries the response being read made Done
	slab     []Sent  // where the next Sents are allocated
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
// a transmission of that PSN, which the timers are measured from (not
// from an older transmission before the responder's first packet in the
// capture). It returns p's index, or -1 when p lies too far back.
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
		// In the window, before the first request the trace showed, p
		// lies between that request and an older PSN resent before it
		// (the window grew back to it): the requester used it.
		if i >= 0 && (back || t.c.SentBefore(p.PSN) || p.PSN.Before(t.c.FirstReq)) {
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
