// Package c9_95 checks C9-95 (§9.7.5.1.1): an acknowledgment of SEND and
// RDMA WRITE requests carries in its BTH the PSN of the newest new request
// it covers; ACKs may be coalesced, so their PSNs need not be consecutive.
package c9_95

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-95"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(*harness.Conn) harness.Checker { return &monitor{} }})
}

// monitor checks every positive Acknowledge:
//   - its PSN names a request already sent: an ACK for a PSN no request
//     has used yet covers nothing that could have completed;
//   - ACK PSNs never go backwards (a later ACK covers at least as much:
//     duplicates are answered with the newest completed PSN, C9-105);
//   - it is not inside the reserved range of a READ whose responses are
//     not complete (an ACK there would name a READ response PSN).
//
// Capture caveat: a request the capture missed (capture loss, or a
// capture that began mid-connection) is not evidence of anything, so an
// ACK for an unseen PSN is held until the requester's next request shows
// whether the PSN had been sent (requests continuing past it: capture
// loss, indeterminate) or not (the requester sends that PSN afterwards:
// the ACK came first, a violation).
type monitor struct {
	pending *trace.Record // an ACK ahead of every request seen, waiting for evidence
	pendNR  wire.PSN      // NextReq when the pending ACK was seen
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesResponder() {
		return
	}
	p := r.Packet
	if p.Opcode.IsRequest() {
		if m.pending != nil && c.HaveReq {
			a := m.pending.Packet.PSN
			if p.PSN.AtOrBefore(a) && p.PSN.AtOrAfter(m.pendNR) && c.ReqSends(p.PSN) == 0 {
				c.Violation(ID, m.pending, fmt.Sprintf("ACK with PSN %d was sent before any request used PSN %d (the requester sent it afterwards, frame %d)", a, a, r.Frame),
					[]string{fmt.Sprintf("an ACK PSN among the request PSNs already sent (up to %d)", c.NextReq.Add(-1))},
					fmt.Sprintf("ACK PSN %d", a))
				m.pending = nil
			} else if p.PSN.After(a) {
				c.Indeterminate(ID, "an ACK named a PSN the capture had not shown a request for; later requests suggest the capture missed it")
				m.pending = nil
			}
		}
		return
	}
	if p.Opcode != wire.Acknowledge || !p.AETH.IsACK() {
		return
	}
	if !c.HaveReq {
		c.Indeterminate(ID, "ACKs seen before any request: the capture began mid-connection")
		return
	}
	if !p.PSN.Before(c.NextReq) {
		if c.Complete() {
			c.Violation(ID, r, fmt.Sprintf("ACK PSN %d is beyond every request sent so far (newest %d)", p.PSN, c.NextReq.Add(-1)),
				[]string{fmt.Sprintf("the PSN of the newest request covered, at most %d", c.NextReq.Add(-1))},
				fmt.Sprintf("ACK PSN %d", p.PSN))
			return
		}
		m.pending, m.pendNR = r, c.NextReq
		return
	}
	if p.PSN.Before(c.FirstReq) {
		c.Indeterminate(ID, "ACK for a PSN before the first request the capture shows")
		return
	}
	if c.HaveAck && p.PSN.Before(c.LastAckPSN) {
		c.Violation(ID, r, fmt.Sprintf("ACK PSN %d goes back behind the earlier ACK PSN %d", p.PSN, c.LastAckPSN),
			[]string{fmt.Sprintf("an ACK PSN at or after %d (an ACK covers everything before its PSN)", c.LastAckPSN)},
			fmt.Sprintf("ACK PSN %d", p.PSN))
		return
	}
	if rd := c.ReadCovering(p.PSN); rd != nil && !rd.Done && p.PSN != rd.Last {
		c.Violation(ID, r, fmt.Sprintf("ACK PSN %d lies inside the PSN range %d..%d reserved by the RDMA READ of frame %d, whose responses are not complete", p.PSN, rd.First, rd.Last, rd.Frame),
			[]string{"the PSN of a SEND or RDMA WRITE request, or the newest completed request's PSN"},
			fmt.Sprintf("ACK PSN %d", p.PSN))
		return
	}
	if _, _, _, ok := c.Req(p.PSN); !ok && c.ReadCovering(p.PSN) == nil {
		if !c.Complete() {
			c.Indeterminate(ID, "ACK PSN names a request the capture did not show")
			return
		}
	}
	c.Checked(ID)
}

func (m *monitor) End(c *harness.Conn) {
	if m.pending != nil {
		c.Indeterminate(ID, "an ACK named a PSN beyond every request the capture showed, and the capture ended before later requests could tell why")
	}
}
