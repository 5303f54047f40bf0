package c9_116

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-116, in our words: for a valid request with AckReq set, the
// responder must schedule a response whose PSN is that request's PSN or a
// later one. The clause sets no deadline; the scenarios use the harness's
// own liveness bound (100 ms on the device's clock) and say so.

const liveness = 100 * time.Millisecond

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name  string
		mtu   int
		start wire.PSN
		build func(p *harness.Peer) (pkts []*wire.Packet, ackReq wire.PSN)
	}
	cases := []tc{
		{"a SEND without AckReq, then one with it", 1024, 10, func(p *harness.Peer) ([]*wire.Packet, wire.PSN) {
			a := p.Message(wire.SendOnly, 16, 0, false)
			b := p.Message(wire.SendOnly, 16, 0, true)
			return append(a, b...), b[0].PSN
		}},
		{"AckReq in the middle of a burst of WRITEs", 512, 20000, func(p *harness.Peer) ([]*wire.Packet, wire.PSN) {
			var out []*wire.Packet
			var mid wire.PSN
			for i := 0; i < 8; i++ {
				ps := p.Message(wire.WriteOnly, 100, i*100, i == 3)
				if i == 3 {
					mid = ps[0].PSN
				}
				out = append(out, ps...)
			}
			return out, mid
		}},
		{"AckReq on the last packet of a multi-packet SEND", 256, 300, func(p *harness.Peer) ([]*wire.Packet, wire.PSN) {
			ps := p.Message(wire.SendOnly, 1000, 0, true)
			return ps, ps[len(ps)-1].PSN
		}},
		{"AckReq on a WRITE at the 2^24 wrap", 1024, 0xFFFFFF, func(p *harness.Peer) ([]*wire.Packet, wire.PSN) {
			ps := p.Message(wire.WriteOnly, 2048, 0, true)
			return ps, ps[len(ps)-1].PSN
		}},
		{"AckReq on a SEND followed by a READ (the READ response may cover it)", 1024, 4000, func(p *harness.Peer) ([]*wire.Packet, wire.PSN) {
			ps := p.Message(wire.SendOnly, 64, 0, true)
			return append(ps, p.Read(100, 0)), ps[0].PSN
		}},
	}
	for _, c := range cases {
		c := c
		r.Active(c.name, rulekit.Scenario{Config: dut.ConnConfig{MTU: c.mtu, ExpectedPSN: c.start, SetPSNs: true}},
			func(p *harness.Peer) {
				pkts, want := c.build(p)
				p.Send(pkts...)
				p.Expect(fmt.Sprintf("a response with PSN %d or later (ACK, READ response with AETH, or ATOMIC acknowledgment)", want),
					liveness, func(k *wire.Packet) bool {
						return k.Opcode.Has(wire.HdrAETH) && k.AETH.IsACK() && k.PSN.AtOrAfter(want)
					})
			})
	}
	r.Active("AckReq on a duplicate SEND still gets a response", rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 90, SetPSNs: true}},
		func(p *harness.Peer) {
			ps := p.Message(wire.SendOnly, 16, 0, true)
			p.Send(ps...)
			p.ExpectAck(90, "the SEND", liveness)
			p.Send(ps...)
			p.Expect("an ACK with PSN 90 or later for the duplicate", liveness, func(k *wire.Packet) bool {
				return harness.IsAck(k) && k.PSN.AtOrAfter(90)
			})
		})
})
