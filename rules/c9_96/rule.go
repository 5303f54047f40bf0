// Package c9_96 checks C9-96 (§9.7.5.1.1): the packets of an RDMA READ
// response are numbered from the READ request's own PSN, one PSN per
// packet modulo 2^24, so that they use exactly the PSNs the requester set
// aside when it sent the READ: ceil(length/MTU) of them, at least one.
package c9_96

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-96"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := answers.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor follows every READ response stream (answers.Tracker) and
// checks, for each READ response packet with an ACK-kind AETH or none:
//   - a stream starts at the PSN of a READ request seen before it (new or
//     duplicate): a first packet inside a READ's range, not at a request
//     PSN, means PSNs were skipped (the stream began after the READ's own
//     PSN); a packet no READ's range holds names PSNs the READ never
//     reserved;
//   - each further packet carries the previous one's PSN + 1, and the
//     stream never runs past the last PSN of its READ's range;
//   - the packet count is ceil(length/MTU): an Only answers a one-packet
//     READ, a First a longer one, and a Last comes no earlier than the
//     range's last PSN.
//
// Which packets carry an AETH is C9-97's and C9-98's concern; a NAK
// syndrome in a READ response is C9-113.a1's; data after a mid-stream NAK
// is C9-100's.
//
// Capture caveats: a stream that skips PSNs may have lost packets before
// the capture point, and a response whose READ request the capture does
// not show may answer a request the capture missed, so both are
// violations only in a complete trace (an active run, or --complete) and
// indeterminate otherwise, unless the PSN is one the capture shows a SEND,
// WRITE or ATOMIC used, which no READ can have reserved. A response
// starting with a Last is undecided in a trace that may miss packets when
// the capture shows no request just before the READ: the READ may
// re-issue the tail of an earlier READ it missed, whose answer ends with
// that Last. Without the path
// MTU the range of a READ is known only within bounds; what those bounds
// cannot decide is indeterminate.
type monitor struct {
	t       *answers.Tracker
	feeder  bool // the shared tracker's feeder (answers.Join)
	flagged map[*answers.Stream]bool
}

// Kinds implements harness.KindFilter: the monitor judges READ responses;
// it passes other packets to the shared tracker, which only its feeder needs
// to do.
func (m *monitor) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return opcodes
}

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsResponse(op) && opc.Class(op) == wire.ClassReadResponse
})

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	p := r.Packet
	if !opc.IsResponse(p.Opcode) || opc.Class(p.Opcode) != wire.ClassReadResponse || answers.NAKKind(p) {
		return
	}
	// The stream open before r: one r ended (a start elsewhere) or left
	// open (an orphan). It is judged where its packet was the READ
	// response just before r (ev.PrevResp).
	open := ev.Prev
	if ev.Kind == answers.EvOrphan {
		open = m.t.Current()
	}
	if open != nil && open.LastRec == ev.PrevResp && !c.Complete() && !opc.StartsMessage(p.Opcode) && p.PSN != open.Next && (ev.Kind == answers.EvSkip || ev.Kind == answers.EvOrphan || ev.Kind == answers.EvStart) {
		if answers.PastRangeOrStart(c, r, ev) {
			// Or it begins the answer of the READ at its PSN: one
			// finding names C9-97 too.
			m.mark(open)
			return
		}
		m.skipUnlessMissed(c, r, open)
		return
	}
	s := ev.Stream
	if s != nil && m.flagged[s] {
		return
	}
	switch ev.Kind {
	case answers.EvStart:
		m.start(c, r, s, ev.MTU)
	case answers.EvContinue:
		m.cont(c, r, s)
	case answers.EvBeyond:
		if opc.StartsMessage(p.Opcode) && !c.Complete() {
			c.Indeterminate(ID, "a READ response starts at a PSN whose READ request the capture does not show")
			return
		}
		msg := fmt.Sprintf("READ response PSN %d runs past PSN %d, the last PSN the READ at PSN %d (frame %d, %d bytes) reserved %s",
			p.PSN, s.End, s.Req.PSN, s.Req.Rec.Frame, s.Req.Length, s.Basis())
		want := fmt.Sprintf("%d response packets, PSNs %d..%d, the last one a Last", s.Size(), s.Req.PSN, s.End)
		if op, _, frame, ok := c.Req(p.PSN); ok && op != wire.ReadRequest {
			// A PSN another request used: no READ reserved it, however
			// late the response may be.
			m.flagInAnyOrder(c, r, s, fmt.Sprintf("%s, a PSN the %s of frame %d used", msg, op, frame), want)
			return
		}
		m.flag(c, r, s, msg, want)
	case answers.EvSkip:
		q := ev.Req
		if q.Dup && q.Streams == 0 {
			// The answer to a duplicate READ that does not start at the
			// duplicate's PSN: one root cause, judged under C9-107
			// (the replay restarts at the duplicate's PSN).
			c.Indeterminate(ID, fmt.Sprintf("the answer to the duplicate READ at PSN %d starts at PSN %d: judged under C9-107", q.PSN, p.PSN))
			return
		}
		var msg string
		if q.Streams == 0 && p.PSN.After(q.PSN) {
			msg = fmt.Sprintf("the first response packet of the READ at PSN %d (frame %d) carries PSN %d: its response must start at the READ's own PSN", q.PSN, q.Rec.Frame, p.PSN)
		} else {
			msg = fmt.Sprintf("READ response PSN %d skips PSNs inside the range of the READ at PSN %d (frame %d): no response packet of it carried the PSN before", p.PSN, q.PSN, q.Rec.Frame)
		}
		if !c.Complete() {
			c.Indeterminate(ID, "a READ response stream skipped PSNs: response packets may have been lost before the capture point (--complete decides)")
			return
		}
		m.flag(c, r, s, msg, fmt.Sprintf("responses numbered %d, %d, … from the READ's PSN, one per packet", q.PSN, q.PSN.Next()))
	case answers.EvOrphan:
		m.orphan(c, r)
	case answers.EvExtAnswer:
		op, _, frame, _ := c.Req(p.PSN)
		c.Indeterminate(ID, fmt.Sprintf("a READ Response Only answers the %s at PSN %d (frame %d): an operation a later IBTA release defines and answers so, outside Release 1.2.1's READ response rules", op, p.PSN, frame))
	}
}

func (m *monitor) flag(c *harness.Conn, r *trace.Record, s *answers.Stream, msg, want string) {
	m.mark(s)
	c.Violation(ID, r, msg, []string{want}, r.Packet.String())
}

// flagInAnyOrder is flag for a fault no order of the packets makes legal
// (harness.Conn.ViolationInAnyOrder): a response that may have been
// delayed is judged all the same.
func (m *monitor) flagInAnyOrder(c *harness.Conn, r *trace.Record, s *answers.Stream, msg, want string) {
	m.mark(s)
	c.ViolationInAnyOrder(ID, r, msg, []string{want}, r.Packet.String())
}

// mark remembers stream s as flagged.
func (m *monitor) mark(s *answers.Stream) {
	if s != nil {
		if m.flagged == nil {
			m.flagged = map[*answers.Stream]bool{}
		}
		m.flagged[s] = true
	}
}

// start judges the first packet of a stream: the count of packets it
// implies.
func (m *monitor) start(c *harness.Conn, r *trace.Record, s *answers.Stream, mtu int) {
	p := r.Packet
	q := s.Req
	single, known := false, false
	last, closed := q.Last(0) // the READ's span, closed by its own earlier Last or Only
	switch {
	case mtu != 0:
		single, known = q.Packets(mtu) == 1, true
	case closed:
		// Path MTU unknown, but an earlier answer to this READ showed
		// its count (a replay answers the same READ at the same MTU).
		single, known = last == q.PSN, true
	case q.Length <= 256:
		single, known = true, true
	case q.Length > 4096:
		single, known = false, true
	}
	if !known {
		c.Indeterminate(ID, "path MTU unknown: how many packets a READ response needs cannot be told (--mtu, or a capture showing a First or Middle packet, decides)")
		return
	}
	switch {
	case p.Opcode == wire.ReadResponseLast && !q.Partial && !c.Complete() && unseenBefore(c, q.PSN):
		// The READ may re-issue the tail of an earlier READ the capture
		// does not show (it began later, or dropped it), whose answer
		// ends with this Last.
		c.Unresolved(ID, fmt.Sprintf("the response of the READ at PSN %d (frame %d) starts with a Last, but the capture shows no request at PSN %d: the READ may re-issue the tail of an earlier READ the capture missed, whose own answer ends with this Last (--complete decides)", q.PSN, q.Rec.Frame, q.PSN.Add(-1)))
		return
	case p.Opcode == wire.ReadResponseLast && !q.Partial:
		// In any order: the ranges of new READs do not overlap, and the
		// capture shows the PSN before this one taken, so no answer has
		// a Last here, however late the response may be.
		m.flagInAnyOrder(c, r, s, fmt.Sprintf("the response of the READ at PSN %d (frame %d) starts with a Last: its first packet is where the sequence should end", q.PSN, q.Rec.Frame),
			fmt.Sprintf("a READ Response First or Only with PSN %d", q.PSN))
		return
	case p.Opcode == wire.ReadResponseOnly && !single:
		m.flag(c, r, s, fmt.Sprintf("the READ at PSN %d (frame %d) asks for %d bytes, more than one packet %s, but its response is a single Only packet",
			q.PSN, q.Rec.Frame, q.Length, mtuText(mtu, closed)),
			fmt.Sprintf("ceil(%d/MTU) response packets, First … Last", q.Length))
		return
	case p.Opcode == wire.ReadResponseFirst && single:
		m.flag(c, r, s, fmt.Sprintf("the READ at PSN %d (frame %d) asks for %d bytes, one packet %s, but its response starts with a First: it would use PSNs the READ never reserved",
			q.PSN, q.Rec.Frame, q.Length, mtuText(mtu, closed)),
			fmt.Sprintf("one READ Response Only with PSN %d", q.PSN))
		return
	}
	c.Checked(ID)
}

// unseenBefore reports whether the capture shows no request occupying
// PSN p-1 (neither one with that PSN nor a READ whose range holds it:
// one whose answer is owed, or whose range the path MTU or its answer
// has fixed).
func unseenBefore(c *harness.Conn, p wire.PSN) bool {
	b := p.Add(-1)
	if _, _, _, ok := c.Req(b); ok || c.ReadCovering(b) != nil {
		return false
	}
	s := c.ReadSpanAt(b)
	return s == nil || !s.Known() || !s.Holds(b)
}

// cont judges a packet continuing a stream.
func (m *monitor) cont(c *harness.Conn, r *trace.Record, s *answers.Stream) {
	p := r.Packet
	q := s.Req
	if opc.StartsMessage(p.Opcode) && !c.Complete() {
		// A READ re-issued from this PSN (a partial retry) that the
		// capture dropped starts its answer here.
		c.Unresolved(ID, fmt.Sprintf("READ response PSN %d, inside the response of the READ at PSN %d, is %s: a READ re-issued from PSN %d that the capture dropped would start its answer there (a capture need not report its drops); --complete decides", p.PSN, q.PSN, p.Opcode, p.PSN))
		return
	}
	if opc.StartsMessage(p.Opcode) {
		m.flag(c, r, s, fmt.Sprintf("READ response PSN %d continues the response of the READ at PSN %d but is %s: a new response can only start at a READ request's PSN",
			p.PSN, q.PSN, p.Opcode), fmt.Sprintf("a Middle or Last with PSN %d", p.PSN))
		return
	}
	if p.Opcode == wire.ReadResponseLast && s.EndKnown && p.PSN.Before(s.End) && !s.Resynced {
		m.flag(c, r, s, fmt.Sprintf("the response of the READ at PSN %d (frame %d, %d bytes) ends with a Last at PSN %d, but %s it needs %d packets, up to PSN %d",
			q.PSN, q.Rec.Frame, q.Length, p.PSN, s.Basis(), s.Size(), s.End),
			fmt.Sprintf("%d packets, the Last at PSN %d", s.Size(), s.End))
		return
	}
	c.Checked(ID)
}

// skipUnlessMissed judges a Middle or Last response r that does not carry
// the next PSN of the open stream s, on a trace that may miss packets: a Middle or Last
// starts no answer, so it continues s, skipping PSNs, unless the capture
// missed the responder's packets in between (the rest of s and the start
// of another answer). The responder's IPv4 Identifications running on
// unbroken since s's latest packet rule that out.
//
// Where the range of s's READ is known (and holds s's first packet, also
// one picked up in the middle: the ranges of READs do not overlap), a
// Middle or Last just past it fails whatever was missed: no answer has
// them there (another READ's range, past this one, begins at the PSN
// after it, and a Middle or Last starts no answer). (A Middle at the
// range's last PSN is no numbering fault if the capture missed the
// packets before it: a Last sent as a Middle is C9-98's.) Nor does any
// order of the packets: a response delayed past later ones has them
// there no more than a prompt one.
func (m *monitor) skipUnlessMissed(c *harness.Conn, r *trace.Record, s *answers.Stream) {
	p := r.Packet
	q := s.Req
	if s.EndKnown && s.Start.InRange(q.PSN, s.End) && p.PSN == s.End.Next() {
		m.flagInAnyOrder(c, r, s, fmt.Sprintf("READ response PSN %d (%s) follows PSN %d of the answer to the READ at PSN %d (frame %d), whose range ends at PSN %d %s: no answer carries a Middle or Last just past a READ's range, whatever the capture missed", p.PSN, p.Opcode, s.Next.Add(-1), q.PSN, q.Rec.Frame, s.End, s.Basis()),
			fmt.Sprintf("the next response packet of the READ at PSN %d with PSN %d, its Last at PSN %d", q.PSN, s.Next, s.End))
		return
	}
	c.ViolationUnlessMissedAny(ID, r,
		fmt.Sprintf("READ response PSN %d (%s) follows PSN %d of the answer to the READ at PSN %d (frame %d) and starts no answer of its own: the answer skipped to it from PSN %d", p.PSN, p.Opcode, s.Next.Add(-1), q.PSN, q.Rec.Frame, s.Next),
		[]string{fmt.Sprintf("the next response packet of the READ at PSN %d with PSN %d", q.PSN, s.Next)}, p.String(),
		fmt.Sprintf("a READ response %s at PSN %d follows the answer to the READ at PSN %d, whose next PSN was %d: packets of the responder lost before the capture point (the rest of that answer and the start of another) explain it (--complete decides)", p.Opcode, p.PSN, q.PSN, s.Next),
		harness.MissedProof{Dir: trace.ToRequester, Since: s.LastSeq, Now: true})
}

// orphan judges a READ response that no READ request seen explains.
func (m *monitor) orphan(c *harness.Conn, r *trace.Record) {
	p := r.Packet
	if op, _, frame, ok := c.Req(p.PSN); ok && op != wire.ReadRequest {
		// In any order: no READ reserved that PSN, whenever the
		// response was sent.
		c.ViolationInAnyOrder(ID, r, fmt.Sprintf("READ response with PSN %d, a PSN the %s of frame %d used: no READ reserved it", p.PSN, op, frame),
			[]string{"READ responses only at PSNs a READ request reserved: its own PSN and the ones after it"}, p.String())
		return
	}
	if !c.Complete() {
		c.Indeterminate(ID, "a READ response whose READ request the capture does not show (capture began mid-connection, or missed the request)")
		return
	}
	c.Violation(ID, r, fmt.Sprintf("READ response with PSN %d, which no READ request reserved", p.PSN),
		[]string{"READ responses only at PSNs a READ request reserved: its own PSN and the ones after it"}, p.String())
}

// mtuText names what a READ's packet count was judged at: the path MTU,
// the count an earlier answer to the READ showed (closed: its span in the
// connection's reconstruction), or any path MTU.
func mtuText(mtu int, closed bool) string {
	switch {
	case mtu != 0:
		return fmt.Sprintf("at MTU %d", mtu)
	case closed:
		return "as its earlier answer showed (the path MTU unknown)"
	}
	return "at any path MTU"
}

func (m *monitor) End(*harness.Conn) {}
