// Package c9_140 checks C9-140 (§9.7.6, transport timer; the exact
// sub-section is not confirmed): the requester's transport (local ACK)
// timer, armed when a request is sent, expires after 4.096 µs × 2^timeout
// for the 5-bit local ACK timeout; a timeout of 0 disables the timer, so
// nothing may then be retransmitted for lack of an acknowledgment.
package c9_140

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-140"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := retries.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor checks every retransmission that nothing but the transport
// timer can explain: a resend that starts a go-back-N (not the
// continuation of one) with no sequence-error NAK, RNR NAK, implied NAK
// or non-retryable NAK seen since the last retry; and one after implied
// NAKs only, each naming a PSN past the one resent, which a response in
// sequence had acknowledged before them (retries.ReqEvent.AckedFirst):
// they ask for their READ or ATOMIC again, not for that PSN, so it is the
// timer's too, open in a capture (that response may never have reached
// the requester). With the local ACK timeout known (--ack-timeout, or
// the active run's configuration):
//   - timeout 0: the timer is disabled, so the retransmission is a
//     violation;
//   - otherwise the retransmission must come at least 4.096 µs × 2^timeout
//     after the latest earlier transmission of the oldest request then
//     outstanding (or of the PSN resent, whichever left first; not of a
//     request past the PSN resent, which the go-back-N shows was not the
//     oldest the requester knew of): the timer is armed no earlier than
//     that, and re-armed against the oldest outstanding request when a
//     partial acknowledgment arrives.
//
// Undecided: the timeout is unknown; the PSN's earlier transmission is
// not in the capture; in a capture, the interval falls within the timing
// slack (queueing between the requester and the capture point may
// shorten it). Open (a violation unless something unseen happened), for
// a retransmission before the interval: the repeat cannot be told from a
// network duplicate (IPv6, or an IPv4 Identification that never
// changes); in a capture, READ responses or ATOMIC acknowledgments seen
// since the earlier transmission may have reached the requester damaged
// or not at all and so triggered it (an ACK lost only leaves the timer),
// or a NAK the capture dropped may have (unless the responder's IDs
// show the capture missed none of its packets since).
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
	if a := ev.AckedBefore; ev.Kind == retries.KindResend && a != nil {
		m.afterAck(c, r, ev, a)
		return
	}
	if ev.Kind == retries.KindResend && !ev.Start && ev.GapUnshown {
		m.pausedPastGap(c, r, ev)
		return
	}
	if ev.Kind != retries.KindResend || !ev.Start || ev.Cause != retries.CauseTimeout && ev.AckedFirst == nil {
		return
	}
	// The timer that started this go-back-N was armed no earlier than the
	// latest transmission of the oldest request outstanding (the first
	// resent packets may be missing from a capture) nor, if that is
	// later, of the packet resent.
	prev, since := ev.PrevSend, ev.PrevSeq
	if o := ev.OldestLast; o != nil && (prev == nil || o.Time < prev.Time) {
		if prev == nil {
			since = ev.OldestLastSeq
		}
		prev = o
	}
	if prev == nil {
		c.Indeterminate(ID, "a PSN was retransmitted whose earlier transmission the capture does not show, so the timer interval cannot be measured")
		return
	}
	// A sweep passed the oldest outstanding request after its latest
	// transmission the capture shows, without the capture showing it
	// there: where the requester's IDs show it sent a packet for each PSN
	// passed, the timer was armed no earlier than that sweep; otherwise
	// only a sweep leaving the request out makes the earlier measure the
	// right one (swept). IDs that may show it, from a sender not yet seen
	// to number its packets one by one, are waited for.
	// (The PSN resent may be that request: its own previous transmission
	// then is the sweep's too.)
	other := ev.PrevSend != nil && ev.PrevSend != ev.OldestLast
	if s := ev.OldestSwept; s != nil && s.Time > prev.Time && (!other || ev.PrevSend.Time > prev.Time) {
		at, seq := s, ev.OldestSweptSeq
		if other && ev.PrevSend.Time < at.Time {
			at, seq = ev.PrevSend, ev.PrevSeq
		}
		next, skipped, e := ev.OldestSweptNext, ev.OldestSweptSkipped, *ev
		shown := func(c *harness.Conn) (yes, known bool) {
			n, known := c.SentBetween(s, next)
			return known && n >= skipped, known
		}
		if _, known := shown(c); !known && s.HasIPID && next.HasIPID && int(next.IPID-s.IPID)-1 >= skipped {
			c.Await(func(c *harness.Conn, after *trace.Record) bool {
				yes, known := shown(c)
				switch {
				case yes:
					m.judge(c, r, &e, at, seq, nil)
				case known || after == nil:
					m.judge(c, r, &e, prev, since, at)
				default:
					return false
				}
				return true
			})
			return
		}
		if yes, _ := shown(c); yes {
			prev, since = at, seq
		} else {
			m.judge(c, r, ev, prev, since, at)
			return
		}
	}
	m.judge(c, r, ev, prev, since, nil)
}

// afterAck judges a resend that goes on with a go-back-N sweep although
// ACK a, covering its PSN, was captured before it by more than the
// longest reaction the trace shows (retries.ReqEvent.AckedBefore): the
// sweep going on is legal only if a took longer to reach the requester
// than anything the capture shows; had a arrived, the resend began a
// retry of its own, which only the transport timer explains. Open where
// that retry came before the timer could expire (or the timer is
// disabled), as far as the previous transmission of its PSN shows; where
// the timer may have run, either reading is legal and nothing is judged,
// as for any continuation.
func (m *monitor) afterAck(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent, a *trace.Record) {
	d, zero, known := retries.AckTimeout(c)
	prev := ev.PrevSend
	switch {
	case !known:
		c.Indeterminate(ID, "a resend went on with a go-back-N sweep after an ACK covering it, so it may have begun a retry of its own, but the local ACK timeout is unknown; --ack-timeout=N would decide whether it came too early")
		return
	case prev == nil:
		c.Indeterminate(ID, "a resend went on with a go-back-N sweep after an ACK covering it, so it may have begun a retry of its own, but the capture does not show its PSN's earlier transmission, so the timer interval cannot be measured")
		return
	}
	if gap := r.Time - prev.Time; !zero && gap >= retries.TimerFloor(c, d) {
		return
	}
	react, _ := m.t.Reaction()
	timer := "before the transport timer could expire"
	if zero {
		timer = "with the transport timer disabled (local ACK timeout 0)"
	}
	c.Unresolved(ID, fmt.Sprintf("PSN %d was sent again %v after its previous transmission, %s, going on with a go-back-N sweep although the ACK of frame %d, captured %v before it, covered it: legal only if that ACK took longer to reach the requester than the %v the capture shows a NAK taking to change what it sends",
		r.Packet.PSN, r.Time-prev.Time, timer, a.Frame, r.Time-a.Time, react))
}

// pausedPastGap judges a resend the retry model reads as a go-back-N
// sweep going on past PSNs the capture does not show, a reading that
// holds only if the requester paused mid-sweep longer than its pace and
// the capture missed the packets between (retries.ReqEvent.GapUnshown):
// had it sent none, the resend began a retry of its own, which came before
// the transport timer could expire (as far as the previous transmission
// of its PSN, or of the oldest request outstanding, shows): open.
func (m *monitor) pausedPastGap(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	if c.Complete() || c.Settings.Active {
		return
	}
	d, zero, known := retries.AckTimeout(c)
	prev := ev.PrevSend
	if o := ev.OldestLast; o != nil && (prev == nil || o.Time < prev.Time) {
		prev = o
	}
	if !known || prev == nil || !zero && r.Time-prev.Time >= retries.TimerFloor(c, d) {
		return
	}
	c.Unresolved(ID, fmt.Sprintf("PSN %d was sent again %v after the transmission of frame %d, before the transport timer could expire, read as a go-back-N sweep going on past %d PSN(s) the capture does not show, %v after the sweep's previous packet, longer than the capture shows the requester's sweeps taking for them: legal only if the requester paused that long mid-sweep and the capture missed the packets between, which its IPv4 Identifications cannot show",
		r.Packet.PSN, r.Time-prev.Time, prev.Frame, r.Packet.PSN.Diff(ev.GapFrom), ev.SweepPause))
}

// judge judges the retransmission r (its event ev) against the transport
// timer, armed no earlier than prev (since: its place among the
// connection's records), or than swept where a sweep the capture shows
// only in part may have passed the oldest request outstanding.
func (m *monitor) judge(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent, prev *trace.Record, since uint64, swept *trace.Record) {
	p := r.Packet
	d, zero, known := retries.AckTimeout(c)
	if !known {
		c.Indeterminate(ID, "retransmissions after a silence were seen but the local ACK timeout is unknown; --ack-timeout=N would decide whether they came too early")
		return
	}
	gap := r.Time - prev.Time
	if ev.Ambiguous && (zero || gap < d) {
		c.Unresolved(ID, "a repeated request came before the transport timer could expire, and "+retries.CopyDoubt)
		return
	}
	early := !retries.Delivered(c) && (zero || gap < retries.TimerFloor(c, d))
	if early && ev.AckedFirst != nil {
		c.Unresolved(ID, fmt.Sprintf("PSN %d was sent again %v after its previous transmission, before the transport timer could expire, after the implied NAK of frame %d, which asked for PSN %d again, not for this one: the response of frame %d had acknowledged it before; legal only if that response never reached the requester (lost after the capture point), which a capture cannot tell; a capture taken at the requester (--complete) would decide", p.PSN, gap, ev.Trigger.Rec.Frame, ev.Trigger.PSN, ev.AckedFirst.Frame))
		return
	}
	if early && ev.RespSince {
		c.Unresolved(ID, "a retransmission came before the transport timer could expire, after responses that may not have reached the requester intact (a capture cannot tell), one of which may have asked for it; a capture taken at the requester (--complete) would decide")
		return
	}
	// What came in between, as each message says it.
	asked, between := "with no NAK, RNR NAK or response that could have asked for it", "and no NAK, RNR NAK or implied NAK came in between"
	if a := ev.AckedFirst; a != nil {
		asked = fmt.Sprintf("though only the implied NAK of frame %d asked for a retry, of PSN %d, after the response of frame %d had acknowledged this one", ev.Trigger.Rec.Frame, ev.Trigger.PSN, a.Frame)
		between = fmt.Sprintf("and only the implied NAK of frame %d asked for a retry in between, of PSN %d, after the response of frame %d had acknowledged this one", ev.Trigger.Rec.Frame, ev.Trigger.PSN, a.Frame)
	}
	if zero {
		msg := fmt.Sprintf("PSN %d (%s) was sent again %v after its previous transmission %s, but a local ACK timeout of 0 disables the transport timer", p.PSN, p.Opcode.ShortName(), gap, asked)
		expected := []string{"no timer-driven retransmission at all: the requester waits for an acknowledgment indefinitely"}
		seen := fmt.Sprintf("retransmission of PSN %d after %v of silence", p.PSN, gap)
		if early {
			m.unlessMissed(c, r, since, msg, expected, seen)
			return
		}
		c.Violation(ID, r, msg, expected, seen)
		return
	}
	switch {
	case swept != nil && gap >= retries.TimerFloor(c, d) && r.Time-swept.Time < retries.TimerFloor(c, d):
		c.Unresolved(ID, fmt.Sprintf("PSN %d was sent again %v after the sweep of frame %d, before the transport timer could expire, unless that sweep left out the oldest request outstanding, whose transmission there the capture does not show (its previous one is %v before)", p.PSN, r.Time-swept.Time, swept.Frame, gap))
	case gap >= d:
		c.Checked(ID)
	case gap >= retries.TimerFloor(c, d):
		if c.Settings.Active {
			c.Indeterminate(ID, fmt.Sprintf("a retransmission came short of the transport timer interval by less than the live adapter's timing tolerance (%v), which the harness's timestamps cannot resolve", c.Settings.Tolerance))
		} else {
			c.Indeterminate(ID, fmt.Sprintf("a retransmission came within %.0f%% short of the transport timer interval, which capture timestamps cannot resolve", retries.CaptureTimerSlack*100))
		}
	default:
		msg := fmt.Sprintf("PSN %d (%s) was sent again %v after the transmission of frame %d, before the transport timer could expire: its interval is %v (4.096 µs × 2^%d), %s", p.PSN, p.Opcode.ShortName(), gap, prev.Frame, d, c.Settings.AckTimeout, between)
		expected := []string{fmt.Sprintf("a timer-driven retransmission no sooner than %v after the previous transmission", d), "no retransmission (an acknowledgment arrives first)"}
		seen := fmt.Sprintf("retransmission after %v", gap)
		if early {
			m.unlessMissed(c, r, since, msg, expected, seen)
			return
		}
		c.Violation(ID, r, msg, expected, seen)
	}
}

// unlessMissed raises an early retransmission off a complete capture: a
// capture may drop frames without saying so, and a NAK, RNR NAK or
// response it did not record may have asked for it, unless the
// responder's IPv4 Identifications show the capture missed none of its
// packets since the record with sequence number since: the PSN's
// previous transmission, which any earlier NAK had already asked for. A
// sequence NAK recorded just after the retransmission that may have
// passed the capture point first would have asked for it too.
func (m *monitor) unlessMissed(c *harness.Conn, r *trace.Record, since uint64, msg string, expected []string, seen string) {
	p := r.Packet.PSN
	c.ViolationUnlessMissed(ID, trace.ToRequester, since, r, msg, expected, seen,
		"a retransmission came before the transport timer could expire with no NAK, RNR NAK or response in the capture to ask for it: one the capture dropped may have (a capture need not report its drops); a capture taken at the requester (--complete) would decide",
		func(next *trace.Record) bool { return retries.AsksResendNow(next, p) })
}

func (m *monitor) End(*harness.Conn) {}
