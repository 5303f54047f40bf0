package c9_95

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-95, in our words: an ACK for SEND and RDMA WRITE requests carries the
// PSN of the newest new request it acknowledges. Coalescing is allowed,
// so a responder may answer several requests with one ACK; whatever it
// sends, every ACK names a request it had received, ACK PSNs never go
// back, and once the request carrying AckReq is acknowledged the ACK names
// exactly that request (not an older one, not a later one).

// liveness bounds how long a scenario waits for answers. The clause sets
// no deadline; this is the harness's own bound, on the device's clock.
const liveness = 100 * time.Millisecond

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type batch struct {
		name    string
		mtu     int
		start   wire.PSN
		msgs    []msg
		ackReqs []int // indices of messages whose last packet carries AckReq (always includes the last)
	}
	cases := []batch{
		{name: "six single-packet SENDs, AckReq on the last only", mtu: 1024, start: 1000,
			msgs: repeat(msg{wire.SendOnly, 64}, 6), ackReqs: []int{5}},
		{name: "AckReq on the third and the sixth SEND", mtu: 1024, start: 2000,
			msgs: repeat(msg{wire.SendOnly, 64}, 6), ackReqs: []int{2, 5}},
		{name: "mixed SENDs and WRITEs, AckReq on the last", mtu: 1024, start: 3000,
			msgs: []msg{{wire.SendOnly, 8}, {wire.WriteOnly, 100}, {wire.SendOnly, 0}, {wire.WriteOnly, 1024}}, ackReqs: []int{3}},
		{name: "multi-packet SEND and WRITE messages (3.5 × MTU), AckReq on the last packet", mtu: 256, start: 4000,
			msgs: []msg{{wire.SendOnly, 896}, {wire.WriteOnly, 896}}, ackReqs: []int{1}},
		{name: "PSNs across the 2^24 wrap", mtu: 512, start: 0xFFFFFD,
			msgs: []msg{{wire.SendOnly, 10}, {wire.WriteOnly, 1300}, {wire.SendOnly, 700}}, ackReqs: []int{2}},
		{name: "at MTU 4096, one long WRITE then a SEND", mtu: 4096, start: 77,
			msgs: []msg{{wire.WriteOnly, 3 * 4096}, {wire.SendOnly, 4096}}, ackReqs: []int{1}},
	}
	for _, bc := range cases {
		bc := bc
		r.Active(bc.name, rulekit.Scenario{Config: dut.ConnConfig{MTU: bc.mtu, ExpectedPSN: bc.start, SetPSNs: true}},
			func(p *harness.Peer) {
				var pkts []*wire.Packet
				var ackReqPSN []wire.PSN
				off := 0
				for i, m := range bc.msgs {
					ar := contains(bc.ackReqs, i)
					ps := p.Message(m.op, m.length, off, ar)
					off += m.length
					pkts = append(pkts, ps...)
					if ar {
						ackReqPSN = append(ackReqPSN, ps[len(ps)-1].PSN)
					}
				}
				p.Send(pkts...)
				checkAcks(p, p.Collect(liveness), bc.start, p.PSN.Add(-1), ackReqPSN)
			})
	}

	r.Active("a duplicate SEND is answered with the newest completed PSN, not its own", rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 500, SetPSNs: true}},
		func(p *harness.Peer) {
			pkts := p.Message(wire.SendOnly, 32, 0, false)
			pkts = append(pkts, p.Message(wire.SendOnly, 32, 0, false)...)
			pkts = append(pkts, p.Message(wire.SendOnly, 32, 0, true)...)
			p.Send(pkts...)
			checkAcks(p, p.Collect(liveness), 500, 502, []wire.PSN{502})
			dup := *pkts[0]
			dup.AckReq = true
			p.Send(&dup)
			got := p.Collect(liveness)
			// The PSN of the answer to a duplicate is C9-105's rule.
			for _, rec := range got {
				if harness.IsAck(rec.Packet) && rec.Packet.PSN != 502 {
					p.Setup("C9-105", "the duplicate is answered with the newest completed PSN", func() {
						p.Fail([]string{"an ACK with PSN 502, the newest request completed (or no ACK)"},
							fmt.Sprintf("ACK with PSN %d", rec.Packet.PSN), rec)
					})
				}
			}
		})
})

type msg struct {
	op     wire.Opcode
	length int
}

func repeat(m msg, n int) []msg {
	out := make([]msg, n)
	for i := range out {
		out[i] = m
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkAcks checks the device's answers to requests first..last: every
// ACK PSN lies among them and never goes back, and each AckReq PSN is
// acknowledged by an ACK naming exactly it or a later request (the newest
// request the ACK covers). The last AckReq must be acknowledged with
// exactly its PSN, since nothing newer was sent.
func checkAcks(p *harness.Peer, recs []*trace.Record, first, last wire.PSN, ackReq []wire.PSN) {
	GinkgoHelper()
	var prev *trace.Record
	var acks []*trace.Record
	for _, rec := range recs {
		k := rec.Packet
		if k.Opcode != wire.Acknowledge {
			continue
		}
		if !k.AETH.IsACK() {
			// Which rule a NAK for valid requests breaks depends on why
			// the device refused them: not decided here.
			p.Setup("", "the device takes every request (all valid and in sequence)", func() {
				p.Fail([]string{"positive ACKs only: every request was valid and in sequence"}, k.String(), rec)
			})
		}
		if !k.PSN.InRange(first, last) {
			p.Fail([]string{fmt.Sprintf("an ACK PSN among the requests sent, %d..%d", first, last)}, k.String(), rec)
		}
		if prev != nil && k.PSN.Before(prev.Packet.PSN) {
			p.Fail([]string{fmt.Sprintf("ACK PSNs that never go back (previous ACK PSN %d)", prev.Packet.PSN)}, k.String(), rec)
		}
		prev = rec
		acks = append(acks, rec)
	}
	for _, a := range ackReq {
		covered := false
		for _, rec := range acks {
			if rec.Packet.PSN.AtOrAfter(a) {
				covered = true
			}
		}
		if len(acks) == 0 {
			// No ACK at all: the AckReq went unanswered (C9-116); C9-95
			// has no ACK to judge.
			p.Setup("C9-116", fmt.Sprintf("the device answers the AckReq at PSN %d", a), func() {
				p.Fail([]string{fmt.Sprintf("an ACK with PSN %d or later (the request carrying AckReq, or a newer one it covers)", a)}, "no ACK", nil)
			})
		}
		if !covered {
			p.Fail([]string{fmt.Sprintf("an ACK with PSN %d or later (the request carrying AckReq, or a newer one it covers)", a)},
				fmt.Sprintf("%d ACKs, none at or after %d", len(acks), a), nil)
		}
	}
	final := ackReq[len(ackReq)-1]
	if len(acks) == 0 || acks[len(acks)-1].Packet.PSN != final {
		seen := "no ACK"
		var hi *trace.Record
		if len(acks) > 0 {
			hi = acks[len(acks)-1]
			seen = hi.Packet.String()
		}
		p.Fail([]string{fmt.Sprintf("a last ACK with PSN %d, the newest request it covers", final)}, seen, hi)
	}
}
