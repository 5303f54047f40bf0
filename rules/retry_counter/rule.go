// Package retry_counter checks the transport retry counter (no public clause
// number; its content comes from the specification's Retry and RNR Timeout
// State Machines text, so the rule is keyed "retry-counter"): the requester
// keeps one 3-bit transport retry counter, and each local ACK timeout and
// each PSN-sequence-error NAK costs one retry from it; when none remain, the
// WQE completes with "transport retry counter exceeded" and the QP goes to
// ERROR. RNR NAKs are charged to a different counter and never touch this
// one.
package retry_counter

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "retry-counter"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		t, feeder := retries.Join(c)
		return &monitor{t: t, feeder: feeder}
	}})
}

// monitor counts the transport retries of each episode: every go-back-N
// started by a timeout (nothing seen that could explain it) or by a
// sequence-error NAK, since the last positive response or acknowledging
// NAK (any progress may reload the counter: when the specification
// reloads it is not settled, so an episode ends at the first sign of
// progress). With the retry count known (--retry-cnt, or the active run's
// configuration), an episode with more retries than the count allows is a
// violation: the (count+1)th failure must end the WQE instead. RNR-driven
// resends are not counted here.
//
// The count has no special value: 7 allows seven retries, like any other
// count (retries go on while the count is above zero; only the RNR retry
// count's 7 means unlimited), so an eighth retry with count 7 is a
// violation.
//
// Indeterminate: the count is unknown; a retry that could be a network
// duplicate would make the difference; in a capture, a resend after an
// RNR NAK that the requester may not have received could be a timeout
// charged to this counter; in a capture, more retries than allowed only
// when counting the timeout-driven ones (an RNR NAK the capture dropped
// may explain them).
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
	if ev.Kind != retries.KindResend || !ev.Start {
		return
	}
	if ev.Cause == retries.CauseRNR && ev.RNRUnsure > 0 && c.Settings.RetryCnt >= 0 &&
		ev.Transport+ev.TransportUnsure+ev.RNRUnsure > c.Settings.RetryCnt {
		c.Indeterminate(ID, "resends after RNR NAKs that may not have reached the requester could be timeouts charged to the transport retry counter")
		return
	}
	if ev.Cause != retries.CauseTimeout && ev.Cause != retries.CauseSeqNAK {
		return
	}
	n := c.Settings.RetryCnt
	switch {
	case n < 0:
		c.Indeterminate(ID, "transport retries were seen but the retry count is unknown; --retry-cnt=N would decide whether they exceed it")
	case ev.Transport > n && ev.Transport-ev.Timeouts <= n && !retries.Delivered(c):
		// A capture may drop frames (or begin) without saying so: an RNR
		// NAK it did not record may have driven the retries nothing in
		// the trace asked for (RNR retries are not counted here); those
		// after a sequence NAK it shows count for certain.
		c.Unresolved(ID, "more transport retries than the count allows, but an RNR NAK the capture dropped may have driven those that nothing in the capture asked for (a capture need not report its drops); a capture taken at the requester (--complete) would decide")
	case ev.Transport > n:
		c.Violation(ID, r, fmt.Sprintf("transport retry %d (a go-back-N to PSN %d after a %s) with no acknowledgment since the first: the retry count %d allows %d, so the failure before it should have ended the WQE with retry-exceeded and moved the QP to ERROR", ev.Transport, r.Packet.PSN, ev.Cause, n, n),
			[]string{fmt.Sprintf("at most %d retries, then a retry-exceeded completion, QP in ERROR and nothing more sent", n)},
			fmt.Sprintf("retry %d of PSN %d", ev.Transport, r.Packet.PSN))
	case ev.Transport+ev.TransportUnsure > n:
		c.Indeterminate(ID, "a retry beyond the count may not have been one the requester counted: a network duplicate (IPv6, or an IPv4 Identification that does not change), a resend sooner than any transport timer could expire with nothing to cause it (C9-140's violation, judged there), or on a real clock a resend taken as a go-back-N going on that the transport timer may have started")
	default:
		c.Checked(ID)
	}
}

func (m *monitor) End(*harness.Conn) {}
