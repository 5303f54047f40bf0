package c9_149

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

// C9-149, in our words: every AETH carries a valid MSN, NAKs and RNR NAKs
// included; a NAK completes nothing, so its MSN is the count of messages
// completed so far. The scenarios complete a few messages (SENDs without
// AckReq among them, so the count has moved since the last ACK), then
// provoke each kind of NAK: a PSN sequence error, an RNR NAK, an invalid
// request, a remote access error, a remote operational error and a READ
// failing mid-response, and check the NAK's MSN.

const badKeyXor = 0x5A5A00

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name    string
		cfg     dut.ConnConfig
		provoke func(p *harness.Peer) // sends the request that draws the NAK
		extra   uint32                // the MSN may also be one more (a READ counted on validation)
		kind    func(*wire.Packet) bool
	}
	cases := []tc{
		{"a PSN sequence error", dut.ConnConfig{MTU: 1024, ExpectedPSN: 100, SetPSNs: true},
			func(p *harness.Peer) {
				p.PSN = p.PSN.Add(2) // skip two PSNs
				p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			}, 0, harness.IsNAK(wire.NAKPSNSequence)},
		{"a PSN sequence error across the 2^24 wrap", dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFFB, SetPSNs: true},
			func(p *harness.Peer) {
				p.PSN = p.PSN.Add(1)
				p.Send(p.Message(wire.WriteOnly, 600, 0, true)...)
			}, 0, harness.IsNAK(wire.NAKPSNSequence)},
		{"an RNR NAK for a SEND finding no receive WQE", dut.ConnConfig{MTU: 1024, ExpectedPSN: 5, SetPSNs: true, RecvWQEs: 4},
			func(p *harness.Peer) {
				p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			}, 0, harness.IsRNR},
		{"an invalid request: a SEND Middle with no First", dut.ConnConfig{MTU: 1024, ExpectedPSN: 5, SetPSNs: true},
			func(p *harness.Peer) {
				k := p.Packet(wire.SendMiddle, p.PSN)
				k.Payload = make([]byte, 1024)
				k.AckReq = true
				p.PSN = p.PSN.Next()
				p.Send(k)
			}, 0, harness.IsNAK(wire.NAKInvalidRequest)},
		{"a remote access error: a WRITE with an invalid R_Key", dut.ConnConfig{MTU: 512, ExpectedPSN: 5, SetPSNs: true},
			func(p *harness.Peer) {
				w := p.Message(wire.WriteOnly, 64, 0, true)
				w[0].RETH.RKey ^= badKeyXor
				p.Send(w...)
			}, 0, harness.IsNAK(wire.NAKRemoteAccess)},
		{"a remote operational error: a SEND longer than its receive buffer", dut.ConnConfig{MTU: 1024, ExpectedPSN: 5, SetPSNs: true, RecvWQEs: 4},
			func(p *harness.Peer) {
				if err := p.Conn.PostRecv(1, 16); err != nil {
					ginkgo.Skip(fmt.Sprintf("unsupported: posting a small receive WQE: %v", err))
				}
				p.Send(p.Message(wire.SendOnly, 600, 0, true)...)
			}, 0, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && answers.NAKKind(k) }},
		{"a READ failing mid-response", dut.ConnConfig{MTU: 256, ExpectedPSN: 5, SetPSNs: true},
			func(p *harness.Peer) {
				p.Send(p.Read(40*256, 0))
				p.Step("C9-116", "the device answers the READ", func() {
					p.Expect("READ response packets", responses.Liveness, func(k *wire.Packet) bool { return k.Opcode.Class() == wire.ClassReadResponse })
				})
				if err := p.Conn.InvalidateRKey(); err != nil {
					ginkgo.Skip(fmt.Sprintf("unsupported: the adapter cannot invalidate the region's R_Key: %v", err))
				}
			}, 1, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && answers.NAKKind(k) }},
	}
	for _, c := range cases {
		c := c
		r.Active("after completed messages, "+c.name, rulekit.Scenario{Config: c.cfg},
			func(p *harness.Peer) {
				k := settle(p, c.cfg.RecvWQEs)
				c.provoke(p)
				checkNAK(p, p.Collect(responses.Liveness), k, c.extra, c.kind)
			})
	}
	r.Active("a sequence error before any message completed", rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 9, SetPSNs: true}},
		func(p *harness.Peer) {
			p.PSN = p.PSN.Add(3)
			p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
			checkNAK(p, p.Collect(responses.Liveness), 0, 0, harness.IsNAK(wire.NAKPSNSequence))
		})
})

// settle completes messages and returns the MSN they bring the responder
// to: an acknowledged baseline, then two SENDs and a WRITE without AckReq,
// which move the count past the last ACK. With rwqes receive WQEs posted
// (0: the adapter's default), SENDs use them up, so that a following SEND
// finds none.
func settle(p *harness.Peer, rwqes int) uint32 {
	sendOp := wire.SendOnly
	if rwqes > 0 {
		sendOp = wire.WriteOnly
	}
	pk := p.Message(sendOp, 8, 0, true)
	p.Send(pk...)
	got := p.ExpectAck(pk[len(pk)-1].PSN, "the first message", responses.Liveness)
	k := got.Packet.AETH.MSN
	var pkts []*wire.Packet
	for i := 0; i < rwqes; i++ {
		pkts = append(pkts, p.Message(wire.SendOnly, 8, 0, false)...)
	}
	pkts = append(pkts, p.Message(wire.WriteOnly, 16, 0, false)...)
	if rwqes == 0 {
		pkts = append(pkts, p.Message(wire.SendOnly, 8, 0, false)...)
		k++
	}
	p.Send(pkts...)
	p.Collect(responses.Liveness)
	return k + uint32(rwqes) + 1
}

// checkNAK expects a NAK matching kind among recs carrying MSN k (or up to
// k+extra).
func checkNAK(p *harness.Peer, recs []*trace.Record, k, extra uint32, kind func(*wire.Packet) bool) {
	var nak *trace.Record
	for _, rec := range responses.Acks(recs) {
		if kind(rec.Packet) {
			nak = rec
			break
		}
	}
	if nak == nil {
		ginkgo.Skip("not exercised: the device sent no NAK of that kind (which NAK is owed is other clauses' concern): " + responses.Summary(responses.Responses(recs)))
	}
	m := nak.Packet.AETH.MSN
	ok := false
	for d := uint32(0); d <= extra; d++ {
		if m == (k+d)&0xFFFFFF {
			ok = true
		}
	}
	if !ok {
		want := fmt.Sprintf("MSN %d, the count of completed messages (a NAK completes nothing)", k&0xFFFFFF)
		if extra > 0 {
			want = fmt.Sprintf("MSN %d..%d: the completed messages, the READ counted or not", k&0xFFFFFF, (k+extra)&0xFFFFFF)
		}
		p.Fail([]string{want}, fmt.Sprintf("%s with MSN %d", nak.Packet.AETH, m), nak)
	}
}
