package answers

import (
	"fmt"
	"math/bits"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// This file holds what the READ tracker (reads.go) reports: the READ
// requests it remembers, the response streams that answer them, and the
// event each packet is.

// ReadReq is an RDMA READ request seen on the connection.
type ReadReq struct {
	PSN    wire.PSN
	Length uint32
	VA     uint64
	Rec    *trace.Record
	// Seq is the request's arrival index among every request packet of
	// the connection (1 for the first); RecSeq is Rec's place among the
	// connection's records (harness.Conn.Seq), to ask what the requester
	// sent since.
	Seq    int
	RecSeq uint64
	// Dup is set when the PSN was not new when the request was seen: a
	// duplicate or a retry of a READ whose PSNs were already used.
	Dup bool
	// Partial is set when the request's PSN lies strictly inside the PSN
	// range of an earlier READ (a retry of part of that READ).
	Partial bool
	// Resent is set on a duplicate taken for one only because it came
	// behind a later request: the trace shows no earlier copy of it, no
	// READ whose range holds its PSN and no response that covered that
	// PSN. The capture missed the READ's first copy, which may never have
	// reached the responder (this copy is then new to it) or reached it
	// unseen; either way nothing shows the READ executed, and its first
	// answer is still owed.
	Resent bool
	// Streams counts the response streams started at this request's PSN;
	// Heard is set once a stream was taken as answering it, started there
	// or picked up inside its range (a stream the capture saw from its
	// middle).
	Streams int
	Heard   bool
	// Answered is set once a response stream reached the last PSN of the
	// request's range; Failed once a NAK ended its stream or refused it;
	// Abandoned when its stream stopped short because another stream
	// began (a preemption, or numbering no READ explains).
	Answered, Failed, Abandoned bool
	// Early is set when the request came before any acknowledging
	// response on the connection: on a capture that begins during a
	// retransmission, it may resend a READ answered before the capture.
	Early bool

	// conn is the connection whose reconstruction holds the READ's span
	// (harness.Conn.ReadSpanOf): where the path MTU is unknown, its last
	// PSN is the span's, once the READ's Last (or Only) response closed
	// it.
	conn *harness.Conn
	// pmtu and pn cache Packets: the count pn at MTU pmtu (pn 0: none).
	pmtu, pn int
	// u is the PSN unwrapped along the Tracker's READs: the u of the READ
	// before plus the PSN distance from it. inv is set when it is below
	// the u of the READ before it (an inversion: the READs are not in PSN
	// order).
	u   int64
	inv bool
}

// Packets returns how many response packets the READ takes at mtu.
func (q *ReadReq) Packets(mtu int) int {
	if q.pn != 0 && q.pmtu == mtu {
		return q.pn
	}
	n := readPackets(q.Length, mtu)
	q.pmtu, q.pn = mtu, n
	return n
}

// readPackets is wire.ReadResponsePackets without a division for the
// path MTUs (powers of two).
func readPackets(length uint32, mtu int) int {
	if length == 0 || mtu <= 0 {
		return 1
	}
	if mtu&(mtu-1) == 0 {
		return int((uint64(length) + uint64(mtu) - 1) >> uint(bits.TrailingZeros(uint(mtu))))
	}
	return wire.ReadResponsePackets(length, mtu)
}

// Last returns the last PSN of the READ's reserved range at mtu. With
// mtu unknown (0) it is the one the responder's own numbering showed: the
// span of the new READ this request is, in the connection's
// reconstruction, closed by the READ's Last (or Only) response; ok is
// false before (a span bounded only by the next new request is the
// requester's numbering, which the responder's count is not judged by),
// and for a duplicate asking for another length, which reserves nothing
// of its own.
func (q *ReadReq) Last(mtu int) (wire.PSN, bool) {
	if mtu == 0 {
		if q.conn == nil {
			return 0, false
		}
		if s := q.conn.ReadSpanOf(q.PSN, q.Length); s != nil && s.Closed {
			return s.Last()
		}
		return 0, false
	}
	return q.PSN.Add(q.Packets(mtu) - 1), true
}

// MaxLast is the last PSN the READ's range can have at any path MTU (the
// smallest MTU gives the most packets), or the one its Last response
// showed (Last with the MTU unknown).
func (q *ReadReq) MaxLast() wire.PSN {
	if last, ok := q.Last(0); ok {
		return last
	}
	return q.PSN.Add(q.Packets(minMTU) - 1)
}

// Stream is one READ response stream: the packets that answer one READ
// request (new or duplicate), numbered from that request's PSN.
type Stream struct {
	Req      *ReadReq
	Start    wire.PSN // PSN of its first packet
	Next     wire.PSN // PSN the next packet of the stream must carry
	End      wire.PSN // last PSN of the request's range (EndKnown)
	EndKnown bool
	Open     bool // started, not yet ended (by a Last/Only or a NAK)
	// Replay: the stream answers a duplicate READ, or repeats PSNs an
	// earlier stream already carried.
	Replay bool
	// Resynced: the stream was picked up in the middle (its first packet
	// seen was not at a request PSN), so its count cannot be judged.
	Resynced bool
	Packets  int
	MTU      int // the path MTU the stream was judged with (0 unknown)
	StartRec *trace.Record
	// StartSeq is StartRec's place among the connection's records
	// (harness.Conn.Seq). AckBefore is the latest Acknowledge (an ACK or
	// a NAK) the trace showed before the stream began, AckBeforeSeq its
	// place (nil, 0: none).
	StartSeq     uint64
	AckBefore    *trace.Record
	AckBeforeSeq uint64
	LastRec      *trace.Record
	// LastSeq is the connection's sequence number of LastRec
	// (harness.Conn.Seq), to ask what its sender sent since.
	LastSeq uint64
	// SeqAtStart is the request counter when the stream began: READ
	// requests with a larger Seq arrived while it was being sent.
	SeqAtStart int
	// NAKed is set when an Acknowledge NAK ended the stream; NAKFrom is
	// the first PSN the stream never delivered.
	NAKed   bool
	NAKFrom wire.PSN
	NAKRec  *trace.Record
	// AckPast is the latest positive ACK past the READ's range that came
	// while the stream was open, AckPastSeq its place (nil, 0: none).
	AckPast    *trace.Record
	AckPastSeq uint64
}

// Size returns how many response packets the stream's READ takes (0:
// unknown): at the stream's path MTU or, with it unknown, from the READ's
// span as the connection's reconstruction knows it.
func (s *Stream) Size() int {
	if s.MTU != 0 {
		return s.Req.Packets(s.MTU)
	}
	if last, ok := s.Req.Last(0); ok {
		return last.Diff(s.Req.PSN) + 1
	}
	return 0
}

// Basis says what the stream's size is known from, for messages: "at MTU
// m", or the READ's span with the MTU unknown.
func (s *Stream) Basis() string {
	if s.MTU != 0 {
		return fmt.Sprintf("at MTU %d", s.MTU)
	}
	return "with the path MTU unknown, as the READ's span shows (closed by its earlier Last response)"
}

// Contains reports whether p lies in the stream's range: from its start
// to the request's range end (with the MTU unknown, to the furthest end
// any MTU gives).
func (s *Stream) Contains(p wire.PSN) bool {
	if s.EndKnown {
		return p.InRange(s.Start, s.End)
	}
	return p.InRange(s.Start, s.Req.MaxLast())
}

// EventKind classifies what a packet means for the READ model.
type EventKind uint8

// Event kinds.
const (
	EvNone     EventKind = iota
	EvRequest            // a READ request (Event.Req)
	EvStart              // a READ response starting a stream at a READ request's PSN
	EvContinue           // a READ response carrying the open stream's next PSN
	EvBeyond             // the open stream's next PSN, but past the end of its READ's range
	EvSkip               // inside a READ's range, neither continuing a stream nor at a request PSN
	EvOrphan             // a READ response that no READ request seen explains
	EvAfterNAK           // a READ response inside a stream that a NAK had ended
	EvNAK                // an Acknowledge with a NAK or RNR syndrome
	EvAck                // a positive Acknowledge
	// EvExtAnswer: a READ Response Only at the PSN of an RDMA FLUSH or
	// ATOMIC WRITE request, operations a later IBTA release defines and
	// answers so (not a READ's response: Release 1.2.1's READ response
	// rules do not apply to it).
	EvExtAnswer
)

// Event is what Tracker.Observe found.
type Event struct {
	Kind   EventKind
	Req    *ReadReq // EvRequest: the request; EvSkip/EvOrphan: the READ whose range holds the PSN, if any
	Stream *Stream  // the stream the packet belongs to (or, for EvNAK, the stream open when it came)
	Prev   *Stream  // EvStart, EvSkip: the stream that was open before, now abandoned
	// Unstarted (EvSkip, EvContinue): the READ at the packet's PSN, whose
	// answer the packet would begin were it not taken as going on with
	// an earlier READ's answer: one whose first packets the capture lost
	// (EvSkip), or the open one, where the capture may have missed its
	// rest before this packet (EvContinue).
	Unstarted *ReadReq
	// MTU is the path MTU used to judge the packet (0 unknown).
	MTU int
	// Before is the stream that was open before the packet (nil: none)
	// and BeforeNext its next PSN then.
	Before     *Stream
	BeforeNext wire.PSN
	// MaybeReplay (EvContinue, a packet with an AETH, on a capture not
	// known complete): the stream's READ was requested again since, from
	// a PSN at or before this one, so the packet may belong to the
	// replay for that duplicate, whose first packets the capture lost
	// (and a replay may carry the MSN of the first answer:
	// docs/interpretations.md, "MSN of a replayed answer").
	MaybeReplay bool
	// PrevResp (a READ response that is no NAK) is the READ response
	// before it that was no NAK (nil: none): the stream it went on was
	// the last one sent before this packet where it is that stream's
	// LastRec.
	PrevResp *trace.Record
}

// PastRangeOrStart raises the one finding for READ response r, a Middle or
// Last that the tracker took as beginning the answer to the READ at its
// PSN (ev, EvStart), where it comes right after the answer to an earlier
// READ whose known range ends at the PSN before r's, off a complete trace:
// either it continues that answer past the range (C9-96: no answer has a
// Middle or Last there, whatever the capture missed), or it begins the
// new READ's answer without the AETH a First or Only carries (C9-97). Both
// are broken in any order of the packets, and which one the trace does
// not tell. It reports whether it raised it (the caller judges r no
// further); C9-96's and C9-97's monitors both ask, and the finding is
// raised once.
func PastRangeOrStart(c *harness.Conn, r *trace.Record, ev *Event) bool {
	p := r.Packet
	open := ev.Prev
	if c.Complete() || ev.Kind != EvStart || opc.Has(p.Opcode, wire.HdrAETH) || open == nil || open.LastRec != ev.PrevResp ||
		!open.EndKnown || !open.Start.InRange(open.Req.PSN, open.End) || p.PSN != open.End.Next() {
		return false
	}
	q, n := open.Req, ev.Stream.Req
	c.ViolationEitherInAnyOrder(r,
		fmt.Sprintf("READ response PSN %d (%s) comes right after the answer to the READ at PSN %d (frame %d), whose range ends at PSN %d %s, at the PSN of the READ of frame %d",
			p.PSN, p.Opcode, q.PSN, q.Rec.Frame, open.End, open.Basis(), n.Rec.Frame),
		[]string{fmt.Sprintf("the answer to the READ at PSN %d opening with a First or Only carrying an AETH", p.PSN)}, p.String(),
		reports.Alternative{ID: "C9-96", If: fmt.Sprintf("it continues the answer to the READ at PSN %d: no answer carries a Middle or Last just past a READ's range", q.PSN)},
		reports.Alternative{ID: "C9-97", If: fmt.Sprintf("it begins the answer to the READ at PSN %d: its first packet carries no AETH", p.PSN)})
	return true
}
