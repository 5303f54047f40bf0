package c9_106

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-106, in our words: an error met while answering a duplicate is never
// NAKed; the duplicate is dropped. Shares its meaning with C9-115, whose
// spec file sweeps the other errors. Here: a duplicate READ after its
// region's R_Key was invalidated, one asking for more than the original,
// and a partial one whose address does not match its PSN; each must get
// no NAK, no READ response outside the original's PSNs, and leave the
// connection working.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		kind  string
		mtu   int
		start wire.PSN
	}
	var cases []tc
	i := 0
	for _, kind := range []string{"read-invalid-rkey", "read-beyond", "read-misplaced"} {
		for _, mtu := range dupnak.MTUs {
			cases = append(cases, tc{kind, mtu, wire.PSN(100 + 1000*i)})
			i++
		}
	}
	cases = append(cases, tc{"read-invalid-rkey", 1024, 0xFFFFFD}, tc{"read-beyond", 512, 0xFFFFFF})
	for _, c := range cases {
		c := c
		r.Active(fmt.Sprintf("%s (MTU %d, PSNs from %d)", dupnak.DupErrorKinds[c.kind], c.mtu, c.start),
			rulekit.Scenario{Config: dupnak.Cfg(c.mtu, c.start), Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) { dupnak.DupErrorScenario(p, c.kind) })
	}
})
