package c9_111

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-111, in our words: a NAK for a PSN sequence error or an invalid
// request carries the responder's expected PSN. Shared meaning with C9-121
// (sequence errors, swept in its spec file) and C9-125 (invalid requests,
// likewise). Here, the general rule across both codes: a request ahead of
// the expected PSN, a lost First packet, an opcode sequence error at the
// expected PSN, and requests both ahead and invalid, at each MTU and
// across the 2^24 wrap.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	seq, inv, ahead := dupnak.SeqCases(), dupnak.InvCases(), dupnak.AheadInvalidCases()
	cases := []dupnak.NAKCase{seq[0], seq[4], inv[0], inv[3], ahead[0], ahead[1]}
	i := 0
	for _, c := range cases {
		for _, mtu := range []int{256, 4096} {
			c, mtu := c, mtu
			start := wire.PSN(7000 + 1009*i)
			if i%3 == 2 {
				start = 0xFFFFFF
			}
			cfg := dupnak.Cfg(mtu, start)
			cfg.MaxDestRdAtomic = c.MaxDestRdAtomic
			r.Active(fmt.Sprintf("%s: the NAK names the expected PSN (MTU %d, PSNs from %d)", c.Name, mtu, start),
				rulekit.Scenario{Config: cfg, Needs: overrunNeeds(c)}, func(p *harness.Peer) { dupnak.RunNAKCase(p, c) })
			i++
		}
	}
})

// overrunNeeds: the responder-resource overrun case needs the extra READ
// to arrive while the earlier ones still hold their resources; on a real
// clock a run where the device may have finished them first ends
// indeterminate (dupnak.RunNAKCase, realclock), so it needs nothing more.
func overrunNeeds(dupnak.NAKCase) rulekit.Needs { return rulekit.Needs{} }
