// Package o9_95_2_2 checks o9-95.2.2 (§9.7.7.2), which binds QPs attached
// to a shared receive queue: such a QP cannot know how much of the shared
// pool is its own, so every ACK it sends carries credit code 0x1F, "no
// valid credit count".
package o9_95_2_2

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "o9-95.2.2"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return monitor{} }})
}

// monitor checks every positive Acknowledge (opcode 0x11, ACK syndrome) of
// a connection whose responder QP is known to use an SRQ (an active run
// with an SRQ, or an audit with --srq=all): its credit code must be 0x1F.
// SRQ use is not visible on the wire, so with --srq unknown every such
// ACK is indeterminate; with --srq=none the clause does not apply
// (C9-150.2.1 does).
type monitor struct{}

// Kinds implements harness.KindFilter: the monitor judges Acknowledges.
func (monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool { return op == wire.Acknowledge })

func (monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	if p.Opcode != wire.Acknowledge || p.AETH.Kind() != wire.KindACK {
		return
	}
	switch c.Settings.SRQ {
	case harness.SRQNone:
		return
	case harness.SRQUnknown:
		c.Indeterminate(ID, "whether the responder QP takes its receive WQEs from an SRQ is not visible on the wire: audit with --srq=all (credits must be 0x1F) or --srq=none")
		return
	}
	if v := p.AETH.Value(); v != wire.CreditInvalid {
		n, _ := wire.CreditCount(v)
		c.Violation(ID, r, fmt.Sprintf("ACK with PSN %d on a QP attached to an SRQ advertises credit code 0x%02x (%d credits): its share of the shared pool is unknowable", p.PSN, v, n),
			[]string{"credit code 0x1F (no valid credit count) in every ACK"},
			fmt.Sprintf("syndrome 0x%02x (%s)", p.AETH.Syndrome, p.AETH))
		return
	}
	c.Checked(ID)
}

func (monitor) End(*harness.Conn) {}
