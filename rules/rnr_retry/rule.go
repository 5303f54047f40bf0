// Package rnr_retry checks the RNR retry counter and RNR timer (no public
// clause number; content from the specification's Retry and RNR Timeout State
// Machines text, so the rule is keyed "rnr-retry"): each RNR NAK costs one
// retry from a separate 3-bit RNR retry counter, in which 7 means unlimited,
// and timeouts and sequence-error NAKs never touch it; after an RNR NAK the
// requester waits at least the delay its timer code advertises (the Table 45
// encoding, 0 being the longest, 655.36 ms) before resending; when no RNR
// retry remains, the WQE completes with "RNR retry counter exceeded" and the
// QP goes to ERROR.
package rnr_retry

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "rnr-retry"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := retries.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor checks the resend that follows an RNR NAK (the go-back-N it
// starts):
//   - it comes no sooner than the NAK's advertised delay after the NAK;
//     a resend sooner than that is a violation unless a transport timer
//     that had already expired before the NAK could be processed explains
//     it (a retransmission in flight), or, in a capture, the NAK may never
//     have reached the requester;
//   - with the RNR retry count known (--rnr-retry, or the active run's
//     configuration) and not 7, the RNR-driven retries of one episode (no
//     positive response or acknowledging NAK in between) do not exceed it.
//
// Indeterminate: the delay could not be judged (the timer explanation
// above, or a repeat that cannot be told from a network duplicate); the
// RNR retry count is unknown.
type monitor struct {
	t      *retries.Tracker
	feeder bool // the shared tracker's feeder (retries.Join)
}

// Kinds implements harness.KindFilter: the monitor judges requests only;
// it passes responses to the shared tracker, which only its feeder needs to
// do.
func (m *monitor) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return requestOpcodes
}

var requestOpcodes = harness.KindsWhere(wire.Opcode.IsRequest)

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesRequester() {
		return
	}
	if !opc.IsRequest(r.Packet.Opcode) {
		m.t.Response(r)
		return
	}
	ev := m.t.Request(r)
	if ev.Kind == retries.KindNew && ev.RNRWait != nil {
		m.missedResend(c, r, ev)
		return
	}
	if ev.Kind != retries.KindResend || !ev.Start || ev.Cause != retries.CauseRNR || ev.Trigger == nil {
		return
	}
	m.delay(c, r, ev)
	m.count(c, r, ev)
}

// missedResend judges new request r, sent within the delay of an RNR NAK
// no retry has begun since (ev.RNRWait), right after the previous
// request's PSNs: where the requester's IPv4 Identifications show
// packets it sent between the two that the capture missed, one of them
// was a resend (no PSN was left for a new request), sent sooner than the
// NAK's delay, or, had the NAK not arrived, sooner than the transport
// timer allowed, unless another flow on the same ID counter took the IDs
// (for example, a resend lost before a capture in the middle). A
// transport timer explains such a resend where it had run since the
// oldest request outstanding was sent; one of unknown interval may have
// run, which leaves the resends open too.
func (m *monitor) missedResend(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	g := ev.RNRWait
	if c.Complete() || c.Settings.Active || r.Time-g.Rec.Time >= wire.RNRDelay(g.Code) {
		return
	}
	d, zero, known := retries.AckTimeout(c)
	if o := m.t.OldestOutstanding(); known && !zero && o != nil && o.Last != nil && o.Last != r && r.Time-o.Last.Time >= retries.TimerFloor(c, d) {
		return
	}
	prev := ev.Prev
	unless := "unless another flow took those IDs"
	if !known {
		// As for a resend seen sooner than the delay (delay): a timer of
		// unknown interval may have run, which leaves the resends open.
		unless = "unless the transport timer, whose interval is not known (--ack-timeout), had run, or another flow took those IDs"
	}
	judge := func(c *harness.Conn) {
		if n, known := c.SentBetween(prev, r); known && n > 0 {
			c.Unresolved(ID, fmt.Sprintf("the requester's IPv4 Identifications show %d packet(s) it sent between frames %d and %d that the capture missed, within the delay of the RNR NAK with PSN %d (frame %d): the request of frame %d takes the PSN after frame %d's, so they were resends, sooner than the NAK's delay (or than the transport timer, had the NAK not arrived), %s",
				n, prev.Frame, r.Frame, g.PSN, g.Rec.Frame, r.Frame, prev.Frame, unless))
		}
	}
	if !prev.HasIPID || !r.HasIPID || r.IPID-prev.IPID <= 1 {
		judge(c)
		return
	}
	// An ID gap from a requester maybe not yet seen to number its
	// packets one by one: its later packets tell.
	c.AwaitNumbering(trace.ToResponder, r, judge)
}

// firstResend judges resend r, no sooner than the RNR NAK's delay (gap
// after it): legal as the first resend since the NAK. Where the capture
// may have missed an earlier one, it is open or unchecked: open where the
// requester's IPv4 Identifications show packets sent since the previous
// transmission that the capture missed (one of them may have been an
// earlier resend, for example one lost before a capture in the middle),
// unchecked where they do not show that it missed none (for example, an
// early resend lost before a capture at the responder, with IPv6). A
// requester not yet seen to number its packets one by one is waited for:
// how it numbers them is a fact of the whole trace.
func (m *monitor) firstResend(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent, gap time.Duration) {
	if ev.PrevSend == nil || c.Complete() || c.Settings.Active {
		c.Checked(ID)
		return
	}
	nak := ev.Trigger.Rec
	ranOn := c.RanOnSince(trace.ToResponder, ev.PrevSeq)
	judge := func(c *harness.Conn) {
		switch {
		case !c.NumbersByOne(trace.ToResponder):
			c.Indeterminate(ID, "a resend came no sooner than the RNR NAK's delay, but nothing shows it was the first since the NAK: the requester's IPv4 Identifications (absent, or not seen to count one by one) cannot tell whether an earlier one escaped the capture")
		case !ranOn:
			c.Unresolved(ID, fmt.Sprintf("PSN %d was resent %v after the RNR NAK (frame %d), as its delay asks, but the requester's IPv4 Identifications show packets sent since its previous transmission that the capture missed: one of them may have been an earlier resend", r.Packet.PSN, gap, nak.Frame))
		default:
			c.Checked(ID)
		}
	}
	c.AwaitNumbering(trace.ToResponder, r, judge)
}

func (m *monitor) delay(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	nak := ev.Trigger.Rec
	want := wire.RNRDelay(ev.Trigger.Code)
	gap := r.Time - nak.Time
	if gap >= want {
		m.firstResend(c, r, ev, gap)
		return
	}
	if c.Settings.Active && c.Settings.Tolerance > 0 && gap >= retries.TimerFloor(c, want) {
		// On a real clock (or a slow virtual link) the times are the
		// harness's: the NAK may have reached the device up to the
		// tolerance after the harness stamped it, and the resend may have
		// left that much before it arrived, crossing the NAK on the wire
		// (a resend the transport timer brought). A shortfall within the
		// tolerance proves nothing.
		c.Indeterminate(ID, fmt.Sprintf("a resend came within the live adapter's timing tolerance (%v) of the RNR NAK's delay (%v after the NAK, which asks for %v): the harness's timestamps cannot tell whether it answered the NAK early or crossed it on the wire", c.Settings.Tolerance, gap, want))
		return
	}
	if ev.Ambiguous {
		c.Unresolved(ID, "a repeat came sooner than the RNR NAK's delay, and "+retries.CopyDoubt)
		return
	}
	// Could the ACK timer have fired for this PSN before the NAK was
	// processed? Then the resend was already under way.
	d, zero, known := retries.AckTimeout(c)
	timerFired := !known || (!zero && ev.PrevSend != nil && r.Time-ev.PrevSend.Time >= retries.TimerFloor(c, d))
	if timerFired && gap > retries.Reaction(c) && retries.Delivered(c) {
		// A resend the transport timer had started would have left by
		// the time the requester processed the NAK: this one left after
		// it, sooner than the NAK's delay (no legal behaviour explains
		// it).
		timerFired = false
	}
	if timerFired {
		if !retries.Delivered(c) {
			c.Unresolved(ID, "a resend came sooner than the RNR NAK's delay, but the NAK may not have reached the requester and its transport timer could have expired; a capture taken at the requester (--complete) with --ack-timeout would decide")
			return
		}
		if !known || (ev.PrevSend != nil && ev.PrevSend.Time+d <= nak.Time+retries.Reaction(c)) {
			c.Unresolved(ID, "a resend came sooner than the RNR NAK's delay, but the transport timer had expired before the NAK could be processed, so the resend may already have been under way")
			return
		}
	}
	msg := fmt.Sprintf("PSN %d was resent %v after the RNR NAK with PSN %d (frame %d), whose timer code %d asks for at least %v; an RNR NAK arms the RNR timer, not the transport timer", r.Packet.PSN, gap, nak.Packet.PSN, nak.Frame, ev.Trigger.Code, want)
	expected := []string{fmt.Sprintf("a resend no sooner than %v after the RNR NAK", want), "no resend, if no RNR retry is left (RNR-retry-exceeded)"}
	seen := fmt.Sprintf("resend after %v", gap)
	if retries.Delivered(c) {
		c.Violation(ID, r, msg, expected, seen)
		return
	}
	if r.Packet.PSN.Before(nak.Packet.PSN) && ev.Orig != nil && ev.Orig.IsReadOrAtomic() {
		// A READ or ATOMIC before the PSN the NAK names: had its answer
		// been lost after the capture point, the NAK, past it, implies
		// a NAK of it (§9.7.5.1.2), and it is re-issued at once.
		c.Unresolved(ID, fmt.Sprintf("a READ or ATOMIC at PSN %d, before the PSN the RNR NAK names, was re-issued sooner than the NAK's delay: legal if its answer was lost after the capture point, as the NAK, past it, then implies a NAK of it", r.Packet.PSN))
		return
	}
	// The NAK may have been lost after the capture point. Then the
	// transport timer, armed by the request's previous transmission and
	// not yet expired, did not bring the resend either (C9-140), unless
	// a response the capture missed asked for it: the responder's IDs,
	// unbroken since that transmission, rule that out.
	p := r.Packet.PSN
	c.ViolationEitherUnlessMissed(ID, r, harness.Either{
		Message: msg,
		Alts: []reports.Alternative{
			{ID: ID, If: "the RNR NAK reached the requester: it resent before the NAK's delay"},
			{ID: "C9-140", If: "the NAK was lost after the capture point: nothing asked for the resend, and the transport timer had not run its interval since the request's previous transmission"},
		},
	}, expected, seen, "a resend came sooner than the RNR NAK's delay, but the NAK may not have reached the requester, and a response the capture missed may have asked for the resend; a capture taken at the requester (--complete) would decide",
		harness.MissedProof{Dir: trace.ToRequester, Since: ev.PrevSeq, Excuse: func(next *trace.Record) bool {
			return retries.AsksResendNow(next, p)
		}})
}

func (m *monitor) count(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	n := c.Settings.RNRRetry
	switch {
	case n < 0:
		c.Indeterminate(ID, "RNR retries were seen but the RNR retry count is unknown; --rnr-retry=N would decide whether they exceed it")
	case n >= 7:
		// 7: unlimited, nothing to count against.
	case ev.RNR > n && c.Settings.Active && r.Time-ev.Trigger.Rec.Time < c.Settings.Tolerance:
		// As in delay: on a real clock the NAK that spent the count may
		// have reached the device up to the tolerance after the harness
		// stamped it, and this packet may have left before it arrived,
		// crossing it on the wire for another cause (a transport timer,
		// judged under C9-140): it proves no RNR retry beyond the count.
		c.Indeterminate(ID, fmt.Sprintf("RNR retry %d of PSN %d came %v after the RNR NAK that spent the count, within the live adapter's timing tolerance (%v): it may have crossed that NAK on the wire, sent for another cause (a transport timer, C9-140's to judge)",
			ev.RNR, r.Packet.PSN, r.Time-ev.Trigger.Rec.Time, c.Settings.Tolerance))
	case ev.RNR > n:
		c.Violation(ID, r, fmt.Sprintf("RNR retry %d (a resend of PSN %d after an RNR NAK) with no acknowledgment since the first: the RNR retry count %d allows %d, so the RNR NAK before it should have ended the WQE with RNR-retry-exceeded and moved the QP to ERROR", ev.RNR, r.Packet.PSN, n, n),
			[]string{fmt.Sprintf("at most %d RNR retries, then an RNR-retry-exceeded completion, QP in ERROR and nothing more sent", n)},
			fmt.Sprintf("RNR retry %d of PSN %d", ev.RNR, r.Packet.PSN))
	case ev.RNR+ev.RNRUnsure > n:
		c.Unresolved(ID, "resends after RNR NAKs beyond the RNR retry count could be timeouts (the NAKs may not have reached the requester) or network duplicates")
	default:
		c.Checked(ID)
	}
}

func (m *monitor) End(*harness.Conn) {}
