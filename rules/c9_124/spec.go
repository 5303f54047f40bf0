package c9_124

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-124, in our words: a remote access error NAK carries the PSN of the
// request packet that caused the error, not the expected PSN. Each
// scenario completes two SENDs (so the offending packet is not the first
// PSN of the connection), then sends a request the device's memory region
// refuses: a WRITE or READ with a wrong R_Key, a WRITE after the region's
// R_Key was invalidated, an ATOMIC with a wrong R_Key, a multi-packet
// WRITE whose third packet runs past the region's end (AckReq on every
// packet, so the packets taken before it are acknowledged), and a READ
// running past the end.
//
// Where the overrun is caught depends on the responder: one checking the
// whole RETH at the First packet refuses the First (and must not have
// acknowledged it); one checking each packet refuses the third. A READ
// running past the end may be refused at its request, or — C9-100 — by a
// NAK in place of the first response packet that would carry bad data.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		kind  string
		mtu   int
		start wire.PSN
		need  rulekit.Needs
	}
	kinds := map[string]string{
		"write-rkey":    "an RDMA WRITE with a wrong R_Key",
		"write-invalid": "an RDMA WRITE after the region's R_Key was invalidated",
		"write-overrun": "a four-packet RDMA WRITE whose third packet runs past the region",
		"read-rkey":     "an RDMA READ with a wrong R_Key",
		"read-overrun":  "an RDMA READ running past the region",
		"atomic-rkey":   "an ATOMIC with a wrong R_Key",
	}
	var cases []tc
	i := 0
	for _, kind := range []string{"write-rkey", "write-invalid", "write-overrun", "read-rkey", "read-overrun"} {
		for _, mtu := range []int{256, 4096} {
			cases = append(cases, tc{kind, mtu, wire.PSN(400 + 1000*i), rulekit.Needs{}})
			i++
		}
	}
	cases = append(cases,
		tc{"write-overrun", 1024, 0xFFFFFE, rulekit.Needs{}},
		tc{"write-overrun", 512, 0xFFFFFC, rulekit.Needs{}},
		tc{"read-rkey", 2048, 0xFFFFFF, rulekit.Needs{}},
		tc{"atomic-rkey", 1024, 8000, rulekit.Needs{Atomics: true}},
	)
	for _, c := range cases {
		c := c
		r.Active(fmt.Sprintf("%s: the NAK names the offending packet (MTU %d, PSNs from %d)", kinds[c.kind], c.mtu, c.start),
			rulekit.Scenario{Config: dupnak.Cfg(c.mtu, c.start), Needs: c.need},
			func(p *harness.Peer) { scenario(p, c.kind) })
	}
})

func scenario(p *harness.Peer, kind string) {
	m := p.MTU()
	s := []*wire.Packet{dupnak.Send(p, 8, false), dupnak.Send(p, 8, true)}
	p.Send(s...)
	dupnak.ExpectAck(p, s[1].PSN, "two SENDs first")
	badKey := p.Info.RKey ^ 0x00A5A500
	end := p.Info.Len
	var pkts []*wire.Packet
	var offending *wire.Packet
	switch kind {
	case "write-rkey":
		k := dupnak.Write(p, 64, 0, true)
		k.RETH.RKey = badKey
		pkts, offending = []*wire.Packet{k}, k
	case "write-invalid":
		if err := p.Conn.InvalidateRKey(); err != nil {
			p.Fail([]string{"the device's R_Key invalidated"}, err.Error(), nil)
		}
		k := dupnak.Write(p, 64, 0, true)
		pkts, offending = []*wire.Packet{k}, k
	case "write-overrun":
		// Four packets from 2.5 MTUs before the end: the third crosses it.
		pkts = p.Message(wire.WriteOnly, 4*m, end-2*m-m/2, true)
		for _, k := range pkts {
			k.AckReq = true
		}
		offending = pkts[2]
	case "read-rkey":
		k := p.Read(2*m, 0)
		k.RETH.RKey = badKey
		pkts, offending = []*wire.Packet{k}, k
	case "read-overrun":
		k := p.Read(4*m, end-2*m)
		pkts, offending = []*wire.Packet{k}, k
	case "atomic-rkey":
		k := p.Atomic(wire.FetchAdd, 64, 1, 0)
		k.Atomic.RKey = badKey
		pkts, offending = []*wire.Packet{k}, k
	}
	p.Send(pkts...)
	want := fmt.Sprintf("a remote access NAK with PSN %d, the offending %s", offending.PSN, offending.Opcode)
	// The trigger: a remote access NAK. Another answer (no NAK, another
	// NAK code) leaves C9-124, which is about that NAK's PSN, not
	// exercised; no clause of this suite says which NAK is owed.
	var nak *trace.Record
	var before []*trace.Record
	p.Trigger("", "refuse the access with a remote access NAK", func() {
		nak, before = p.Expect(want, dupnak.Liveness, func(k *wire.Packet) bool {
			return k.Opcode == wire.Acknowledge && !k.AETH.IsACK()
		})
		if k := nak.Packet; !k.AETH.IsNAK(wire.NAKRemoteAccess) {
			p.Fail([]string{want}, k.String(), nak)
		}
	})
	k := nak.Packet
	switch kind {
	case "write-overrun":
		first := pkts[0]
		switch k.PSN {
		case offending.PSN:
		case first.PSN:
			// Refused at the First (whole RETH checked): only if nothing
			// of the message was acknowledged before.
			if a := covering(before, first.PSN); a != nil {
				p.Fail([]string{want, fmt.Sprintf("a remote access NAK with PSN %d if the First packet's RETH was refused, before any ACK covering it", first.PSN)},
					fmt.Sprintf("%s after %s had acknowledged the First packet", k, a.Packet), nak)
			}
		default:
			p.Fail([]string{want, fmt.Sprintf("a remote access NAK with PSN %d (the First, refused for its RETH)", first.PSN)}, k.String(), nak)
		}
	case "read-overrun":
		// At the READ's PSN, or (C9-100) at the first response PSN whose
		// data lies past the region, after the responses before it.
		mid := offending.PSN.Add(2)
		if k.PSN != offending.PSN && !(k.PSN == mid && len(dupnak.ReadResponses(before, offending.PSN, offending.PSN.Add(1))) == 2) {
			p.Fail([]string{want, fmt.Sprintf("a remote access NAK with PSN %d, in place of the first response packet past the region, after the responses before it (C9-100)", mid)}, k.String(), nak)
		}
	default:
		if k.PSN != offending.PSN {
			p.Fail([]string{want}, k.String(), nak)
		}
	}
}

// covering returns a positive ACK among recs that covers psn.
func covering(recs []*trace.Record, psn wire.PSN) *trace.Record {
	for _, r := range recs {
		if harness.IsAck(r.Packet) && r.Packet.PSN.AtOrAfter(psn) {
			return r
		}
	}
	return nil
}
