// Package s9_7_7_2 checks the unsolicited acknowledgment of §9.7.7.2, which
// the specification's Response Generation text describes without a clause
// number (so it is keyed by its section): with nothing new to acknowledge, a
// responder may send its most recent positive ACK again with a refreshed
// credit field, but it must never repeat a NAK that way, since a duplicate
// NAK is not allowed. A repeated ACK with the same PSN and a different credit
// code is therefore legal.
package s9_7_7_2

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "§9.7.7.2"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return &monitor{} }})
}

// maxReqs bounds how many request PSNs the monitor remembers.
const maxReqs = 4096

// monitor checks that every NAK was prompted by a request. A NAK answers
// one request packet, so k identical NAKs (same syndrome, same PSN) need k
// request packets that each could have drawn it, all seen before the k-th
// NAK (capture order is not processing order, so any earlier request
// counts, however long before):
//   - a PSN-sequence-error NAK with PSN e: requests with a PSN beyond e;
//   - an RNR NAK with PSN s: requests with PSN s (the refused one, or its
//     resend);
//   - any other NAK: any request (these end the connection anyway).
//
// A NAK beyond that count repeats an earlier NAK unprompted. Repeated ACKs
// are legal whatever their credits and are counted as checked. In a
// capture not known to be complete a request the capture missed could
// have prompted the NAK: such a repeat stays open (the clause cannot pass)
// unless the requester's IPv4 Identifications show the capture missed none
// of its packets, and then it fails.
type monitor struct {
	reqs []wire.PSN
	naks map[nakKey]nakSeen
}

// nakSeen is what the monitor keeps of the NAKs with one key: how many
// prompts it has counted them against, and the first of them.
type nakSeen struct {
	n     int
	first *trace.Record
}

type nakKey struct {
	syn uint8
	psn wire.PSN
}

// prompts counts the requests seen that could have drawn the NAK k.
func (m *monitor) prompts(k nakKey) int {
	n := 0
	for _, p := range m.reqs {
		if prompts(k, p) {
			n++
		}
	}
	return n
}

// prompts reports whether a request with PSN p could have drawn the NAK k.
func prompts(k nakKey, p wire.PSN) bool {
	switch a := (wire.AETH{Syndrome: k.syn}); {
	case a.Kind() == wire.KindNAK && a.Value() == wire.NAKPSNSequence:
		return p.After(k.psn)
	case a.Kind() == wire.KindRNR:
		return p == k.psn
	}
	return true
}

// Kinds implements harness.KindFilter: the monitor judges Acknowledges and
// follows requests.
func (*monitor) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.IsRequest(op) || op == wire.Acknowledge
})

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	if opc.IsRequest(p.Opcode) {
		m.reqs = append(m.reqs, p.PSN)
		if len(m.reqs) > maxReqs {
			// Keep the newer half, in the same array (reslicing ahead
			// would make every later append reallocate).
			n := copy(m.reqs, m.reqs[len(m.reqs)-maxReqs/2:])
			m.reqs = m.reqs[:n]
		}
		return
	}
	if p.Opcode != wire.Acknowledge {
		return
	}
	switch p.AETH.Kind() {
	case wire.KindACK:
		if c.HaveAck && p.PSN == c.LastAckPSN {
			c.Checked(ID) // a repeated ACK: legal, with any credits
		}
		return
	case wire.KindNAK, wire.KindRNR:
	default:
		return
	}
	k := nakKey{p.AETH.Syndrome, p.PSN}
	if m.naks == nil || len(m.naks) > 1024 {
		m.naks = map[nakKey]nakSeen{}
	}
	seen := m.naks[k]
	seen.n++
	if seen.first == nil {
		seen.first = r
	}
	m.naks[k] = seen
	n := seen.n
	if n == 1 {
		c.Checked(ID)
		return
	}
	if have := m.prompts(k); n > have {
		msg := fmt.Sprintf("the responder sent the NAK %s with PSN %d for the %d%s time, but only %d request packets could have prompted it: a NAK is never repeated unsolicited",
			p.AETH, p.PSN, n, ordinal(n), have)
		expected := []string{"no repeat of a NAK without a new request to answer (an unsolicited acknowledgment repeats only the latest positive ACK)"}
		m.naks[k] = nakSeen{n: have, first: seen.first}
		if !c.Complete() {
			// Only a request the capture missed explains it: decided by
			// the requester's next packet, where its IPv4
			// Identifications show whether the capture missed one (a
			// next request that could have prompted the NAK may have
			// passed the capture point first, where the capture's order
			// between the directions is not certain). Where the first
			// of these NAKs came beyond the reordering after the
			// requester's first packet captured, every prompt of them
			// was sent since (harness.Conn.SinceFirst); otherwise
			// since the connection's start.
			since, _ := c.SinceFirst(trace.ToResponder, seen.first)
			c.ViolationUnlessMissed(ID, trace.ToResponder, since, r, msg, expected, p.String(),
				"a NAK repeated with no request the capture shows to prompt it: only a request the capture missed makes it legal (--complete decides)",
				func(next *trace.Record) bool { return prompts(k, next.Packet.PSN) })
			return
		}
		c.Violation(ID, r, msg, expected, p.String())
		return
	}
	c.Checked(ID)
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

func (m *monitor) End(*harness.Conn) {}
