package c9_125

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-125, in our words: an invalid request NAK carries the responder's
// expected PSN. Shared meaning with C9-111 (the general rule) and C9-121
// (the sequence-error case). The scenarios establish the expected PSN,
// then send an invalid request at it — opcode sequence errors (a Middle
// or Last with no message in progress, a new First inside a message, a
// WRITE Middle inside a SEND), a length error, an ATOMIC to a QP without
// remote atomic access, a reserved opcode, one READ more than the
// responder resources — and requests both invalid and ahead of the
// expected PSN, where whichever check the responder makes first, the NAK
// (sequence error or invalid request) must name the expected PSN.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	i := 0
	for _, c := range append(dupnak.InvCases(), dupnak.AheadInvalidCases()...) {
		c := c
		mtu := dupnak.MTUs[i%len(dupnak.MTUs)]
		start := wire.PSN(3000 + 991*i)
		if i%4 == 3 {
			start = 0xFFFFFE
		}
		cfg := dupnak.Cfg(mtu, start)
		cfg.MaxDestRdAtomic = c.MaxDestRdAtomic
		r.Active(fmt.Sprintf("%s: the NAK names the expected PSN (MTU %d, PSNs from %d)", c.Name, mtu, start),
			rulekit.Scenario{Config: cfg, Needs: overrunNeeds(c)}, func(p *harness.Peer) { dupnak.RunNAKCase(p, c) })
		i++
	}
})

// overrunNeeds: the responder-resource overrun case needs the extra READ
// to arrive while the earlier ones still hold their resources; on a real
// clock a run where the device may have finished them first ends
// indeterminate (dupnak.RunNAKCase, realclock), so it needs nothing more.
func overrunNeeds(dupnak.NAKCase) rulekit.Needs { return rulekit.Needs{} }
