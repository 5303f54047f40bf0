// Package s9_7_5_2 checks the AETH format facts of §9.7.5.2 (Tables 43 and
// 44), which the specification's Response Generation text states without
// tying them to a clause number: bit 7 of the syndrome is reserved and zero,
// the syndrome kind 10 (bits 6:5) is reserved, and on an RC QP a NAK may
// carry only the codes 0–3 (4 is for RD, 5–31 are reserved). The rule is
// keyed by its section, never by a clause number; in particular it is not
// C9-119, whose text is not public.
package s9_7_5_2

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "§9.7.5.2"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return monitor{} }})
}

// monitor checks the syndrome of every AETH a responder sends
// (Acknowledge, READ Response First/Last/Only, ATOMIC Acknowledge). It
// reads one packet at a time, so captures decide it as well as active
// runs.
type monitor struct{}

// Problem returns what is wrong with an RC AETH syndrome, or "".
func Problem(syn uint8) string {
	a := wire.AETH{Syndrome: syn}
	switch {
	case a.ReservedBit():
		return fmt.Sprintf("syndrome 0x%02x has the reserved bit 7 set", syn)
	case a.Kind() == wire.KindReserved:
		return fmt.Sprintf("syndrome 0x%02x has the reserved kind 10 in bits 6:5", syn)
	case a.Kind() == wire.KindNAK && a.Value() > wire.NAKRemoteOp:
		return fmt.Sprintf("syndrome 0x%02x is a NAK with code %d, reserved on an RC QP (only 0 sequence error, 1 invalid request, 2 remote access error, 3 remote operational error)", syn, a.Value())
	}
	return ""
}

// Kinds implements harness.KindFilter: the monitor judges the responses
// that carry an AETH.
func (monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsResponse(op) && opc.Has(op, wire.HdrAETH)
})

func (monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	if !opc.IsResponse(p.Opcode) || !opc.Has(p.Opcode, wire.HdrAETH) {
		return
	}
	if msg := Problem(p.AETH.Syndrome); msg != "" {
		c.Violation(ID, r, fmt.Sprintf("the AETH of this %s: %s", p.Opcode, msg),
			[]string{"a syndrome with bit 7 clear and bits 6:5 = 00 (ACK, credit code), 01 (RNR NAK, timer code) or 11 (NAK, code 0–3)"},
			fmt.Sprintf("syndrome 0x%02x (%s)", p.AETH.Syndrome, p.AETH))
		return
	}
	c.Checked(ID)
}

func (monitor) End(*harness.Conn) {}
