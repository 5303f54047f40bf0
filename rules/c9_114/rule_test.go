package c9_114

import (
	"testing"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// TestMonitor runs the shared table of its meaning group against this
// clause's own monitor.
func TestMonitor(t *testing.T) { dupnak.CheckLatchMonitor(t, ID) }

// TestAfterAWrongNAKPSN: on a complete trace, a sequence NAK naming a PSN
// no expected PSN of the responder gives (C9-111's fault) sets no latch
// the trace can place: the requests and the correct NAK after it are not
// judged against its PSN (one root cause, one clause).
func TestAfterAWrongNAKPSN(t *testing.T) {
	var tr ht.Trace
	tr.Req(wire.SendOnly, 90, true)
	tr.Ack(90, 1)
	tr.Req(wire.SendOnly, 92, true)    // 91 lost: out of sequence
	tr.NAK(89, wire.NAKPSNSequence, 1) // should name 91
	tr.Req(wire.SendOnly, 93, true)
	tr.NAK(91, wire.NAKPSNSequence, 1) // a second NAK, as if 89 were latched
	tr.Req(wire.SendOnly, 91, true)
	tr.Req(wire.SendOnly, 92, true)
	tr.Ack(92, 3)
	s := ht.Complete()
	s.MTU = 1024
	tallies, findings := ht.AuditAll(&tr, s)
	if v := tallies[ID].Verdict(); v == reports.Fail {
		t.Errorf("%s fails on the NAK after a wrong NAK PSN: %v", ID, findings)
	}
}

// TestRepeatAfterPassed runs the shared case of a sequence NAK repeated
// after the responder had passed its PSN.
func TestRepeatAfterPassed(t *testing.T) { dupnak.CheckRepeatAfterPassed(t, ID) }

// TestRepeatAfterAnRNR: on a complete trace, the requests at a sequence
// NAK's PSN and after it executed (acknowledged), then an RNR NAK for a
// later request (which ends the cleared episode), then a sequence NAK
// naming the old PSN again: the latch's fault, as without the RNR NAK
// between.
func TestRepeatAfterAnRNR(t *testing.T) {
	var tr ht.Trace
	tr.Req(wire.SendOnly, 21, true)
	tr.Req(wire.WriteOnly, 22, true)
	tr.RNR(21, 9, 0)
	tr.NAK(21, wire.NAKPSNSequence, 0)
	tr.Req(wire.SendOnly, 21, true)
	tr.Req(wire.WriteOnly, 22, true)
	tr.Ack(21, 1)
	tr.Ack(22, 2)
	tr.Req(wire.SendOnly, 23, true)
	tr.RNR(23, 9, 2)
	tr.NAK(21, wire.NAKPSNSequence, 2)
	if tally, fs := ht.Audit(&tr, ID, ht.Complete()); tally.Verdict() != reports.Fail {
		t.Errorf("%s: %s, want fail (%+v)", ID, tally.Verdict(), fs)
	}
}
