// Package c9_105 checks C9-105 (§9.7.5.1.4): a duplicate SEND or RDMA
// WRITE is not executed again; the responder answers it with an ACK
// carrying the PSN of the most recently completed new request, telling
// the requester that everything up to there is done.
package c9_105

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-105"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return &judge{} })) }

// judge: after a duplicate SEND or WRITE, the next positive ACK either
// acknowledges new requests (it names one the responder took in sequence:
// a coalesced ACK, judged by C9-95) or answers the duplicate, and then its
// PSN must be the newest completed one: one less than an expected PSN the
// responder could have had when it built the ACK, or, while a READ's
// response is still owed, the PSN just before that READ (an ACK may not
// pass it, C9-101). An ACK naming neither
// (for instance the duplicate's own PSN, older than requests already
// completed) means the duplicate was treated as new.
//
// On traces that may miss packets, the model knows only the newest PSN
// acknowledged so far: an ACK answering a duplicate with a PSN older than
// that is flagged, anything else is consistent.
//
// A duplicate that repeats an earlier transmission with its IPv4 ID
// (harness.Conn.MaybeCopy) may be the capture's recording it twice, and
// then the responder had no duplicate to answer: a wrong answer to such
// duplicates alone is left undecided (Unresolved), not failed.
//
// Re-execution itself (a second receive completion, memory written
// again) is visible only on the device: the active scenarios check it.
type judge struct {
	pending []*trace.Record // duplicate SENDs/WRITEs not yet answered
	// answered are the duplicates the latest answer took from pending,
	// off complete traces: a responder may answer each duplicate packet,
	// and a later answer naming one of them (which C9-95 leaves to this
	// clause) is judged against them.
	answered []*trace.Record
	// since are the SEND and WRITE packets captured since the first
	// duplicate of pending (at most maxSince); late the answers judged
	// at the end, against the longest reaction the whole trace shows.
	// Both keep what the verdict needs of a packet, not its record.
	since []sentPacket
	late  []lateAnswer
}

// readWait is an ACK answering duplicates that names the PSN just before
// a new READ whose answer the trace had not shown end (readUnended), where
// its own MSN counts the READ, or it would otherwise be behind the newest
// completed request: legal only if the READ had reached the responder
// but was not yet completed, so that its answer was still to come after
// the ACK. The responder answers in PSN order: a
// response of its showing it past the READ, with no packet of the READ's
// answer captured since the ACK, leaves that reading open only if the
// answer was lost before the capture point (Conn.ViolationUnlessMissedAny
// decides it from the responder's IDs). The connection holds it
// (Conn.Await) until a response settles it or the trace ends.
type readWait struct {
	// ack is the ACK's record while the wait may still raise a finding
	// on it (nil once answered); acked what the messages need of it.
	ack   *trace.Record
	acked sentPacket
	seq   uint64   // the ACK's Seq
	read  wire.PSN // the READ's first PSN
	dups  string
	// fail is the finding the ACK is if the READ had been answered;
	// open, the reason an instance that stays legal is undecided (""
	// checked).
	fail harness.Either
	want []string
	open string
	// owed (timed) is the READ request captured before the duplicates
	// that the ACK's MSN counts: the READ had then reached the responder,
	// its answer not begun. Or (owed.Begun) the latest packet of the
	// READ's answer captured before the ACK, the answer not ended: the
	// responder was executing the READ, whose next packet was owed at
	// once.
	owed  receive.Owed
	timed bool
}

// sentPacket is what the judge keeps of a captured packet.
type sentPacket struct {
	frame int
	at    time.Duration
	psn   wire.PSN
	op    wire.Opcode
}

func sent(r *trace.Record) sentPacket {
	return sentPacket{frame: r.Frame, at: r.Time, psn: r.Packet.PSN, op: r.Packet.Opcode}
}

// lateAnswer is an ACK answering duplicates with PSN p, where the SEND or
// WRITE packet next, at p+1, was first captured after the duplicates and
// before the ACK: the newest completed PSN only if that packet had not
// reached the responder when it built the ACK.
type lateAnswer struct {
	ack, next sentPacket
	dups      string
}

// maxSince and maxLate bound the packets and answers a judge keeps per
// connection.
const (
	maxSince = 256
	maxLate  = 256
)

// Kinds implements harness.KindFilter: requests (duplicates are kept) and
// Acknowledges.
func (*judge) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsRequest(op) || op == wire.Acknowledge
})

func (j *judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead {
		return
	}
	if opc.IsRequest(p.Opcode) {
		if cl := opc.Class(p.Opcode); cl != wire.ClassSend && cl != wire.ClassWrite {
			return
		}
		if ev.Class == receive.ReqDup {
			if len(j.pending) == 0 {
				j.since = j.since[:0]
			}
			j.pending = append(j.pending, ev.Rec)
			if len(j.pending) > 256 {
				j.pending = j.pending[1:]
			}
		}
		if len(j.pending) > 0 && len(j.since) < maxSince {
			j.since = append(j.since, sent(ev.Rec))
		}
		return
	}
	if !harness.IsAck(p) {
		return
	}
	if len(j.pending) == 0 {
		j.answerAgain(k, c, ev)
		return
	}
	dups := j.pending
	if !k.T.Complete() {
		j.answered = dups
	}
	if s := c.ReadInterior(p.PSN); s != nil {
		// One root cause, one clause: no completion has a PSN inside a
		// READ's range, whatever the ACK answers (C9-95 fails it, not
		// this clause too).
		j.pending = nil
		k.Indeterminate(c, fmt.Sprintf("the ACK after the duplicate %s names PSN %d, inside the range of the READ at PSN %d: its PSN is judged under C9-95", dupnak.DupList(dups), p.PSN, s.First))
		return
	}
	// copies: every duplicate repeats an earlier transmission with its
	// IPv4 ID (harness.Conn.MaybeCopy): the capture may have recorded it
	// twice, and the responder then received no duplicate to answer. An
	// ACK going back behind an earlier ACK's PSN is wrong either way (as
	// a new ACK, C9-95 defers it here): it stays a violation.
	copies := !(c.HaveAck && p.PSN.Before(c.LastAckPSN))
	for _, d := range dups {
		copies = copies && c.MaybeCopy(d)
	}
	violation := func(msg string, expected []string) {
		if copies {
			c.Unresolved(ID, "the duplicate "+dupnak.DupList(dups)+" repeats an earlier request with its IPv4 ID: if the capture recorded it twice the responder received no duplicate, if the network copied it this answer is wrong: "+msg)
			return
		}
		k.Violation(c, ev.Rec, msg, expected, dupnak.Seen(ev.Rec))
	}
	newest := func() bool {
		for _, e := range ev.Window {
			if e.Add(-1) == p.PSN {
				return true
			}
		}
		// While a READ's response is still owed, the newest completed
		// request is the one just before it (an ACK must not pass it,
		// C9-101).
		return k.T.ReadOpen(p.PSN.Next())
	}
	// A READ at the next PSN whose answer the trace has not seen end
	// excuses an ACK behind the newest completed request, the READ's
	// own PSN: it may not have been completed yet. That holds only while
	// its answer is still to come (readWait).
	unended := readUnended(c, p.PSN.Next(), ev)
	var wait *readWait
	if unended && !copies {
		wait = readWaitOf(c, k.T, ev, dups)
	}
	checked := func(open string) {
		if wait == nil {
			if open == "" {
				k.Checked(c)
			} else {
				k.Indeterminate(c, open)
			}
			return
		}
		wait.open = open
		wait.await(k, c)
	}
	switch {
	case !k.T.Complete() && (!ev.Exact || newest()) && !unended && behindCount(c, ev.Rec):
		// The ACK's own MSN counts a message the responder completed
		// past its PSN: the PSN is behind the newest completed, or an
		// MSN is wrong (this one too high, or the earlier ACK's too
		// low): one finding names both clauses. (Where the expected
		// PSN is known and the PSN is not the newest completed, the
		// duplicate's answer is wrong whatever the MSNs say: below. On
		// a complete trace the count is known too, and C9-148 judges
		// the MSN.)
		j.pending = nil
		f, expected := countFinding(c, ev, dups)
		if copies {
			violation(f.Message, expected)
			break
		}
		c.ViolationEither(ev.Rec, f.Message, expected, dupnak.Seen(ev.Rec), f.Alts...)
	case ev.Exact && newest():
		j.pending = nil
		checked("")
	case ev.Exact && ev.NamesStep:
		// A coalesced ACK of new requests; the duplicate's answer may
		// still come (or be covered by this one).
	case ev.Exact:
		j.pending = nil
		want := make([]wire.PSN, 0, len(ev.Window))
		for _, e := range ev.Window {
			want = append(want, e.Add(-1))
		}
		violation(fmt.Sprintf("the ACK answering the duplicate %s carries PSN %d, which is not the newest request completed (%s): the duplicate was treated as a new request",
			dupnak.DupList(dups), p.PSN, receive.FormatPSNs(want)),
			[]string{fmt.Sprintf("an ACK with the PSN of the most recently completed new request, %s", receive.FormatPSNs(want)), "no ACK yet (the answer may be coalesced)"})
	// (Past a READ whose answer the trace has not seen end, the newest
	// completed request may be the one just before it, as in newest():
	// its First may have escaped the capture.)
	case !k.T.Complete() && ev.HaveLower && p.PSN.Before(ev.Lower.Add(-1)) && !unended:
		j.pending = nil
		f, expected := olderFinding(ev, dups)
		violation(f.Message, expected)
	case !k.T.Complete() && ev.HaveLower:
		j.pending = nil
		if why := lostBefore(c, p.PSN, dups[0]); why != "" {
			// Legal only if a packet was lost where nothing shows it:
			// open, not passed.
			c.Unresolved(ID, fmt.Sprintf("the ACK answering the duplicate %s names PSN %d, the newest completed request only if %s", dupnak.DupList(dups), p.PSN, why))
			return
		}
		if n, ok := firstAt(j.since, p.PSN.Next()); ok && len(j.late) < maxLate {
			// Judged at the end, against the longest reaction the
			// whole trace shows.
			j.late = append(j.late, lateAnswer{ack: sent(ev.Rec), next: n, dups: dupnak.DupList(dups)})
			return
		}
		checked("")
	default:
		j.pending = nil
		checked("an ACK followed a duplicate SEND/WRITE, but the newest completed PSN is not known: " + k.T.Why())
	}
}

// answerAgain judges a positive ACK after the duplicates' answer, off
// complete traces: one naming the PSN of a duplicate answered, older than
// a PSN the responder had already acknowledged (the receive model's, or
// the latest ACK's where it names a READ's last PSN: it acknowledges the
// READ though the model waits for its answer), answers that duplicate with its
// own PSN, not the newest completed one. One that may have been sent
// before that ACK and delayed is left open (harness.Conn.LateWhy), not
// passed over.
func (j *judge) answerAgain(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	acked, have := ev.Lower.Add(-1), ev.HaveLower
	if c.HaveAck && (!have || c.LastAckPSN.After(acked)) {
		if s := c.ReadSpanAt(c.LastAckPSN); s != nil && s.Known() && c.LastAckPSN == s.LastMax {
			acked, have = c.LastAckPSN, true
		}
	}
	if k.T.Complete() || !have || !p.PSN.Before(acked) {
		return
	}
	for _, d := range j.answered {
		if d.Packet.PSN == p.PSN {
			j.answered = nil
			k.Violation(c, ev.Rec, fmt.Sprintf("the ACK answering the duplicate %s at PSN %d carries that PSN, older than PSN %d the responder had already acknowledged: a duplicate is answered with the newest completed PSN",
				d.Packet.Opcode.ShortName(), p.PSN, acked),
				[]string{fmt.Sprintf("an ACK with the PSN of the most recently completed new request, at least %d", acked)}, dupnak.Seen(ev.Rec))
			return
		}
	}
}

// countFinding is the finding of an ACK answering duplicates dups whose
// own MSN counts messages the responder completed past its PSN
// (behindCount): the PSN is behind the newest completed, or an MSN is
// wrong, and the trace cannot tell which.
func countFinding(c *harness.Conn, ev *receive.Event, dups []*trace.Record) (harness.Either, []string) {
	p := ev.Rec.Packet
	k, _ := c.CompletedByMSN(ev.Rec)
	msg := fmt.Sprintf("the ACK answering the duplicate %s carries PSN %d, while its MSN %d counts messages past the response with PSN %d (MSN %d) up to PSN %d at least",
		dupnak.DupList(dups), p.PSN, p.AETH.MSN&0xFFFFFF, k.From, k.FromMSN, k.Done)
	return harness.Either{Message: msg, Alts: []reports.Alternative{
			{ID: ID, If: fmt.Sprintf("the MSNs are right: the duplicate was answered with PSN %d, behind PSN %d the responder had completed", p.PSN, k.Done)},
			{ID: "C9-148", If: fmt.Sprintf("PSN %d is right: this ACK's MSN counts more messages than the requests up to it end, or the earlier ACK's counted too few", p.PSN)},
		}},
		[]string{fmt.Sprintf("an ACK with the PSN of the most recently completed new request, at least %d", k.Done)}
}

// olderFinding is the finding of an ACK answering duplicates dups with a
// PSN older than one the responder had already acknowledged (ev.Lower).
func olderFinding(ev *receive.Event, dups []*trace.Record) (harness.Either, []string) {
	p := ev.Rec.Packet
	return harness.Either{Message: fmt.Sprintf("the ACK answering the duplicate %s carries PSN %d, older than PSN %d the responder had already acknowledged: a duplicate is answered with the newest completed PSN",
			dupnak.DupList(dups), p.PSN, ev.Lower.Add(-1))},
		[]string{fmt.Sprintf("an ACK with the PSN of the most recently completed new request, at least %d", ev.Lower.Add(-1))}
}

// readWaitOf returns the wait of the ACK of ev, answering duplicates
// dups with the PSN just before a READ whose answer the trace has not
// seen end, where its own MSN counts the READ or the ACK would otherwise
// be behind the newest completed request (by its MSN, or older than a
// PSN already acknowledged); nil where neither holds.
func readWaitOf(c *harness.Conn, t *receive.Tracker, ev *receive.Event, dups []*trace.Record) *readWait {
	p := ev.Rec.Packet
	var f harness.Either
	var want []string
	k, _ := c.CompletedByMSN(ev.Rec)
	counted := k.Beyond > 0
	complete := t.Complete()
	switch {
	case complete:
		return nil
	case behindCount(c, ev.Rec):
		f, want = countFinding(c, ev, dups)
	case ev.HaveLower && p.PSN.Before(ev.Lower.Add(-1)):
		f, want = olderFinding(ev, dups)
	case !counted:
		return nil
	default:
		// The ACK's MSN counts a message past its PSN: the READ,
		// which had then reached the responder (or the MSN is wrong).
		f = harness.Either{Message: fmt.Sprintf("the ACK answering the duplicate %s carries PSN %d, behind the READ at PSN %d, which its MSN %d counts: the responder had the READ, and its answer did not come after this ACK",
			dupnak.DupList(dups), p.PSN, p.PSN.Next(), p.AETH.MSN&0xFFFFFF), Alts: []reports.Alternative{
			{ID: ID, If: fmt.Sprintf("the MSN is right: the responder had completed the READ at PSN %d, and answered the duplicate behind it", p.PSN.Next())},
			{ID: "C9-148", If: fmt.Sprintf("PSN %d is right: the MSN counts a message the responder had not completed (the duplicate, or a READ it had not yet received)", p.PSN)},
		}}
		want = []string{"an ACK with the PSN of the most recently completed new request, the READ's last PSN once answered"}
	}
	s := c.ReadSpanAt(p.PSN.Next())
	w := &readWait{ack: ev.Rec, acked: sent(ev.Rec), seq: c.Seq(), read: s.First, dups: dupnak.DupList(dups), fail: f, want: want}
	// The responder, answering in order, had the READ before the last
	// duplicate (where the MSN counts it): sent before it.
	if o, ok := t.ReadOwed(s.First, dups[len(dups)-1].Frame, false); ok && (o.Begun || counted) {
		w.owed, w.timed = o, true
	}
	return w
}

// await holds w (Conn.AwaitReadOwed) until the responder's packets after
// the ACK settle it: a packet of the READ's answer makes the ACK legal
// (checked, or undecided for its own reason; a timed wait at the end,
// against the longest reaction the whole trace shows); a response past
// the READ (it completed a PSN beyond the READ's range) with none of that
// answer since the ACK makes it a violation unless the capture missed a
// packet the responder sent in between. At the end of the trace the
// answer may still have come after it.
func (w *readWait) await(k *dupnak.Checker, c *harness.Conn) {
	c.AwaitReadOwed(w.read, harness.ReadOwed{
		Answered: func(c *harness.Conn) bool {
			if !w.timed {
				w.judged(k, c)
				return true
			}
			w.ack = nil
			return false
		},
		Passed: func(c *harness.Conn, next *trace.Record) {
			reason := fmt.Sprintf("the ACK answering the duplicate %s (frame %d) names PSN %d, the newest completed request only if the READ at PSN %d was not yet completed: its answer, owed before the response at frame %d (PSN %d), was then lost before the capture point", w.dups, w.acked.frame, w.acked.psn, w.read, next.Frame, next.Packet.PSN)
			c.ViolationEitherUnlessMissed(ID, w.ack, w.fail, w.want, dupnak.Seen(w.ack), reason,
				harness.MissedProof{Dir: trace.ToRequester, Since: w.seq, Now: true})
		},
		Ended: func(c *harness.Conn) { w.end(k, c) },
	})
}

// end judges w at the end of the trace: a READ that reached the
// responder before the duplicates (timed), longer before the ACK than any
// other request shows the responder taking to begin an answer
// (receive.Tracker.Overdue), was owed its answer before the ACK,
// and the instance is open; so is one whose answer had begun, its latest
// packet before the ACK longer before it than that (the rest of the
// answer was owed at once); otherwise the ACK stays legal.
func (w *readWait) end(k *dupnak.Checker, c *harness.Conn) {
	if why, overdue := k.T.Overdue(w.owed, w.read, w.acked.at); w.timed && overdue {
		c.Unresolved(ID, fmt.Sprintf("the ACK answering the duplicate %s (frame %d) names PSN %d, the newest completed request only if the responder had not completed the READ at PSN %d: %s",
			w.dups, w.acked.frame, w.acked.psn, w.read, why))
		return
	}
	w.judged(k, c)
}

// judged records the verdict of a wait whose ACK stays legal: checked, or
// undecided for its own reason.
func (w *readWait) judged(k *dupnak.Checker, c *harness.Conn) {
	if w.open == "" {
		k.Checked(c)
		return
	}
	k.Indeterminate(c, w.open)
}

// End judges the answers set aside as lateAnswer: the SEND or WRITE
// packet past the PSN an ACK named, captured after the duplicates, had
// reached the responder before it built the ACK unless it was lost on its
// way, or the ACK took longer to come back than the longest interval the
// trace shows from a READ or ATOMIC request to its answer
// (receive.Tracker.Reaction): captured longer than that before the ACK,
// the ACK is the newest completed PSN only if something unseen happened,
// and the instance is open; otherwise, or with no such interval shown,
// it is checked.
func (j *judge) End(k *dupnak.Checker, c *harness.Conn) {
	bound, ok := k.T.Reaction()
	for _, l := range j.late {
		gap := l.ack.at - l.next.at
		if !ok || gap <= max(bound, time.Microsecond) {
			k.Checked(c)
			continue
		}
		c.Unresolved(ID, fmt.Sprintf("the ACK answering the duplicate %s (frame %d) names PSN %d, the newest completed request only if the %s at PSN %d, captured %v before it (frame %d), had not reached the responder when it built the ACK: lost on its way, or the ACK delayed longer than the %v the capture shows the responder taking to answer a READ or ATOMIC",
			l.dups, l.ack.frame, l.ack.psn, l.next.op, l.next.psn, gap, l.next.frame, bound))
	}
	j.late = nil
}

// firstAt returns the first packet of pkts with PSN p (ok false: none).
func firstAt(pkts []sentPacket, p wire.PSN) (sentPacket, bool) {
	for _, s := range pkts {
		if s.psn == p {
			return s, true
		}
	}
	return sentPacket{}, false
}

// readUnended reports whether a new READ begins at PSN q whose answer the
// trace has not seen reach its last PSN, nor the responder shown past its
// whole range by the time of event ev (its expected PSN's lower bound
// beyond the range: it executes in PSN order, so the READ's answer had
// ended).
func readUnended(c *harness.Conn, q wire.PSN, ev *receive.Event) bool {
	s := c.ReadUnendedAt(q)
	return s != nil && !(ev.HaveLower && ev.Lower.Add(-1).After(s.LastMax))
}

// behindCount reports whether the positive ACK r names a PSN before one
// its own MSN shows the responder had completed (Conn.CompletedByMSN).
// A PSN inside a READ's range, short of its last, is no newest completed
// PSN at all: C9-95 judges such an ACK, not as a duplicate's answer.
func behindCount(c *harness.Conn, r *trace.Record) bool {
	p := r.Packet.PSN
	if s := c.ReadSpanAt(p); s != nil && !(s.Known() && p == s.LastMax) {
		return false
	}
	k, ok := c.CompletedByMSN(r)
	return ok && p.Before(k.Done)
}

// lostBefore says why an ACK naming PSN psn, answering duplicate dup,
// names the newest completed request only if a packet was lost: the
// SEND or WRITE packet at the next PSN was captured before the duplicate,
// so the responder, receiving in order, had it first, unless it was lost
// on the way. It returns "" when no such packet was captured.
func lostBefore(c *harness.Conn, psn wire.PSN, dup *trace.Record) string {
	op, _, frame, ok := c.Req(psn.Next())
	if !ok || frame >= dup.Frame {
		return ""
	}
	if cl := opc.Class(op); cl != wire.ClassSend && cl != wire.ClassWrite {
		return ""
	}
	return fmt.Sprintf("the %s at PSN %d, captured before the duplicate (frame %d), never reached the responder, which nothing in the capture shows", op, psn.Next(), frame)
}
