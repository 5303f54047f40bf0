package c9_96

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-96, in our words: the response to an RDMA READ of L bytes at path MTU
// M is ceil(L/M) packets (one when L is 0), numbered from the READ's own
// PSN upwards by one per packet, modulo 2^24: exactly the PSNs the
// requester reserved when it issued the READ. The scenarios send READs of
// every interesting length at every MTU, across the 2^24 wrap, several at
// once, after other requests and as duplicates (whole and partial
// retries), and check each response's PSNs, packet count and data.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	// One READ: 0, 1, MTU, MTU+1 and many MTU bytes, at every MTU.
	for _, mtu := range responses.MTUs {
		for _, length := range []int{0, 1, mtu - 1, mtu, mtu + 1, 8 * mtu, 8*mtu + 3} {
			mtu, length := mtu, length
			r.Active(fmt.Sprintf("a %d-byte READ at MTU %d", length, mtu),
				rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 4000, SetPSNs: true}},
				func(p *harness.Peer) { reads(p, []int{length}) })
		}
	}

	// Across the wrap: the response PSNs go from 2^24-1 to 0.
	for _, c := range []struct {
		mtu    int
		start  wire.PSN
		length int
	}{
		{512, 0xFFFFFD, 8 * 512},
		{2048, 0xFFFFFF, 3*2048 - 1},
		{256, 0xFFFFFF, 1},
		{4096, 0xFFFFFE, 2 * 4096},
	} {
		c := c
		r.Active(fmt.Sprintf("a %d-byte READ at MTU %d starting at PSN %#x, across the 2^24 wrap", c.length, c.mtu, uint32(c.start)),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: c.mtu, ExpectedPSN: c.start, SetPSNs: true}},
			func(p *harness.Peer) { reads(p, []int{c.length}) })
	}

	// Several READs in flight: each response starts at its own READ's PSN.
	r.Active("four READs of different lengths sent back to back",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 77, SetPSNs: true}},
		func(p *harness.Peer) { reads(p, []int{3000, 0, 1024, 5 * 1024}) })
	r.Active("back-to-back READs across the wrap at MTU 256",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFF0, SetPSNs: true}},
		func(p *harness.Peer) { reads(p, []int{10 * 256, 1, 6*256 + 1, 256}) })

	// Duplicate READs: a full and a partial retry are answered again,
	// numbered from the duplicate's own PSN.
	for _, mtu := range []int{256, 2048} {
		mtu := mtu
		r.Active(fmt.Sprintf("a 4-packet READ at MTU %d repeated whole, then its last two packets asked for again", mtu),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 0xFFFFFE, SetPSNs: true}},
			func(p *harness.Peer) {
				orig := plan(p, 4*mtu, 0)
				p.Send(orig.Req)
				check(p, []responses.ReadPlan{orig})
				full := *orig.Req
				p.Send(&full)
				checkReplay(p, responses.ReadPlan{Req: &full, Data: orig.Data})
				part := *orig.Req
				part.PSN = orig.Req.PSN.Add(2)
				part.RETH.VA += uint64(2 * mtu)
				part.RETH.Length = uint32(2 * mtu)
				p.Send(&part)
				checkReplay(p, responses.ReadPlan{Req: &part, Data: orig.Data[2*mtu:]})
			})
	}

	// READs after SENDs and WRITEs, and a SEND after them: the READ's
	// numbering follows the PSNs the requester used, whatever came before.
	r.Active("READs between SEND and RDMA WRITE messages",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 9000, SetPSNs: true}},
		func(p *harness.Peer) {
			var plans []responses.ReadPlan
			var pkts []*wire.Packet
			pkts = append(pkts, p.Message(wire.SendOnly, 1500, 0, false)...)
			plans = append(plans, plan(p, 2*512+7, 4096))
			pkts = append(pkts, plans[0].Req)
			pkts = append(pkts, p.Message(wire.WriteOnly, 700, 64*1024, false)...)
			plans = append(plans, plan(p, 512, 8192))
			pkts = append(pkts, plans[1].Req)
			pkts = append(pkts, p.Message(wire.SendOnly, 8, 0, true)...)
			p.Send(pkts...)
			check(p, plans)
		})
})

// plan fills memory at off and builds a READ of length bytes there.
func plan(p *harness.Peer, length, off int) responses.ReadPlan {
	data := responses.Fill(p, off, length)
	return responses.ReadPlan{Req: p.Read(length, off), Data: data}
}

// reads sends READs of the given lengths back to back and checks each
// response's numbering.
func reads(p *harness.Peer, lengths []int) {
	var plans []responses.ReadPlan
	off := 0
	for _, n := range lengths {
		plans = append(plans, plan(p, n, off))
		off += n + 64
	}
	for _, rp := range plans {
		p.Send(rp.Req)
	}
	check(p, plans)
}

// checkReplay checks the numbering of the answer to a duplicate READ;
// whether a duplicate is answered at all is C9-107's concern, so no
// answer leaves the scenario not exercised.
func checkReplay(p *harness.Peer, rp responses.ReadPlan) {
	recs := p.Collect(responses.Liveness)
	if len(responses.ReadResponses(recs)) == 0 {
		ginkgo.Skip("not exercised: the device did not answer the duplicate READ (whether it must is C9-107's concern)")
	}
	responses.CheckNumbering(p, rp, responses.ReadResponses(recs))
}

// check collects the device's answers and checks every READ's response.
func check(p *harness.Peer, plans []responses.ReadPlan) {
	recs := p.Collect(responses.Liveness)
	streams := responses.SplitStreams(recs, plans, p.MTU())
	for i, rp := range plans {
		responses.CheckNumbering(p, rp, streams[i])
	}
}
