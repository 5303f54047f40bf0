// Package o9_58 checks o9-58 (§9.7.5.1.1), which binds devices that
// support atomics: the ATOMIC Acknowledge answering a Compare & Swap or
// Fetch & Add carries that request's PSN in its BTH; an ATOMIC request
// takes exactly one PSN.
package o9_58

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "o9-58"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return &monitor{} }})
}

// monitor checks every ATOMIC Acknowledge: its PSN must be the PSN of a
// Compare & Swap or Fetch & Add request. A PSN that a SEND, WRITE or READ
// request used (or a READ reserved for its response) cannot be an
// ATOMIC's in any trace: a requester gives each PSN to one request, and
// resends repeat it; an acknowledgment that may have been delayed or
// copied breaks it all the same. An acknowledgment naming a PSN no request the trace
// shows yet is held: capture order may show the request after its
// answer, or the capture missed it. A request captured later at that PSN
// settles it (an ATOMIC: held; another request: a violation, as no
// missed packet can make a PSN carry two requests). One the trace never
// shows is a violation in a complete trace (an active run, --complete)
// and in one that shows every request from the connection's start, and
// indeterminate otherwise. Whether a device supports atomics does not
// matter here: a device that sends ATOMIC Acknowledges is bound.
type monitor struct{}

// Kinds implements harness.KindFilter: the monitor judges ATOMIC
// Acknowledges.
func (*monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return op == wire.AtomicAcknowledge
})

// want is what a violation says was expected (made only for a
// violation: the slice escapes into the finding).
func want() []string {
	return []string{"the PSN of the Compare & Swap or Fetch & Add request it answers"}
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() || r.Packet.Opcode != wire.AtomicAcknowledge {
		return
	}
	p := r.Packet
	switch {
	case m.judge(c, r, ""):
	case c.ReadCovering(p.PSN) != nil:
		rd := c.ReadCovering(p.PSN)
		c.ViolationInAnyOrder(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, inside the PSNs %d..%d that the RDMA READ of frame %d reserved for its response", p.PSN, rd.First, rd.LastMin, rd.Frame),
			want(), p.String())
	case c.Complete():
		c.Violation(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, a PSN no ATOMIC request used", p.PSN),
			want(), p.String())
	default:
		c.Await(func(c *harness.Conn, next *trace.Record) bool {
			if m.judge(c, r, ", captured after the acknowledgment") {
				return true
			}
			if next == nil {
				m.unsettled(c, r)
			}
			return next == nil
		})
	}
}

// judge judges ATOMIC Acknowledge r against the request the trace shows
// at its PSN, if any (when, if not empty, says that request was captured
// after r); it reports whether there was one.
func (m *monitor) judge(c *harness.Conn, r *trace.Record, when string) bool {
	p := r.Packet
	op, _, frame, ok := c.Req(p.PSN)
	switch {
	case !ok:
		return false
	case op == wire.CompareSwap || op == wire.FetchAdd:
		c.Checked(ID)
	default:
		c.ViolationInAnyOrder(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, the PSN of the %s of frame %d%s, not of an ATOMIC request (a requester gives a PSN to one request: no request the capture missed makes this PSN an ATOMIC's)", p.PSN, op, frame, when),
			want(), p.String())
	}
	return true
}

// unsettled judges a held acknowledgment whose PSN no request the trace
// showed.
func (m *monitor) unsettled(c *harness.Conn, r *trace.Record) {
	if c.SeesEveryRequest() {
		c.Violation(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, a PSN no ATOMIC request used (the capture shows the connection from its start)", r.Packet.PSN),
			want(), r.Packet.String())
		return
	}
	// Legal only if the capture missed the request (or began after
	// it): a violation unless something unseen happened, so open.
	c.Unresolved(ID, "an ATOMIC Acknowledge names a PSN the capture shows no request for (the capture began mid-connection or missed the request)")
}

func (*monitor) End(*harness.Conn) {}
