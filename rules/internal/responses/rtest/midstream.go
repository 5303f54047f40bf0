package rtest

import (
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// MidStreamTests are the monitor tests C9-100 and C9-112 share (one
// meaning, one monitor registered under each number): each clause's test
// file runs them under its own ID.
func MidStreamTests(t *testing.T, clause string) {
	t.Run("NAK at the refused packet's PSN", func(t *testing.T) {
		var b Builder
		b.Read(0xFFFFFE, 8*256)
		b.Resp(wire.ReadResponseFirst, 0xFFFFFE, 0x04, 1, 256)
		b.Resp(wire.ReadResponseMiddle, 0xFFFFFF, 0, 0, 256)
		b.NAK(0, wire.NAKRemoteAccess, 1)
		WantPass(t, b.Recs, Active(256), clause)
		WantPass(t, b.Recs, Capture(0), clause)
	})
	t.Run("NAK at the READ request's PSN", func(t *testing.T) {
		var b Builder
		b.Read(70, 8*256)
		b.Resp(wire.ReadResponseFirst, 70, 0x04, 1, 256)
		b.Resp(wire.ReadResponseMiddle, 71, 0, 0, 256)
		b.Resp(wire.ReadResponseMiddle, 72, 0, 0, 256)
		b.NAK(70, wire.NAKRemoteAccess, 1)
		// Even a capture: the same sender's packets keep their order.
		WantViolation(t, b.Recs, Capture(256), clause, "the READ request's own PSN")
	})
	t.Run("NAK skipping PSNs", func(t *testing.T) {
		var b Builder
		b.Read(70, 8*256)
		b.Resp(wire.ReadResponseFirst, 70, 0x04, 1, 256)
		b.NAK(73, wire.NAKRemoteAccess, 1)
		WantViolation(t, b.Recs, Active(256), clause, "skipping PSNs")
		// Responses may have been lost before a capture point.
		WantIndeterminate(t, b.Recs, Capture(256), clause)
	})
	t.Run("data after the NAK", func(t *testing.T) {
		var b Builder
		b.Read(70, 8*256)
		b.Resp(wire.ReadResponseFirst, 70, 0x04, 1, 256)
		b.NAK(71, wire.NAKRemoteAccess, 1)
		b.Resp(wire.ReadResponseMiddle, 72, 0, 0, 256)
		WantViolation(t, b.Recs, Capture(256), clause, "follows the NAK")
	})
	t.Run("NAK in a READ response opcode", func(t *testing.T) {
		var b Builder
		b.Read(70, 8*256)
		b.Resp(wire.ReadResponseFirst, 70, 0x04, 1, 256)
		b.Resp(wire.ReadResponseLast, 71, wire.SynNAK(wire.NAKRemoteAccess), 1, 0)
		WantViolation(t, b.Recs, Active(256), clause, "not as an Acknowledge")
	})
	t.Run("a NAK for a later request does not end the stream", func(t *testing.T) {
		var b Builder
		b.Read(70, 4*256)
		b.Send(74, true)
		b.Resp(wire.ReadResponseFirst, 70, 0x04, 1, 256)
		b.Resp(wire.ReadResponseMiddle, 71, 0, 0, 256)
		b.Resp(wire.ReadResponseMiddle, 72, 0, 0, 256)
		b.Resp(wire.ReadResponseLast, 73, 0x04, 1, 256)
		b.Resp(wire.Acknowledge, 74, wire.SynRNR(3), 1, 0)
		sink := Audit(b.Recs, Active(256), clause)
		if tl := Tally(sink, clause); tl.Violations != 0 || tl.Checked != 0 {
			t.Fatalf("tally %+v, want nothing judged", tl)
		}
	})
	t.Run("an RNR NAK of a later request while the READ's answer was lost", func(t *testing.T) {
		// A lossy capture: the READ's First and Last lost, its Middle
		// seen (the MTU learnt from it), an RNR NAK of the SEND after
		// it, the READ requested again and its answer replayed, the
		// replay's Middle lost. The NAK names the SEND, outside the
		// READ's range, and ends nothing: the replay's Last is no data
		// after a NAK.
		var b Builder
		b.Read(413, 3*1024)
		b.Resp(wire.ReadResponseMiddle, 414, 0, 0, 1024)
		b.Atomic(416)
		b.Send(417, true)
		b.Resp(wire.AtomicAcknowledge, 416, 0x04, 47, 0)
		b.Resp(wire.Acknowledge, 417, wire.SynRNR(11), 47, 0)
		b.Read(413, 3*1024)
		b.Resp(wire.ReadResponseFirst, 413, 0x04, 48, 1024)
		b.Resp(wire.ReadResponseLast, 415, 0x04, 48, 1024)
		sink := Audit(b.Recs, Capture(0), clause)
		if tl := Tally(sink, clause); tl.Violations != 0 {
			t.Fatalf("%s: %s\n%s", clause, sink.Findings[0].Message, Dump(b.Recs))
		}
	})
	t.Run("a NAK inside the range after an ACK past it", func(t *testing.T) {
		// A READ of four packets, three of its answer captured, then an
		// ACK of the SENDs after the READ and a NAK at the third packet's
		// PSN. With a responder packet missing between the answer and the
		// ACK (one ID skipped), the READ's Last may have gone out there:
		// the NAK then answers a READ sent again (C9-106); otherwise the
		// ACK overtook the answer and the NAK ended it at a wrong PSN.
		for _, gap := range []bool{true, false} {
			b := Builder{PerSender: true}
			b.AckedSends(6093, 1, 2, 3, 4, 5, 6, 7, 8) // enough IDs to trust
			b.Read(6101, 4*256)
			b.Resp(wire.ReadResponseFirst, 6101, 0x04, 9, 256)
			b.Resp(wire.ReadResponseMiddle, 6102, 0, 0, 256)
			b.Resp(wire.ReadResponseMiddle, 6103, 0, 0, 256)
			for psn := wire.PSN(6105); psn <= 6108; psn++ {
				b.Send(psn, psn == 6108)
			}
			ack := b.Ack(6108, 13)
			nak := b.NAK(6103, wire.NAKRemoteAccess, 13)
			if gap {
				ack.IPID++
				nak.IPID++
			}
			sink := Audit(b.Recs, Capture(256), clause)
			var alt, dup bool
			for _, f := range sink.Findings {
				alt = alt || f.ID == clause && strings.Contains(f.Message, "C9-106 if the rest of the READ's answer went out uncaptured")
				dup = dup || f.ID == "C9-106"
			}
			if Tally(sink, clause).Violations != 1 || alt != gap || dup != gap {
				t.Fatalf("gap %v: %s violations %d, naming C9-106 %v, listed under C9-106 %v\n%s", gap, clause, Tally(sink, clause).Violations, alt, dup, Dump(b.Recs))
			}
		}
	})
	t.Run("reference", func(t *testing.T) {
		run := func(defect string) *Ref {
			r := NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 0xFFFFF0, SetPSNs: true})
			r.Send(3*time.Microsecond, r.Read(40*1024, 0))
			if err := r.Conn.InvalidateRKey(); err != nil {
				t.Fatal(err)
			}
			r.Drain(time.Millisecond)
			return r
		}
		clean := run("")
		WantPass(t, clean.Trace(), clean.Settings(), clause)
		bad := run("read-fail-request-psn")
		WantViolation(t, bad.Trace(), bad.Settings(), clause, "the READ request's own PSN")
	})
}
