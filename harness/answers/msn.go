package answers

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// The MSN model (C9-148, C9-149).
//
// The responder's MSN is MSN0 + C, where C counts the new request
// messages it has completed (+1 per message, never for a duplicate) and
// MSN0 is where the count started: 0 for a QP the trace shows from its
// creation (an active run), unknown for a capture. Each AETH bounds MSN0:
//
//   - from above, by what the AETH acknowledges: an ACK with PSN p, the
//     Last or Only packet of a READ, an ATOMIC acknowledgment cover every
//     new message ending at or before their PSN, so C ≥ A and MSN0 ≤ m − A
//     (a READ's First covers the messages before the READ: whether the
//     READ itself counts there is the responder's choice, C9-148);
//   - from below, by what the responder could have received: C ≤ S, the
//     number of new messages the trace showed before the AETH (a request
//     reaches the responder only after passing the capture point), so
//     MSN0 ≥ m − S.
//
// An AETH whose bounds leave no MSN0 is one no legal responder could send.
// Responses that repeat an earlier answer (a READ or ATOMIC answered again
// for a duplicate) may carry the current MSN or the original one
// (docs/interpretations.md, "MSN of a replayed answer"), so they bound MSN0
// only through S, and they are exempt from the rule that the MSN never goes
// back. NAKs are checked against the model (C9-149); one that fits it
// bounds MSN0 from above as an ACK does, by the SEND, WRITE and ATOMIC
// messages ending before its PSN (a READ before it may still be
// answering), and a packet above that bound breaks C9-148 or the NAK
// C9-149 (msnnak.go).

// maxEnds bounds how many message ends the model keeps.
const maxEnds = 1 << 16

// msgEnd is one new message: its end PSN, and in readEnd whether it is a
// READ (4 bytes: a connection keeps up to maxEnds of them).
type msgEnd uint32

const readEnd msgEnd = 1 << 31

func (e msgEnd) psn() wire.PSN { return wire.PSN(e) & wire.PSNMask }
func (e msgEnd) read() bool    { return e&readEnd != 0 }

func newEnd(p wire.PSN, read bool) msgEnd {
	e := msgEnd(p & wire.PSNMask)
	if read {
		e |= readEnd
	}
	return e
}

// basis is one account of the count: where it started (MSN0, bounded
// from below by lo and from above by hi) and the newest MSN the responder
// sent (mono).
//
// Where a packet's MSN disagrees with the account, either that packet or
// one the account rests on is at fault, and the trace seldom tells which
// at once. The model then holds both accounts: the one before the packet
// (the packet is the fault) and one from the packet alone (the account
// was wrong), and judges later packets against each account still open: a
// packet that fits one is no new fault, and the accounts it does not fit
// are dropped; only a packet that fits none is (going on from a wrong ACK
// alone, one whose MSN goes back, reported, would make the correct NAK
// after it look wrong). So is an answer that may replay an old one while
// its MSN is above the count: the account where it is new and right stays
// open beside the other, though no fault is reported until a later packet
// fits it alone.
type basis struct {
	lo, hi         bound
	haveLo, haveHi bool
	mono           int64
	monoRec        *trace.Record
	haveMono       bool
	// monoLate: monoRec may replay an answer with the count of a later
	// moment than the responses the trace shows after it, on a trace that
	// may show responses out of the responder's order: one of those below
	// mono whose IPv4 Identification does not order it is open, not a
	// violation (the network may have delayed it past the replay).
	monoLate bool
	// firm is the newest MSN of an answer that cannot be late in that way
	// (firmRec: no replay, or on a trace in the responder's order), or of
	// a NAK that fits the account and is not late (nakBound): no
	// MSN after it goes below it, whatever the order (so an ACK below an
	// earlier ACK is not left open because a READ answer that may replay
	// one came between and set mono).
	firm     int64
	firmRec  *trace.Record
	haveFirm bool
	// firmNAK: firmRec is a NAK, whose MSN may be the one at fault
	// (C9-149's).
	firmNAK bool
	// newAt: this is the account where newAt, an answer that may replay
	// one executed before the capture began (or one it missed), is new;
	// a packet that fits the model's basis but not this account is legal
	// only if newAt was a replay: suspect, not checked.
	newAt *trace.Record
}

// dropInsideRead forgets b's upper bound where it rests on a response
// that acknowledged PSNs no request had shown and they turned out a
// READ's own: that response's PSN is at fault, and it bounds nothing.
func (b *basis) dropInsideRead(c *harness.Conn) {
	if b.haveHi && b.hi.pastShown && b.hi.rec != nil && insideRead(c, b.hi.rec) {
		b.haveHi = false
	}
}

// maxAlts bounds the accounts held beside the model's basis.
const maxAlts = 3

// eachBasis calls f on the model's basis and every other open account.
func (m *MSNModel) eachBasis(f func(b *basis)) {
	f(&m.basis)
	for i := range m.alts {
		f(&m.alts[i])
	}
}

type bound struct {
	v   int64
	rec *trace.Record // nil: the QP's creation (MSN 0)
	u   int64         // the MSN (unwrapped) of rec
	n   int           // the message count used (A or S)
	// pastShown: an upper bound from a response acknowledging PSNs no
	// request in the capture had shown yet.
	pastShown bool
	// nak: an upper bound from a NAK's MSN (nakBound), which C9-149
	// judges: a packet above it breaks C9-148 or that NAK C9-149.
	nak bool
	// missed: an upper bound moved up by one for each request PSN the
	// capture missed after rec (MSNModel.resolve).
	missed int
}

// MSNModel counts the new request messages of one connection and checks
// AETH MSNs against the count.
type MSNModel struct {
	// pastFrom: the answer a NAK's MSN last went past (Judgement.PastPSN),
	// not judged against again.
	pastFrom *trace.Record
	// resent is the latest request seen again (a PSN sent before).
	resent     *trace.Record
	ends       []msgEnd // new messages by end PSN, ascending
	dropped    int      // messages dropped from the front of ends
	droppedMax wire.PSN // end PSN of the newest dropped message
	nextLo     wire.PSN // the next new request may start anywhere in [nextLo, nextHi]
	nextHi     wire.PSN
	// nextRead is the PSN of the newest request, which set nextLo and
	// nextHi, when it is a READ (nextIsRead).
	nextRead    wire.PSN
	nextIsRead  bool
	haveNext    bool
	covered     wire.PSN // highest PSN a response has acknowledged
	haveCovered bool
	started     bool
	unresolved  bool     // requests missing from a capture, not yet acknowledged past
	gapFirst    wire.PSN // the missing PSNs
	gapLast     wire.PSN
	// allowFirst: the messages the capture may have missed lie in
	// allowFirst..gapLast (gap).
	allowFirst wire.PSN
	// gapRead is the READ just before the gap, whose span the allowance
	// starts inside (gapAfterRead; readSpanShown).
	gapRead      wire.PSN
	gapAfterRead bool
	// unseenN: unseen(allowFirst, gapLast) when unseenAt was the key.
	unseenN  int
	unseenAt unseenKey
	// basis is the account of the count the model goes on with; alts
	// are the others still open (see basis).
	basis
	alts          []basis
	split         bool // alts differ from basis by a fault already reported
	ref           int64
	haveRef       bool
	initialPinned bool
	// firstAck is the frame of the first acknowledging AETH seen (0:
	// none yet); unbounded that of the latest answer whose count no
	// bound checked from above (Judgement.OtherUnchecked).
	firstAck, unbounded int
	// replayStream is the READ response stream whose first packet was
	// found to answer a duplicate the trace does not show as one.
	replayStream *Stream
	// stop is the latest sequence or RNR NAK taken into the count
	// (nakBound): the responder had executed no request at or past its
	// PSN when it sent it; stopSeq is its Seq (harness.Conn.Seq).
	stop    *trace.Record
	stopSeq uint64
	// misplaced is the latest ATOMIC acknowledgment at a PSN no ATOMIC
	// in the capture used (when it came).
	misplaced *trace.Record
	// newestReq is the request that set nextLo (Request), and
	// sinceNewest counts the requests the trace showed since.
	newestReq   *trace.Record
	sinceNewest int
	// origOut and currOut each rule out, by the first ATOMIC answer given
	// again that it does not explain, one of the two ways a responder may
	// number such a replay (docs/interpretations.md, "MSN of a replayed
	// answer"), which it keeps for every ATOMIC it answers again.
	// origOut: a replay whose MSN is not that of the first answer the
	// trace showed at its PSN (origFirst), so replays carry the count of
	// the moment, which never goes back. currOut: a replay below the MSN
	// currAbove (of currAboveRec), dated before it, so replays carry
	// their first answer's MSN.
	origOut, currOut *trace.Record
	origFirst        harness.AtomicAnswer
	currAbove        int64
	currAboveRec     *trace.Record
	// missedMax is the newest request PSN the capture missed and a
	// response showed completed (resolve), for MissedAfter.
	missedMax  wire.PSN
	haveMissed bool
	// resolvedFirst..resolvedLast is the latest gap resolve ended
	// (haveResolved), whose unseen messages moved the start of the count
	// (unseenFrom).
	resolvedFirst, resolvedLast wire.PSN
	haveResolved                bool
}

// MissedAfter reports whether the capture was found to miss requests
// with a PSN after p (so far): requests a response showed completed
// unseen, or still missing (not lost before the responder and resent):
// new messages the responder may have completed before answering a
// duplicate of an earlier request that the capture shows as new.
func (m *MSNModel) MissedAfter(p wire.PSN) bool {
	return m.haveMissed && m.missedMax.After(p) || m.unresolved && m.gapLast.After(p)
}

// Seen returns S: how many new messages the trace has shown.
func (m *MSNModel) Seen() int { return m.dropped + len(m.ends) }

// maxGapCounted bounds the missing PSNs whose count bounds the messages
// among them (a longer gap bounds nothing that matters).
const maxGapCounted = 1 << 16

// reached bounds how many new messages had reached the responder: the S
// the trace showed and, while request PSNs are missing (an unresolved
// gap), at most one more for each of them where no message it counts
// ends, since every message takes a PSN of its own. missing is that allowance;
// ok is false when the gap is too long to bound anything.
func (m *MSNModel) reached(c *harness.Conn) (n, missing int, ok bool) {
	n = m.Seen()
	if !m.unresolved {
		return n, 0, true
	}
	// The count changes only when the gap or the messages do: walked
	// once for them, not for every response.
	if k := (unseenKey{m.allowFirst, m.gapLast, m.Seen(), c.SpansNumbered(), true}); k != m.unseenAt {
		m.unseenAt, m.unseenN = k, m.unseen(c, m.allowFirst, m.gapLast)
	}
	missing = m.unseenN
	if missing < 0 {
		return n, 0, false
	}
	return n + missing, missing, true
}

// unseenKey says for which gap, count of messages and of numbered READ
// spans MSNModel.unseenN was walked.
type unseenKey struct {
	first, last    wire.PSN
	seen, numbered int
	walked         bool // false: never walked
}

// missingUpTo is reached's allowance for the missing request PSNs at or
// before p (0 when the gap is too long to count).
func (m *MSNModel) missingUpTo(c *harness.Conn, p wire.PSN) int {
	if !m.unresolved || p.Before(m.allowFirst) {
		return 0
	}
	last := m.gapLast
	if p.Before(last) {
		last = p
	}
	return max(m.unseen(c, m.allowFirst, last), 0)
}

// endsAt reports whether a message the model counts ends at PSN p.
func (m *MSNModel) endsAt(p wire.PSN) bool {
	in, ok1 := m.count(p, true, false)
	before, ok2 := m.count(p, false, false)
	return ok1 && ok2 && in > before
}

// exactUnseen bounds the missing PSNs unseen walks one by one; past it,
// each counts, seen or not.
const exactUnseen = 1024

// unseen counts the PSNs first..last where the model counts no message
// ending (one it counts cannot share its PSN with another) and that are
// not inside the span of a READ whose answer numbered it (its Last, or a
// First carrying the path MTU: the responder numbered those PSNs as the
// READ's; for example, two READs seen with the path MTU unknown, each
// answered to its Last, leave no missed request between them): -1 when
// they are more than maxGapCounted.
func (m *MSNModel) unseen(c *harness.Conn, first, last wire.PSN) int {
	n := last.Diff(first) + 1
	switch {
	case n <= 0 || n > maxGapCounted:
		return -1
	case n > exactUnseen:
		return n
	}
	k := 0
	for p := first; ; p = p.Next() {
		s := c.ReadSpanAt(p)
		if read := s != nil && s.Numbered && p.After(s.First) && p.AtOrBefore(s.LastMin); !read && !m.endsAt(p) {
			k++
		}
		if p == last {
			return k
		}
	}
}

// atMost words the bound n: "only n", or "at most n" where it allows
// for missing request PSNs.
func atMost(n, missing int) string {
	if missing == 0 {
		return fmt.Sprint("only ", n)
	}
	return fmt.Sprint("at most ", n)
}

// reachedNote says, where reached allowed for missing request PSNs,
// what its bound is made of ("" when nothing was missing).
func (m *MSNModel) reachedNote(n, missing int) string {
	if missing == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d shown, and no more than one for each of the %d request PSNs %d..%d the capture missed)",
		n-missing, missing, m.allowFirst, m.gapLast)
}

// count returns how many new messages end at or before p (strictly
// before when !incl), only non-READ ones when nonRead; ok is false when p
// falls among messages the model no longer keeps.
func (m *MSNModel) count(p wire.PSN, incl, nonRead bool) (int, bool) {
	if m.dropped > 0 && p.Before(m.droppedMax.Next()) {
		return 0, false
	}
	in := func(e wire.PSN) bool {
		if incl {
			return e.AtOrBefore(p)
		}
		return e.Before(p)
	}
	if nonRead {
		n := m.dropped
		for _, e := range m.ends {
			if in(e.psn()) && !e.read() {
				n++
			}
		}
		return n, m.dropped == 0
	}
	// sort.Search(len(m.ends), func(i int) bool { return !in(m.ends[i].psn()) }),
	// written out (the same probes, without a call per probe).
	i, j := 0, len(m.ends)
	for i < j {
		h := int(uint(i+j) >> 1)
		e := m.ends[h].psn()
		if incl && e.AtOrBefore(p) || !incl && e.Before(p) {
			i = h + 1
		} else {
			j = h
		}
	}
	return m.dropped + i, true
}

// pin fixes MSN0 at 0 for a trace that shows the QP from its creation
// (active runs, traces known complete, and connections whose beginning
// the trace shows: harness.Conn.FromStart).
//
// Where the capture already missed requests that completed unseen (a
// resolved gap, or one still open), the messages it shows do not bound
// the count from above: only the lower bound is pinned (as under
// capture loss with the start shown only later).
func (m *MSNModel) pin(c *harness.Conn) {
	if (c.Complete() || c.FromStart()) && !m.initialPinned {
		m.initialPinned = true
		hi := !m.haveMissed && !m.unresolved
		m.eachBasis(func(b *basis) {
			b.lo, b.haveLo = bound{}, true
			if hi {
				b.hi, b.haveHi = bound{}, true
			}
		})
	}
}

func (m *MSNModel) addEnd(p wire.PSN, read bool) {
	i := len(m.ends)
	for i > 0 && m.ends[i-1].psn().After(p) {
		i--
	}
	m.ends = append(m.ends, 0)
	copy(m.ends[i+1:], m.ends[i:])
	m.ends[i] = newEnd(p, read)
	if len(m.ends) > maxEnds {
		k := maxEnds / 2
		m.dropped += k
		m.droppedMax = m.ends[k-1].psn()
		m.ends = append(m.ends[:0], m.ends[k:]...)
	}
}

// Request takes a request packet into the count (call it from Observe,
// before the harness's model absorbs the packet).
func (m *MSNModel) Request(c *harness.Conn, r *trace.Record, mtu int) {
	p := r.Packet
	op := p.Opcode
	m.pin(c)
	m.started = true
	// none: the requester sent this request right after the newest one,
	// its IPv4 IDs show, with nothing between (not even a packet the
	// trace shows), so no request lies between them: PSNs this one skips
	// are the READ's before it, or numbered by no request.
	after := m.sinceNewest == 0
	none := func() bool {
		n, known := c.SentBetween(m.newestReq, r)
		return after && known && n == 0
	}
	m.sinceNewest++
	if c.SentBefore(p.PSN) {
		m.resent = r
	}
	// The PSNs this request occupies.
	first, lastMin, lastMax := p.PSN, p.PSN, p.PSN
	if op == wire.ReadRequest {
		if mtu != 0 {
			lastMin = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1)
			lastMax = lastMin
		} else {
			lastMin = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, maxMTU) - 1)
			lastMax = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, minMTU) - 1)
		}
	}
	m.readSpanShown(c)
	isNew := false
	complete := c.Complete()
	switch {
	case c.Settings.StartKnown && first.Before(c.Settings.StartPSN),
		complete && c.HaveReq && first.Before(c.FirstReq):
		// Behind the QP's first expected PSN (on a complete trace, the
		// first request's): a duplicate of nothing the QP executed, never
		// a new message.
	case !m.haveNext:
		isNew = true
	case op == wire.ReadRequest && c.InsideRead(first):
		// A partial retry inside a READ's span, as the reconstruction
		// knows it (from the MTU, or from the READ's Last response when
		// the MTU was not known when the READ was seen).
	case c.ReqSends(first) > 0 && first.InRange(m.nextLo, m.nextHi):
		// A request seen before, inside the newest READ's span as the
		// MTU unknown at that READ left it open: its earlier copy was
		// judged then (the same message; a partial retry of the READ,
		// which the reconstruction no longer reports as inside the
		// READ once the retry's own span starts at the PSN), and so is
		// this one (for example, a partial READ retry sent twice is
		// not counted as a new message the second time).
	case first.InRange(m.nextLo, m.nextHi):
		isNew = true
		if !complete && first.After(m.nextLo) && !none() {
			// Past the shortest span the newest READ may have (the MTU
			// is unknown): the PSNs between are the READ's, or requests
			// the capture missed, which the responder completes unseen.
			m.gap(m.nextLo, first.Add(-1))
		}
	case first.After(m.nextHi):
		isNew = true
		if !complete && !none() {
			// Requests missing from the capture: lost before the capture
			// point (to be resent) or only missed by the capture (the
			// responder completes them unseen).
			m.gap(m.nextHi, first.Add(-1))
		}
	default: // behind the newest request
		switch {
		case c.ReqSends(first) > 0, c.InsideRead(first):
			// Seen before (counted then, also when that copy was dropped
			// as out of sequence: this is the same message), or a partial
			// retry inside a READ's span (the harness's reconstruction
			// closes the span from the READ's Last response when the MTU
			// is unknown).
		case c.HaveReq && first.Diff(c.NextReq) > -(1<<13) && (complete || first.AtOrAfter(c.FirstReq)):
			isNew = true // first sight of a PSN the requester had skipped, or a resend of one the capture missed
		}
	}
	if isNew && !complete && m.haveCovered && first.AtOrBefore(m.covered) {
		isNew = false // already acknowledged: a retransmission from before the capture
	}
	if !isNew {
		return
	}
	if m.unresolved && first == m.gapFirst && c.Classify(first) == harness.ReqInSeq {
		// The responder's expected PSN was this request's (a sequence or
		// RNR NAK named it, or every request before it is accounted
		// for): the missing PSN was not completed unseen, it arrives now.
		if first == m.gapLast {
			m.unresolved = false
		} else {
			m.gapFirst = first.Next()
		}
	}
	if !m.haveNext || first.AtOrAfter(m.nextLo) {
		m.newestReq, m.sinceNewest = r, 0
		m.nextLo, m.nextHi, m.haveNext = lastMin.Next(), lastMax.Next(), true
		m.nextRead, m.nextIsRead = first, op == wire.ReadRequest
	}
	if opc.EndsMessage(op) {
		m.addEnd(p.PSN, op == wire.ReadRequest)
	}
}

// readSpanShown narrows where the next new request may start to just
// past the newest READ's span once the connection's reconstruction knows
// its last PSN (from the path MTU learnt since the READ was seen, or from
// its Last or Only response): the PSNs up to it are the READ's, which the
// requester numbers no other request with, not requests the capture
// missed (for example, a READ seen with the MTU unknown, its three
// answers showing it, then an ATOMIC just past it: the PSNs between are
// not two missed messages, and an MSN skipping ahead of the READ's does
// not pass as counting them). Request, Model and NAK call it before
// judging where a request or response falls (an ACK naming the READ's
// last PSN acknowledges no request past the ones shown either). While the
// span's end is unknown, the PSNs past the READ's own stay possible
// missed requests (gap).
//
// It also narrows the missing request PSNs (gap) to those past the span
// of the READ before them once that READ's answer ended at its Last or
// Only: the responder itself numbered the PSNs up to there as the
// READ's, so none of them was a new message to it, whatever the
// requester put there; and it forgets an upper bound resting on a
// response whose PSN such a span shows at fault (basis.dropInsideRead).
func (m *MSNModel) readSpanShown(c *harness.Conn) {
	// (Most packets find nothing to do: a cheap check first.)
	if m.pastShownHi() || m.unresolved && m.gapAfterRead || m.haveNext && m.nextIsRead && m.nextLo != m.nextHi {
		m.spanShown(c)
	}
}

// pastShownHi reports whether an account's upper bound rests on a
// response that acknowledged PSNs no request had shown.
func (m *MSNModel) pastShownHi() bool {
	if m.basis.haveHi && m.basis.hi.pastShown {
		return true
	}
	for i := range m.alts {
		if m.alts[i].haveHi && m.alts[i].hi.pastShown {
			return true
		}
	}
	return false
}

// spanShown is readSpanShown's work.
func (m *MSNModel) spanShown(c *harness.Conn) {
	if m.pastShownHi() {
		m.basis.dropInsideRead(c)
		for i := range m.alts {
			m.alts[i].dropInsideRead(c)
		}
	}
	if m.unresolved && m.gapAfterRead {
		if s := c.ReadSpanAt(m.gapRead); s != nil && s.First == m.gapRead && s.Numbered {
			last := s.LastMin
			switch {
			case !last.Before(m.gapLast):
				m.unresolved, m.gapAfterRead = false, false
			case !last.Before(m.allowFirst):
				m.allowFirst = last.Next()
				if !last.Before(m.gapFirst) {
					m.gapFirst = last.Next()
				}
			}
		}
	}
	if !m.haveNext || !m.nextIsRead || m.nextLo == m.nextHi {
		return
	}
	s := c.ReadSpanAt(m.nextRead)
	if s == nil || s.First != m.nextRead {
		return
	}
	if last, ok := s.Last(); ok && last.Next().InRange(m.nextLo, m.nextHi) {
		m.nextLo, m.nextHi = last.Next(), last.Next()
	}
}

// gap records request PSNs first..last missing from a capture. Until a
// response acknowledges past them, the messages among them may complete
// unseen, so the count of messages that reached the responder is S and
// at most one more per missing PSN (reached); once one does, they have
// all completed, and every later count misses the same unseen ones: the
// start of the count moves up by as many (resolve).
//
// The allowance starts after the newest READ's own PSN, not after the
// span its length reserves: a requester that gave the READ fewer PSNs
// (its own clause's fault) put requests there, which the capture missed
// as well (for example, burst loss after a READ numbered as one PSN,
// the SENDs after it lost).
func (m *MSNModel) gap(first, last wire.PSN) {
	allow := first
	afterRead := m.haveNext && m.nextIsRead && m.nextRead.Before(first)
	if afterRead {
		allow = m.nextRead.Next()
	}
	if !m.unresolved {
		m.unresolved, m.gapFirst, m.gapLast, m.allowFirst = true, first, last, allow
		m.gapRead, m.gapAfterRead = m.nextRead, afterRead
		return
	}
	m.gapAfterRead = false // one READ no longer bounds what is missing
	if allow.Before(m.allowFirst) {
		m.allowFirst = allow
	}
	if last.After(m.gapLast) {
		m.gapLast = last
	}
	if first.Before(m.gapFirst) {
		// PSNs missing before the open gap (requests sent before the
		// capture began): the gap spans both, so a request arriving at
		// the later part no longer closes it.
		m.gapFirst = first
	}
}

// resolve ends an unresolved gap once a response shows that the responder
// received every PSN before next.
func (m *MSNModel) resolve(c *harness.Conn, next wire.PSN) bool {
	if !m.unresolved || !next.After(m.gapLast) {
		return false
	}
	m.unresolved = false
	// The messages among the missing PSNs, at most one each, completed
	// unseen: the count's start, in the messages the trace shows, moves
	// up by as many. It stays above every lower bound, and each upper
	// bound moves up by the PSNs missing (were the count to start anew at
	// one missing PSN, an ACK whose MSN went back in the middle of a
	// lossy capture would be judged by nothing). An upper bound from a
	// response that acknowledged PSNs no request in the capture had shown
	// is forgotten: its PSN may be the fault (an ACK inside a READ whose
	// span the MTU left open), not the capture.
	missing := m.unseen(c, m.allowFirst, m.gapLast)
	m.eachBasis(func(b *basis) {
		if missing < 0 {
			b.haveLo, b.haveHi = false, false
			return
		}
		if b.hi.pastShown {
			b.haveHi = false
			return
		}
		b.hi.v += int64(missing)
		b.hi.missed += missing
	})
	if !m.haveMissed || m.gapLast.After(m.missedMax) {
		m.missedMax, m.haveMissed = m.gapLast, true
	}
	m.resolvedFirst, m.resolvedLast, m.haveResolved = m.allowFirst, m.gapLast, missing >= 0
	return true
}

// unseenFrom counts the PSNs from p on in the latest resolved gap where
// the model counts no message ending: messages that completed unseen,
// which resolve counted by moving the start of the count up. A bound
// taken since from a response acknowledging only PSNs before p counts
// none of them among its messages, so it adds them back to stay in the
// moved count's terms (for example, an ACK at a PSN inside the gap,
// shown after a later ACK resolved it, bounds the start by the unseen
// messages after its PSN less tightly).
func (m *MSNModel) unseenFrom(c *harness.Conn, p wire.PSN) int {
	if !m.haveResolved || p.After(m.resolvedLast) {
		return 0
	}
	if p.Before(m.resolvedFirst) {
		p = m.resolvedFirst
	}
	return max(m.unseen(c, p, m.resolvedLast), 0)
}

// unwrap turns a 24-bit MSN into an integer near the previous one.
func (m *MSNModel) unwrap(msn uint32) int64 {
	if !m.haveRef {
		m.ref, m.haveRef = int64(msn&0xFFFFFF), true
		return m.ref
	}
	d := int64((msn - uint32(m.ref)) & 0xFFFFFF)
	if d >= 1<<23 {
		d -= 1 << 24
	}
	return m.ref + d
}

// CountBlamed reports whether a finding already blamed the count response
// r carries: its MSN (under C9-148, or a NAK's under C9-149), or the PSN
// the count stands at (under C9-95: an ACK's PSN no legal responder
// gives, whose count then fixes nothing at that PSN). A fault found
// because a later MSN disagrees with that count is the same root cause,
// and is not reported again (for example, an ACK whose MSN skipped ahead,
// reported, and the right MSNs after it, below it).
func CountBlamed(c *harness.Conn, r *trace.Record) bool {
	return CountClause(c, r) != ""
}

// CountClause is the clause under which a finding blamed the count
// response r carries ("" none: CountBlamed).
func CountClause(c *harness.Conn, r *trace.Record) string {
	for _, id := range []string{"C9-148", "C9-149", "C9-95"} {
		if r != nil && c.Blamed(r, id) {
			return id
		}
	}
	return ""
}
