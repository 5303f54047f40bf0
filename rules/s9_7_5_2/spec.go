package s9_7_5_2

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// §9.7.5.2, in our words (a section-keyed rule: the section states these
// AETH format facts without a clause number, and they are not C9-119's):
// the syndrome's bit 7 is reserved and zero, its kind 10 is reserved, and
// an RC NAK carries only codes 0 to 3. The scenarios draw every kind of
// AETH from the device (ACKs, READ responses, ATOMIC acknowledgments,
// sequence, invalid-request, remote-access and remote-operational NAKs,
// RNR NAKs) and check each syndrome.

const badKeyXor = 0x5A5A00

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name  string
		cfg   dut.ConnConfig
		needs rulekit.Needs
		run   func(p *harness.Peer)
		kind  func(*wire.Packet) bool // the AETH the scenario is about
	}
	anyNAK := func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && k.AETH.Kind() == wire.KindNAK }
	cases := []tc{
		{"ACKs of SENDs and WRITEs", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true}, rulekit.Needs{},
			func(p *harness.Peer) {
				p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
				p.Send(p.Message(wire.WriteOnly, 3000, 0, true)...)
			}, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge }},
		{"READ responses (First, Middle, Last, Only)", dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFFE, SetPSNs: true}, rulekit.Needs{},
			func(p *harness.Peer) { p.Send(p.Read(5*256, 0), p.Read(0, 0), p.Read(100, 0)) },
			func(k *wire.Packet) bool { return k.Opcode.Class() == wire.ClassReadResponse }},
		{"ATOMIC acknowledgments", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true}, rulekit.Needs{Atomics: true},
			func(p *harness.Peer) {
				p.Send(p.Atomic(wire.FetchAdd, 0, 1, 0), p.Atomic(wire.CompareSwap, 8, 1, 0))
			}, func(k *wire.Packet) bool { return k.Opcode == wire.AtomicAcknowledge }},
		{"a PSN sequence error NAK", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true}, rulekit.Needs{},
			func(p *harness.Peer) {
				p.PSN = p.PSN.Add(4)
				p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			}, harness.IsNAK(wire.NAKPSNSequence)},
		{"an invalid request NAK", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true}, rulekit.Needs{},
			func(p *harness.Peer) {
				k := p.Packet(wire.WriteLast, p.PSN)
				k.Payload = make([]byte, 10)
				k.AckReq = true
				p.Send(k)
			}, anyNAK},
		{"a remote access NAK", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true}, rulekit.Needs{},
			func(p *harness.Peer) {
				rd := p.Read(4000, 0)
				rd.RETH.RKey ^= badKeyXor
				p.Send(rd)
			}, anyNAK},
		{"a remote operational error NAK (a SEND longer than its receive buffer)", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true, RecvWQEs: -1}, rulekit.Needs{PostWR: true},
			func(p *harness.Peer) {
				if err := p.Conn.PostRecv(1, 8); err != nil {
					ginkgo.Skip(fmt.Sprintf("unsupported: posting a small receive WQE: %v", err))
				}
				p.Send(p.Message(wire.SendOnly, 500, 0, true)...)
			}, anyNAK},
		{"an RNR NAK", dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true, RecvWQEs: -1, MinRNRTimer: 31, SetRetry: true}, rulekit.Needs{},
			func(p *harness.Peer) { p.Send(p.Message(wire.SendOnly, 8, 0, true)...) }, harness.IsRNR},
	}
	for _, c := range cases {
		c := c
		r.Active(c.name, rulekit.Scenario{Config: c.cfg, Needs: c.needs}, func(p *harness.Peer) {
			c.run(p)
			check(p, p.Collect(responses.Liveness), c.kind)
		})
	}
})

// check fails the spec if any AETH among recs breaks the format; a
// scenario that drew no AETH of the kind it is about is reported not
// exercised.
func check(p *harness.Peer, recs []*trace.Record, kind func(*wire.Packet) bool) {
	seen := false
	for _, rec := range responses.Responses(recs) {
		k := rec.Packet
		if !k.Opcode.Has(wire.HdrAETH) {
			continue
		}
		if msg := Problem(k.AETH.Syndrome); msg != "" {
			p.Fail([]string{"a syndrome with bit 7 clear and bits 6:5 = 00 (ACK), 01 (RNR NAK) or 11 (NAK, code 0–3)"},
				fmt.Sprintf("%s with PSN %d: %s", k.Opcode, k.PSN, msg), rec)
		}
		if kind(k) {
			seen = true
		}
	}
	if !seen {
		ginkgo.Skip("not exercised: the device sent no AETH of the kind this scenario draws: " + responses.Summary(responses.Responses(recs)))
	}
}
