package c9_115

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-115, in our words (shared with C9-106): an error met while servicing
// a duplicate request is never reported with a NAK; the duplicate is
// dropped. C9-106's spec file covers invalidated regions and out-of-range
// duplicate READs; here: a duplicate READ with another R_Key, a duplicate
// WRITE after the R_Key was invalidated (it needs no memory access at all,
// so it is simply acknowledged), and a duplicate READ whose region is
// invalidated while its replay is being sent.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		kind  string
		mtu   int
		start wire.PSN
		srq   bool
	}
	var cases []tc
	i := 0
	for _, kind := range []string{"read-wrong-rkey", "write-invalid-rkey", "read-invalid-mid"} {
		for _, mtu := range dupnak.MTUs {
			cases = append(cases, tc{kind, mtu, wire.PSN(500 + 1000*i), false})
			i++
		}
	}
	cases = append(cases, tc{"read-invalid-mid", 256, 0xFFFFFE, false}, tc{"write-invalid-rkey", 1024, 42, true})
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.SRQ = c.srq
		name := fmt.Sprintf("%s (MTU %d, PSNs from %d", dupnak.DupErrorKinds[c.kind], c.mtu, c.start)
		if c.srq {
			name += ", SRQ"
		}
		r.Active(name+")", rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{Memory: true, SRQ: c.srq}},
			func(p *harness.Peer) { dupnak.DupErrorScenario(p, c.kind) })
	}
})
