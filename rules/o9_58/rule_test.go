package o9_58

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestAtomicAckAtTheAtomicsPSN(t *testing.T) {
	var b rtest.Builder
	b.Atomic(0xFFFFFF)
	b.Atomic(0)
	b.Resp(wire.AtomicAcknowledge, 0xFFFFFF, 0x04, 1, 0)
	b.Resp(wire.AtomicAcknowledge, 0, 0x04, 2, 0)
	tl := rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	if tl.Checked != 2 {
		t.Fatalf("checked %d, want 2", tl.Checked)
	}
}

func TestAtomicAckElsewhere(t *testing.T) {
	var b rtest.Builder
	b.Atomic(10)
	b.Send(11, true)
	b.Resp(wire.AtomicAcknowledge, 11, 0x04, 1, 0)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "SEND Only")

	var c rtest.Builder
	c.Atomic(10)
	c.Resp(wire.AtomicAcknowledge, 11, 0x04, 1, 0)
	rtest.WantViolation(t, c.Recs, rtest.Active(1024), ID, "no ATOMIC request used")
	// A capture may have missed a request at PSN 11.
	rtest.WantIndeterminate(t, c.Recs, rtest.Capture(0), ID) // open: suspect

	// The request captured after its acknowledgment settles it: an
	// ATOMIC at that PSN holds, any other request is a violation (no
	// missed packet gives one PSN two requests).
	var e rtest.Builder
	e.Atomic(10)
	e.Resp(wire.AtomicAcknowledge, 11, 0x04, 1, 0)
	e.Send(11, true)
	rtest.WantViolation(t, e.Recs, rtest.Capture(0), ID, "captured after the acknowledgment")
	var f rtest.Builder
	f.Atomic(10)
	f.Resp(wire.AtomicAcknowledge, 11, 0x04, 1, 0)
	f.Atomic(11)
	rtest.WantPass(t, f.Recs, rtest.Capture(0), ID)

	var d rtest.Builder
	d.Read(10, 3*1024)
	d.Atomic(13)
	d.Resp(wire.AtomicAcknowledge, 11, 0x04, 1, 0)
	rtest.WantViolation(t, d.Recs, rtest.Capture(1024), ID, "reserved for its response")
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 0xFFFFFE, SetPSNs: true, Atomics: true})
		r.Send(time.Millisecond, r.Atomic(0), r.Atomic(8), r.SendOnly(8, true))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("atomic-ack-psn-skew")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID)
}

// A PSN that carried another request is no ATOMIC's whenever the
// acknowledgment was sent: one that may be late (it carries the MSN of a
// response with a later PSN shown before it, and no IPv4 ID dates it)
// breaks the clause all the same, not left open as maybe delayed.
func TestLateAtomicAckElsewhere(t *testing.T) {
	var b rtest.Builder
	b.Atomic(222)
	b.Req(wire.SendFirst, 223, true, 1024)
	b.Req(wire.SendMiddle, 224, true, 1024)
	b.Req(wire.SendLast, 225, true, 3)
	b.Resp(wire.AtomicAcknowledge, 222, 0x1f, 442, 0)
	b.Ack(224, 442)
	b.Resp(wire.AtomicAcknowledge, 223, 0x1f, 442, 0)
	for _, r := range b.Recs {
		r.HasIPID, r.IPID = false, 0
	}
	rtest.WantViolation(t, b.Recs, rtest.Capture(1024), ID, "SEND First")
}
