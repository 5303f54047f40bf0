package retries

import (
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Cause says what made a requester go back and resend.
type Cause uint8

// Causes of a retry.
const (
	CauseNone    Cause = iota
	CauseTimeout       // nothing seen that could explain it: the transport timer
	CauseSeqNAK        // a PSN-sequence-error NAK
	CauseRNR           // an RNR NAK
	CauseImplied       // an acknowledgment passing an outstanding READ/ATOMIC, or a gap in READ responses
	CauseFatal         // a NAK the requester must not retry (§9.9.2.2)
)

func (c Cause) String() string {
	return [...]string{"none", "transport timeout", "sequence-error NAK", "RNR NAK", "implied NAK", "non-retryable NAK"}[c%6]
}

// Trigger is a response that may make a requester resend.
type Trigger struct {
	Cause Cause
	Rec   *trace.Record
	PSN   wire.PSN // the NAK's PSN, or the first PSN of the implicitly NAKed READ/ATOMIC
	Code  uint8    // RNR timer code or NAK code
	// Target is, for an implied NAK, the READ/ATOMIC it names.
	Target *Sent
	// Seq is Rec's place among the connection's records.
	Seq uint64
}

// Kind classifies a request packet.
type Kind uint8

// Request kinds.
const (
	KindNew    Kind = iota // a PSN at or after every PSN used so far
	KindResend             // a PSN used before, sent again by the requester
	KindNetDup             // a copy the network made (same IPv4 Identification)
)

// ReqEvent is the model's reading of one request packet, computed from
// what came before it.
type ReqEvent struct {
	Rec  *trace.Record
	Kind Kind
	// Ambiguous: a repeat that cannot be told from a network duplicate
	// (IPv6, or a sender whose IPv4 Identification does not change):
	// CopyDoubt says so.
	Ambiguous bool
	// Orig is what was remembered of the PSN before this packet (nil if
	// the PSN was never seen or is forgotten).
	Orig *Sent
	// PrevSend is the previous transmission of the PSN (nil if unknown),
	// PrevSeq its place among the connection's records (Conn.Seq).
	PrevSend *trace.Record
	PrevSeq  uint64
	// Start marks a resend that begins a retry (not the continuation of a
	// go-back-N sweep already running).
	Start bool
	// SweepGap: a continuation that skipped PSNs from GapFrom on (lost
	// before the capture point, or left out by the requester).
	// SweepPause, on a continuation, is the time since the sweep's
	// previous packet the trace shows.
	// GapUnshown: such a continuation, the requester's IPv4 IDs not
	// counting one by one to show the PSNs skipped sent, after a pause
	// longer than the sweep's pace allows for them (the longest interval
	// between consecutive packets of one sweep the trace showed, once per
	// PSN skipped and once more): the sweep going on is the reading only
	// if the requester paused that long mid-sweep and the capture missed
	// those packets; otherwise the resend began a retry of its own.
	SweepGap   bool
	GapFrom    wire.PSN
	SweepPause time.Duration
	GapUnshown bool
	// MaybeStart marks a continuation that could also be a new retry
	// start: on a real clock the pause since the previous resend reaches
	// the transport timer's interval less the adapter's tolerance but not
	// the interval plus it, so the harness's timestamps cannot tell
	// whether the timer fired in between. The model takes the legal
	// reading (the sweep going on); a check that only the other reading
	// would fail is undecided.
	MaybeStart bool
	// AckedBefore, on a continuation, is a positive ACK covering this
	// packet's PSN, captured since the previous request and longer
	// before this one than the longest reaction the trace showed
	// (Tracker.Reaction): the sweep going on is the reading only if that
	// ACK took longer to reach the requester than anything the capture
	// shows; otherwise the resend began a retry of its own.
	AckedBefore *trace.Record
	// OldestLast is the latest transmission of the oldest request
	// outstanding before this packet (nil if none, or if that request lies
	// past this packet's PSN, which has an earlier transmission: a
	// go-back-N begins at the oldest request the requester knows
	// unacknowledged): no transport timer could have been armed for a
	// go-back-N before it. OldestLastSeq is its place among the
	// connection's records (Conn.Seq).
	OldestLast    *trace.Record
	OldestLastSeq uint64
	// OldestSwept: a sweep passed the oldest outstanding request after
	// OldestLast without the trace showing it (Sent.Swept, SweptSeq,
	// SweptNext and SweptSkipped, copied).
	OldestSwept        *trace.Record
	OldestSweptSeq     uint64
	OldestSweptNext    *trace.Record
	OldestSweptSkipped int
	// Cause and Trigger explain a Start.
	Cause   Cause
	Trigger *Trigger
	// AckedFirst is, for a Start that implied NAKs naming later PSNs
	// explain, the response that had acknowledged this packet's PSN in
	// sequence before (or with) every response since the last retry start
	// that could ask for a retry (Sent.AckedBy): an implied NAK asks for
	// its READ or ATOMIC again, not for what the requester held
	// acknowledged, so such a start is the transport timer's unless that
	// response never reached the requester. Nil otherwise.
	AckedFirst *trace.Record
	// RNRWait is, for a new request right after the previous request's
	// PSNs (no PSN between them), the latest RNR NAK no retry has begun
	// since (nil: none); Prev is that previous request. A packet the
	// requester sent between the two, which the capture missed, was no
	// new request: a resend while the NAK's delay may have been running.
	RNRWait *Trigger
	Prev    *trace.Record
	// Base is the oldest unacknowledged PSN before this packet, as far as
	// the trace shows (HaveBase false when nothing is outstanding).
	Base     wire.PSN
	HaveBase bool
	// RespSince says a READ response or ATOMIC acknowledgment arrived
	// since the PSN's previous transmission (in a capture, a response lost
	// after the capture point could then explain a resend).
	RespSince bool
	// Answered says the trace shows the PSN acknowledged or answered
	// before this resend.
	Answered bool
	// Episode counts, after this packet, the retries since the last
	// positive response: Transport (timeouts and sequence NAKs), RNR, and
	// how many of them were uncertain. Timeouts counts the certain
	// transport retries that nothing in the trace asked for (an RNR NAK
	// the capture dropped may have).
	Transport, TransportUnsure int
	RNR, RNRUnsure             int
	Timeouts                   int
}

// RespEvent is the model's reading of one response packet.
type RespEvent struct {
	Rec *trace.Record
	// Positive: an ACK, a READ response or an ATOMIC acknowledgment.
	Positive bool
	// NAK: the NAK's cause (CauseSeqNAK, CauseRNR, CauseFatal) or CauseNone.
	NAK  Cause
	Code uint8
	// Implied lists the READ/ATOMIC requests this response implicitly
	// NAKed (its PSN passes them and their responses are incomplete).
	Implied []*Sent
	// Gap is set when a READ response skipped PSNs (the requester sees a
	// sequence error in the responses).
	Gap *Sent
	// Progress: a NAK that implicitly acknowledged requests before its PSN.
	Progress bool
	// The model before this response, for monitors that judge a response
	// against it: the oldest unacknowledged PSN (HaveBaseBefore false when
	// nothing was outstanding) and one past the highest PSN sent.
	BaseBefore     wire.PSN
	HaveBaseBefore bool
	NextBefore     wire.PSN
	// OutstandingBefore lists, for a sequence-error NAK or an RNR NAK, the
	// requests outstanding before it, oldest first (what Outstanding
	// returned just before the response); nil for other responses.
	OutstandingBefore []*Sent
}

// CopyDoubt is why a check that an Ambiguous repeat would fail leaves it
// open (a violation unless the network copied an earlier transmission),
// to follow what the repeat did.
const CopyDoubt = "no IPv4 Identification tells it from a copy the network made of an earlier transmission (IPv6, or an ID that does not change): a violation unless it is one"
