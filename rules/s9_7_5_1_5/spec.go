package s9_7_5_1_5

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// §9.7.5.1.5, in our words (a section-keyed rule: no public clause number
// states it): a request that arrives at the expected PSN but cannot be
// executed is answered with a NAK invalid request, never with a positive
// ACK as if it had been executed, and never with silence. Each scenario
// has the device acknowledge a SEND (so its expected PSN is known), then
// sends one such request with AckReq at the expected PSN: a SEND or WRITE
// carrying more than the path MTU, a reserved RC opcode, a SEND with
// Invalidate naming an R_Key the device cannot invalidate. The NAK's PSN
// is C9-125's matter, not judged here. When nothing comes, one SEND more
// tells whether the device dropped the request: a sequence NAK naming
// the request's PSN shows it still expects it.

// invalid is one request a responder cannot execute.
type invalid struct {
	name string
	mtu  int
	// build returns the request's packets at the expected PSN (the last
	// one the invalid one, with AckReq), advancing p.PSN past them.
	build func(p *harness.Peer) []*wire.Packet
}

// unknownKey is an R_Key the device's region does not have (its own with
// index bits flipped), which no device can invalidate.
func unknownKey(p *harness.Peer) uint32 { return p.Info.RKey ^ 0x5A5A00 }

// next returns a bare request at p.PSN with AckReq and payload n bytes,
// and advances p.PSN.
func next(p *harness.Peer, op wire.Opcode, n int, seed byte) *wire.Packet {
	k := p.Packet(op, p.PSN)
	k.Payload, k.AckReq = dupnak.Pattern(seed, n), true
	p.PSN = p.PSN.Next()
	return k
}

func cases() []invalid {
	var out []invalid
	for _, mtu := range []int{256, 1024} {
		mtu := mtu
		out = append(out, invalid{fmt.Sprintf("a SEND Only of %d bytes, 4 more than the path MTU", mtu+4), mtu,
			func(p *harness.Peer) []*wire.Packet { return []*wire.Packet{next(p, wire.SendOnly, p.MTU()+4, 4)} }})
	}
	out = append(out,
		invalid{"an RDMA WRITE Only of 516 bytes, 4 more than the path MTU", 512, func(p *harness.Peer) []*wire.Packet {
			k := next(p, wire.WriteOnly, p.MTU()+4, 6)
			k.RETH = wire.RETH{VA: p.Info.VA, RKey: p.Info.RKey, Length: uint32(len(k.Payload))}
			return []*wire.Packet{k}
		}},
		invalid{"the reserved RC opcode 0x15", 1024, func(p *harness.Peer) []*wire.Packet {
			return []*wire.Packet{next(p, wire.Opcode(0x15), 16, 5)}
		}},
		invalid{"the reserved RC opcode 0x1A", 1024, func(p *harness.Peer) []*wire.Packet {
			return []*wire.Packet{next(p, wire.Opcode(0x1A), 16, 7)}
		}},
		invalid{"a SEND Only with Invalidate naming an R_Key the device cannot invalidate", 1024, func(p *harness.Peer) []*wire.Packet {
			k := next(p, wire.SendOnlyInvalidate, 16, 8)
			k.IETH = unknownKey(p)
			return []*wire.Packet{k}
		}},
		invalid{"a two-packet SEND whose Last with Invalidate names an R_Key the device cannot invalidate", 256, func(p *harness.Peer) []*wire.Packet {
			first := next(p, wire.SendFirst, p.MTU(), 9)
			first.AckReq = false
			last := next(p, wire.SendLastInvalidate, 16, 10)
			last.IETH = unknownKey(p)
			return []*wire.Packet{first, last}
		}},
	)
	return out
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	for i, c := range cases() {
		c := c
		start := wire.PSN(7000 + 1313*i)
		if i%3 == 2 {
			start = 0xFFFFFF // the invalid request right after the 2^24 wrap
		}
		r.Active(fmt.Sprintf("%s, with AckReq: a NAK invalid request (MTU %d, PSNs from %d)", c.name, c.mtu, start),
			rulekit.Scenario{Config: dupnak.Cfg(c.mtu, start)}, func(p *harness.Peer) { run(p, c) })
	}
})

// run establishes the expected PSN, sends c's request and judges the
// device's answer.
func run(p *harness.Peer, c invalid) {
	ginkgo.GinkgoHelper()
	dupnak.Alive(p, "a SEND establishing the expected PSN")
	e := p.PSN
	pkts := c.build(p)
	bad := pkts[len(pkts)-1]
	p.Send(pkts...)
	want := fmt.Sprintf("a NAK invalid request answering %s (PSN %d; which PSN the NAK carries is C9-125's matter)", c.name, bad.PSN)
	recs := p.Collect(dupnak.Liveness)
	for _, rec := range recs {
		k := rec.Packet
		switch {
		case k.Opcode != wire.Acknowledge:
			continue
		case k.AETH.IsNAK(wire.NAKInvalidRequest):
			return
		case k.AETH.IsACK():
			if k.PSN == bad.PSN {
				p.Fail([]string{want}, fmt.Sprintf("%s: a positive ACK covering the request, as if it had been executed", k), rec)
			}
			// An ACK of the requests before it; one beyond every
			// request sent is C9-95's, which its monitor finds.
		case k.AETH.IsRNR():
			ginkgo.Skip(fmt.Sprintf("not exercised: the device refused the request with %s (receiver not ready) before judging whether it can execute it", k))
		case k.AETH.IsNAK(wire.NAKPSNSequence) && k.PSN != bad.PSN:
			// The device does not expect the PSN the scenario put the
			// request at: nothing can be judged of its answer.
			p.Setup("", fmt.Sprintf("the device expects PSN %d", bad.PSN), func() {
				p.Fail([]string{fmt.Sprintf("the device expecting PSN %d, as its ACK of PSN %d showed", bad.PSN, e.Add(-1))}, k.String(), rec)
			})
		default:
			p.Fail([]string{want}, k.String(), rec)
		}
	}
	// Nothing answered it: one SEND more shows whether the device dropped
	// it (a sequence NAK naming its PSN) or is gone.
	probe := next(p, wire.SendOnly, 16, 11)
	p.Send(probe)
	after := p.Collect(dupnak.Liveness)
	seen := fmt.Sprintf("no answer within %v", dupnak.Liveness)
	var hi *trace.Record
	for _, rec := range after {
		if k := rec.Packet; k.Opcode == wire.Acknowledge && k.AETH.IsNAK(wire.NAKPSNSequence) && k.PSN == bad.PSN {
			seen += fmt.Sprintf("; a SEND sent after it drew %s: the device dropped the request and still expects its PSN", k)
			hi = rec
			break
		}
	}
	if hi == nil {
		seen += "; a SEND sent after it drew " + harness.SeenText(after)
	}
	p.Fail([]string{want}, seen, hi)
}
