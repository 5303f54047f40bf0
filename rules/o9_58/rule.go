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
// Compare & Swap or Fetch & Add request seen before it. A PSN that a
// SEND, WRITE or READ request used (or a READ reserved for its response)
// cannot be an ATOMIC's in any trace; a PSN no request the trace shows
// used is a violation in a complete trace (an active run, --complete) and
// in one that shows the connection from its start (judged at the end of
// the trace, as capture order may show the request after its answer), and
// indeterminate otherwise, since the capture may have missed the request.
// Whether a device supports atomics does not matter here: a device that
// sends ATOMIC Acknowledges is bound.
type monitor struct {
	pending []*trace.Record // ATOMIC Acknowledges naming no request yet, on connections seen from their start
}

// Opcodes implements harness.OpcodeFilter: the monitor judges ATOMIC
// Acknowledges.
func (*monitor) Opcodes() uint32 { return opcodes }

var opcodes = harness.OpcodesWhere(func(op wire.Opcode) bool {
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
	op, _, frame, ok := c.Req(p.PSN)
	switch {
	case ok && (op == wire.CompareSwap || op == wire.FetchAdd):
		c.Checked(ID)
	case ok:
		c.Violation(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, the PSN of the %s of frame %d, not of an ATOMIC request", p.PSN, op, frame),
			want(), p.String())
	case c.ReadCovering(p.PSN) != nil:
		rd := c.ReadCovering(p.PSN)
		c.Violation(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, inside the PSNs %d..%d that the RDMA READ of frame %d reserved for its response", p.PSN, rd.First, rd.Last, rd.Frame),
			want(), p.String())
	case c.Complete():
		c.Violation(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, a PSN no ATOMIC request used", p.PSN),
			want(), p.String())
	case c.SeesEveryRequest():
		// Judged at the end: capture order may still show the request
		// after its answer.
		m.pending = append(m.pending, r)
		if len(m.pending) > 64 {
			m.pending = m.pending[1:]
		}
	default:
		c.Indeterminate(ID, "an ATOMIC Acknowledge names a PSN the capture shows no request for (the capture began mid-connection or missed the request)")
	}
}

// End judges the ATOMIC Acknowledges that named no request when seen, on a
// connection whose every request the capture shows.
func (m *monitor) End(c *harness.Conn) {
	for _, r := range m.pending {
		p := r.Packet
		if op, _, _, ok := c.Req(p.PSN); ok && (op == wire.CompareSwap || op == wire.FetchAdd) {
			c.Checked(ID)
			continue
		}
		c.Violation(ID, r, fmt.Sprintf("ATOMIC Acknowledge with PSN %d, a PSN no ATOMIC request used (the capture shows the connection from its start)", p.PSN),
			[]string{"the PSN of the Compare & Swap or Fetch & Add request it answers"}, p.String())
	}
}
