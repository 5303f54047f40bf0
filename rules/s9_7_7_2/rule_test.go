package s9_7_7_2

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestRepeatedNAKUnprompted(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Send(12, true)
	b.NAK(11, wire.NAKPSNSequence, 1)
	b.NAK(11, wire.NAKPSNSequence, 1) // nothing new arrived
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "for the 2nd time")
	// A capture may have missed a request that prompted it.
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
}

// TestRepeatedNAKUnpromptedByIDs: on a capture, a requester numbering its
// packets one by one shows, with its next packet, whether the capture
// missed a request that could have prompted the repeat.
func TestRepeatedNAKUnpromptedByIDs(t *testing.T) {
	build := func(skip bool, next wire.PSN) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		for p := range wire.PSN(10) {
			b.Send(p, false)
		}
		b.Ack(9, 10)
		b.Send(12, true)
		b.NAK(10, wire.NAKPSNSequence, 10)
		if skip {
			b.Recs[len(b.Recs)-2].IPID++ // the capture missed a packet before the request
		}
		b.NAK(10, wire.NAKPSNSequence, 10) // nothing new arrived
		b.Send(next, true)
		return b.Recs
	}
	rtest.WantViolation(t, build(false, 10), rtest.Capture(0), ID, "for the 2nd time", "ran on unbroken")
	// The capture missed a requester packet: it may have prompted the NAK.
	rtest.WantIndeterminate(t, build(true, 10), rtest.Capture(0), ID)
	// The next request could have prompted the NAK itself, had the
	// capture recorded it out of order.
	rtest.WantIndeterminate(t, build(false, 13), rtest.Capture(0), ID)
}

func TestRepeatedNAKsEachPrompted(t *testing.T) {
	var b rtest.Builder
	b.Send(12, true)
	b.Send(13, true) // two out-of-sequence packets: a responder without a latch NAKs both (C9-114's concern, not this rule's)
	b.NAK(11, wire.NAKPSNSequence, 0)
	b.NAK(11, wire.NAKPSNSequence, 0)
	b.Send(14, true)
	b.Resp(wire.Acknowledge, 14, wire.SynRNR(2), 0, 0)
	b.Send(14, true) // the resend, refused again
	b.Resp(wire.Acknowledge, 14, wire.SynRNR(2), 0, 0)
	rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
}

func TestRepeatedACKWithNewCredits(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Resp(wire.Acknowledge, 10, wire.SynACK(0), 1, 0)
	b.Resp(wire.Acknowledge, 10, wire.SynACK(6), 1, 0) // unsolicited, with fresh credits
	tl := rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	if tl.Checked != 1 {
		t.Fatalf("checked %d, want 1 (the repeated ACK)", tl.Checked)
	}
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 20, SetPSNs: true})
		r.Send(time.Millisecond, r.SendOnly(8, true))
		r.PSN = r.PSN.Next()
		r.Send(5*time.Millisecond, r.SendOnly(8, true))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("unsolicited-nak-repeat")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "NAK seq")
}

// TestRepeatedNAKUnpromptedMidConnection: the same on a capture that does
// not show the connection's start (its MSNs count from far on). A request
// sent before the capture's first requester packet reached the responder
// before that one did, so before either NAK was built where both were
// recorded beyond the reordering the capture shows after that packet: it
// prompted neither. The requester's IDs, unbroken from its first packet
// captured, decide. Where the first NAK comes within that reordering, a
// request sent before the capture began may have prompted it: open.
func TestRepeatedNAKUnpromptedMidConnection(t *testing.T) {
	build := func(early bool) []*trace.Record {
		b := rtest.Builder{PerSender: true}
		if !early {
			for p := range wire.PSN(10) {
				b.Send(p, true)
				b.Ack(p, 5001+uint32(p))
			}
		}
		b.Send(12, true)
		b.NAK(10, wire.NAKPSNSequence, 5010)
		b.NAK(10, wire.NAKPSNSequence, 5010) // nothing new arrived
		for p := range wire.PSN(10) {
			b.Send(10+p, false)
		}
		return b.Recs
	}
	rtest.WantViolation(t, build(false), rtest.Capture(0), ID, "for the 2nd time", "ran on unbroken")
	rtest.WantIndeterminate(t, build(true), rtest.Capture(0), ID)
}
