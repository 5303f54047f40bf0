package harness

import (
	"net/netip"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
)

// This file is the evidence a connection's IPv4 Identifications give
// about loss. A sender that numbers its packets one by one leaves no
// doubt about what the capture missed between two of its packets: where
// their IDs are consecutive it sent nothing in between (nothing was lost
// before the capture point, and the capture dropped none of its packets
// there); where they are not, something it sent went unrecorded, or other
// traffic took IDs from the same counter. An instance of a clause that
// is a violation unless the capture missed a packet of one sender can
// therefore be decided once that sender's next packet shows whether its
// IDs ran on unbroken (Conn.ViolationUnlessMissed).

// idRun follows one direction's IPv4 Identifications in the order the
// checkers see its records (the sender's own order, after the reorder
// buffer): the run of consecutive IDs the latest record ends.
type idRun struct {
	last    uint16
	have    bool
	start   uint64        // Conn.seq of the run's first record
	first   uint64        // Conn.seq of the direction's first record
	firstAt time.Duration // its time
	// startFrame and firstFrame are the capture frames of those two
	// records (0 on an active run).
	startFrame, firstFrame int
	// byOne counts the steps of exactly one seen, back the steps
	// backwards (a copy's repeated ID is neither, nor is a step forward
	// by more than one: a gap).
	byOne, back int
}

// trustedRun is how many steps of exactly one a sender must have shown,
// and at least twice as many as steps backwards, before consecutive IDs
// count as evidence: a sender that draws IDs at random makes a step of
// one only by chance, and steps back about as often as forward. A step
// forward by more than one is no evidence against a counter: other flows
// sharing the host's counter, a counter that jumps after an idle spell,
// and packets the capture missed all make such gaps, and none of them
// makes two consecutive IDs less of a proof that nothing was sent
// between.
const trustedRun = 8

// step takes the record with sequence number seq into the run and
// reports whether it is a packet of its own, not a copy of the latest
// (the same ID again) nor a request repeating an older one with its ID
// (trace.Record.Copy): a copy says nothing about what was sent between,
// and the run goes on from the latest (a network copy of an old
// request, recorded among new ones, does not break a run that proves a
// request new).
func (u *idRun) step(r *trace.Record, seq uint64) bool {
	if u.first == 0 {
		u.first, u.firstAt, u.firstFrame = seq, r.Time, r.Frame
	}
	if r.Copy && r.HasIPID {
		return false
	}
	if !r.HasIPID {
		u.have = false
		return true
	}
	repeat := u.have && r.IPID == u.last
	switch d := r.IPID - u.last; {
	case !u.have:
		u.start, u.startFrame = seq, r.Frame
	case d == 0:
		// The same packet recorded twice, or copied by the network: it
		// says nothing about what was sent between.
	case d == 1:
		u.byOne++
	case d >= 0x8000:
		u.back++
		u.start, u.startFrame = seq, r.Frame
	default:
		u.start, u.startFrame = seq, r.Frame
	}
	u.last, u.have = r.IPID, true
	return !repeat
}

// countsByOne reports whether the sender is seen to number its packets
// one by one on this connection.
func (u *idRun) countsByOne() bool { return u.byOne >= trustedRun && u.back*2 <= u.byOne }

// Seq returns the sequence number of the record being judged: the
// position of it among the records the connection's checkers saw, for
// SentAllSince.
func (c *Conn) Seq() uint64 { return c.seq }

// SentAllSince reports whether the trace holds every packet the sender of
// direction d sent between its latest packet at or before the record
// with sequence number since (Seq) and its latest packet so far: the
// sender numbers its packets one by one, and their IDs ran on unbroken
// over that stretch. Since 0 asks for every packet it sent on the
// connection: the trace must also show the connection's beginning
// (FromStart), for a capture that began mid-connection says nothing of
// what was sent before it.
func (c *Conn) SentAllSince(d trace.Dir, since uint64) bool {
	return c.unbrokenSince(d, since) && c.runs[d&1].countsByOne()
}

// RanOnSince is SentAllSince before the sender has been seen to number
// its packets one by one: whether direction d's IDs ran on by ones over
// that stretch. Where they did, SentAllSince holds for the stretch once
// NumbersByOne does, whenever that is seen (the same sender).
func (c *Conn) RanOnSince(d trace.Dir, since uint64) bool { return c.unbrokenSince(d, since) }

// NumbersByOne reports whether the sender of direction d is seen to
// number its packets one by one on the connection (SentAllSince's trust).
func (c *Conn) NumbersByOne(d trace.Dir) bool { return c.runs[d&1].countsByOne() }

// SinceFirst returns the sequence number (Seq) of the first record of
// direction d, as the start of a stretch of its sender's packets
// (SentAllSince), where record r of the other direction was recorded
// beyond the reordering the capture shows after it (MayBeReordered) and
// is no late packet, as its sender's IDs show (DatedByID, IsLate): a
// packet the sender of d sent before that first record reached the other
// side before it did (one sender's packets arrive in the order sent), so
// before the other side built r, and prompted nothing r answers. ok is
// false where the direction has no record yet, or r may have been built
// before its first one arrived.
func (c *Conn) SinceFirst(d trace.Dir, r *trace.Record) (since uint64, ok bool) {
	u := &c.runs[d&1]
	if u.first == 0 || !c.DatedByID(r) || c.IsLate(r) || r.Time-u.firstAt <= max(r.Skew, reorderPrecision) {
		return 0, false
	}
	return u.first, true
}

// MissedSince reports whether the sender of direction d, seen to number
// its packets one by one, broke that numbering after the record with
// sequence number since (Seq): it sent a packet there that the trace
// lacks (or one of another flow on the same counter), or one recorded
// late.
func (c *Conn) MissedSince(d trace.Dir, since uint64) bool {
	u := &c.runs[d&1]
	return u.have && u.countsByOne() && since >= u.first && u.start > since
}

// SentBetween returns how many packets the sender of records a and b (of
// one direction, a before b) sent between them, by their IPv4
// Identifications, where the sender is seen to number its packets one by
// one (known is false otherwise). Packets of another flow on the same
// counter count too.
func (c *Conn) SentBetween(a, b *trace.Record) (n int, known bool) {
	if a == nil || b == nil || !a.HasIPID || !b.HasIPID || a.Dir != b.Dir || !c.runs[a.Dir&1].countsByOne() {
		return 0, false
	}
	d := b.IPID - a.IPID
	if d == 0 || d >= 1<<15 {
		return 0, false // a copy, or out of order
	}
	return int(d) - 1, true
}

// sentAllSinceFrame is SentAllSince for the stretch from the sender's
// latest packet at or before capture frame f (a record's Frame): false
// where f is 0 (an active run's records have no frame).
func (c *Conn) sentAllSinceFrame(d trace.Dir, f int) bool {
	return c.runs[d&1].countsByOne() && c.unbrokenFor(&MissedProof{Dir: d, Since: uint64(f), Frame: true})
}

// unbrokenFor is unbrokenSince for proof p's stretch, which starts at a
// sequence number or a capture frame (false for frame 0: an active run's
// records have none).
func (c *Conn) unbrokenFor(p *MissedProof) bool {
	if !p.Frame {
		return c.unbrokenSince(p.Dir, p.Since)
	}
	u := &c.runs[p.Dir&1]
	return p.Since != 0 && c.unbrokenFrom(u, p.Since, uint64(u.startFrame), uint64(u.firstFrame))
}

// unbrokenSince reports whether direction d's IDs ran on by ones from
// its latest packet at or before since to its latest packet so far
// (SentAllSince without asking whether the sender numbers its packets
// one by one). Where the sender had sent nothing the trace shows by then
// (since 0 among them), the stretch reaches back to its first packet,
// and a packet before that one the capture may have missed too: only a
// trace showing the connection's beginning rules that out.
func (c *Conn) unbrokenSince(d trace.Dir, since uint64) bool {
	u := &c.runs[d&1]
	return c.unbrokenFrom(u, since, u.start, u.first)
}

// unbrokenFrom is unbrokenSince for run u, its stretch start since and
// the run's start and first record given in one measure: sequence
// numbers (Seq) or capture frames, which order the records alike.
func (c *Conn) unbrokenFrom(u *idRun, since, start, first uint64) bool {
	if (since < first || first == 0) && !c.FromStart() {
		return false
	}
	return u.have && start <= max(since, first)
}

// unlessMissed is an instance held by ViolationUnlessMissed.
type unlessMissed struct {
	clause   string
	at       uint64 // Seq of the record it was raised on
	rec      *trace.Record
	message  string
	expected []string
	seen     string
	reason   string
	// either (no Alts: none) is what the instance is where the proofs
	// fail (ViolationUnlessMissedElse); proved (no Alts: a violation of
	// clause alone) what it is where they hold
	// (ViolationEitherUnlessMissed).
	either, proved Either
	// dating: every proof failed, and the instance waits for its
	// record's sender to be seen counting its IDs up (either).
	dating bool
	proofs [maxProofs]MissedProof
	n      int // proofs in use
}

// MissedProof is one way the trace may prove that nothing was missed
// for an instance held by ViolationUnlessMissedAny: the sender of
// direction Dir sent no packet the capture missed after the record with
// sequence number Since (Seq), up to its next packet after the instance
// (or up to the instance's own record, with Now: that record is the
// sender's). Excuse (nil: none) accepts the sender's next packet as one
// that, had it passed the capture point before the instance's record,
// would make it legal.
type MissedProof struct {
	Dir   trace.Dir
	Since uint64
	// Frame: Since is a capture frame (a record's Frame), not a sequence
	// number (for a stretch from a request the request table holds).
	Frame  bool
	Now    bool
	Excuse func(next *trace.Record) bool
	// unbroken: the sender's IDs ran on unbroken over the stretch, but
	// too few of its packets have yet shown that it numbers them one by
	// one; failed: the stretch is broken, or excused.
	unbroken, failed bool
}

// maxProofs bounds the proofs of one held instance.
const maxProofs = 2

// maxUnlessMissed bounds the instances a connection holds for
// ViolationUnlessMissed; one raised beyond it is left open at once.
const maxUnlessMissed = 64

// ViolationUnlessMissed raises an instance of clause on r that is a
// violation unless the capture missed a packet the sender of direction
// dir sent after the record with sequence number since (Seq) and before
// r. It is held until that sender's next record: where its IDs ran on
// unbroken since then (SentAllSince), nothing was missed and the
// violation stands, unless excuse (nil: none) accepts that next record
// as one that, had it passed the capture point before r, would make r
// legal, and it was recorded within the reordering the trace shows
// (MayBeReordered); otherwise, and at the end
// of the trace, the instance stays open (Unresolved) with reason: the
// only legal explanation left is a packet nothing shows lost, so the
// clause cannot pass while it stands.
func (c *Conn) ViolationUnlessMissed(clause string, dir trace.Dir, since uint64, r *trace.Record, message string, expected []string, seen, reason string, excuse func(next *trace.Record) bool) {
	c.ViolationUnlessMissedAny(clause, r, message, expected, seen, reason, MissedProof{Dir: dir, Since: since, Excuse: excuse})
}

// ViolationUnlessMissedAny is ViolationUnlessMissed where any one of
// several proofs that nothing was missed makes the instance a violation;
// it stays open only when every one fails. Where IDs ran on unbroken but
// too few of the sender's packets have yet shown that it numbers them
// one by one, the proof waits for the packets that show it.
func (c *Conn) ViolationUnlessMissedAny(clause string, r *trace.Record, message string, expected []string, seen, reason string, proofs ...MissedProof) {
	c.holdUnlessMissed(unlessMissed{clause: clause, at: c.seq, rec: r, message: message, expected: expected, seen: seen, reason: reason}, proofs)
}

// Either is a finding that names several clauses (ViolationEither): its
// message, and each clause with the explanation under which it is the
// one broken.
type Either struct {
	Message string
	Alts    []reports.Alternative
}

// ViolationUnlessMissedElse is ViolationUnlessMissedAny for an instance
// that what the proofs leave open does not make legal either, but moves
// to another clause: where every proof fails, r breaks one of the clauses
// either names (the first: clause, if nothing was missed), and the trace
// cannot tell which (ViolationEither). That holds only where r is no
// late packet: its sender is seen to count its IPv4 Identifications up,
// which puts r after every packet of its sender delivered before it (a
// late one is left open by Violation); elsewhere the instance stays open
// with reason.
func (c *Conn) ViolationUnlessMissedElse(clause string, r *trace.Record, message string, expected []string, seen, reason string, either Either, proofs ...MissedProof) {
	c.holdUnlessMissed(unlessMissed{clause: clause, at: c.seq, rec: r, message: message, expected: expected, seen: seen, reason: reason, either: either}, proofs)
}

// ViolationEitherUnlessMissed is ViolationUnlessMissedAny for an instance
// that, where a proof holds, breaks one of the clauses proved names
// (ViolationEither; the first is clause) and the trace cannot tell which;
// where every proof fails it stays open with reason.
func (c *Conn) ViolationEitherUnlessMissed(clause string, r *trace.Record, proved Either, expected []string, seen, reason string, proofs ...MissedProof) {
	c.holdUnlessMissed(unlessMissed{clause: clause, at: c.seq, rec: r, message: proved.Message, expected: expected, seen: seen, reason: reason, proved: proved}, proofs)
}

// holdUnlessMissed decides m at once where its proofs can, and holds it
// otherwise.
func (c *Conn) holdUnlessMissed(m unlessMissed, proofs []MissedProof) {
	if c.Settings.Active || len(c.missed) >= maxUnlessMissed || len(proofs) > maxProofs {
		c.decideOne(&m, false)
		return
	}
	m.n = len(proofs)
	copy(m.proofs[:], proofs)
	for i := range m.n {
		p := &m.proofs[i]
		p.Dir &= 1
		if !p.Now {
			continue
		}
		if !c.unbrokenFor(p) {
			p.failed = true
			continue
		}
		if c.runs[p.Dir].countsByOne() {
			c.decideOne(&m, true)
			return
		}
		p.unbroken = true
	}
	if m.settled() && !c.awaitDating(&m) {
		c.decideOne(&m, false)
		return
	}
	c.missed = append(c.missed, m)
}

// awaitDating reports whether m, every proof of which failed, names
// alternatives that hold once its record's sender is seen to count its
// IPv4 Identifications up, and too few of its packets have shown that
// yet: m then waits for them (dating), as a proof waits for trust.
func (c *Conn) awaitDating(m *unlessMissed) bool {
	m.dating = m.either.Alts != nil && m.rec.HasIPID && !c.CountsIPIDUp(m.rec.Dir)
	return m.dating
}

// settled reports whether every proof of m failed.
func (m *unlessMissed) settled() bool {
	for i := range m.n {
		if !m.proofs[i].failed {
			return false
		}
	}
	return true
}

// decideMissed decides the instances held by ViolationUnlessMissed that
// the record being delivered (next, with sequence number c.seq) settles:
// those raised before it with a proof that waits for its sender. A copy
// of the sender's latest packet settles nothing: it was sent before, not
// after.
func (c *Conn) decideMissed(next *trace.Record) {
	k := 0
	d := next.Dir & 1
	trusted := c.runs[d].countsByOne()
	for _, m := range c.missed {
		if m.dating {
			if c.DatedByID(m.rec) {
				c.decideOne(&m, false)
			} else {
				c.missed[k] = m
				k++
			}
			continue
		}
		proved := false
		for i := range m.n {
			p := &m.proofs[i]
			switch {
			case p.failed || p.Dir != d || m.at >= c.seq:
			case p.unbroken:
				proved = proved || trusted
			case p.Excuse != nil && p.Excuse(next) && MayBeReordered(m.rec, next), !c.unbrokenFor(p):
				p.failed = true
			case trusted:
				proved = true
			default:
				p.unbroken = true
			}
		}
		switch {
		case proved:
			c.decideOne(&m, true)
		case m.settled() && !c.awaitDating(&m):
			c.decideOne(&m, false)
		default:
			c.missed[k] = m
			k++
		}
	}
	clear(c.missed[k:])
	c.missed = c.missed[:k]
}

// decideOne reports a held instance as a violation (proved) or leaves it
// open, judged as of the record it was raised on.
func (c *Conn) decideOne(m *unlessMissed, proved bool) {
	cur := c.cur
	c.cur = m.rec
	const unbroken = " (the sender's IPv4 Identifications ran on unbroken: the capture missed none of its packets)"
	switch r := m.rec; {
	case proved && m.proved.Alts != nil:
		c.ViolationEither(r, m.message+unbroken, m.expected, m.seen, m.proved.Alts...)
	case proved:
		c.Violation(m.clause, r, m.message+unbroken, m.expected, m.seen)
	case m.either.Alts != nil && c.DatedByID(r):
		c.ViolationEither(r, m.either.Message, m.expected, m.seen, m.either.Alts...)
	default:
		c.Unresolved(m.clause, m.reason)
	}
	c.cur = cur
}

// endMissed leaves the instances still held at the end of the trace
// open: no later packet of their sender showed whether the capture
// missed one.
func (c *Conn) endMissed() {
	for i := range c.missed {
		c.decideOne(&c.missed[i], false)
	}
	c.missed = nil
}

// skewMeter measures, across the whole trace, how far packets are seen
// out of their senders' order: for each sending host that counts its IPv4
// Identifications up (one counter for all its flows), a packet recorded
// after one with a later ID shows the capture (or the network) reordered
// them by at least the time between the two. The largest such time is
// the bound on reordering the trace itself gives (trace.Record.Skew); a
// capture that never shows any is taken to keep its order to within its
// timestamps' precision.
type skewMeter struct {
	hosts map[netip.Addr]*hostIDs
	skew  time.Duration
	// last is the host of the latest record and other the host of the
	// latest one before from another host: looked up again without the
	// map while the same two hosts keep sending (a burst, a READ's
	// answer, requests and their responses).
	lastSrc, otherSrc netip.Addr
	last, other       *hostIDs
}

// hostIDs is one sending host's IDs, for skewMeter.
type hostIDs struct {
	order   idOrder
	newest  uint16        // the latest ID in the host's order
	newestT time.Duration // when the packet with it was recorded
}

// maxSkewHosts bounds the hosts a skewMeter follows.
const maxSkewHosts = 4096

// note takes r into the meter and sets r.Skew, at least precision (the
// capture's timestamp resolution, Settings.TimePrecision).
func (m *skewMeter) note(r *trace.Record, precision time.Duration) {
	if r.HasIPID {
		h := m.last
		if h == nil || r.Src != m.lastSrc {
			if m.other != nil && r.Src == m.otherSrc {
				h = m.other
			} else {
				h = m.hosts[r.Src]
			}
		}
		if h == nil && len(m.hosts) < maxSkewHosts {
			if m.hosts == nil {
				m.hosts = map[netip.Addr]*hostIDs{}
			}
			h = &hostIDs{newest: r.IPID, newestT: r.Time}
			m.hosts[r.Src] = h
		}
		if h != nil {
			if h != m.last {
				m.otherSrc, m.other = m.lastSrc, m.last
				m.lastSrc, m.last = r.Src, h
			}
			h.order.learn(r)
			r.HostCounts = h.order.countsUp()
			switch d := r.IPID - h.newest; {
			case d != 0 && d < idStep:
				h.newest, h.newestT = r.IPID, r.Time
			case d > 0xFFFF-idStep && h.order.countsUp():
				m.skew = max(m.skew, r.Time-h.newestT)
			}
		}
	}
	r.Skew = max(m.skew, precision)
}

// reorderPrecision is the order a capture that shows no reordering is
// taken to keep: packets recorded within it of each other may have
// passed the capture point the other way round (timestamps of a
// microsecond's precision; a coarser resolution the capture declares
// raises it through trace.Record.Skew, Settings.TimePrecision).
const reorderPrecision = time.Microsecond

// MayBeReordered reports whether later, recorded after earlier, may have
// passed the capture point first: their times lie within the reordering
// the trace has shown so far (trace.Record.Skew) or the timestamps'
// precision.
func MayBeReordered(earlier, later *trace.Record) bool {
	return later.Time-earlier.Time <= max(later.Skew, reorderPrecision)
}

// EndsWithinReorder reports whether the connection's records end within
// the reordering the trace shows after r (MayBeReordered): packets sent
// before r may have been recorded after it, past the end of the capture.
func (c *Conn) EndsWithinReorder(r *trace.Record) bool {
	return len(c.recent) > 0 && MayBeReordered(r, c.recent[len(c.recent)-1])
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
// IDs that change need not order packets (DatedByID).
// It counts every record the auditor has taken in, also those its
// reorder buffer still holds.
func (c *Conn) IDsVary(d trace.Dir) bool { return c.idsVary[d&1].changed }

// idVary learns whether a sender changes its IPv4 Identification.
type idVary struct {
	first         uint16
	seen, changed bool
}

func (v *idVary) note(r *trace.Record) {
	switch {
	case !r.HasIPID:
	case !v.seen:
		v.first, v.seen = r.IPID, true
	case r.IPID != v.first:
		v.changed = true
	}
}

// DatedByID reports whether r's IPv4 Identification dates it among its
// sender's packets: r carries one, and its sender is seen to count them
// up, on this connection (CountsIPIDUp) or, with one counter for all its
// connections, over all its packets in the trace (trace.Record.HostCounts:
// a connection of few packets then need not show it alone). Only then do two of its packets' IDs tell which was
// sent first (SentBeforeByID), and was a response lateResponse does not
// find late sent after every response delivered before it. IDs that
// merely change (IDsVary) date nothing: a sender drawing them at random
// gives a packet the network delayed an ID like any other's.
func (c *Conn) DatedByID(r *trace.Record) bool {
	return r.HasIPID && (c.CountsIPIDUp(r.Dir) || r.HostCounts)
}

// MayBeDatedByID reports whether r's IPv4 Identification may yet date
// it (DatedByID) once more of its sender's packets are seen: r carries
// one and its sender's IDs change (IDsVary). A sender whose ID never
// changes, or IPv6, never dates any.
func (c *Conn) MayBeDatedByID(r *trace.Record) bool { return r.HasIPID && c.IDsVary(r.Dir) }

// AwaitDated calls judge once r's IPv4 Identification dates it among its
// sender's packets (DatedByID), or once it is known that it never will
// in this trace: at once where the sender's IDs do not change
// (MayBeDatedByID), else when a later record shows the sender counts
// them up, or at the trace's end. How a sender numbers its packets is a
// fact of the whole trace: an instance decided by r's date waits for the
// packets that show it.
func (c *Conn) AwaitDated(r *trace.Record, judge func(c *Conn)) {
	c.awaitShown(r, func() bool { return c.DatedByID(r) }, judge)
}

// awaitShown calls judge once shown, a fact of how r's sender numbers its
// packets, holds, or once it is known that it never will: at once where
// r carries no ID that changes (MayBeDatedByID), else at the trace's end.
func (c *Conn) awaitShown(r *trace.Record, shown func() bool, judge func(c *Conn)) {
	if shown() || !c.MayBeDatedByID(r) {
		judge(c)
		return
	}
	c.Await(func(c *Conn, next *trace.Record) bool {
		if next != nil && !shown() {
			return false
		}
		judge(c)
		return true
	})
}

// AwaitNumbering calls judge once the sender of direction d is seen to
// number its packets one by one (NumbersByOne), or once it is known that
// it never will in this trace: at once where r, its packet, carries no
// ID that changes (MayBeDatedByID), else at the trace's end. judge asks
// NumbersByOne itself. As for AwaitDated, how a sender numbers its
// packets is a fact of the whole trace.
func (c *Conn) AwaitNumbering(d trace.Dir, r *trace.Record, judge func(c *Conn)) {
	c.awaitShown(r, func() bool { return c.NumbersByOne(d) }, judge)
}

// SentBeforeByID reports whether a was sent before b by their sender,
// as their IPv4 IDs show (known is false where they cannot tell: other
// senders, IPv6, or a sender not seen to count up: DatedByID).
func (c *Conn) SentBeforeByID(a, b *trace.Record) (before, known bool) {
	if a.Dir != b.Dir || !b.HasIPID || a.Src != b.Src || !c.DatedByID(a) {
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
