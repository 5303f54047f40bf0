// Package c9_150_2_1 checks C9-150.2.1 (§9.7.7.2): on every QP that does
// not take its receive WQEs from a shared receive queue, an HCA puts
// end-to-end credits (how many more request messages the receive queue
// can take, counted in posted receive WQEs) in the low five bits of its
// ACK syndromes, never the 0x1F "no valid credit count" code.
package c9_150_2_1

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-150.2.1"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return monitor{} }})
}

// monitor checks every positive Acknowledge (opcode 0x11, ACK syndrome) of
// a connection whose responder QP is known not to use an SRQ (an active
// run without SRQ, or an audit with --srq=none): its credit code must not
// be 0x1F. Whether a QP uses an SRQ is not visible on the wire, so with
// --srq unknown every such ACK is indeterminate, and with --srq=all the
// clause does not apply (o9-95.2.2 does). How many receive WQEs were
// posted is not visible either, so the credit value itself is checked
// only by the active scenarios. ACK-kind AETHs of READ responses and
// ATOMIC Acknowledges are left out: only the Acknowledge is certain to
// carry the credit field the clause speaks of.
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
	case harness.SRQAll:
		return
	case harness.SRQUnknown:
		c.Indeterminate(ID, "whether the responder QP takes its receive WQEs from an SRQ is not visible on the wire: audit with --srq=none (credits required) or --srq=all")
		return
	}
	if p.AETH.Value() == wire.CreditInvalid {
		c.Violation(ID, r, fmt.Sprintf("ACK with PSN %d on a QP without an SRQ carries credit code 0x1F, \"no valid credit count\"", p.PSN),
			[]string{"an ACK credit code 0x00–0x1E giving the receive WQEs still posted (largest table value not above their number)"},
			fmt.Sprintf("syndrome 0x%02x (%s)", p.AETH.Syndrome, p.AETH))
		return
	}
	c.Checked(ID)
}

func (monitor) End(*harness.Conn) {}
