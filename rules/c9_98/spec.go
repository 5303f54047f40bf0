package c9_98

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

// C9-98, in our words (shared meaning with C9-97, which covers the first
// packet; the split by word order is inferred): the last packet of a
// multi-packet RDMA READ response carries an AETH too, and that AETH
// acknowledges the READ itself, so it is an ACK whose MSN counts the READ;
// the Middle packets between carry none. The scenarios send multi-packet
// READs of several lengths at every MTU, alone, back to back, after other
// messages and across the 2^24 wrap, and check the response's last and
// middle packets.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	for _, mtu := range responses.MTUs {
		for _, length := range []int{mtu + 1, 2 * mtu, 3*mtu - 1, 8 * mtu} {
			mtu, length := mtu, length
			r.Active(fmt.Sprintf("a %d-byte READ at MTU %d", length, mtu),
				rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 12, SetPSNs: true}},
				func(p *harness.Peer) {
					m0 := responses.Baseline(p)
					rd := p.Read(length, 0)
					p.Send(rd)
					checkLast(p, p.Collect(responses.Liveness), []*wire.Packet{rd}, 0, m0)
				})
		}
	}

	r.Active("two multi-packet READs back to back, after an unacknowledged SEND",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 800, SetPSNs: true}},
		func(p *harness.Peer) {
			m0 := responses.Baseline(p)
			var pkts []*wire.Packet
			pkts = append(pkts, p.Message(wire.SendOnly, 30, 0, false)...)
			a := p.Read(4*1024, 0)
			b := p.Read(2*1024+1, 0)
			pkts = append(pkts, a, b)
			p.Send(pkts...)
			recs := p.Collect(responses.Liveness)
			checkLast(p, recs, []*wire.Packet{a, b}, 0, m0+1)
			checkLast(p, recs, []*wire.Packet{a, b}, 1, m0+1)
		})

	r.Active("a READ whose last response packet carries PSN 0, after the 2^24 wrap",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 0xFFFFFB, SetPSNs: true}},
		func(p *harness.Peer) {
			m0 := responses.Baseline(p) // PSN 0xFFFFFB
			rd := p.Read(5*512, 0)      // 0xFFFFFC .. 0
			p.Send(rd)
			checkLast(p, p.Collect(responses.Liveness), []*wire.Packet{rd}, 0, m0)
		})
})

// checkLast checks the response of reads[i], a multi-packet READ, the
// i-th of the READs sent (their responses taken in order, packet counts by
// the MTU, so a misnumbered response is still judged on its packets): the
// packets between its first and its last are Middles (no AETH), and its
// last packet is a Last with an ACK syndrome whose MSN counts at least the
// k SENDs and WRITEs before it and is no lower than the first packet's.
// Exactly how READs count is C9-148's concern.
func checkLast(p *harness.Peer, recs []*trace.Record, reads []*wire.Packet, i int, k uint32) {
	var plans []responses.ReadPlan
	for _, q := range reads {
		plans = append(plans, responses.ReadPlan{Req: q})
	}
	stream := responses.SplitStreams(recs, plans, p.MTU())[i]
	rd := reads[i]
	n := wire.ReadResponsePackets(rd.RETH.Length, p.MTU())
	want := []string{fmt.Sprintf("%d packets: a First, Middles without an AETH, then a Last carrying an AETH with an ACK syndrome and an MSN of at least %d, no lower than the First's",
		n, k&0xFFFFFF)}
	if len(stream) < n {
		p.Fail(want, fmt.Sprintf("%d response packets: %s", len(stream), responses.Summary(stream)), nil)
	}
	for _, rec := range stream[1 : n-1] {
		if k2 := rec.Packet; k2.Opcode.Has(wire.HdrAETH) && !answers.NAKKind(k2) {
			p.Fail(want, fmt.Sprintf("%s with PSN %d, carrying an AETH, in the middle of the response", k2.Opcode, k2.PSN), rec)
		}
	}
	firstMSN := k
	if f := stream[0].Packet; f.Opcode.Has(wire.HdrAETH) {
		firstMSN = f.AETH.MSN
	}
	lastRec := stream[n-1]
	k2 := lastRec.Packet
	switch {
	case !k2.Opcode.Has(wire.HdrAETH):
		p.Fail(want, fmt.Sprintf("the last packet went out as %s, which carries no AETH", k2.Opcode), lastRec)
	case k2.Opcode != wire.ReadResponseLast:
		p.Fail(want, fmt.Sprintf("the last packet went out as %s", k2.Opcode), lastRec)
	case !answers.ACKKind(k2):
		p.Fail(want, fmt.Sprintf("the last packet's AETH carries %s, which does not acknowledge the READ", k2.AETH), lastRec)
	case wire.PSN(k2.AETH.MSN).Before(wire.PSN(k & 0xFFFFFF)), wire.PSN(k2.AETH.MSN).Before(wire.PSN(firstMSN)):
		p.Fail(want, fmt.Sprintf("the last packet's AETH carries MSN %d (the first packet's: %d)", k2.AETH.MSN, firstMSN), lastRec)
	}
}
