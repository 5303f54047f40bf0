package o9_95_2_2

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func acks(credit uint8) *rtest.Builder {
	var b rtest.Builder
	b.Send(1, true)
	b.Resp(wire.Acknowledge, 1, wire.SynACK(credit), 1, 0)
	b.Send(2, true)
	b.Resp(wire.Acknowledge, 2, wire.SynACK(credit), 2, 0)
	return &b
}

func TestSRQQPSendsNoCredits(t *testing.T) {
	s := rtest.Capture(0)
	s.SRQ = harness.SRQAll
	rtest.WantPass(t, acks(wire.CreditInvalid).Recs, s, ID)
	rtest.WantViolation(t, acks(3).Recs, s, ID, "advertises credit code 0x03")
	rtest.WantIndeterminate(t, acks(3).Recs, rtest.Capture(0), ID)
	s.SRQ = harness.SRQNone
	if tl := rtest.Tally(rtest.Audit(acks(3).Recs, s, ID), ID); !tl.Empty() {
		t.Fatalf("without an SRQ the clause does not apply, yet: %+v", tl)
	}
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 1, SetPSNs: true, SRQ: true, RecvWQEs: 6})
		for i := 0; i < 3; i++ {
			r.Send(time.Millisecond, r.SendOnly(8, true), r.WriteOnly(8, 0, true))
		}
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("srq-credits")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "on a QP attached to an SRQ")
}
