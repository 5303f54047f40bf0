package c9_150_2_1

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
	return &b
}

func TestCreditsOnANonSRQQP(t *testing.T) {
	s := rtest.Capture(0)
	s.SRQ = harness.SRQNone
	rtest.WantPass(t, acks(5).Recs, s, ID)
	rtest.WantPass(t, acks(0).Recs, s, ID) // zero credits is a valid count
	rtest.WantViolation(t, acks(wire.CreditInvalid).Recs, s, ID, "credit code 0x1F")
}

func TestSRQUseUnknownOrSRQ(t *testing.T) {
	rtest.WantIndeterminate(t, acks(wire.CreditInvalid).Recs, rtest.Capture(0), ID)
	s := rtest.Capture(0)
	s.SRQ = harness.SRQAll
	sink := rtest.Audit(acks(wire.CreditInvalid).Recs, s, ID)
	if tl := rtest.Tally(sink, ID); !tl.Empty() {
		t.Fatalf("on an SRQ QP the clause does not apply, yet: %+v", tl)
	}
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 1, SetPSNs: true, RecvWQEs: 3})
		for i := 0; i < 4; i++ {
			r.Send(time.Millisecond, r.SendOnly(8, true))
		}
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("credits-invalid-no-srq")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "credit code 0x1F")
}
