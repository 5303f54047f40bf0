package c9_150_2_1

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-150.2.1, in our words: on a QP without an SRQ an HCA puts end-to-end
// credits in every ACK syndrome: the number of receive WQEs still posted,
// encoded as the largest table value not above it (the rounding follows
// rdmavt and is inferred: docs/interpretations.md, "Credit table and
// rounding"), never 0x1F. The
// scenarios post a known number of receive WQEs, consume them one SEND at
// a time, mix in WRITEs (which consume none), post more part-way, and
// check each ACK's credit code.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	for _, n := range []int{1, 2, 3, 5, 8, 13, 32, 100} {
		n := n
		r.Active(fmt.Sprintf("%d receive WQEs consumed by SENDs one at a time", n),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 50, SetPSNs: true, RecvWQEs: n}, Needs: rulekit.Needs{Credits: true}},
			func(p *harness.Peer) {
				left := n
				for left > 0 {
					p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
					left--
					expectCredits(p, left)
					if left%3 == 0 {
						p.Send(p.Message(wire.WriteOnly, 8, 0, true)...)
						expectCredits(p, left)
					}
				}
			})
	}
	r.Active("no receive WQEs posted: WRITEs are acknowledged with zero credits",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 0xFFFFFE, SetPSNs: true, RecvWQEs: -1}, Needs: rulekit.Needs{Credits: true}},
		func(p *harness.Peer) {
			for i := 0; i < 3; i++ {
				p.Send(p.Message(wire.WriteOnly, 700, 0, true)...)
				expectCredits(p, 0)
			}
		})
	r.Active("receive WQEs posted part-way raise the credits",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 7, SetPSNs: true, RecvWQEs: 4}, Needs: rulekit.Needs{Credits: true, PostWR: true}},
		func(p *harness.Peer) {
			p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			expectCredits(p, 3)
			if err := p.Conn.PostRecv(20, 4096); err != nil {
				p.Fail([]string{"posting receive WQEs on the device"}, err.Error(), nil)
			}
			p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			expectCredits(p, 22)
			p.Send(p.Message(wire.SendOnly, 3*1024, 0, true)...)
			expectCredits(p, 21)
		})
})

// expectCredits waits for the ACK of the last request sent and fails
// the spec unless its credit code stands for left receive WQEs.
func expectCredits(p *harness.Peer, left int) {
	want := wire.CreditCode(left)
	n, _ := wire.CreditCount(want)
	last := p.PSN.Add(-1)
	rec := p.ExpectAck(last, "the last request sent", responses.Liveness)
	if got := rec.Packet.AETH.Value(); got != want {
		seen := fmt.Sprintf("ACK with PSN %d and credit code 0x%02x", rec.Packet.PSN, got)
		if got == wire.CreditInvalid {
			seen += " (\"no valid credit count\")"
		} else if c, ok := wire.CreditCount(got); ok {
			seen += fmt.Sprintf(" (%d credits)", c)
		}
		p.Fail([]string{fmt.Sprintf("credit code 0x%02x: %d receive WQEs remain, encoded as %d credits (the largest table value not above them)", want, left, n)},
			seen, rec)
	}
}
