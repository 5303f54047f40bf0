package c9_148

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-148, in our words: the MSN goes up by one for every new request
// message the responder completes, and never for a duplicate; for an RDMA
// READ the responder may count it on validation (its first response
// packet shows the new MSN) or once the data is sent (only its last
// does). The scenarios start from an acknowledged SEND (whose MSN is the
// baseline), then send READs, multi-packet SENDs and WRITEs (also with a
// packet lost at each position and resent), ATOMICs and duplicates of each, and check every AETH's MSN against the count of
// completed messages, accepting either choice for READs.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	r.Active("two SENDs, a 3-packet READ, then a SEND",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 10, SetPSNs: true}},
		func(p *harness.Peer) {
			k := responses.Baseline(p)
			p.Send(p.Message(wire.SendOnly, 10, 0, false)...)
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			k += 2
			expectAck(p, k)
			readMSN(p, 3*1024, k)
			k++
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			expectAck(p, k+1)
		})

	for _, mtu := range []int{256, 4096} {
		mtu := mtu
		r.Active(fmt.Sprintf("READs of 0, 1, MTU+1 and 8 MTU bytes back to back at MTU %d", mtu),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: mtu, ExpectedPSN: 0xFFFFF8, SetPSNs: true}},
			func(p *harness.Peer) {
				k := responses.Baseline(p)
				lengths := []int{0, 1, mtu + 1, 8 * mtu}
				var reads []*wire.Packet
				for _, n := range lengths {
					reads = append(reads, p.Read(n, 0))
				}
				p.Send(reads...)
				recs := p.Collect(responses.Liveness)
				for i, rd := range reads {
					checkRead(p, recs, rd, k+uint32(i), reads[:i]...)
				}
				p.Send(p.Message(wire.WriteOnly, 10, 0, true)...)
				expectAck(p, k+uint32(len(reads))+1)
			})
	}

	r.Active("multi-packet SENDs and WRITEs count once each",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 256, ExpectedPSN: 400, SetPSNs: true}},
		func(p *harness.Peer) {
			k := responses.Baseline(p)
			var pkts []*wire.Packet
			pkts = append(pkts, p.Message(wire.SendOnly, 5*256, 0, false)...)
			pkts = append(pkts, p.Message(wire.WriteOnly, 7*256+1, 0, false)...)
			pkts = append(pkts, p.Message(wire.SendOnly, 2*256, 0, true)...)
			p.Send(pkts...)
			expectAck(p, k+3)
		})

	// Loss at each position of a multi-packet message: the packets after
	// the lost one draw a sequence NAK, the requester resends from the
	// NAK's PSN, and the message counts once.
	for lost := 0; lost < 4; lost++ {
		lost := lost
		r.Active(fmt.Sprintf("a 4-packet SEND whose packet %d is lost, then resent from the NAK's PSN", lost+1),
			rulekit.Scenario{Config: dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFFD, SetPSNs: true}},
			func(p *harness.Peer) {
				k := responses.Baseline(p)
				msg := p.Message(wire.SendOnly, 4*256, 0, true)
				var sent []*wire.Packet
				for i, pk := range msg {
					if i != lost {
						sent = append(sent, pk)
					}
				}
				p.Send(sent...)
				if lost == len(msg)-1 {
					// Nothing follows the lost packet: no NAK is owed.
					p.Collect(responses.Liveness)
				} else {
					// Which NAK the loss draws is C9-121's and C9-114's
					// concern, the MSN a NAK carries C9-149's: setup here.
					var nak *trace.Record
					p.Setup("", fmt.Sprintf("the device NAKs the packets after the lost one with a sequence NAK at PSN %d", msg[lost].PSN), func() {
						nak, _ = p.Expect(fmt.Sprintf("a sequence NAK with PSN %d", msg[lost].PSN), responses.Liveness, harness.IsNAK(wire.NAKPSNSequence))
					})
					p.Setup("C9-149", "the sequence NAK carries the current MSN", func() {
						if nak.Packet.AETH.MSN != k&0xFFFFFF {
							p.Fail([]string{fmt.Sprintf("the NAK carrying MSN %d (the message is not complete)", k&0xFFFFFF)},
								fmt.Sprintf("MSN %d", nak.Packet.AETH.MSN), nak)
						}
					})
				}
				p.Send(msg[lost:]...)
				expectAck(p, k+1)
				p.Send(p.Message(wire.WriteOnly, 8, 0, true)...)
				expectAck(p, k+2)
			})
	}

	r.Active("a duplicate SEND does not move the MSN",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 70, SetPSNs: true}},
		func(p *harness.Peer) {
			k := responses.Baseline(p)
			first := p.Message(wire.SendOnly, 10, 0, false)
			p.Send(first...)
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			k += 2
			expectAck(p, k)
			dup := *first[0]
			dup.AckReq = true
			p.Send(&dup)
			for _, rec := range responses.Acks(p.Collect(responses.Liveness)) {
				if rec.Packet.AETH.MSN != k&0xFFFFFF {
					p.Fail([]string{fmt.Sprintf("MSN %d in any answer to the duplicate (nothing new completed)", k&0xFFFFFF)},
						fmt.Sprintf("%s with MSN %d", rec.Packet.AETH, rec.Packet.AETH.MSN), rec)
				}
			}
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			expectAck(p, k+1)
		})

	r.Active("a duplicate READ is answered again without moving the MSN",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 3000, SetPSNs: true}},
		func(p *harness.Peer) {
			k := responses.Baseline(p)
			rd := p.Read(4*512, 0)
			p.Send(rd)
			checkRead(p, p.Collect(responses.Liveness), rd, k)
			k++
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			k++
			expectAck(p, k)
			dup := *rd
			p.Send(&dup)
			for _, rec := range responses.Responses(p.Collect(responses.Liveness)) {
				if kk := rec.Packet; kk.Opcode.Has(wire.HdrAETH) && wire.PSN(kk.AETH.MSN).After(wire.PSN(k)) {
					p.Fail([]string{fmt.Sprintf("an MSN of at most %d in the replayed response (the current MSN, or the one the READ had)", k&0xFFFFFF)},
						fmt.Sprintf("%s with MSN %d", kk.Opcode, kk.AETH.MSN), rec)
				}
			}
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			expectAck(p, k+1)
		})

	r.Active("ATOMICs count once each, and a duplicate ATOMIC not at all",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: 0xFFFFFE, SetPSNs: true}, Needs: rulekit.Needs{Atomics: true}},
		func(p *harness.Peer) {
			k := responses.Baseline(p)
			a := p.Atomic(wire.FetchAdd, 0, 1, 0)
			b := p.Atomic(wire.CompareSwap, 8, 1, 0)
			p.Send(a, b)
			recs := p.Collect(responses.Liveness)
			for i, q := range []*wire.Packet{a, b} {
				want := (k + uint32(i) + 1) & 0xFFFFFF
				found := false
				for _, rec := range responses.Responses(recs) {
					if kk := rec.Packet; kk.Opcode == wire.AtomicAcknowledge && kk.PSN == q.PSN {
						found = true
						if kk.AETH.MSN != want {
							p.Fail([]string{fmt.Sprintf("an ATOMIC Acknowledge with PSN %d and MSN %d (the ATOMIC counted)", q.PSN, want)},
								fmt.Sprintf("MSN %d", kk.AETH.MSN), rec)
						}
					}
				}
				if !found {
					p.Setup(dupnak.AtomicAckClause(q, recs), "the device answers the ATOMIC with an ATOMIC Acknowledge at its PSN", func() {
						p.Fail([]string{fmt.Sprintf("an ATOMIC Acknowledge with PSN %d", q.PSN)}, responses.Summary(responses.Responses(recs)), nil)
					})
				}
			}
			k += 2
			dup := *a
			p.Send(&dup)
			p.Collect(responses.Liveness)
			p.Send(p.Message(wire.SendOnly, 10, 0, true)...)
			expectAck(p, k+1)
		})

	r.Active("forty mixed messages with an ACK after every fourth",
		rulekit.Scenario{Config: dut.ConnConfig{MTU: 512, ExpectedPSN: 0xFFFFE0, SetPSNs: true}},
		func(p *harness.Peer) {
			k := responses.Baseline(p)
			for i := 0; i < 40; i++ {
				ack := i%4 == 3
				switch i % 3 {
				case 0:
					p.Send(p.Message(wire.SendOnly, 100*(i%5), 0, ack)...)
				case 1:
					p.Send(p.Message(wire.WriteOnly, 300*(i%7)+1, 0, ack)...)
				default:
					p.Send(p.Message(wire.SendOnly, 512*(i%3)+7, 0, ack)...)
				}
				k++
				if ack {
					expectAck(p, k)
				}
			}
		})
})

// expectAck waits for the ACK of the last request sent (earlier ACKs a
// coalescing responder sends are the passive monitor's to judge) and
// fails the spec unless it carries MSN k.
func expectAck(p *harness.Peer, k uint32) {
	want := k & 0xFFFFFF
	last := p.PSN.Add(-1)
	rec := p.ExpectAck(last, "the last request sent", responses.Liveness)
	if rec.Packet.AETH.MSN != want {
		p.Fail([]string{fmt.Sprintf("an ACK with MSN %d: one per new message completed so far, none for duplicates", want)},
			fmt.Sprintf("ACK with PSN %d and MSN %d", rec.Packet.PSN, rec.Packet.AETH.MSN), rec)
	}
}

// readMSN sends a READ of n bytes after k completed messages and checks
// its response's MSNs.
func readMSN(p *harness.Peer, n int, k uint32) {
	rd := p.Read(n, 0)
	p.Send(rd)
	checkRead(p, p.Collect(responses.Liveness), rd, k)
}

// checkRead checks the MSNs of READ rd's response among recs, the READ
// coming after k completed messages: the First carries k or k+1, the Last
// or Only k+1 (and the Last no less than the First). The response is the
// READ response packets following the READs sent before rd (reads), taken
// in order with counts by the MTU, so misnumbered PSNs (C9-96's concern)
// do not hide the MSNs.
func checkRead(p *harness.Peer, recs []*trace.Record, rd *wire.Packet, k uint32, reads ...*wire.Packet) {
	reads = append(reads, rd)
	var plans []responses.ReadPlan
	for _, q := range reads {
		plans = append(plans, responses.ReadPlan{Req: q})
	}
	stream := responses.SplitStreams(recs, plans, p.MTU())[len(reads)-1]
	n := wire.ReadResponsePackets(rd.RETH.Length, p.MTU())
	k0, k1 := k&0xFFFFFF, (k+1)&0xFFFFFF
	want := []string{fmt.Sprintf("First MSN %d or %d (the READ counted on validation or at its end), Last or Only MSN %d (the READ counted)", k0, k1, k1)}
	if len(stream) < n {
		// An incomplete answer is the clause's whose rule it breaks.
		clause, hi := dupnak.ReadClause(rd, recs, n)
		p.Setup(clause, "the device answers the READ in full", func() {
			p.Fail(want, fmt.Sprintf("%d response packets: %s", len(stream), responses.Summary(stream)), hi)
		})
	}
	if f := stream[0]; n > 1 && f.Packet.Opcode.Has(wire.HdrAETH) && answers.ACKKind(f.Packet) {
		if m := f.Packet.AETH.MSN; m != k0 && m != k1 {
			p.Fail(want, fmt.Sprintf("the first packet carries MSN %d", m), f)
		}
	}
	if l := stream[n-1]; l.Packet.Opcode.Has(wire.HdrAETH) && answers.ACKKind(l.Packet) {
		if m := l.Packet.AETH.MSN; m != k1 {
			p.Fail(want, fmt.Sprintf("the %s carries MSN %d", l.Packet.Opcode, m), l)
		}
	}
}
