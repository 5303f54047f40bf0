package c9_111

import (
	"testing"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// TestMonitor runs the shared table of its meaning group against this
// clause's own monitor.
func TestMonitor(t *testing.T) { dupnak.CheckNAKPSNMonitor(t, ID) }

// TestAfterAWrongRNR: on a complete trace, an RNR NAK naming a SEND the
// responder had acknowledged (C9-113's fault) refused some request the
// trace does not name; the sequence NAK after it, naming the request the
// responder really refused, is not blamed on its PSN (one root cause,
// one clause). (C9-113's own tests hold that it fails the RNR NAK.)
func TestAfterAWrongRNR(t *testing.T) {
	var tr ht.Trace
	tr.Req(wire.SendOnly, 90, true)
	tr.Ack(90, 1)
	tr.Req(wire.SendFirst, 91, false)
	tr.Req(wire.SendMiddle, 92, false)
	tr.Req(wire.SendLast, 93, true)
	tr.RNR(90, 3, 1) // should name 91, the SEND it refused
	tr.NAK(91, wire.NAKPSNSequence, 1)
	s := ht.Complete()
	s.MTU = 1024
	tallies, findings := ht.AuditAll(&tr, s)
	if v := tallies[ID].Verdict(); v == reports.Fail {
		t.Errorf("C9-111 fails too: %v", findings)
	}
}
