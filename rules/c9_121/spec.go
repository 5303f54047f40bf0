package c9_121

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-121, in our words: a PSN sequence error NAK carries the responder's
// expected PSN. Shared meaning with C9-111 (the general rule) and C9-125
// (the invalid-request case). The scenarios establish the expected PSN
// from the device's own ACK, then lose requests in every position: one
// PSN, several, a whole multi-packet READ, the PSN right after a READ's
// reserved range, and each packet of four-packet SENDs and WRITEs; at
// every MTU, across the 2^24 wrap, and on a QP with an SRQ.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	i := 0
	for _, c := range dupnak.SeqCases() {
		c := c
		mtu := dupnak.MTUs[i%len(dupnak.MTUs)]
		start := wire.PSN(1000 + 997*i)
		if i%5 == 4 {
			start = 0xFFFFFD // the gap falls across the 2^24 wrap
		}
		srq := i%7 == 3
		cfg := dupnak.Cfg(mtu, start)
		cfg.SRQ = srq
		name := fmt.Sprintf("%s: the sequence NAK names the expected PSN (MTU %d, PSNs from %d", c.Name, mtu, start)
		if srq {
			name += ", SRQ"
		}
		r.Active(name+")", rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{SRQ: srq}},
			func(p *harness.Peer) { dupnak.RunNAKCase(p, c) })
		i++
	}
})
