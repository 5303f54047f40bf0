package c9_148

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

// Both READ timings, coalesced ACKs, multi-packet messages, an ATOMIC,
// and replays carrying the current or the original MSN are all legal.
func TestLegalCounts(t *testing.T) {
	for _, readAtEnd := range []bool{false, true} {
		var b rtest.Builder
		b.Send(10, false) // MSN 1
		b.Req(wire.WriteFirst, 11, false, 1024)
		b.Req(wire.WriteLast, 12, true, 10) // MSN 2
		b.Ack(12, 2)
		b.Read(13, 3*1024) // 13..15, MSN 3
		b.Atomic(16)       // MSN 4
		b.Send(17, true)   // MSN 5
		first := uint32(3)
		if readAtEnd {
			first = 2
		}
		b.Resp(wire.ReadResponseFirst, 13, 0x04, first, 1024)
		b.Resp(wire.ReadResponseMiddle, 14, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 15, 0x04, 3, 1024)
		b.Resp(wire.AtomicAcknowledge, 16, 0x04, 4, 0)
		b.Ack(17, 5)
		// Duplicates: the READ again (answered with the original MSNs or
		// the current one), the SEND again (ACKed with the current MSN).
		b.Read(13, 3*1024)
		b.Resp(wire.ReadResponseFirst, 13, 0x04, first, 1024)
		b.Resp(wire.ReadResponseMiddle, 14, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 15, 0x04, 3, 1024)
		b.Read(13, 3*1024)
		b.Resp(wire.ReadResponseFirst, 13, 0x04, 5, 1024)
		b.Resp(wire.ReadResponseMiddle, 14, 0, 0, 1024)
		b.Resp(wire.ReadResponseLast, 15, 0x04, 5, 1024)
		b.Send(17, true)
		b.Ack(17, 5)
		b.Send(18, true)
		b.Ack(18, 6)
		rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
		rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	}
}

func TestREADNeverCounted(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 1)
	b.Read(11, 100)
	b.Resp(wire.ReadResponseOnly, 11, 0x04, 1, 100) // should be 2
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "MSN 1 is too low")
	// A capture: the ACK pins the start, the Only is one short.
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "too low")
}

func TestDuplicateBumpsTheMSN(t *testing.T) {
	var b rtest.Builder
	b.Send(10, false)
	b.Send(11, true)
	b.Ack(11, 2)
	b.Send(10, true) // duplicate
	b.Ack(11, 3)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "MSN 3 is too high")
}

func TestMSNGoingBack(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Ack(10, 5)
	b.Send(11, true)
	b.Ack(11, 4)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "went back")
}

// A gap in the requests of a capture: until a response acknowledges past
// it, the responder may have completed messages the capture missed.
func TestCaptureGap(t *testing.T) {
	var b rtest.Builder
	b.Send(10, true)
	b.Send(13, true) // 11 and 12 missing
	b.Ack(10, 3)     // 11 and 12 may have completed unseen
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "too high")
	// An ACK past the gap: they have all completed; the count is found
	// again, and what follows is judged.
	b.Ack(13, 4)
	b.Send(14, true)
	b.Ack(14, 4)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "MSN 4 is too low")
}

func TestReference(t *testing.T) {
	run := func(defect, msnRead string) *rtest.Ref {
		r := rtest.NewRef(t, defect, map[string]string{"msn-read": msnRead},
			dut.ConnConfig{MTU: 512, ExpectedPSN: 0xFFFFF0, SetPSNs: true, Atomics: true})
		first := r.SendOnly(8, false)
		r.Send(time.Millisecond, first, r.SendOnly(8, true), r.Read(5*512, 0), r.Atomic(0), r.WriteOnly(8, 0, true))
		dup := *first
		dup.AckReq = true
		r.Send(time.Millisecond, &dup)
		r.Send(time.Millisecond, r.Read(1, 0), r.SendOnly(8, true))
		return r
	}
	for _, m := range []string{"start", "end"} {
		clean := run("", m)
		rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	}
	skipped := run("msn-read-skipped", "start")
	rtest.WantViolation(t, skipped.Trace(), skipped.Settings(), ID, "too low")
	bump := run("msn-dup-bump", "end")
	rtest.WantViolation(t, bump.Trace(), bump.Settings(), ID, "too high")
}
