package c9_101

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

// C9-101, in our words: a responder may execute SENDs and WRITEs that
// follow an RDMA READ before the READ's response is out, but it must not
// acknowledge them until the READ's whole response has been sent, since
// an ACK with a PSN beyond an outstanding READ tells the requester the
// READ was NAKed. The scenarios send a long READ and, right behind it,
// SENDs and WRITEs asking for an ACK, at several MTUs, with several READs
// in flight and across the 2^24 wrap, and check that no ACK beyond a READ
// leaves before that READ's last response packet.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type step struct {
		op     wire.Opcode // wire.ReadRequest, wire.SendOnly or wire.WriteOnly
		length int
		ackReq bool
	}
	type tc struct {
		name  string
		mtu   int
		start wire.PSN
		steps []step
	}
	cases := []tc{
		{"a 64-packet READ, then a WRITE with AckReq", 1024, 100,
			[]step{{wire.ReadRequest, 64 * 1024, false}, {wire.WriteOnly, 32, true}}},
		{"a 64-packet READ, then a SEND with AckReq", 256, 100,
			[]step{{wire.ReadRequest, 64 * 256, false}, {wire.SendOnly, 8, true}}},
		{"a 16-packet READ, then three WRITEs, the last with AckReq", 4096, 9,
			[]step{{wire.ReadRequest, 16 * 4096, false}, {wire.WriteOnly, 4096, false}, {wire.WriteOnly, 100, false}, {wire.WriteOnly, 2 * 4096, true}}},
		{"two READs, then a WRITE with AckReq", 512, 2000,
			[]step{{wire.ReadRequest, 40 * 512, false}, {wire.ReadRequest, 20 * 512, false}, {wire.WriteOnly, 64, true}}},
		{"READ, WRITE with AckReq, READ, SEND with AckReq", 2048, 31,
			[]step{{wire.ReadRequest, 20 * 2048, false}, {wire.WriteOnly, 64, true}, {wire.ReadRequest, 10 * 2048, false}, {wire.SendOnly, 64, true}}},
		{"a 0-byte READ, then a WRITE with AckReq", 1024, 55,
			[]step{{wire.ReadRequest, 0, false}, {wire.WriteOnly, 8, true}}},
		{"a READ across the 2^24 wrap, then a SEND with AckReq", 256, 0xFFFFE0,
			[]step{{wire.ReadRequest, 48 * 256, false}, {wire.SendOnly, 8, true}}},
	}
	for _, c := range cases {
		c := c
		r.Active(c.name, rulekit.Scenario{Config: dut.ConnConfig{MTU: c.mtu, ExpectedPSN: c.start, SetPSNs: true}},
			func(p *harness.Peer) {
				var pkts, reads []*wire.Packet
				for _, s := range c.steps {
					switch s.op {
					case wire.ReadRequest:
						rd := p.Read(s.length, 0)
						reads = append(reads, rd)
						pkts = append(pkts, rd)
					default:
						pkts = append(pkts, p.Message(s.op, s.length, 0, s.ackReq)...)
					}
				}
				p.Send(pkts...)
				check(p, p.Collect(responses.Liveness), reads)
			})
	}
})

// check fails the spec if a positive ACK beyond one of reads leaves
// before that READ's response is complete: before as many READ response
// packets as the READs up to it need (counted in order, so a misnumbered
// response, C9-96's concern, still counts as sent).
func check(p *harness.Peer, recs []*trace.Record, reads []*wire.Packet) {
	last := make([]wire.PSN, len(reads))
	need := make([]int, len(reads)) // READ response packets sent once reads[i] is complete
	total := 0
	for i, rd := range reads {
		n := wire.ReadResponsePackets(rd.RETH.Length, p.MTU())
		last[i] = rd.PSN.Add(n - 1)
		total += n
		need[i] = total
	}
	sent := 0
	acked := false
	for _, rec := range responses.Responses(recs) {
		k := rec.Packet
		if k.Opcode.Class() == wire.ClassReadResponse {
			sent++
			continue
		}
		if !responses.IsACK(k) {
			continue
		}
		for i, rd := range reads {
			if !k.PSN.After(last[i]) {
				continue
			}
			acked = true
			if sent < need[i] {
				p.Fail([]string{fmt.Sprintf("every response packet of the READ at PSN %d, up to PSN %d, before any ACK with a later PSN", rd.PSN, last[i])},
					fmt.Sprintf("an ACK with PSN %d after only %d of the %d READ response packets owed by then", k.PSN, sent, need[i]), rec)
			}
		}
	}
	if !acked {
		ginkgo.Skip("not exercised: no ACK beyond the READ came (whether one must is C9-116's concern)")
	}
}
