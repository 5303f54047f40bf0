package o9_95_2_2

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// o9-95.2.2, in our words (binding QPs on a shared receive queue; rulekit
// reports the scenarios unsupported on devices without SRQs): a QP on an
// SRQ cannot know its share of the pool, so every ACK it sends carries
// credit code 0x1F, "no valid credit count". The scenarios attach the
// device's QP to an SRQ holding several receive WQEs, and check the ACKs
// of SENDs (which take WQEs from the pool), WRITEs (which take none) and a
// mix, with AckReq on every message or only on some.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	for _, n := range []int{1, 8, 64} {
		n := n
		r.Active(fmt.Sprintf("SENDs and WRITEs on a QP whose SRQ holds %d receive WQEs", n),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 300, SetPSNs: true, SRQ: true, RecvWQEs: n}},
			func(p *harness.Peer) {
				for i := 0; i < n && i < 10; i++ {
					p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
					expectInvalid(p)
					p.Send(p.Message(wire.WriteOnly, 100, 0, true)...)
					expectInvalid(p)
				}
			})
	}
	r.Active("coalesced ACKs of multi-packet messages across the 2^24 wrap on an SRQ",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFFA, SetPSNs: true, SRQ: true, RecvWQEs: 16}},
		func(p *harness.Peer) {
			var pkts []*wire.Packet
			pkts = append(pkts, p.Message(wire.SendOnly, 600, 0, false)...)
			pkts = append(pkts, p.Message(wire.WriteOnly, 900, 0, false)...)
			pkts = append(pkts, p.Message(wire.SendOnly, 300, 0, true)...)
			p.Send(pkts...)
			expectInvalid(p)
		})
})

// expectInvalid waits for the ACK the last request asked for and fails
// the spec unless its credit code is 0x1F.
func expectInvalid(p *harness.Peer) {
	last := p.PSN.Add(-1)
	rec := p.ExpectAck(last, "the last request sent", responses.Liveness)
	if v := rec.Packet.AETH.Value(); v != wire.CreditInvalid {
		n, _ := wire.CreditCount(v)
		p.Fail([]string{"credit code 0x1F (no valid credit count) in every ACK of a QP on an SRQ"},
			fmt.Sprintf("ACK with PSN %d and credit code 0x%02x (%d credits)", rec.Packet.PSN, v, n), rec)
	}
}
