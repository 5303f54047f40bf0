package c9_113

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-113, in our words: an RNR NAK carries the PSN of the request it
// refuses. The device's receive queue (or SRQ) starts empty, or with one
// receive WQE; the scenarios send a SEND (single- and multi-packet: the
// receive WQE is needed at its First packet, so that is the PSN refused),
// a WRITE with immediate data (single packet, and a multi-packet WRITE
// whose Last carries the immediate), and two SENDs for one WQE (the second
// is refused, at its own PSN). After the RNR NAK a receive WQE is posted,
// the RNR delay passes, and the refused request sent again must be taken.

// timer is the RNR timer code the device advertises (Table 45: 0.01 ms).
const timer = 1

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name  string
		kind  string // send, send-multi, write-imm, write-imm-multi, second-send
		mtu   int
		start wire.PSN
		srq   bool
	}
	kinds := []struct{ kind, name string }{
		{"send", "a SEND with no receive WQE posted"},
		{"send-multi", "a four-packet SEND with no receive WQE posted: refused at its First"},
		{"write-imm", "an RDMA WRITE with immediate with no receive WQE posted"},
		{"write-imm-multi", "a three-packet RDMA WRITE whose Last carries immediate data, no receive WQE posted"},
		{"second-send", "two SENDs for one receive WQE: the second is refused"},
	}
	var cases []tc
	i := 0
	for _, k := range kinds {
		for _, mtu := range []int{256, 4096} {
			cases = append(cases, tc{k.name, k.kind, mtu, wire.PSN(100 + 1000*i), false})
			i++
		}
	}
	cases = append(cases,
		tc{kinds[0].name, "send", 1024, 0xFFFFFF, false},
		tc{kinds[1].name, "send-multi", 512, 0xFFFFFE, false},
		tc{kinds[0].name, "send", 1024, 9000, true},
		tc{kinds[1].name, "send-multi", 2048, 9500, true},
		tc{kinds[4].name, "second-send", 1024, 9900, true},
	)
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.MinRNRTimer, cfg.RecvWQEs, cfg.SRQ = timer, -1, c.srq
		if c.kind == "second-send" {
			cfg.RecvWQEs = 1
		}
		name := fmt.Sprintf("%s (MTU %d, PSNs from %d", c.name, c.mtu, c.start)
		if c.srq {
			name += ", SRQ"
		}
		r.Active(name+")", rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{PostWR: true, SRQ: c.srq}},
			func(p *harness.Peer) {
				m := p.MTU()
				// A WRITE needs no receive WQE: it shows where the
				// expected PSN stands.
				dupnak.AliveWrite(p, 0, "a WRITE before the refused request")
				var pkts []*wire.Packet
				var refused *wire.Packet
				switch c.kind {
				case "send":
					pkts = []*wire.Packet{dupnak.Send(p, 40, true)}
					refused = pkts[0]
				case "send-multi":
					pkts = p.Message(wire.SendOnly, 3*m+9, 0, true)
					refused = pkts[0]
				case "write-imm":
					pkts = []*wire.Packet{dupnak.Write(p, 40, 256, true)}
					pkts[0].Opcode, pkts[0].Imm = wire.WriteOnlyImm, 0xC0FFEE
					refused = pkts[0]
				case "write-imm-multi":
					pkts = p.Message(wire.WriteOnly, 2*m+5, 4096, true)
					last := pkts[len(pkts)-1]
					last.Opcode, last.Imm = wire.WriteLastImm, 0xBEEF
					refused = last
				case "second-send":
					pkts = []*wire.Packet{dupnak.Send(p, 40, true), dupnak.Send(p, 40, true)}
					refused = pkts[1]
				}
				p.Send(pkts...)
				want := fmt.Sprintf("an RNR NAK with PSN %d, the refused %s", refused.PSN, refused.Opcode)
				// The trigger: an RNR NAK. Another answer leaves C9-113,
				// which is about the RNR NAK's PSN, not exercised.
				var rec *trace.Record
				p.Trigger("", fmt.Sprintf("refuse the %s finding no receive WQE with an RNR NAK", refused.Opcode), func() {
					rec, _ = p.Expect(want, dupnak.Liveness, func(k *wire.Packet) bool {
						return k.Opcode == wire.Acknowledge && !k.AETH.IsACK()
					})
					if !rec.Packet.AETH.IsRNR() {
						p.Fail([]string{want}, rec.Packet.String(), rec)
					}
				})
				if k := rec.Packet; k.PSN != refused.PSN {
					p.Fail([]string{want}, k.String(), rec)
				}
				for _, after := range p.Collect(dupnak.Short) {
					k := after.Packet
					if k.Opcode == wire.Acknowledge && !k.AETH.IsACK() && !(k.AETH.IsNAK(wire.NAKPSNSequence) && k.PSN == refused.PSN) && !(k.AETH.IsRNR() && k.PSN == refused.PSN) {
						if k.AETH.IsNAK(wire.NAKInvalidRequest) && k.PSN != refused.PSN {
							// An invalid-request NAK not naming the expected
							// PSN (the refused one): C9-125's finding.
							p.Setup("C9-125", "no invalid-request NAK naming another PSN than the expected one", func() {
								p.Fail([]string{fmt.Sprintf("no NAK, or one naming the expected PSN %d", refused.PSN)}, k.String(), after)
							})
						}
						p.Fail([]string{fmt.Sprintf("after the RNR NAK nothing changed at the responder: the packets after the refused one dropped, or a PSN sequence error NAK naming the refused PSN %d", refused.PSN)},
							fmt.Sprintf("%s: the responder treated the rest of the refused request as an error, so it cannot be sent again", k), after)
					}
				}
				// Post a receive WQE, wait out the RNR delay, send the
				// refused request again (and what followed it).
				if err := p.Conn.PostRecv(1, 1<<16); err != nil {
					p.Fail([]string{"a receive WQE posted on the device"}, err.Error(), nil)
				}
				p.Wait(wire.RNRDelay(rec.Packet.AETH.Value()))
				var again []*wire.Packet
				for _, k := range pkts {
					if k.PSN.AtOrAfter(refused.PSN) {
						again = append(again, k)
					}
				}
				p.Send(again...)
				dupnak.ExpectAck(p, pkts[len(pkts)-1].PSN, "the refused request sent again once a receive WQE is posted")
			})
	}
})
