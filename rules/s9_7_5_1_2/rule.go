// Package s9_7_5_1_2 checks the implied NAK of §9.7.5.1.2 (how the
// requester interprets responses; no clause number is public, so the
// rule is keyed by its section): an acknowledgment whose PSN lies beyond
// an outstanding RDMA READ whose responses have not all arrived means
// that READ was implicitly NAKed, and the requester must re-issue it,
// starting no later than its first response PSN not yet received.
package s9_7_5_1_2

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "§9.7.5.1.2"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		return &monitor{t: retries.Shared(c)}
	}})
}

// monitor watches for acknowledgments (ACKs, READ responses of a later
// READ, ATOMIC acknowledgments) whose PSN passes an outstanding RDMA READ
// with responses missing. Once packets already in flight have passed,
// the requester's next request must re-issue that READ: a READ request
// whose PSN lies between the READ's first PSN and its first missing
// response PSN (go-back-n checks that it is an exact subset). A new
// request or a resend of something after the READ instead is a
// violation.
//
// Not judged: an acknowledgment that may predate a resend of the READ
// already under way (the READ was resent just before it). Indeterminate:
// in a capture, the acknowledgment may have been lost between the
// capture point and the requester (--complete decides); the READ's range
// needs the path MTU; the trace ended before the requester sent anything
// more. Implied NAKs of ATOMICs are not judged: the section states the
// rule for READs.
type monitor struct {
	t     *retries.Tracker
	await *await
}

type await struct {
	ack  *trace.Record
	read *retries.Sent
	lo   wire.PSN // the READ's first PSN
	hi   wire.PSN // its first missing response PSN when implicitly NAKed
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesRequester() {
		return
	}
	if !opc.IsRequest(r.Packet.Opcode) {
		ev := m.t.Response(r)
		if m.await != nil || len(ev.Implied) == 0 {
			return
		}
		for _, s := range ev.Implied {
			if s.Op != wire.ReadRequest {
				continue
			}
			if !retries.Fresh(c, s, r.Time) {
				return
			}
			m.await = &await{ack: r, read: s, lo: s.PSN, hi: s.ReadNext}
			return
		}
		return
	}
	ev := m.t.Request(r)
	a := m.await
	if a == nil || ev.Kind == retries.KindNetDup {
		return
	}
	p := r.Packet
	if p.Opcode == wire.ReadRequest && ev.Kind == retries.KindResend && p.PSN.InRange(a.lo, a.hi) {
		c.Checked(ID)
		m.await = nil
		return
	}
	if ev.Kind == retries.KindResend && p.PSN.Before(a.lo) {
		return // a resend of something before the READ: not this rule's
	}
	since := r.Time - a.ack.Time
	if since <= retries.Reaction(c) {
		return // already on its way when the acknowledgment arrived
	}
	m.await = nil
	if !retries.Delivered(c) {
		c.Indeterminate(ID, "an acknowledgment passed an incomplete RDMA READ and the READ was not re-issued, but the acknowledgment may not have reached the requester; a capture taken at the requester (--complete) would decide")
		return
	}
	what := "the new request"
	if ev.Kind == retries.KindResend {
		what = "a resend"
	}
	c.Violation(ID, r, fmt.Sprintf("the %s with PSN %d (frame %d) passed the RDMA READ at PSN %d..%d, whose response PSN %d had not arrived: an implied NAK; the requester then sent %s with PSN %d (%s) instead of re-issuing the READ",
		a.ack.Packet.Opcode.ShortName(), a.ack.Packet.PSN, a.ack.Frame, a.read.PSN, a.read.End, a.hi, what, p.PSN, p.Opcode.ShortName()),
		[]string{fmt.Sprintf("a READ request re-issuing the READ from a PSN in %d..%d (the first missing response at the latest)", a.lo, a.hi)},
		p.String())
}

func (m *monitor) End(c *harness.Conn) {
	if m.await != nil && c.JudgesRequester() {
		c.Indeterminate(ID, "the trace ended after an implied NAK before the requester sent anything more")
	}
}
