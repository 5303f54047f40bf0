package dupnak

import (
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/wire"
)

// NAKCase is one way to provoke a NAK that must carry the responder's
// expected PSN (C9-111/C9-121/C9-125). Run drives the peer up to the
// provoking request and returns the expected PSN the NAK must carry and
// the NAK codes acceptable there.
type NAKCase struct {
	Name  string
	Codes []uint8
	Run   func(p *harness.Peer) (e wire.PSN)
	// MaxDestRdAtomic, when set, is the responder resources the
	// connection must be configured with.
	MaxDestRdAtomic int
	// Governs is the rule of ours that requires the NAK (the trigger's
	// clause; "" when none does).
	Governs string
}

// invalidRule is the section-keyed rule that owes an invalid request its
// NAK invalid request (rules/s9_7_5_1_5; a string here, since that
// package builds on this one).
const invalidRule = "§9.7.5.1.5"

// establish completes three SENDs so the expected PSN is known from the
// device's own ACK.
func establish(p *harness.Peer) {
	ginkgo.GinkgoHelper()
	var pkts []*wire.Packet
	for i := 0; i < 3; i++ {
		pkts = append(pkts, Send(p, 16, i == 2))
	}
	p.Send(pkts...)
	ExpectAck(p, pkts[2].PSN, "three SENDs establishing the expected PSN")
}

// skipTo sends a SEND Only with AckReq at PSN psn without moving p.PSN.
func skipTo(p *harness.Peer, psn wire.PSN) {
	k := p.Packet(wire.SendOnly, psn)
	k.Payload = Pattern(1, 16)
	k.AckReq = true
	p.Send(k)
}

func nc(name string, codes []uint8, run func(p *harness.Peer) wire.PSN) NAKCase {
	return NAKCase{Name: name, Codes: codes, Run: run}
}

var seqOnly = []uint8{wire.NAKPSNSequence}
var invOnly = []uint8{wire.NAKInvalidRequest}
var either = []uint8{wire.NAKPSNSequence, wire.NAKInvalidRequest}

// SeqCases provoke PSN sequence errors.
func SeqCases() []NAKCase {
	cases := []NAKCase{
		nc("a request one PSN ahead", seqOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			skipTo(p, p.PSN.Next())
			return p.PSN
		}),
		nc("several requests far ahead", seqOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			for i := 5; i < 9; i++ {
				skipTo(p, p.PSN.Add(i))
			}
			return p.PSN
		}),
		nc("the request after a lost multi-packet READ", seqOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			e := p.PSN
			p.Read(3*p.MTU()+1, 0) // reserves four PSNs, never sent
			k := Send(p, 16, true)
			p.Send(k)
			return e
		}),
		nc("a request skipping the PSN after a completed READ", seqOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			CompleteRead(p, 2*p.MTU()+7, 0)
			skipTo(p, p.PSN.Next())
			return p.PSN
		}),
	}
	for pos := 0; pos < 4; pos++ {
		for _, op := range []wire.Opcode{wire.SendOnly, wire.WriteOnly} {
			pos, op := pos, op
			what := map[int]string{0: "First", 1: "first Middle", 2: "second Middle", 3: "Last"}[pos]
			cases = append(cases, nc(fmt.Sprintf("a four-packet %s whose %s packet is lost", map[wire.Opcode]string{wire.SendOnly: "SEND", wire.WriteOnly: "WRITE"}[op], what), seqOnly,
				func(p *harness.Peer) wire.PSN {
					establish(p)
					pkts := p.Message(op, 3*p.MTU()+p.MTU()/2, 0, true)
					pkts = append(pkts, Send(p, 8, true))
					for i, k := range pkts {
						if i != pos {
							p.Send(k)
						}
					}
					return pkts[pos].PSN
				}))
		}
	}
	return cases
}

// InvCases provoke invalid requests at the expected PSN: a NAK invalid
// request is owed to each (§9.7.5.1.5; the one beyond the responder
// resources by Table-58).
func InvCases() []NAKCase {
	cases := []NAKCase{
		nc("a SEND Middle with no message in progress", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			k := p.Packet(wire.SendMiddle, p.PSN)
			k.Payload, k.AckReq = Pattern(2, p.MTU()), true
			p.Send(k)
			return p.PSN
		}),
		nc("an RDMA WRITE Last with no message in progress", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			k := p.Packet(wire.WriteLast, p.PSN)
			k.Payload, k.AckReq = Pattern(2, 32), true
			p.Send(k)
			return p.PSN
		}),
		nc("a new SEND First while a SEND is in progress", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			first := p.Message(wire.SendOnly, 2*p.MTU()+1, 0, false)[0]
			p.Send(first)
			k := p.Packet(wire.SendFirst, first.PSN.Next())
			k.Payload, k.AckReq = Pattern(3, p.MTU()), true
			p.Send(k)
			return first.PSN.Next()
		}),
		nc("an RDMA WRITE Middle inside a SEND", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			first := p.Message(wire.SendOnly, 2*p.MTU()+1, 0, false)[0]
			p.Send(first)
			k := p.Packet(wire.WriteMiddle, first.PSN.Next())
			k.Payload, k.AckReq = Pattern(3, p.MTU()), true
			p.Send(k)
			return first.PSN.Next()
		}),
		nc("a SEND Only longer than the path MTU", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			k := p.Packet(wire.SendOnly, p.PSN)
			k.Payload, k.AckReq = Pattern(4, p.MTU()+4), true
			p.Send(k)
			return p.PSN
		}),
		nc("an ATOMIC on a QP without remote atomic access", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			k := p.Packet(wire.FetchAdd, p.PSN)
			k.Atomic = wire.AtomicETH{VA: p.Info.VA, RKey: p.Info.RKey, SwapAdd: 1}
			k.AckReq = true
			p.Send(k)
			return p.PSN
		}),
		nc("a reserved RC opcode (0x15)", invOnly, func(p *harness.Peer) wire.PSN {
			establish(p)
			k := p.Packet(wire.Opcode(0x15), p.PSN)
			k.Payload, k.AckReq = Pattern(5, 16), true
			p.Send(k)
			return p.PSN
		}),
		{Name: "more READs outstanding than the responder resources (Table 58)", Codes: invOnly, MaxDestRdAtomic: 2, Governs: "Table-58", Run: func(p *harness.Peer) wire.PSN {
			establish(p)
			n := p.Info.Config.MaxDestRdAtomic
			var e wire.PSN
			for i := 0; i <= n; i++ {
				if i == n {
					e = p.PSN
				}
				p.Send(p.Read(32*p.MTU(), 0))
			}
			return e
		}},
	}
	for i := range cases {
		if cases[i].Governs == "" {
			cases[i].Governs = invalidRule
		}
	}
	return cases
}

// AheadInvalidCases send a request that is both out of sequence and
// invalid: the NAK names the expected PSN whichever check comes first.
func AheadInvalidCases() []NAKCase {
	return []NAKCase{
		nc("an RDMA WRITE Middle one PSN ahead, inside a SEND", either, func(p *harness.Peer) wire.PSN {
			establish(p)
			first := p.Message(wire.SendOnly, 2*p.MTU()+1, 0, false)[0]
			p.Send(first)
			k := p.Packet(wire.WriteMiddle, first.PSN.Add(2))
			k.Payload, k.AckReq = Pattern(3, p.MTU()), true
			p.Send(k)
			return first.PSN.Next()
		}),
		nc("a SEND Middle two PSNs ahead, with no message in progress", either, func(p *harness.Peer) wire.PSN {
			establish(p)
			k := p.Packet(wire.SendMiddle, p.PSN.Add(2))
			k.Payload, k.AckReq = Pattern(3, p.MTU()), true
			p.Send(k)
			return p.PSN
		}),
		nc("a SEND First three PSNs ahead, inside a WRITE", either, func(p *harness.Peer) wire.PSN {
			establish(p)
			first := p.Message(wire.WriteOnly, 3*p.MTU(), 0, false)[0]
			p.Send(first)
			k := p.Packet(wire.SendFirst, first.PSN.Add(3))
			k.Payload, k.AckReq = Pattern(3, p.MTU()), true
			p.Send(k)
			return first.PSN.Next()
		}),
	}
}

// RunNAKCase runs c and expects the first NAK to carry one of its codes
// and the expected PSN e.
//
// The NAK of the case's kind is the scenario's trigger: a device that
// answers otherwise (an ACK, another NAK, nothing) leaves the clause not
// exercised, saying what it did, and the rule of ours that requires the
// NAK (NAKCase.Governs) gets the finding. A NAK of the other kind (an
// "either" case answered with a sequence NAK in a C9-125 scenario) with
// the wrong PSN is a finding of that kind's clause (C9-121 or C9-125).
func RunNAKCase(p *harness.Peer, c NAKCase) {
	ginkgo.GinkgoHelper()
	e := c.Run(p)
	if c.MaxDestRdAtomic != 0 {
		overrunRace(p, e)
	}
	var want []string
	for _, code := range c.Codes {
		want = append(want, fmt.Sprintf("an Acknowledge with %s and PSN %d, the responder's expected PSN", wire.SyndromeString(wire.SynNAK(code)), e))
	}
	kinds := make([]string, len(c.Codes))
	for i, code := range c.Codes {
		kinds[i] = wire.SyndromeString(wire.SynNAK(code))
	}
	trigger := fmt.Sprintf("answer %s with a NAK (%s)", c.Name, strings.Join(kinds, " or "))
	p.Trigger(c.Governs, trigger, func() {
		rec, skipped := p.Expect(want[0], Liveness, func(k *wire.Packet) bool {
			return k.Opcode == wire.Acknowledge && !k.AETH.IsACK() || harness.IsAck(k) && k.PSN.AtOrAfter(e)
		})
		k := rec.Packet
		for _, code := range c.Codes {
			if k.AETH.IsNAK(code) && k.PSN == e {
				return
			}
		}
		own := false
		for _, code := range c.Codes {
			own = own || k.AETH.IsNAK(code)
		}
		clause := nakClause(k)
		switch {
		case own && (clause == p.Clause || p.Clause == "C9-111"):
			// The trigger was taken; the NAK's PSN is the clause's own check.
			p.Own(func() { p.Fail(want, k.String(), rec) })
		case clause != "" && k.PSN != e:
			p.Refine(clause, func() {
				p.Fail([]string{fmt.Sprintf("%s with PSN %d, the responder's expected PSN", k.AETH, e)}, k.String(), rec)
			})
		default:
			p.Fail(want, harness.SeenText(append(skipped, rec)), rec)
		}
	})
}

// nakClause names the clause that governs the PSN of NAK k: C9-121 for a
// PSN sequence error, C9-125 for an invalid request ("" otherwise).
func nakClause(k *wire.Packet) string {
	switch {
	case k.Opcode != wire.Acknowledge:
	case k.AETH.IsNAK(wire.NAKPSNSequence):
		return "C9-121"
	case k.AETH.IsNAK(wire.NAKInvalidRequest):
		return "C9-125"
	}
	return ""
}
