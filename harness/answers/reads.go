package answers

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// minMTU and maxMTU bound the path MTU when it is unknown: a READ of L
// bytes reserves between ceil(L/4096) and ceil(L/256) PSNs.
const (
	minMTU = 256
	maxMTU = 4096
)

// maxReads bounds how many READ requests a Tracker remembers.
const maxReads = 512

// Tracker follows the READ requests of one connection and the response
// streams that answer them. Feed it every packet of the connection, in
// trace order, from a monitor's Observe (before the harness's model
// absorbs the packet). The monitors of a connection share one (see
// Shared); a zero Tracker is ready for use on its own.
//
// What the connection's reconstruction (harness: reads.go, responder.go) knows, the
// Tracker reads from it rather than keeping its own: whether a READ
// request is new (its PSN against the PSNs requests used, NextReq), and,
// with the path MTU unknown, each new READ's span (its last PSN once its
// Last or Only response closed it, ReadReq.Last; which READ a response
// in a span belongs to, Covering; whether a request lies inside a READ's
// span, a partial retry). Its own are the stream model's: each request
// instance (duplicates and partial retries included, with their streams,
// Answered, Failed, Abandoned), the stream being sent and the position in
// it, and the streams NAKs ended. With the MTU known it still computes a
// READ's range from its length (the same numbers as the reconstruction's
// spans, at the MTU of the packet being judged).
type Tracker struct {
	reads    []*ReadReq
	cur      *Stream // the stream the responder is sending (Open), or the last one
	naked    []*Stream
	requests int
	// lastResp is the latest READ response that was no NAK
	// (Event.PrevResp); lastAck the latest Acknowledge, lastAckSeq its
	// place among the connection's records (Stream.AckBefore).
	lastResp   *trace.Record
	lastAck    *trace.Record
	lastAckSeq uint64

	// Indexes over reads, which give the same answers as walking them
	// all:
	//   - byPSN maps a PSN to the newest READ with it (ReqAt);
	//   - inversions counts the READs of reads, the first excepted, whose
	//     u is below the one before them: while there are none, reads is
	//     in PSN order (u ascending) and a search for the READs whose
	//     range holds a PSN can start from the newest and stop at the
	//     first READ too far behind it (searchFrom);
	//   - maxLen is at least the Length of every READ of reads (it bounds
	//     their ranges), recomputed every maxReads evictions;
	//   - pending holds, in order, the READs of reads that may be neither
	//     duplicates, answered nor failed (Pending).
	byPSN      map[wire.PSN]*ReadReq
	inversions int
	maxLen     uint32
	evictions  int
	pending    []*ReadReq
	// exhaustive makes the searches walk every READ (tests: the model as
	// it is defined, to compare with).
	exhaustive bool

	// covered is the highest PSN an acknowledging response has covered
	// (haveCovered), whether or not the trace showed its request.
	covered     wire.PSN
	haveCovered bool

	// The tracker keeps the event of the record it saw last; a shared
	// one gives it again to the monitors that ask after the first.
	shared  bool
	fed     bool // a monitor has joined as the feeder
	memoRec *trace.Record
	memoN   int
	memoEv  Event
}

// sharedKey keys the connection's shared Tracker (harness.Conn.Shared).
type sharedKey struct{}

// Shared returns the Tracker of connection c that the READ-response
// monitors of c share. Each monitor calls Observe for the packets of c,
// in trace order, as with its own Tracker: the first call for a packet
// updates the model and the others get the same event. The monitors must
// not change the model's requests and streams (keep what a monitor adds
// to them in the monitor).
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
	t = c.Shared(sharedKey{}, func() any { return &Tracker{shared: true} }).(*Tracker)
	feeder = !t.fed
	t.fed = true
	return t, feeder
}

// Pending returns, oldest first, the READ requests of Reads that may be
// neither duplicates (Resent ones excepted: their first answer may be
// owed), answered nor failed: every such READ is there, in the order of
// Reads (others may be too).
func (t *Tracker) Pending() []*ReadReq {
	t.compactPending()
	return t.pending
}

// compactPending drops from pending the READs that are duplicates (not
// Resent), answered, failed or no longer in reads.
func (t *Tracker) compactPending() {
	var oldest int
	if len(t.reads) > 0 {
		oldest = t.reads[0].Seq
	}
	k := 0
	for _, q := range t.pending {
		if q.Dup && !q.Resent || q.Answered || q.Failed || q.Seq < oldest {
			continue
		}
		t.pending[k] = q
		k++
	}
	clear(t.pending[k:])
	t.pending = t.pending[:k]
}

// addRead appends q to reads and keeps the indexes.
func (t *Tracker) addRead(q *ReadReq) {
	if n := len(t.reads); n > 0 {
		prev := t.reads[n-1]
		q.u = prev.u + int64(q.PSN.Diff(prev.PSN))
		if q.u < prev.u {
			q.inv = true
			t.inversions++
		}
	} else {
		q.u = int64(q.PSN)
	}
	t.reads = append(t.reads, q)
	if t.byPSN == nil {
		t.byPSN = map[wire.PSN]*ReadReq{}
	}
	t.byPSN[q.PSN] = q
	t.maxLen = max(t.maxLen, q.Length)
	if !q.Dup || q.Resent {
		if len(t.pending) >= 2*maxReads {
			t.compactPending() // none may be left in it beyond reads
		}
		t.pending = append(t.pending, q)
	}
	if len(t.reads) > maxReads {
		old := t.reads[0]
		t.reads[0] = nil
		t.reads = t.reads[1:]
		if t.byPSN[old.PSN] == old {
			delete(t.byPSN, old.PSN)
		}
		if first := t.reads[0]; first.inv {
			// First in the window now: it follows no READ there.
			first.inv = false
			t.inversions--
		}
		if t.evictions++; t.evictions%maxReads == 0 {
			t.maxLen = 0
			for _, q := range t.reads {
				t.maxLen = max(t.maxLen, q.Length)
			}
		}
	}
}

// searchFrom returns an index of reads before which no READ's range at
// mtu holds x (x at or after its PSN and at or before its last PSN): a
// search for such READs may start there. It is 0 when that cannot be
// told quickly.
func (t *Tracker) searchFrom(x wire.PSN, mtu int) int {
	n := len(t.reads)
	if n == 0 || t.inversions > 0 || t.exhaustive {
		return 0
	}
	// Every READ's range spans at most maxSpan PSNs after its own.
	maxSpan := int64(readPackets(t.maxLen, mtu) - 1)
	if maxSpan >= 1<<22 {
		return 0
	}
	newest := t.reads[n-1]
	ux := newest.u + int64(x.Diff(newest.PSN))
	if ux-t.reads[0].u >= 1<<22 {
		// The READs lie too far apart for unwrapped distances to be
		// the PSN distances.
		return 0
	}
	// reads is in u order and x lies less than 2^22 beyond the oldest,
	// so a READ more than maxSpan behind x (and every older one) is at
	// that distance modulo 2^24 too, and cannot hold x.
	j := n - 1
	for j >= 0 && ux-t.reads[j].u <= maxSpan {
		j--
	}
	return j + 1
}

// Requests returns how many request packets were seen.
func (t *Tracker) Requests() int { return t.requests }

// Reads returns the READ requests remembered, oldest first.
func (t *Tracker) Reads() []*ReadReq { return t.reads }

// Current returns the stream being sent (nil when none is open).
func (t *Tracker) Current() *Stream {
	if t.cur != nil && t.cur.Open {
		return t.cur
	}
	return nil
}

// MTU returns the path MTU to judge r with: the configured or inferred
// one, else the payload of r itself when r is a First packet of a valid
// MTU size (First packets carry exactly one MTU of payload).
func MTU(c *harness.Conn, r *trace.Record) int {
	if m := c.MTU(); m != 0 {
		return m
	}
	p := r.Packet
	if opc.Position(p.Opcode) == wire.PosFirst && !r.Truncated && wire.ValidMTU(r.PayloadLen) {
		return r.PayloadLen
	}
	return 0
}

// ReqAt returns the newest READ request whose PSN is p.
func (t *Tracker) ReqAt(p wire.PSN) *ReadReq {
	if t.exhaustive {
		for i := len(t.reads) - 1; i >= 0; i-- {
			if t.reads[i].PSN == p {
				return t.reads[i]
			}
		}
		return nil
	}
	return t.byPSN[p]
}

// Covering returns the newest READ request whose range at mtu holds p
// (mtu 0: the READ request whose span, as the connection's reconstruction
// knows it, may hold p: the reconstruction places a response there in that
// READ's span, spanning).
func (t *Tracker) Covering(p wire.PSN, mtu int) *ReadReq {
	if mtu == 0 {
		return t.spanning(p, false, false)
	}
	from := t.searchFrom(p, mtu)
	for i := len(t.reads) - 1; i >= from; i-- {
		q := t.reads[i]
		if last, _ := q.Last(mtu); p.InRange(q.PSN, last) {
			return q
		}
	}
	return nil
}

// spanning returns, with the path MTU unknown, the READ request whose
// range holds p as the span of a new READ in the connection's
// reconstruction tells: a span may hold p up to its furthest last PSN
// (harness.Conn.ReadSpanAt), and surely up to its least one (the one the
// largest MTU gives, or the known one; sure asks for that). The request
// is that READ or a duplicate of it asking for the same length: the
// newest, or the oldest when oldest; nil when there is none.
func (t *Tracker) spanning(p wire.PSN, oldest, sure bool) *ReadReq {
	n := len(t.reads)
	if n == 0 || t.reads[n-1].conn == nil {
		return nil
	}
	sp := t.reads[n-1].conn.ReadSpanAt(p)
	if sp == nil || sure && !p.InRange(sp.First, sp.LastMin) {
		return nil
	}
	var found *ReadReq
	from := t.searchFrom(p, minMTU)
	for i := n - 1; i >= from; i-- {
		if q := t.reads[i]; q.PSN == sp.First && q.Length == sp.Length {
			if found = q; !oldest {
				break
			}
		}
	}
	return found
}

// coveringBefore returns the oldest READ request whose range at mtu holds
// p and starts before it (mtu 0: whose span surely holds p, as spanning
// tells; the reconstruction's InsideRead).
func (t *Tracker) coveringBefore(p wire.PSN, mtu int) *ReadReq {
	if mtu == 0 {
		if q := t.spanning(p, true, true); q != nil && q.PSN.Before(p) {
			return q
		}
		return nil
	}
	for _, q := range t.reads[t.searchFrom(p, mtu):] {
		if last, _ := q.Last(mtu); q.PSN.Before(p) && p.InRange(q.PSN, last) {
			return q
		}
	}
	return nil
}

// Observe updates the model with r and says what r is. The event is the
// tracker's own, valid until the next call (the monitors sharing the
// tracker get the same one for a packet: none may change it).
func (t *Tracker) Observe(c *harness.Conn, r *trace.Record) *Event {
	if t.shared && t.memoRec == r && t.memoN == c.Packets {
		return &t.memoEv
	}
	t.observe(c, r, &t.memoEv)
	t.memoRec, t.memoN = r, c.Packets
	return &t.memoEv
}

// observe sets ev to what r is, and updates the model.
func (t *Tracker) observe(c *harness.Conn, r *trace.Record, ev *Event) {
	before := t.Current()
	var beforeNext wire.PSN
	if before != nil {
		beforeNext = before.Next
	}
	t.classify(c, r, ev)
	ev.Before, ev.BeforeNext = before, beforeNext
	if p := r.Packet; opc.IsResponse(p.Opcode) && opc.Class(p.Opcode) == wire.ClassReadResponse && !NAKKind(p) {
		ev.PrevResp, t.lastResp = t.lastResp, r
	}
}

func (t *Tracker) classify(c *harness.Conn, r *trace.Record, ev *Event) {
	p := r.Packet
	op := p.Opcode
	mtu := MTU(c, r)
	if opc.IsRequest(op) {
		t.requests++
		if op != wire.ReadRequest {
			*ev = Event{Kind: EvNone, MTU: mtu}
			return
		}
		q := &ReadReq{PSN: p.PSN, Length: p.RETH.Length, VA: p.RETH.VA, Rec: r, Seq: t.requests, RecSeq: c.Seq(), conn: c}
		e := c.Expected()
		behind := c.HaveReq && p.PSN.Before(c.NextReq) && !(e.HaveHi && p.PSN.AtOrAfter(e.Hi))
		if behind {
			// Behind a later request seen: a resend, unless the trace
			// proves the responder had not passed this PSN (a sequence
			// NAK named it or an earlier one; the later requests came
			// out of sequence, or were lost before reaching it).
			q.Dup = true
		}
		prev := t.ReqAt(p.PSN)
		if t.coveringBefore(p.PSN, mtu) != nil {
			q.Dup, q.Partial = true, true
		} else if prev != nil && c.Dropped(p.PSN) {
			// The connection's reconstruction shows the responder
			// dropped the earlier copy (it came beyond the expected
			// PSN): this one is new to it, and the earlier copy was
			// refused (a sequence NAK), never to be answered.
			q.Dup = false
			if prev.Streams == 0 {
				prev.Failed = true
			}
		} else if prev != nil {
			q.Dup = true
		}
		q.Early = !t.haveCovered
		if !q.Dup && !c.Complete() && t.haveCovered && p.PSN.AtOrBefore(t.covered) {
			// A response before this copy of the READ already covered
			// its PSN: the capture missed the READ's first copy (it
			// began later, or lost it) and the responder had passed it,
			// so this is a duplicate (for example, a capture begun
			// during a retransmission, the READ's answer and an ACK
			// beyond it before any request).
			q.Dup = true
		}
		q.Resent = behind && !q.Partial && prev == nil && !(t.haveCovered && p.PSN.AtOrBefore(t.covered))
		t.addRead(q)
		*ev = Event{Kind: EvRequest, Req: q, MTU: mtu}
		return
	}
	t.cover(p)
	switch opc.Class(op) {
	case wire.ClassAck:
		t.lastAck, t.lastAckSeq = r, c.Seq()
		switch {
		case ACKKind(p):
			if s := t.Current(); s != nil && s.EndKnown && p.PSN.After(s.End) {
				// An ACK past the READ's range while its answer is open:
				// it overtook the rest of the answer, or the rest was
				// sent before it and not captured.
				s.AckPast, s.AckPastSeq = r, c.Seq()
			}
			*ev = Event{Kind: EvAck, MTU: mtu}
			return
		case NAKKind(p):
			*ev = t.nak(c, r, mtu)
			return
		}
		*ev = Event{Kind: EvNone, MTU: mtu}
		return
	case wire.ClassReadResponse:
		if op == wire.ReadResponseOnly {
			if rop, _, _, ok := c.Req(p.PSN); ok && (rop == wire.Flush || rop == wire.AtomicWrite) {
				*ev = Event{Kind: EvExtAnswer, MTU: mtu}
				return
			}
		}
		t.response(c, r, mtu, ev)
		return
	}
	*ev = Event{Kind: EvNone, MTU: mtu}
}

// cover takes response p's acknowledgment into covered: an ACK, an
// ATOMIC acknowledgment or a READ response Last or Only with an ACK-kind
// AETH covers its own PSN, a READ response First the PSN before it.
func (t *Tracker) cover(p *wire.Packet) {
	if x, ok := acknowledges(p); ok && (!t.haveCovered || x.After(t.covered)) {
		t.covered, t.haveCovered = x, true
	}
}

// acknowledges returns the newest PSN an acknowledging response p shows
// complete: a positive ACK's or an ATOMIC acknowledgment's PSN, a READ
// answer's Last or Only PSN, or the PSN before a READ answer's First (its
// READ is not complete yet). ok is false for any other packet.
func acknowledges(p *wire.Packet) (wire.PSN, bool) {
	if !ACKKind(p) {
		return 0, false
	}
	switch op := p.Opcode; {
	case op == wire.Acknowledge || op == wire.AtomicAcknowledge || op == wire.ReadResponseLast || op == wire.ReadResponseOnly:
		return p.PSN, true
	case op == wire.ReadResponseFirst:
		return p.PSN.Add(-1), true
	}
	return 0, false
}

// ends reports whether a READ response packet ends its stream: a Last or
// Only, or any READ response carrying a NAK syndrome (which cannot be
// followed by data).
func ends(p *wire.Packet) bool {
	if opc.EndsMessage(p.Opcode) {
		return true
	}
	return opc.Has(p.Opcode, wire.HdrAETH) && NAKKind(p)
}

// ACKKind reports whether p carries an AETH whose syndrome is of the ACK
// kind (bits 6:5 = 00), whatever the reserved bit 7 holds (§9.7.5.2's
// concern).
func ACKKind(p *wire.Packet) bool {
	return opc.Has(p.Opcode, wire.HdrAETH) && p.AETH.Kind() == wire.KindACK
}

// NAKKind reports whether p carries an AETH whose syndrome is a NAK or an
// RNR NAK (bits 6:5 = 11 or 01).
func NAKKind(p *wire.Packet) bool {
	if !opc.Has(p.Opcode, wire.HdrAETH) {
		return false
	}
	k := p.AETH.Kind()
	return k == wire.KindNAK || k == wire.KindRNR
}

func (t *Tracker) response(c *harness.Conn, r *trace.Record, mtu int, ev *Event) {
	p := r.Packet
	x := p.PSN
	if s := t.Current(); s != nil && !s.EndKnown {
		if mtu != 0 {
			s.End, s.EndKnown = s.Req.Last(mtu)
			s.MTU = mtu
		} else if s.End, s.EndKnown = s.Req.Last(0); !s.EndKnown && x == s.Next && p.Opcode == wire.ReadResponseLast &&
			s.Start == s.Req.PSN && !s.Resynced && c.ReadSpanMayEnd(s.Req.PSN, s.Req.Length, x) {
			// The path MTU is unknown, but the READ's Last response,
			// reached from its First without a gap, closes the READ's
			// span in the connection's reconstruction.
			s.End, s.EndKnown = x, true
		}
	}
	if s := t.Current(); s != nil && x == s.Next {
		startsAnew := opc.StartsMessage(p.Opcode) && t.ReqAt(x) != nil
		if !startsAnew {
			if s.EndKnown && x.After(s.End) {
				if s.Resynced && s.Start.After(s.End) && !c.Complete() {
					// The stream was placed in the READ's range while
					// the path MTU was unknown (the range's furthest
					// end); the MTU now known ends the range before
					// the stream began, so it never answered that
					// READ: on a capture that may miss requests it
					// answers one the capture did not show.
					s.Open = false
				} else if t.ReqAt(x) == nil {
					t.advance(c, s, r)
					*ev = Event{Kind: EvBeyond, Stream: s, MTU: mtu}
					return
				}
			} else {
				unstarted := t.restMayBeMissed(c, s, r)
				t.advance(c, s, r)
				*ev = Event{Kind: EvContinue, Stream: s, MTU: mtu, Unstarted: unstarted}
				if !s.Replay && opc.Has(p.Opcode, wire.HdrAETH) && !c.Complete() {
					ev.MaybeReplay = t.DupSince(s.Req, x) != nil
				}
				return
			}
		}
	}
	q := t.ReqAt(x)
	var owed, unstarted *ReadReq
	if q != nil && !opc.StartsMessage(p.Opcode) && !c.Complete() && !c.SentAllSince(trace.ToRequester, c.Seq()-1) {
		// A Middle or Last at the PSN of a READ, inside the range of a
		// READ whose answer the responder owes before that READ's: on a
		// capture that may have lost the owed answer's first packets
		// (the responder's IDs do not show that it sent nothing since
		// its packet before this one), it continues that answer (for
		// example, a partial READ retry answered, then the whole READ
		// requested again and its First lost; a READ the network
		// copied, the responder answering each copy, one answer's First
		// lost; a duplicate READ, then a partial retry, the duplicate's
		// replay losing its First). Event.Unstarted keeps the READ at x
		// whose answer the packet would begin otherwise.
		if owed = t.owedAnswer(c, x, mtu, q, p.Opcode); owed != nil {
			q, unstarted = nil, q
		}
	}
	if q != nil {
		prev := t.Current()
		if prev != nil {
			prev.Open = false
			if !prev.Req.Answered {
				prev.Req.Abandoned = true
			}
		}
		s := &Stream{Req: q, Start: x, Next: x, Open: true, StartRec: r, StartSeq: c.Seq(), AckBefore: t.lastAck, AckBeforeSeq: t.lastAckSeq, SeqAtStart: t.requests, MTU: mtu}
		s.End, s.EndKnown = q.Last(mtu)
		// A stream starting at a READ already answered (by a stream the
		// capture showed only from its middle) answers it again: a
		// duplicate the capture dropped.
		s.Replay = q.Dup || q.Streams > 0 || q.Answered
		q.Streams++
		q.Heard = true
		t.cur = s
		t.advance(c, s, r)
		*ev = Event{Kind: EvStart, Stream: s, Prev: prev, MTU: mtu}
		return
	}
	for i := len(t.naked) - 1; i >= 0; i-- {
		s := t.naked[i]
		if x.AtOrAfter(s.NAKFrom) && s.Contains(x) {
			*ev = Event{Kind: EvAfterNAK, Stream: s, MTU: mtu}
			return
		}
	}
	q = owed
	if q == nil {
		q = t.Covering(x, mtu)
	}
	if q != nil {
		prev := t.Current()
		if prev != nil {
			prev.Open = false
		}
		s := &Stream{Req: q, Start: x, Next: x, Open: true, StartRec: r, StartSeq: c.Seq(), AckBefore: t.lastAck, AckBeforeSeq: t.lastAckSeq, SeqAtStart: t.requests, Resynced: true, MTU: mtu}
		s.End, s.EndKnown = q.Last(mtu)
		s.Replay = q.Dup || q.Streams > 0
		q.Heard = true
		t.cur = s
		t.advance(c, s, r)
		*ev = Event{Kind: EvSkip, Stream: s, Req: q, Prev: prev, MTU: mtu, Unstarted: unstarted}
		return
	}
	*ev = Event{Kind: EvOrphan, MTU: mtu}
}

// restMayBeMissed returns the READ at the PSN of response r, a packet
// that goes on with stream s, whose own answer has not begun, where the
// capture may have missed the rest of s before r (nil otherwise): the
// responder's IDs do not show it sent fewer packets since s's latest than
// s has left from r's PSN on. Then r may instead begin that READ's answer
// (for example, a Middle at the PSN of a partial retry, after the
// original answer's First, the two packets missed between them being the
// original's Middle and Last).
func (t *Tracker) restMayBeMissed(c *harness.Conn, s *Stream, r *trace.Record) *ReadReq {
	if c.Complete() {
		return nil
	}
	x := r.Packet.PSN
	rest := 1
	if s.EndKnown {
		rest = s.End.Diff(x) + 1
	}
	if n, known := c.SentBetween(s.LastRec, r); known && n < rest {
		return nil
	}
	if q := t.ReqAt(x); q != nil && q != s.Req && q.Streams == 0 && !q.Answered {
		return q
	}
	return nil
}

// owedAnswer returns the oldest READ request whose range at mtu (mtu 0:
// the one the connection's reconstruction allows) holds x past its PSN and that no stream was taken to
// answer (Heard), where its answer comes before one to q, the READ at x: the
// responder owes it an answer of its own (it answers every READ that
// reaches it, a copy or a duplicate too, in the order they arrived,
// whatever other streams covered its range), and owes it before q's
// where it arrived before q or q's answer has begun. Where that READ's
// last PSN is known, a packet of opcode op at x must be the one its
// answer has there (a Middle before the last PSN, a Last at it). Nil:
// none.
func (t *Tracker) owedAnswer(c *harness.Conn, x wire.PSN, mtu int, q *ReadReq, op wire.Opcode) *ReadReq {
	var sp *harness.ReadSpan
	if mtu == 0 {
		// The range of the new READ whose span, as the connection's
		// reconstruction narrows it by what the trace shows of the path
		// MTU, may hold x; a READ asking for it again from a PSN before
		// x asks for the rest of it, x too.
		if sp = c.ReadSpanAt(x); sp == nil {
			return nil
		}
	}
	var owed *ReadReq
	unowed := q.Answered || q.Streams > 0
	for i := len(t.reads) - 1; i >= 0; i-- {
		d := t.reads[i]
		if d.Heard || !d.PSN.Before(x) || d.Seq > q.Seq && !unowed {
			continue
		}
		var holds bool
		last, known := d.Last(mtu)
		if sp != nil {
			holds = d.PSN.AtOrAfter(sp.First)
		} else {
			holds = x.InRange(d.PSN, last)
		}
		if holds && known && x.InRange(d.PSN, last) {
			holds = op == wire.ReadResponseOp(x.Diff(d.PSN), last.Diff(d.PSN)+1)
		}
		if holds {
			owed = d
		}
	}
	return owed
}

// DupSince returns the newest duplicate of READ q the tracker remembers:
// a READ requested again after it, from a PSN inside its range at or
// before x (nil: none).
func (t *Tracker) DupSince(q *ReadReq, x wire.PSN) *ReadReq {
	for i := len(t.reads) - 1; i >= 0 && t.reads[i].Seq > q.Seq; i-- {
		if d := t.reads[i]; d.Dup && d.PSN.InRange(q.PSN, x) {
			return d
		}
	}
	return nil
}

// advance takes packet r into stream s.
func (t *Tracker) advance(c *harness.Conn, s *Stream, r *trace.Record) {
	p := r.Packet
	s.Packets++
	s.LastRec, s.LastSeq = r, c.Seq()
	s.Next = p.PSN.Next()
	if s.EndKnown && p.PSN == s.End && !NAKKind(p) {
		// Every PSN of the range has been sent, whatever the opcode
		// (a Middle there is C9-98's concern).
		s.Req.Answered = true
	}
	if !ends(p) {
		return
	}
	s.Open = false
	if NAKKind(p) {
		t.fail(s, p.PSN, r)
		return
	}
	// A Last or Only ends the response as far as the responder is
	// concerned (a count that is wrong is C9-96's concern); a stream
	// reaching the end of an earlier READ's range (a retry of its tail)
	// answers that READ too.
	s.Req.Answered = true
	if s.EndKnown && p.PSN == s.End {
		for _, q := range t.reads[t.searchFrom(s.Start, s.MTU):] {
			if last, ok := q.Last(s.MTU); ok && last == s.End && s.Start.InRange(q.PSN, last) {
				q.Answered = true
			}
		}
	}
}

// fail records that a NAK ended stream s at PSN from.
func (t *Tracker) fail(s *Stream, from wire.PSN, r *trace.Record) {
	s.Open = false
	s.NAKed, s.NAKFrom, s.NAKRec = true, from, r
	s.Req.Failed = true
	t.naked = append(t.naked, s)
	if len(t.naked) > 16 {
		t.naked = t.naked[1:]
	}
}

// nak handles an Acknowledge carrying a NAK or RNR syndrome: if it falls
// inside the open stream's range, the stream ends there (whatever PSN the
// NAK carries, no more data may follow it). A NAK naming the first PSN of
// a READ that no stream answered yet refuses that READ.
//
// The stream's range is taken at the path MTU when it is known by now
// (the stream may have begun before it was), and a NAK naming a request
// the capture shows that is no READ names no PSN of the READ's range
// (for example, an RNR NAK of the SEND after a READ whose Middle alone
// was seen, the MTU learnt from that Middle: the NAK does not end the
// READ's answer, and its replay's Last is no data after the NAK).
func (t *Tracker) nak(c *harness.Conn, r *trace.Record, mtu int) Event {
	x := r.Packet.PSN
	s := t.Current()
	if s != nil && !s.EndKnown && mtu != 0 {
		s.End, s.EndKnown = s.Req.Last(mtu)
		s.MTU = mtu
	}
	other := false
	if op, _, _, ok := c.Req(x); ok && op != wire.ReadRequest {
		other = true
	}
	if s != nil && !other && s.Contains(x) {
		from := s.Next
		t.fail(s, from, r)
		return Event{Kind: EvNAK, Stream: s, MTU: mtu}
	}
	if q := t.ReqAt(x); q != nil && q.Streams == 0 {
		q.Failed = true
	}
	return Event{Kind: EvNAK, Stream: s, MTU: mtu}
}
