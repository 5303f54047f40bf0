// Package c9_113_a1 checks C9-113.a1 (§9.7.5.1.5 or §9.7.5.1.7, inferred):
// a NAK is not a response format of its own; it always goes out as an
// Acknowledge packet (opcode 0x11) whose AETH syndrome is of a NAK kind,
// even where it takes the place of an RDMA READ response packet. READ
// response and ATOMIC Acknowledge packets therefore carry only ACK-kind
// syndromes.
package c9_113_a1

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-113.a1"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return monitor{} }})
}

// monitor checks every READ Response First, Last or Only and every ATOMIC
// Acknowledge (the response opcodes other than Acknowledge that carry an
// AETH): its syndrome must not be of the NAK (11) or RNR NAK (01) kind.
// The check reads one packet, so a capture decides it as well as an
// active run, whatever the order the packets passed the capture point in. The reserved kind 10 is §9.7.5.2's concern.
type monitor struct{}

// Kinds implements harness.KindFilter: the monitor judges the responses
// other than Acknowledge that carry an AETH.
func (monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return op != wire.Acknowledge && opc.IsResponse(op) && opc.Has(op, wire.HdrAETH)
})

func (monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	op := p.Opcode
	if op == wire.Acknowledge || !opc.IsResponse(op) || !opc.Has(op, wire.HdrAETH) {
		return
	}
	switch p.AETH.Kind() {
	case wire.KindNAK, wire.KindRNR:
		// Illegal whenever it was sent: a response delayed past later
		// ones, or copied, is judged all the same, not left open.
		c.ViolationInAnyOrder(ID, r, fmt.Sprintf("%s carries the %s syndrome %s: a NAK must be sent as an Acknowledge packet, even in place of a READ response packet",
			op, p.AETH.Kind(), p.AETH),
			[]string{fmt.Sprintf("an Acknowledge (opcode 0x11) with the NAK syndrome and PSN %d; %s only with an ACK syndrome", p.PSN, op)},
			p.String())
	case wire.KindACK:
		c.Checked(ID)
	}
}

func (monitor) End(*harness.Conn) {}
