package c9_113_a1

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestNAKsAsAcknowledges(t *testing.T) {
	var b rtest.Builder
	b.Read(5, 3*512)
	b.Atomic(8)
	b.Resp(wire.ReadResponseFirst, 5, 0x04, 1, 512)
	b.NAK(6, wire.NAKRemoteAccess, 1) // legal: an Acknowledge
	b.Resp(wire.AtomicAcknowledge, 8, 0x04, 2, 0)
	tl := rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	if tl.Checked != 2 {
		t.Fatalf("checked %d, want 2 (the First and the ATOMIC Acknowledge)", tl.Checked)
	}
}

func TestNAKSyndromeOutsideAnAcknowledge(t *testing.T) {
	for _, c := range []struct {
		op  wire.Opcode
		syn uint8
	}{
		{wire.ReadResponseLast, wire.SynNAK(wire.NAKRemoteAccess)},
		{wire.ReadResponseOnly, wire.SynNAK(wire.NAKInvalidRequest)},
		{wire.ReadResponseFirst, wire.SynRNR(5)},
		{wire.AtomicAcknowledge, wire.SynNAK(wire.NAKRemoteOp)},
	} {
		var b rtest.Builder
		b.Read(5, 3*512)
		b.Resp(c.op, 5, c.syn, 1, 0)
		rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "must be sent as an Acknowledge")
	}
}

// A READ response carrying a NAK syndrome is illegal whenever it was
// sent: one that may be late (the count of a response with a later PSN
// the trace shows earlier, no ID to date it) is judged all the same,
// not left open.
func TestNAKSyndromeMaybeLate(t *testing.T) {
	var b rtest.Builder
	b.Read(5, 512)
	b.Read(6, 512)
	b.Resp(wire.ReadResponseOnly, 6, 0x1f, 2, 512)
	b.Resp(wire.ReadResponseOnly, 5, wire.SynNAK(wire.NAKRemoteAccess), 2, 0)
	rtest.WantViolation(t, b.Recs, rtest.Capture(512), ID, "must be sent as an Acknowledge")
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 3, SetPSNs: true})
		r.Send(3*time.Microsecond, r.Read(30*1024, 0))
		if err := r.Conn.InvalidateRKey(); err != nil {
			t.Fatal(err)
		}
		r.Drain(time.Millisecond)
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("nak-in-read-response")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "NAK rem-access")
}
