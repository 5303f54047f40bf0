package c9_113_a1

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-113.a1, in our words: a NAK always goes out as an Acknowledge packet
// (opcode 0x11) with a NAK syndrome, even when it takes the place of a
// READ response packet; READ response and ATOMIC Acknowledge packets carry
// only ACK syndromes. The scenarios provoke NAKs where a READ response or
// an ATOMIC Acknowledge would otherwise go: a READ with a bad R_Key, a
// READ whose region is invalidated mid-response, ATOMICs that are
// misaligned or carry a bad R_Key, and a WRITE with a bad R_Key.

const badKeyXor = 0x5A5A00

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	for _, mtu := range []int{256, 1024, 4096} {
		mtu := mtu
		r.Active(fmt.Sprintf("a READ with an invalid R_Key at MTU %d", mtu),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 20, SetPSNs: true}},
			func(p *harness.Peer) {
				rd := p.Read(4*mtu, 0)
				rd.RETH.RKey ^= badKeyXor
				p.Send(rd)
				check(p, p.Collect(responses.Liveness), true)
			})
		r.Active(fmt.Sprintf("a READ whose region is invalidated after two response packets, at MTU %d", mtu),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 0xFFFFF0, SetPSNs: true}, Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) {
				p.Send(p.Read(40*mtu, 0))
				var recs []*trace.Record
				for i := 0; i < 2; i++ {
					var rec *trace.Record
					var skipped []*trace.Record
					p.Step("C9-116", "the device answers the READ", func() {
						rec, skipped = p.Expect("READ response packets", responses.Liveness, func(k *wire.Packet) bool {
							return k.Opcode.Class() == wire.ClassReadResponse
						})
					})
					recs = append(append(recs, skipped...), rec)
				}
				if err := p.Conn.InvalidateRKey(); err != nil {
					ginkgo.Skip(fmt.Sprintf("unsupported: the adapter cannot invalidate the region's R_Key: %v", err))
				}
				check(p, append(recs, p.Collect(responses.Liveness)...), true)
			})
	}
	r.Active("an ATOMIC at a misaligned address",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 900, SetPSNs: true}, Needs: rulekit.Needs{Atomics: true}},
		func(p *harness.Peer) {
			p.Send(p.Atomic(wire.FetchAdd, 3, 1, 0))
			check(p, p.Collect(responses.Liveness), true)
		})
	r.Active("an ATOMIC with an invalid R_Key",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 900, SetPSNs: true}, Needs: rulekit.Needs{Atomics: true}},
		func(p *harness.Peer) {
			a := p.Atomic(wire.CompareSwap, 8, 1, 0)
			a.Atomic.RKey ^= badKeyXor
			p.Send(a)
			check(p, p.Collect(responses.Liveness), true)
		})
	r.Active("a WRITE with an invalid R_Key after a READ",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 4, SetPSNs: true}},
		func(p *harness.Peer) {
			rd := p.Read(3*512, 0)
			w := p.Message(wire.WriteOnly, 100, 0, true)
			w[0].RETH.RKey ^= badKeyXor
			p.Send(append([]*wire.Packet{rd}, w...)...)
			check(p, p.Collect(responses.Liveness), true)
		})
})

// check fails the spec if a READ response or ATOMIC Acknowledge among recs
// carries a NAK or RNR NAK syndrome; with wantNAK, a scenario in which no
// NAK came at all is reported not exercised.
func check(p *harness.Peer, recs []*trace.Record, wantNAK bool) {
	naks := 0
	for _, rec := range responses.Responses(recs) {
		k := rec.Packet
		if !answers.NAKKind(k) {
			continue
		}
		naks++
		if k.Opcode != wire.Acknowledge {
			p.Fail([]string{fmt.Sprintf("the NAK as an Acknowledge (opcode 0x11) with PSN %d; READ responses and ATOMIC Acknowledges only with ACK syndromes", k.PSN)},
				fmt.Sprintf("%s with PSN %d carrying %s", k.Opcode, k.PSN, k.AETH), rec)
		}
	}
	if wantNAK && naks == 0 {
		ginkgo.Skip("not exercised: the device sent no NAK at all (which NAK is owed is other clauses' concern): " + responses.Summary(responses.Responses(recs)))
	}
}
