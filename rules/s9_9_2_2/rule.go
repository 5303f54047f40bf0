// Package s9_9_2_2 checks §9.9.2.2 (requester side error detection,
// remotely detected errors; no clause number is public, so the rule is
// keyed by its section): of the NAK kinds only the PSN sequence error and
// the RNR NAK are retried automatically; a NAK for an invalid request, a
// remote access error or a remote operational error is reported to the
// client on its first occurrence, without a retry, the QP moves to ERROR,
// and neither retry counter is used.
package s9_9_2_2

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "§9.9.2.2"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := retries.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor: after a NAK with code 1, 2 or 3 (invalid request, remote access
// error, remote operational error) the requester's QP is in ERROR and
// sends nothing more on the connection. Requests that were already on
// their way when the NAK arrived may still appear after it (capture order
// is not processing order), so requests within the in-flight allowance
// after the NAK are allowed, new PSNs and resends alike; any request after
// that is a violation.
//
// In a capture the NAK may have been lost between the capture point and
// the requester, which then legally goes on, or times out and resends.
// There only a resend that cannot be a timeout (the local ACK timeout is
// known and had not expired, or is 0) proves the NAK was retried;
// anything else after the NAK is indeterminate unless --complete says the
// capture shows what the requester received. A connection whose
// requester goes quiet after the NAK passes. Reserved NAK codes are not
// judged.
type monitor struct {
	t        *retries.Tracker
	feeder   bool // the shared tracker's feeder (retries.Join)
	nak      *trace.Record
	next     wire.PSN // one past the highest PSN sent when the NAK was seen
	reported bool
}

// Kinds implements harness.KindFilter: the monitor judges requests and
// Acknowledges (the NAKs); it passes other responses to the shared tracker,
// which only its feeder needs to do.
func (m *monitor) Kinds() harness.Kinds {
	if m.feeder {
		return harness.AllKinds
	}
	return opcodes
}

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsRequest(op) || op == wire.Acknowledge
})

// window bounds how far from the connection's PSNs a request may be and
// still count as the same QP's (a QP reset and reused by the application
// would start elsewhere).
const window = 1 << 12

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesRequester() {
		return
	}
	if !opc.IsRequest(r.Packet.Opcode) {
		ev := m.t.Response(r)
		next, base, outstanding := ev.NextBefore, ev.BaseBefore, ev.HaveBaseBefore
		// A NAK for a PSN with nothing outstanding is a ghost the
		// requester may ignore.
		if ev.NAK == retries.CauseFatal && m.nak == nil && outstanding &&
			r.Packet.PSN.AtOrAfter(base) && r.Packet.PSN.Before(next) {
			m.nak, m.next = r, next
		}
		return
	}
	ev := m.t.Request(r)
	if m.nak == nil || m.reported || ev.Kind == retries.KindNetDup {
		return
	}
	p := r.Packet
	if ev.Kind == retries.KindNew && p.PSN.Diff(m.next) > window {
		return
	}
	since := r.Time - m.nak.Time
	if since <= retries.Reaction(c) {
		return // on its way before the NAK could be processed
	}
	nak := m.nak.Packet
	what := fmt.Sprintf("a new request with PSN %d", p.PSN)
	if ev.Kind == retries.KindResend {
		what = fmt.Sprintf("a resend of PSN %d", p.PSN)
	}
	if !retries.Delivered(c) {
		d, zero, known := retries.AckTimeout(c)
		if ev.Kind == retries.KindResend && ev.Start && !ev.Ambiguous && known && ev.PrevSend != nil &&
			(zero || r.Time-ev.PrevSend.Time < retries.TimerFloor(c, d)) {
			m.violation(c, r, fmt.Sprintf("%s, %v after the %s with PSN %d (frame %d), which must not be retried; with the local ACK timeout the transport timer cannot explain it", what, since, wire.SyndromeString(nak.AETH.Syndrome), nak.PSN, m.nak.Frame))
			return
		}
		m.reported = true
		c.Unresolved(ID, "requests followed a non-retryable NAK, but the NAK may not have reached the requester; a capture taken at the requester (--complete) would decide")
		return
	}
	m.violation(c, r, fmt.Sprintf("%s, %v after the %s with PSN %d (frame %d): a NAK of this kind is not retried: it moves the requester's QP to ERROR, which sends nothing more", what, since, wire.SyndromeString(nak.AETH.Syndrome), nak.PSN, m.nak.Frame))
}

func (m *monitor) violation(c *harness.Conn, r *trace.Record, msg string) {
	m.reported = true
	c.Violation(ID, r, msg,
		[]string{"nothing more from the requester after the NAK (packets already in flight aside): the work request completes in error and the QP is in ERROR"},
		r.Packet.String())
}

func (m *monitor) End(c *harness.Conn) {
	if m.nak != nil && !m.reported && c.JudgesRequester() {
		c.Checked(ID)
	}
}
