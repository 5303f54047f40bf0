package c9_97

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-97, in our words (shared meaning with C9-98, which covers the last
// packet; the split by word order is inferred): the first packet of an
// RDMA READ response, or its only packet, carries an AETH, and that AETH
// is a positive acknowledgment of every earlier SEND or WRITE still
// outstanding, so its MSN already counts them. The scenarios leave a
// WRITE (and SENDs) unacknowledged, send a READ, and check that the
// response's first packet is a First (or an Only, for a one-packet READ)
// with an ACK syndrome whose MSN counts those messages: all of them, plus
// the READ itself or not, which is the responder's choice (C9-148).

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	for _, mtu := range []int{256, 1024, 4096} {
		for _, length := range []int{0, 1, mtu, mtu + 1, 4 * mtu} {
			mtu, length := mtu, length
			r.Active(fmt.Sprintf("an unacknowledged WRITE, then a %d-byte READ at MTU %d", length, mtu),
				rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 300, SetPSNs: true}},
				func(p *harness.Peer) {
					m0 := responses.Baseline(p)
					var pkts []*wire.Packet
					pkts = append(pkts, p.Message(wire.WriteOnly, 64, 0, false)...)
					rd := p.Read(length, 0)
					pkts = append(pkts, rd)
					p.Send(pkts...)
					checkFirst(p, p.Collect(responses.Liveness), []*wire.Packet{rd}, 0, m0+1, m0+1)
				})
		}
	}

	r.Active("SENDs and multi-packet WRITEs without AckReq, then a READ",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 70, SetPSNs: true}},
		func(p *harness.Peer) {
			m0 := responses.Baseline(p)
			var pkts []*wire.Packet
			pkts = append(pkts, p.Message(wire.SendOnly, 100, 0, false)...)
			pkts = append(pkts, p.Message(wire.WriteOnly, 3*512+5, 0, false)...)
			pkts = append(pkts, p.Message(wire.SendOnly, 2*512, 0, false)...)
			rd := p.Read(5*512, 0)
			pkts = append(pkts, rd)
			p.Send(pkts...)
			checkFirst(p, p.Collect(responses.Liveness), []*wire.Packet{rd}, 0, m0+3, m0+3)
		})

	r.Active("three READs back to back, each response opening with an AETH",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 5000, SetPSNs: true}},
		func(p *harness.Peer) {
			m0 := responses.Baseline(p)
			a, b, c := p.Read(3*1024, 0), p.Read(1, 0), p.Read(2*1024, 0)
			p.Send(a, b, c)
			recs := p.Collect(responses.Liveness)
			// Each READ's first packet counts at least the messages before
			// the READs; how it counts the READs is C9-148's concern.
			reads := []*wire.Packet{a, b, c}
			for i := range reads {
				checkFirst(p, recs, reads, i, m0, m0+uint32(i))
			}
		})

	r.Active("a WRITE, then a READ whose response crosses the 2^24 wrap",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFFB, SetPSNs: true}},
		func(p *harness.Peer) {
			m0 := responses.Baseline(p)
			var pkts []*wire.Packet
			pkts = append(pkts, p.Message(wire.WriteOnly, 600, 0, false)...)
			rd := p.Read(6*256, 0)
			pkts = append(pkts, rd)
			p.Send(pkts...)
			checkFirst(p, p.Collect(responses.Liveness), []*wire.Packet{rd}, 0, m0+1, m0+1)
		})
})

// checkFirst checks the first response packet of reads[i], the i-th of
// the READs sent (their responses taken in order, packet counts by the
// MTU, so a misnumbered response is still found): a First (several
// packets) or Only (one), with an AETH whose syndrome is an ACK and whose
// MSN counts the SENDs and WRITEs before it (at least lo) and no more than
// every message before the READ and the READ itself (hi+1). Exactly how
// READs count is C9-148's concern.
func checkFirst(p *harness.Peer, recs []*trace.Record, reads []*wire.Packet, i int, lo, hi uint32) {
	rd := reads[i]
	var plans []responses.ReadPlan
	for _, q := range reads {
		plans = append(plans, responses.ReadPlan{Req: q})
	}
	stream := responses.SplitStreams(recs, plans, p.MTU())[i]
	n := wire.ReadResponsePackets(rd.RETH.Length, p.MTU())
	op := wire.ReadResponseFirst
	if n == 1 {
		op = wire.ReadResponseOnly
	}
	want := []string{fmt.Sprintf("the response opening with %s carrying an AETH with an ACK syndrome and an MSN from %d to %d (every SEND and WRITE before the READ counted)",
		op, lo&0xFFFFFF, (hi+1)&0xFFFFFF)}
	if len(stream) == 0 {
		p.Fail(want, "no READ response: "+responses.Summary(responses.Responses(recs)), nil)
	}
	first := stream[0]
	k2 := first.Packet
	if !k2.Opcode.Has(wire.HdrAETH) {
		p.Fail(want, fmt.Sprintf("the response begins with %s, which carries no AETH", k2.Opcode), first)
	}
	if k2.Opcode != op {
		p.Fail(want, fmt.Sprintf("the response begins with %s", k2.Opcode), first)
	}
	if !answers.ACKKind(k2) {
		p.Fail(want, fmt.Sprintf("its AETH carries %s, which acknowledges nothing", k2.AETH), first)
	}
	if msn := k2.AETH.MSN; wire.PSN(msn).Before(wire.PSN(lo&0xFFFFFF)) || wire.PSN(msn).After(wire.PSN((hi+1)&0xFFFFFF)) {
		p.Fail(want, fmt.Sprintf("its AETH carries MSN %d", msn), first)
	}
}
