package c9_114

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-114, in our words: after a PSN sequence error NAK the responder
// consumes no receive WQE, ignores new requests until the expected PSN
// arrives, sends no further sequence NAK, and still answers duplicates.
// Shares its meaning with C9-122 (whose spec file covers repeated gaps and
// bursts). Each scenario loses the request at the expected PSN e and sends
// what follows — a few SENDs, 32 of them in flight, the rest of a
// multi-packet SEND whose First is lost, a WRITE, a READ and a SEND, a
// duplicate while latched — expecting one sequence NAK naming e and
// nothing executed past it; then resends from e, with exactly as many
// receive WQEs posted as SENDs to take (an out-of-sequence SEND that took
// one would leave a later SEND without).

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		kind  string
		mtu   int
		start wire.PSN
		srq   bool
	}
	var cases []tc
	i := 0
	for _, kind := range []string{"burst3", "burst32", "first-lost", "mixed", "dup-latched"} {
		for _, mtu := range []int{256, 4096} {
			cases = append(cases, tc{kind, mtu, wire.PSN(200 + 1000*i), false})
			i++
		}
	}
	cases = append(cases,
		tc{"burst3", 1024, 0xFFFFFE, false},
		tc{"burst32", 1024, 0xFFFFF0, false},
		tc{"first-lost", 2048, 0xFFFFFF, false},
		tc{"burst3", 1024, 9000, true},
		tc{"mixed", 512, 9500, true},
	)
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.SRQ, cfg.RecvWQEs = c.srq, dupnak.LatchWQEs(c.kind)
		name := fmt.Sprintf("%s: one sequence NAK, nothing executed past the gap (MTU %d, PSNs from %d", dupnak.LatchKinds[c.kind], c.mtu, c.start)
		if c.srq {
			name += ", SRQ"
		}
		r.Active(name+")", rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{Completions: true, SRQ: c.srq}},
			func(p *harness.Peer) { dupnak.LatchScenario(p, c.kind) })
	}
})
