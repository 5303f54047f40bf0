// Package o9_66 checks o9-66 (§9.7.5.1.4), optional for responders that
// implement atomics: a duplicate ATOMIC request is never executed again;
// when its PSN matches a saved result, the responder returns the saved
// original value.
package o9_66

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "o9-66"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return monitor{} }})
}

// monitor: two ATOMIC Acknowledges with the same PSN must carry the same
// original value. A second, different value means the duplicate was
// executed again (the capture shows both answers, so no loss explains
// it).
type monitor struct{}

// Kinds implements harness.KindFilter: the monitor judges ATOMIC
// Acknowledges.
func (monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return op == wire.AtomicAcknowledge
})

func (monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() || r.Packet.Opcode != wire.AtomicAcknowledge {
		return
	}
	p := r.Packet
	orig, ok := c.AtomicOriginal(p.PSN)
	if !ok {
		return
	}
	if orig != p.AtomicAck {
		// Whichever of the two was sent first, one returns a value the
		// other did not: no delay or copy explains two values.
		c.ViolationInAnyOrder(ID, r, fmt.Sprintf("a second ATOMIC acknowledgment for PSN %d returns 0x%x, the first returned 0x%x: the duplicate was executed again", p.PSN, p.AtomicAck, orig),
			[]string{fmt.Sprintf("the saved original value 0x%x", orig), "no answer at all, if the result was no longer saved (o9-67)"},
			fmt.Sprintf("original value 0x%x", p.AtomicAck))
		return
	}
	c.Checked(ID)
}

func (monitor) End(*harness.Conn) {}
