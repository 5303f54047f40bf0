package c9_122

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-122, in our words: at most one PSN sequence error NAK is outstanding;
// after one, none until a request with the expected PSN arrives. Shares
// its meaning with C9-114 (whose spec file covers what else the latch
// holds back). Here: two gaps before the resend (one NAK, for the first),
// two bursts of out-of-sequence requests (still one NAK), and a new gap
// after the first one was repaired (one new NAK for it, and only one).

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		kind  string
		mtu   int
		start wire.PSN
		srq   bool
	}
	var cases []tc
	i := 0
	for _, kind := range []string{"two-gaps", "bursts-twice", "new-gap"} {
		for _, mtu := range dupnak.MTUs {
			cases = append(cases, tc{kind, mtu, wire.PSN(300 + 1000*i), false})
			i++
		}
	}
	cases = append(cases,
		tc{"two-gaps", 1024, 0xFFFFFD, false},
		tc{"new-gap", 256, 0xFFFFFB, false},
		tc{"bursts-twice", 2048, 7777, true},
	)
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.SRQ, cfg.RecvWQEs = c.srq, dupnak.LatchWQEs(c.kind)
		name := fmt.Sprintf("%s: only one sequence NAK outstanding (MTU %d, PSNs from %d", dupnak.LatchKinds[c.kind], c.mtu, c.start)
		if c.srq {
			name += ", SRQ"
		}
		r.Active(name+")", rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{Completions: true, SRQ: c.srq}},
			func(p *harness.Peer) { dupnak.LatchScenario(p, c.kind) })
	}
})
