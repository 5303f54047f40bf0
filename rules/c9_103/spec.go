package c9_103

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-103, in our words: a duplicate request leaves the responder's
// expected PSN where it was. The expected PSN shows on the wire only
// through what the responder does next, so each scenario establishes the
// expected PSN e, replays an earlier request (a SEND, a WRITE, a READ, a
// Middle packet of a multi-packet SEND, an ATOMIC, several out of PSN
// order, one while the NAK latch holds), and then either skips
// e (the sequence NAK must name e, not a PSN after the duplicate) or sends
// e itself (it must be taken in sequence and acknowledged).

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		kind  string // what is replayed: send, write, read, send-middle, atomic, latched
		then  string // skip: send e+1, expect a sequence NAK naming e; next: send e, expect its ACK
		mtu   int
		start wire.PSN
		srq   bool
	}
	var cases []tc
	i := 0
	for _, kind := range []string{"send", "write", "read", "send-middle", "latched", "several"} {
		for _, then := range []string{"skip", "next"} {
			if kind == "latched" {
				then = "next" // while latched, a request skipping e is dropped silently
			}
			mtu := dupnak.MTUs[i%len(dupnak.MTUs)]
			cases = append(cases, tc{kind, then, mtu, wire.PSN(1000 + 1000*i), false})
			i++
		}
	}
	cases = append(cases,
		tc{"send", "skip", 1024, 0xFFFFFD, false},
		tc{"read", "skip", 256, 0xFFFFFA, false},
		tc{"send-middle", "next", 512, 0xFFFFFE, false},
		tc{"send", "skip", 2048, 77, true},
		tc{"send", "next", 4096, 88, true},
	)
	for _, c := range cases {
		c := c
		name := fmt.Sprintf("a duplicate %s, then %s (MTU %d, PSNs from %d", c.kind, map[string]string{
			"skip": "a request skipping the expected PSN must be NAKed with it",
			"next": "the expected PSN itself must be taken in sequence"}[c.then], c.mtu, c.start)
		if c.srq {
			name += ", SRQ"
		}
		name += ")"
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.SRQ = c.srq
		r.Active(name, rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{SRQ: c.srq}}, func(p *harness.Peer) {
			dup := prefix(p, c.kind)
			scenario(p, dup, c.then)
		})
	}
	for _, then := range []string{"skip", "next"} {
		then := then
		r.Active("a duplicate ATOMIC, then "+then, rulekit.Scenario{Config: dupnak.Cfg(1024, 5000), Needs: rulekit.Needs{Atomics: true}},
			func(p *harness.Peer) {
				dup := prefix(p, "atomic")
				scenario(p, dup, then)
			})
	}
})

// prefix runs the requests before the duplicates and returns the requests
// to replay, in the order to send them; when it returns, every request so
// far has been answered.
func prefix(p *harness.Peer, kind string) []*wire.Packet {
	var dup *wire.Packet
	switch kind {
	case "several":
		var pkts []*wire.Packet
		for i := 0; i < 6; i++ {
			pkts = append(pkts, dupnak.Send(p, 32, i == 5))
		}
		p.Send(pkts...)
		dupnak.ExpectAck(p, pkts[5].PSN, "six SENDs, AckReq on the last")
		// Three duplicates, out of PSN order, the newest first.
		return []*wire.Packet{pkts[5], pkts[1], pkts[3]}
	case "send", "latched":
		var pkts []*wire.Packet
		for i := 0; i < 6; i++ {
			pkts = append(pkts, dupnak.Send(p, 32, i == 5))
		}
		p.Send(pkts...)
		dupnak.ExpectAck(p, pkts[5].PSN, "six SENDs, AckReq on the last")
		dup = pkts[2]
		if kind == "latched" {
			// Open a gap first: the duplicate arrives while the NAK latch
			// holds.
			e := p.PSN
			p.PSN = p.PSN.Next()
			ahead := dupnak.Send(p, 8, true)
			p.PSN = e
			p.Send(ahead)
			// Opening the gap is setup: the NAK's PSN is C9-121's.
			p.Setup("C9-121", "the device NAKs the gap with a sequence NAK naming the expected PSN", func() {
				dupnak.ExpectNAK(p, wire.SynNAK(wire.NAKPSNSequence), e, "the gap before the duplicate")
			})
		}
	case "write":
		var pkts []*wire.Packet
		for i := 0; i < 3; i++ {
			pkts = append(pkts, dupnak.Write(p, 64, 64*i, false))
		}
		pkts = append(pkts, dupnak.Send(p, 8, false), dupnak.Send(p, 8, true))
		p.Send(pkts...)
		dupnak.ExpectAck(p, pkts[4].PSN, "three WRITEs and two SENDs")
		dup = pkts[1]
	case "read":
		s := dupnak.Send(p, 8, true)
		p.Send(s)
		dupnak.ExpectAck(p, s.PSN, "a SEND")
		dup = dupnak.CompleteRead(p, 3*p.MTU()+5, 128)
		s2 := dupnak.Send(p, 8, true)
		p.Send(s2)
		dupnak.ExpectAck(p, s2.PSN, "a SEND after the READ")
	case "send-middle":
		pkts := p.Message(wire.SendOnly, 3*p.MTU()+p.MTU()/2, 0, false)
		s := dupnak.Send(p, 8, true)
		p.Send(append(pkts, s)...)
		dupnak.ExpectAck(p, s.PSN, "a four-packet SEND and a SEND")
		dup = pkts[1]
	case "atomic":
		s := dupnak.Send(p, 8, true)
		p.Send(s)
		dupnak.ExpectAck(p, s.PSN, "a SEND")
		at := p.Atomic(wire.FetchAdd, 256, 1, 0)
		p.Send(at)
		p.ExpectAtomicAck(at.PSN, "an ATOMIC", dupnak.Liveness)
		s2 := dupnak.Send(p, 8, true)
		p.Send(s2)
		dupnak.ExpectAck(p, s2.PSN, "a SEND after the ATOMIC")
		dup = at
	}
	return []*wire.Packet{dup}
}

// scenario replays dups and then probes the expected PSN e = p.PSN.
func scenario(p *harness.Peer, dups []*wire.Packet, then string) {
	e := p.PSN
	var d *wire.Packet
	for _, dup := range dups {
		d = dupnak.Dup(dup, true)
		p.Send(d)
	}
	p.Collect(dupnak.Short)        // the duplicate's answer, if any: not this clause's concern
	k0 := dupnak.Send(p, 24, true) // PSN e
	k1 := dupnak.Send(p, 24, true) // PSN e+1
	why := fmt.Sprintf("the duplicate at PSN %d must leave the expected PSN at %d", d.PSN, e)
	switch then {
	case "skip":
		p.Send(k1)
		nak, _ := p.Expect(fmt.Sprintf("a PSN sequence error NAK with PSN %d (%s)", e, why), dupnak.Liveness, func(k *wire.Packet) bool {
			return k.Opcode == wire.Acknowledge && !k.AETH.IsACK() || harness.IsAck(k) && k.PSN.AtOrAfter(e)
		})
		if k := nak.Packet; k.AETH.IsNAK(wire.NAKPSNSequence) && k.PSN == k1.PSN {
			// A sequence NAK naming the packet received, not an expected
			// PSN: C9-121's finding; the expected PSN cannot be read.
			p.Setup("C9-121", "the sequence NAK names the responder's expected PSN", func() {
				p.Fail([]string{fmt.Sprintf("a PSN sequence error NAK with PSN %d, the responder's expected PSN", e)}, k.String(), nak)
			})
		}
		if k := nak.Packet; !k.AETH.IsNAK(wire.NAKPSNSequence) || k.PSN != e {
			p.Fail([]string{fmt.Sprintf("a PSN sequence error NAK with PSN %d: the request at %d skipped the expected PSN %d, which the duplicate must not have moved", e, k1.PSN, e)},
				fmt.Sprintf("%s (the duplicate was PSN %d)", k, d.PSN), nak)
		}
		p.Send(k0, dupnak.Dup(k1, true))
		p.Own(func() { dupnak.ExpectAck(p, k1.PSN, "the resent requests, taken in sequence from "+fmt.Sprint(e)) })
	case "next":
		// The ACKs show where the expected PSN is: this clause's check.
		p.Own(func() {
			p.Send(k0)
			dupnak.ExpectAck(p, e, why)
			p.Send(k1)
			dupnak.ExpectAck(p, k1.PSN, "the next request in sequence")
		})
	}
}
