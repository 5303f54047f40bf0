// Package c9_101 checks C9-101 (§9.7.5.1.3): a responder may start
// executing SEND or RDMA WRITE requests that arrived after an RDMA READ,
// but it must not acknowledge them before that READ's response has been
// sent, because an acknowledgment whose PSN lies beyond an outstanding
// READ tells the requester that the READ was implicitly NAKed.
package c9_101

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-101"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := answers.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor keeps the new READ requests whose response has not yet reached
// the last PSN of their range (answers.Tracker), and checks every
// positive Acknowledge: its PSN must not lie beyond such a READ. A READ
// resent after a later request, whose first copy the capture missed
// (answers.ReadReq.Resent), counts as new until an answer to one of its
// copies ends: nothing shows the responder executed it before.
//
// Why a violation is certain: a responder acknowledges PSN p only once it
// has received every PSN up to p, the READ's among them (a READ it never
// received would have left it expecting the READ's PSN, answering later
// requests with a sequence NAK). Having received the READ, it owed the
// READ's response before any ACK beyond it.
//
// Capture caveats: in a trace known complete (an active run, --complete)
// the missing response is proof. In other captures the READ's response
// may have been sent and lost before the capture point, so the ACK is
// held: if the READ's own response shows up after it (the same sender's
// packets keep their order), that is proof; if a duplicate of the READ
// arrives first, or the capture ends, the verdict is indeterminate.
// Without the path MTU the READ's range is known only within bounds: an
// ACK beyond the furthest end any MTU gives is judged, one inside the
// bounds is indeterminate. READs refused by a NAK are no longer owed a
// response.
type monitor struct {
	t       *answers.Tracker
	feeder  bool // the shared tracker's feeder (answers.Join)
	pending []held
	// done holds the READs already reported (once each): they count as
	// answered from then on. The tracker is shared with other monitors,
	// so this is kept here rather than in the READ.
	done map[*answers.ReadReq]bool
}

// reported marks q as reported.
func (m *monitor) reported(q *answers.ReadReq) {
	if m.done == nil {
		m.done = map[*answers.ReadReq]bool{}
	}
	m.done[q] = true
	if len(m.done) > 2*maxReads {
		// Forget the READs the tracker no longer remembers.
		reads := m.t.Reads()
		for k := range m.done {
			if len(reads) == 0 || k.Seq < reads[0].Seq {
				delete(m.done, k)
			}
		}
	}
}

// maxReads is about how many READs the tracker remembers.
const maxReads = 512

// Kinds implements harness.KindFilter: the monitor looks at READ requests,
// READ responses and Acknowledges; it passes other packets to the shared
// tracker, which only its feeder needs to do.
func (m *monitor) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return opcodes
}

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return op == wire.ReadRequest || opc.Class(op) == wire.ClassReadResponse || opc.Class(op) == wire.ClassAck
})

// maxHeld bounds how many ACKs wait for evidence.
const maxHeld = 1024

// held is an ACK that passed a READ whose response the capture had not
// shown, waiting for evidence.
type held struct {
	ack    *trace.Record
	ackSeq uint64 // the ACK's place among the connection's records (Conn.Seq)
	read   *answers.ReadReq
	// retried: the READ was requested again from a PSN inside its range
	// after its first (a partial retry) since the ACK (dropHeldFor).
	retried bool
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	p := r.Packet
	switch ev.Kind {
	case answers.EvRequest:
		if ev.Req.Dup {
			m.dropHeldFor(c, ev.Req)
		}
		return
	case answers.EvStart, answers.EvContinue:
		m.resolveHeld(c, r, ev.Stream)
		return
	case answers.EvAck:
	default:
		return
	}
	judged := false
	for _, q := range m.t.Pending() {
		if q.Dup && !q.Resent || q.Answered || q.Failed || m.done[q] || !p.PSN.After(q.PSN) || q.Resent && m.copyDone(q) {
			continue
		}
		if q.Abandoned {
			c.Indeterminate(ID, "the READ's response stopped short when another response stream began (a preemption by an older duplicate, or numbering no READ explains): whether it still counts as outstanding cannot be told")
			continue
		}
		last, known := q.Last(ev.MTU)
		if !known {
			last = q.MaxLast()
			if p.PSN.AtOrBefore(last) {
				c.Indeterminate(ID, "path MTU unknown: whether an ACK lies beyond an outstanding READ's range cannot be told (--mtu decides)")
				continue
			}
		}
		if !p.PSN.After(last) {
			continue // inside the READ's range: C9-95's concern
		}
		judged = true
		if f := c.AckPSNFault(r); f != "" {
			// The ACK's own PSN is one no legal responder gives (C9-95's
			// fault): it says nothing of what the responder had
			// completed, and the READ stays owed to a later ACK.
			c.Indeterminate(ID, "an ACK whose own PSN is at fault passed a READ: "+f)
			continue
		}
		if f := c.ResponsePSNFault(); f != "" {
			// Where this READ's answer lies is read from response PSNs
			// the trace shows are wrong: one root cause, judged there.
			c.Indeterminate(ID, "an ACK passed a READ whose answer cannot be placed: "+f)
			m.reported(q)
			continue
		}
		if c.Complete() {
			c.Violation(ID, r, fmt.Sprintf("ACK with PSN %d went out while the response of the READ at PSN %d (frame %d, range %d..%d) was not complete: the ACK tells the requester that the READ was NAKed",
				p.PSN, q.PSN, q.Rec.Frame, q.PSN, last),
				[]string{fmt.Sprintf("every READ response packet up to PSN %d before any ACK with a PSN beyond it", last)},
				fmt.Sprintf("ACK PSN %d before the READ's response reached PSN %d", p.PSN, last))
			m.reported(q) // reported once
			continue
		}
		m.pending = append(m.pending, held{ack: r, ackSeq: c.Seq(), read: q})
		if len(m.pending) > maxHeld {
			c.Unresolved(ID, "an ACK passed a READ whose response the capture never showed: the response may have been lost before the capture point (--complete decides)")
			m.pending = m.pending[1:]
		}
	}
	if !judged && m.precededByRead(p.PSN, ev.MTU) {
		c.Checked(ID)
	}
}

// precededByRead reports whether a new (or Resent) READ, now answered,
// lies before PSN p: the ACK was checked against it.
func (m *monitor) precededByRead(p wire.PSN, mtu int) bool {
	for _, q := range m.t.Reads() {
		if (!q.Dup || q.Resent) && (q.Answered || m.done[q] || q.Resent && m.copyDone(q)) && p.After(q.PSN) {
			return true
		}
	}
	return false
}

// copyDone reports whether a later copy of Resent READ q (the same PSN
// and length) was answered to its end or refused: the answer owed to
// the READ, whichever copy the responder executed, is no longer owed.
func (m *monitor) copyDone(q *answers.ReadReq) bool {
	reads := m.t.Reads()
	for i := len(reads) - 1; i >= 0 && reads[i].Seq > q.Seq; i-- {
		if d := reads[i]; d.PSN == q.PSN && d.Length == q.Length && (d.Answered || d.Failed) {
			return true
		}
	}
	return false
}

// resolveHeld: a response packet of a held READ's own (non-replay) stream
// after the ACK proves that the ACK overtook it; so does one of the first
// stream answering the READ's PSN, begun before the ACK, where it answers
// a later copy of the READ (firstAnswer).
func (m *monitor) resolveHeld(c *harness.Conn, r *trace.Record, s *answers.Stream) {
	if s == nil {
		return
	}
	k := 0
	var raised *answers.ReadReq // the READ whose retry r was judged for (retryAt)
	for _, h := range m.pending {
		answers := !s.Replay && s.Req == h.read || s.Replay && m.firstAnswer(s, h)
		if answers && c.ResponsePSNFault() != "" {
			c.Indeterminate(ID, "an ACK passed a READ whose answer cannot be placed: "+c.ResponsePSNFault())
			continue
		}
		if answers && !c.Complete() {
			switch m.retryAt(c, s, h, r, raised) {
			case retryJudged:
				raised = h.read
				continue
			case retrySame:
				continue // the instance raised for an earlier ACK past the READ
			case retryOpen:
				c.Unresolved(ID, requestedAgain)
				continue
			}
		}
		if answers && !c.Complete() {
			// The packet may answer a duplicate of the READ that the
			// capture dropped, sent after the ACK, unless its AETH
			// carries an MSN below the ACK's: a response sent after the
			// ACK carries the MSN of then, no lower. A packet without an
			// AETH leaves the question to the next one.
			if !opc.Has(r.Packet.Opcode, wire.HdrAETH) {
				m.pending[k] = h
				k++
				continue
			}
			if d := (r.Packet.AETH.MSN - h.ack.Packet.AETH.MSN) & 0xFFFFFF; d < 1<<23 {
				unlessMissed(c, s, h, r, fmt.Sprintf("ACK with PSN %d went out before a packet of the response of the READ at PSN %d (frame %d): the packet may answer a duplicate of the READ that the capture dropped (a capture need not report its drops); --complete decides", h.ack.Packet.PSN, h.read.PSN, r.Frame))
				continue
			}
			if !c.FromStart() {
				// Its MSN is below the ACK's, which no answer sent after
				// the ACK carries, unless it replays one sent before it
				// (with that answer's MSN): the capture, begun
				// mid-connection, may have begun while the requester
				// resent the READ, after the responder had answered its
				// first copy (also where an acknowledgment from before
				// that retransmission preceded the READ).
				unlessMissed(c, s, h, r, fmt.Sprintf("ACK with PSN %d went out before a packet of the response of the READ at PSN %d (frame %d), whose MSN is below the ACK's, but the capture begins mid-connection: the READ may resend one answered before the capture began, and the packet may be the replay, with the MSN of the first answer", h.ack.Packet.PSN, h.read.PSN, r.Frame))
				continue
			}
			if h.read.Resent {
				// The capture missed the READ's first copy: the
				// responder may have executed it and answered unseen,
				// and the packet replay that answer for this copy, with
				// the MSN of the first answer.
				unlessMissed(c, s, h, r, fmt.Sprintf("ACK with PSN %d went out before a packet of the response of the READ at PSN %d (frame %d), but the READ came behind a later request: the capture missed its first copy, which the responder may have answered unseen, and the packet may replay that answer, with the MSN of the first answer", h.ack.Packet.PSN, h.read.PSN, r.Frame))
				continue
			}
			if dup := m.t.DupSince(h.read, h.read.MaxLast()); dup != nil {
				// A replay for a duplicate may carry the MSN of the
				// READ's first answer (docs/interpretations.md, "MSN of a
				// replayed answer"), so a low
				// MSN does not date the packet before the ACK.
				unlessMissed(c, s, h, r, fmt.Sprintf("ACK with PSN %d went out before a packet of the response of the READ at PSN %d (frame %d), but the READ was requested again (frame %d) and the capture may have lost the start of its replay, which may carry the MSN of the first answer", h.ack.Packet.PSN, h.read.PSN, r.Frame, dup.Rec.Frame))
				continue
			}
		}
		if answers {
			// The trace's order is the capture's: the packet's IPv4 ID
			// may show the responder sent it before the ACK (the network
			// or the capture delayed it, or the capture lost it and kept
			// a copy), and then the ACK overtook nothing.
			if before, known := c.SentBeforeByID(r, h.ack); known && before {
				c.Checked(ID)
				continue
			}
			if why, _ := c.LateWhy(r); why != "" {
				c.Unresolved(ID, fmt.Sprintf("ACK with PSN %d went out before a packet of the response of the READ at PSN %d in the capture (frame %d), but that packet may have been sent before the ACK: %s", h.ack.Packet.PSN, h.read.PSN, r.Frame, why))
				continue
			}
			if c.MaybeCopy(r) {
				// A copy of a packet sent before the ACK (no IPv4 ID tells
				// it from a second transmission) overtook nothing.
				c.Unresolved(ID, fmt.Sprintf("ACK with PSN %d went out before a packet of the response of the READ at PSN %d in the capture (frame %d), but that packet repeats an earlier one byte for byte and no IPv4 Identification tells a copy the capture or the network made of it (sent before the ACK) from a second transmission", h.ack.Packet.PSN, h.read.PSN, r.Frame))
				continue
			}
			msg, expected, seen := overtook(h, r)
			c.Violation(ID, h.ack, msg, expected, seen)
			continue
		}
		m.pending[k] = h
		k++
	}
	m.pending = m.pending[:k]
}

// What retryAt made of a packet for a held ACK.
const (
	retryNone   = iota // nothing: the packet is judged as any other
	retryJudged        // judged (a violation of C9-101 or C9-97, or open)
	retrySame          // judged already, for an earlier ACK past the same READ
	retryOpen          // may answer the retry: the ACK stays open (requestedAgain)
)

// requestedAgain is why a held ACK stays open once its READ was asked
// for again and a later packet of its answer may answer that request.
const requestedAgain = "an ACK passed a READ whose response the capture had not shown, and the READ was then requested again: its response may have been lost before the capture point"

// retryAt judges packet r of stream s, the held READ's own first answer
// (begun before ACK h; or firstAnswer's), where the requester has asked for part of that
// READ again (a partial retry, at any time since the READ). C9-97
// (§9.7.5.1.3): the answer to a READ, a retry of part of one included,
// opens at its PSN with a First or Only, which carries the AETH; C9-101:
// no ACK past a READ goes out before that READ's answer has ended. So a
// Middle at the PSN the retry asks from, sent after the ACK, is wrong
// whichever request it answers: it begins the retry's answer without an
// AETH (C9-97), or it continues the READ's first answer after the ACK
// passed it (C9-101). It answers nothing else: the only other requests
// whose range holds its PSN and begins before it are copies of the whole
// READ, and a replay for one the capture missed (begun before the ACK,
// after the first answer ended, so that the ACK passed no answer still
// owed) is ruled out where the requester's IPv4 Identifications show it
// sent no request the capture missed since the READ, or the responder's
// show the capture missed none of its packets since a point where the
// READ was not yet executed (respondsSince); one seen, or a retry from a
// PSN before this one, leaves the packet to the usual judgement. The
// Middle is dated after the ACK only by the responder's IPv4
// Identifications (on a complete capture the ACK itself was judged when
// it came): without them it may be the first answer's, sent before the
// ACK and delayed, with the rest of that answer sent before the ACK too,
// and the ACK then stays open.
func (m *monitor) retryAt(c *harness.Conn, s *answers.Stream, h held, r *trace.Record, raised *answers.ReadReq) int {
	q := h.read
	x := r.Packet.PSN
	var from *answers.ReadReq // the retry asking from the lowest PSN (the newest of them)
	for _, d := range m.t.Reads() {
		if d.Seq <= q.Seq || !d.Dup || !d.PSN.InRange(q.PSN, q.MaxLast()) || d == s.Req {
			// (The copy whose answer is the READ's first is no retry.)
			continue
		}
		if from == nil || d.PSN.AtOrBefore(from.PSN) {
			from = d
		}
	}
	// A Middle of the READ's own answer: its stream, or the one answering
	// a later copy of the whole READ that is its first answer (the
	// READ's first copy lost on its way: firstAnswer).
	own := (!s.Replay && s.Req == q || s.Replay && m.firstAnswer(s, h)) && !opc.Has(r.Packet.Opcode, wire.HdrAETH)
	switch {
	case from == nil || !own || x != from.PSN || s.StartSeq == 0 || s.StartSeq >= h.ackSeq:
		if h.retried && !(own && from != nil && x.Before(from.PSN)) {
			// It may answer the retry (whose start the capture lost).
			// A Middle before the retry's PSN is no part of the
			// retry's answer: it waits, as any other, for a packet
			// with an AETH.
			return retryOpen
		}
		return retryNone
	case raised == q:
		return retrySame
	}
	if before, known := c.SentBeforeByID(h.ack, r); !known || !before {
		if h.retried {
			c.Unresolved(ID, fmt.Sprintf("ACK with PSN %d passed the READ at PSN %d (frame %d), which was then requested again from PSN %d (frame %d); the %s with PSN %d (frame %d) breaks C9-101 or C9-97 if it was sent after the ACK, but no IPv4 Identification dates it so: sent before the ACK and delayed, it continues the READ's answer, which may have ended before the ACK",
				h.ack.Packet.PSN, q.PSN, q.Rec.Frame, from.PSN, from.Rec.Frame, r.Packet.Opcode, x, r.Frame))
			return retryJudged
		}
		return retryNone
	}
	msg := fmt.Sprintf("the %s with PSN %d (frame %d) went out after the ACK with PSN %d (frame %d), as the responder's IPv4 Identifications show, while the READ at PSN %d (frame %d), whose answer began at frame %d, had been requested again from PSN %d (frame %d)",
		r.Packet.Opcode, x, r.Frame, h.ack.Packet.PSN, h.ack.Frame, q.PSN, q.Rec.Frame, s.StartRec.Frame, from.PSN, from.Rec.Frame)
	either := harness.Either{Message: msg, Alts: []reports.Alternative{
		{ID: ID, If: fmt.Sprintf("it continues the answer to the READ at PSN %d begun at frame %d: the ACK with PSN %d passed the READ before that answer ended", q.PSN, s.StartRec.Frame, h.ack.Packet.PSN)},
		{ID: "C9-97", If: fmt.Sprintf("it answers the READ asked again from PSN %d (frame %d), whose answer begins there with a First (or Only) carrying an AETH", from.PSN, from.Rec.Frame)},
	}}
	expected := []string{"the READ's whole response before any ACK with a PSN beyond it",
		fmt.Sprintf("a READ Response First (or Only) with PSN %d, answering the READ of frame %d", from.PSN, from.Rec.Frame)}
	seen := fmt.Sprintf("ACK PSN %d, then READ response %s PSN %d", h.ack.Packet.PSN, r.Packet.Opcode, x)
	reason := fmt.Sprintf("%s; it is legal only as part of a replay of the whole READ for a copy of it the capture missed, begun before the ACK after the READ's first answer had ended unseen (neither side's IPv4 Identifications show that the capture missed none of the packets that would take)", msg)
	proofs := []harness.MissedProof{{Dir: trace.ToResponder, Since: q.RecSeq}}
	if p, ok := respondsSince(c, s); ok {
		proofs = append(proofs, p)
	}
	c.ViolationEitherUnlessMissed(ID, r, either, expected, seen, reason, proofs...)
	return retryJudged
}

// firstAnswer reports whether replay stream s, begun before held ACK h,
// is the first stream answering h's READ that the trace shows: s answers
// a later copy of the whole READ (the same PSN and length, s from its
// first PSN), or the READ itself where it is Resent (a replay to the
// tracker, though nothing shows its first copy answered), and no other
// request since h's READ inside its range drew a stream. The READ's
// first copy may have been lost on its way to
// the responder after the capture point, so that the later copy, which
// the tracker takes for a duplicate, is the one the responder executed:
// whichever copy it executed, where the responder's IPv4 Identifications
// show the capture missed none of its packets since a point where it had
// not executed the READ (unlessMissed), s is the READ's first answer, and
// an ACK beyond the READ inside it overtook that answer.
func (m *monitor) firstAnswer(s *answers.Stream, h held) bool {
	q := h.read
	if s.Req == q && !q.Resent || s.Resynced || s.Start != q.PSN || s.Req.PSN != q.PSN || s.Req.Length != q.Length || s.Req.Seq < q.Seq || s.StartSeq >= h.ackSeq {
		return false
	}
	for _, d := range m.t.Reads() {
		if d.Seq < q.Seq || !d.PSN.InRange(q.PSN, q.MaxLast()) {
			continue
		}
		if n := d.Streams; d == s.Req && n != 1 || d != s.Req && n != 0 {
			return false
		}
	}
	return true
}

// unlessMissed leaves held ACK h open with reason, as overtaking
// nothing for all the trace shows, unless the evidence shows that packet
// r of the READ's stream s continues the READ's first answer, begun
// before the ACK: then h is a violation. That needs the stream to have
// begun before the ACK, and the responder's IPv4 Identifications to show
// that the capture missed none of its packets from a point where the
// READ was not yet executed on to r: so no answer to a duplicate began
// unseen after the ACK, and the stream is no replay of an answer sent
// earlier. Such a point is the Acknowledge before the stream, where it
// shows the READ not yet executed (an ACK of a PSN before it, a NAK
// naming it or one before it: sent after the READ was answered, either
// would have named a PSN past it), or the connection's beginning, where
// the capture shows it.
func unlessMissed(c *harness.Conn, s *answers.Stream, h held, r *trace.Record, reason string) {
	if s.StartSeq == 0 || s.StartSeq >= h.ackSeq {
		c.Unresolved(ID, reason)
		return
	}
	p, ok := respondsSince(c, s)
	if !ok {
		c.Unresolved(ID, reason)
		return
	}
	msg, expected, seen := overtook(h, r)
	c.ViolationUnlessMissedAny(ID, h.ack, msg, expected, seen, reason, p)
}

// respondsSince is the proof that the capture missed none of the
// responder's packets from a point where the READ stream s answers was
// not yet executed up to the packet being judged (unlessMissed): the
// Acknowledge before the stream, where it shows the READ not yet
// executed, or else the connection's beginning, where the capture shows
// it (a stretch from the beginning holds the one from that Acknowledge,
// so the latter alone is needed where both are there). ok is false
// where there is neither.
func respondsSince(c *harness.Conn, s *answers.Stream) (p harness.MissedProof, ok bool) {
	if a := s.AckBefore; a != nil && (a.Packet.AETH.IsACK() && a.Packet.PSN.Before(s.Req.PSN) || !a.Packet.AETH.IsACK() && a.Packet.PSN.AtOrBefore(s.Req.PSN)) {
		return harness.MissedProof{Dir: trace.ToRequester, Since: s.AckBeforeSeq, Now: true}, true
	}
	if c.FromStart() {
		return harness.MissedProof{Dir: trace.ToRequester, Since: 0, Now: true}, true
	}
	return harness.MissedProof{}, false
}

// overtook is the finding of held ACK h overtaking packet r of its
// READ's response.
func overtook(h held, r *trace.Record) (msg string, expected []string, seen string) {
	return fmt.Sprintf("ACK with PSN %d went out before the response of the READ at PSN %d (frame %d), whose packet with PSN %d followed it (frame %d): the ACK tells the requester that the READ was NAKed",
			h.ack.Packet.PSN, h.read.PSN, h.read.Rec.Frame, r.Packet.PSN, r.Frame),
		[]string{"the READ's whole response before any ACK with a PSN beyond it"},
		fmt.Sprintf("ACK PSN %d, then READ response PSN %d", h.ack.Packet.PSN, r.Packet.PSN)
}

// dropHeldFor: once a duplicate of a held READ arrives, its later
// responses may answer the duplicate; the held ACK cannot be judged. A
// retry of part of the READ keeps it held (retried): a Middle at the
// PSN the retry asks from, sent after the ACK, is wrong whichever
// request it answers (retryAt); any other packet of the READ's answer
// after it leaves the ACK open.
func (m *monitor) dropHeldFor(c *harness.Conn, q *answers.ReadReq) {
	k := 0
	for _, h := range m.pending {
		if q.Partial && q.PSN.After(h.read.PSN) && q.PSN.AtOrBefore(h.read.MaxLast()) {
			h.retried = true
		} else if h.read.PSN == q.PSN {
			c.Unresolved(ID, requestedAgain)
			continue
		}
		m.pending[k] = h
		k++
	}
	m.pending = m.pending[:k]
}

func (m *monitor) End(c *harness.Conn) {
	for _, h := range m.pending {
		if h.retried {
			c.Unresolved(ID, requestedAgain)
			continue
		}
		c.Unresolved(ID, "an ACK passed a READ whose response the capture never showed: the response may have been lost before the capture point (--complete decides)")
	}
	m.pending = nil
}
