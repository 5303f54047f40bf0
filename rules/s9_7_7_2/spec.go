package s9_7_7_2

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// §9.7.7.2, in our words (a section-keyed rule: the unsolicited
// acknowledgment has no public clause number): with nothing new to
// acknowledge a responder may repeat its latest positive ACK with fresh
// credits, but it never repeats a NAK, since a duplicate NAK is not
// allowed. The scenarios draw a NAK (a sequence error, an RNR NAK, a
// remote access error) and then stay silent for a long while, expecting
// no second copy of it; and they acknowledge a SEND, post receive WQEs
// (which may prompt an unsolicited ACK) and check that anything unasked
// for is a positive ACK with the latest ACK's PSN.

// quiet is how long the scenarios stay silent after the answer; much
// longer than any response delay, short of retry timers mattering (the
// harness is the requester and never retries).
const quiet = 20 * time.Millisecond

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name    string
		cfg     dut.ConnConfig
		provoke func(p *harness.Peer)
		nak     func(*wire.Packet) bool
	}
	cases := []tc{
		{"a PSN sequence error NAK, then silence", dut.ConnConfig{MTU: 1024, ExpectedPSN: 40, SetPSNs: true},
			func(p *harness.Peer) {
				p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
				p.PSN = p.PSN.Add(1)
				p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			}, harness.IsNAK(wire.NAKPSNSequence)},
		{"a PSN sequence error NAK across the 2^24 wrap, then silence", dut.ConnConfig{MTU: 1024, ExpectedPSN: 0xFFFFFF, SetPSNs: true},
			func(p *harness.Peer) {
				p.PSN = p.PSN.Add(2)
				p.Send(p.Message(wire.WriteOnly, 8, 0, true)...)
			}, harness.IsNAK(wire.NAKPSNSequence)},
		{"an RNR NAK, then silence", dut.ConnConfig{MTU: 1024, ExpectedPSN: 40, SetPSNs: true, RecvWQEs: -1, MinRNRTimer: 1, SetRetry: true},
			func(p *harness.Peer) { p.Send(p.Message(wire.SendOnly, 8, 0, true)...) }, harness.IsRNR},
		{"a remote access NAK, then silence", dut.ConnConfig{MTU: 512, ExpectedPSN: 40, SetPSNs: true},
			func(p *harness.Peer) {
				w := p.Message(wire.WriteOnly, 8, 0, true)
				w[0].RETH.RKey ^= 0x5A5A00
				p.Send(w...)
			}, harness.IsNAK(wire.NAKRemoteAccess)},
	}
	for _, c := range cases {
		c := c
		r.Active(c.name, rulekit.Scenario{Config: c.cfg}, func(p *harness.Peer) {
			c.provoke(p)
			recs := p.Collect(responses.Liveness)
			recs = append(recs, p.Collect(quiet)...)
			var first *trace.Record
			for _, rec := range responses.Acks(recs) {
				k := rec.Packet
				if !c.nak(k) {
					continue
				}
				if first == nil {
					first = rec
					continue
				}
				if k.PSN == first.Packet.PSN && k.AETH.Syndrome == first.Packet.AETH.Syndrome {
					p.Fail([]string{fmt.Sprintf("one %s with PSN %d, not repeated: no request came after it", first.Packet.AETH, first.Packet.PSN)},
						fmt.Sprintf("the same NAK again, %v later", rec.Time-first.Time), rec)
				}
			}
			if first == nil {
				ginkgo.Skip("not exercised: the device sent no NAK of that kind: " + responses.Summary(responses.Responses(recs)))
			}
		})
	}
	r.Active("an ACK, receive WQEs posted afterwards, then silence",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 70, SetPSNs: true, RecvWQEs: 2}, Needs: rulekit.Needs{PostWR: true}},
		func(p *harness.Peer) {
			p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			ack := p.ExpectAck(p.PSN.Add(-1), "the two SENDs", responses.Liveness)
			recs := p.Collect(responses.Liveness)
			if err := p.Conn.PostRecv(8, 1024); err != nil {
				p.Fail([]string{"posting receive WQEs on the device"}, err.Error(), nil)
			}
			recs = append(recs, p.Collect(quiet)...)
			for _, rec := range responses.Responses(recs) {
				k := rec.Packet
				if responses.IsACK(k) && k.PSN.After(p.PSN.Add(-1)) {
					// An ACK naming a PSN never sent: C9-95's finding.
					p.Setup("C9-95", "ACKs name requests that were sent", func() {
						p.Fail([]string{fmt.Sprintf("an ACK with a PSN up to %d, the newest request sent", p.PSN.Add(-1))}, k.String(), rec)
					})
				}
				if !responses.IsACK(k) || k.PSN != ack.Packet.PSN {
					p.Fail([]string{fmt.Sprintf("nothing, or an unsolicited repeat of the latest positive ACK (PSN %d, any credits)", ack.Packet.PSN)},
						fmt.Sprintf("unasked for: %s", k), rec)
				}
			}
		})
})
