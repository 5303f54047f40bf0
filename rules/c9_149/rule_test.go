package c9_149

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestNAKsCarryTheCurrentMSN(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Send(11, false)                 // completes silently: MSN 2
	b.Send(13, true)                  // 12 lost
	b.NAK(12, wire.NAKPSNSequence, 2) // the current MSN
	b.Send(12, false)
	b.Send(13, true)
	b.Resp(wire.Acknowledge, 13, wire.SynRNR(4), 3, 0)
	tl := rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	if tl.Checked != 2 {
		t.Fatalf("checked %d NAKs, want 2", tl.Checked)
	}
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

func TestNAKWithMSNZero(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Send(12, true)
	b.NAK(11, wire.NAKPSNSequence, 0)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "below the MSN 1")
}

func TestNAKBelowSilentCompletions(t *testing.T) {
	var b rtest.Builder
	b.Send(10, false)
	b.Send(11, false)
	b.Send(13, true)
	b.NAK(12, wire.NAKPSNSequence, 0) // two SENDs completed before PSN 12
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "2 SEND/WRITE/ATOMIC messages")
	// A capture has nothing fixing where the count started.
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
}

func TestNAKAboveWhatArrived(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Send(12, true)
	b.NAK(11, wire.NAKPSNSequence, 7)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "above the 2 new messages")
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 50, SetPSNs: true, RecvWQEs: 2})
		r.Send(time.Millisecond, r.SendOnly(8, true), r.SendOnly(8, false), r.WriteOnly(8, 0, false))
		r.Send(time.Millisecond, r.SendOnly(8, true)) // RNR NAK: no receive WQE left
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("nak-msn-zero")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "below the MSN")
}
