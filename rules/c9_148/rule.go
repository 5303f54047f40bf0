// Package c9_148 checks C9-148 (§9.7.7.1): the responder's MSN rises by
// one for every new request message it completes and never for a
// duplicate; for an RDMA READ the responder picks the moment, either as
// soon as the READ is validated (its first response packet already shows
// the new MSN) or once all its data has been sent (only its last packet
// does).
package c9_148

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/opc"
	"github.com/rcconform/rcconform/rules/internal/responses"
)

// ID is the clause this package checks.
const ID = "C9-148"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		return &monitor{t: responses.Shared(c), m: responses.SharedMSNModel(c)}
	}})
}

// monitor keeps a model of message completions (responses.MSNModel): the
// new messages the requester sent (SEND and WRITE by their Last or Only
// packet, READ, ATOMIC; never a duplicate), and checks the MSN of every
// ACK-kind AETH (Acknowledge, READ Response First/Last/Only, ATOMIC
// Acknowledge) against it:
//   - the MSN never goes back (answers repeated for duplicates excepted,
//     since whether they carry the original MSN is open);
//   - it counts at least every message the AETH acknowledges (a READ's
//     Last or Only counts the READ, its First may or may not);
//   - it counts no more messages than had reached the responder (so a
//     duplicate, or a READ counted twice, shows).
//
// Where the count starts is unknown in a capture, so the checks bound it
// from both sides and flag only MSNs that no starting point explains. An
// active run shows the QP from its creation, when the MSN is 0.
// Indeterminate: a capture that misses requests (a PSN gap, or a request
// seen for the first time behind newer ones) cannot count completions,
// unless it is known complete (--complete).
type monitor struct {
	t *responses.Tracker
	m *responses.SharedMSN // shared with C9-149
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	ev := m.t.Observe(c, r)
	if opc.IsRequest(r.Packet.Opcode) {
		m.m.Request(c, r, ev.MTU)
		return
	}
	j := m.m.Model(c, r, ev)
	switch {
	case j.Skip:
	case j.Undecided:
		c.Indeterminate(ID, j.Reason)
	case j.Violation:
		c.Violation(ID, r, j.Message, j.Expected, j.Seen)
	default:
		c.Checked(ID)
	}
}

func (m *monitor) End(*harness.Conn) {}
