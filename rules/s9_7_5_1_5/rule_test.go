package s9_7_5_1_5

import (
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

// want is what the monitor must make of a trace.
type want int

const (
	violation     want = iota // a violation, with the fragment in its message
	clean                     // no violation, something checked
	undecided                 // no violation, an instance left open
	nothingJudged             // no violation, nothing checked or undecided
)

func TestMonitor(t *testing.T) {
	complete := rtest.Capture(0)
	complete.Complete = true
	// est has the responder acknowledge PSN 10: it expects 11.
	est := func(b *rtest.Builder) {
		b.Send(10, true)
		b.Ack(10, 1)
	}
	// shownLater: a SEND Only of 1100 bytes at PSN 11 (acknowledged at
	// once when ackFirst), then a SEND whose full First shows the path
	// MTU mtu, acknowledged.
	shownLater := func(mtu int, ackFirst bool) func(b *rtest.Builder) {
		return func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 1100)
			if ackFirst {
				b.Ack(11, 2)
			}
			b.Req(wire.SendFirst, 12, false, mtu)
			b.Req(wire.SendLast, 13, true, 8)
			b.Ack(13, 3)
		}
	}
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(b *rtest.Builder)
		want     want
		fragment string
	}{
		{"a SEND Only beyond the MTU acknowledged", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 1028)
			b.Ack(11, 2)
		}, violation, "as if it had been executed"},
		{"a WRITE Only beyond the MTU covered by a later ACK", rtest.Active(256), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.WriteOnly, 11, false, 300)
			b.Send(12, true)
			b.Ack(12, 3)
		}, violation, "carries 300 bytes, more than the connection's path MTU, 256"},
		{"a SEND Only beyond the MTU dropped: a later SEND draws a sequence NAK naming it", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 1028)
			b.Send(12, true)
			b.NAK(11, wire.NAKPSNSequence, 1)
		}, violation, "dropped it silently"},
		{"a SEND Only beyond the MTU NAKed invalid request", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 1028)
			b.NAK(11, wire.NAKInvalidRequest, 1)
		}, clean, ""},
		{"a SEND Only of exactly the MTU acknowledged", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 1024)
			b.Ack(11, 2)
		}, nothingJudged, ""},
		{"a request beyond the MTU resent valid, then acknowledged", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 1028)
			b.Req(wire.SendOnly, 11, true, 512)
			b.Ack(11, 2)
		}, nothingJudged, ""},
		{"a request beyond the MTU ahead of the expected PSN: a sequence NAK is its answer", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 12, true, 1028)
			b.NAK(11, wire.NAKPSNSequence, 1)
			b.Send(11, true)
			b.Ack(11, 2)
		}, nothingJudged, ""},
		{"the MTU shown by a SEND's full First packet, on a complete capture", complete, func(b *rtest.Builder) {
			b.Req(wire.SendFirst, 10, false, 1024)
			b.Req(wire.SendLast, 11, true, 8)
			b.Ack(11, 1)
			b.Req(wire.SendOnly, 12, true, 1100)
			b.Ack(12, 2)
		}, violation, "the path MTU its full First and Middle packets show, 1024"},
		{"the MTU shown by a First after the request, before the ACK covering it", complete, shownLater(1024, false),
			violation, "the path MTU its full First and Middle packets show, 1024"},
		{"acknowledged before the MTU is shown, covered again after", complete, shownLater(1024, true),
			violation, "the positive ACK with PSN 13 covers it"},
		{"the MTU shown after the request larger than it", complete, shownLater(2048, false), nothingJudged, ""},
		{"the first request of a complete trace, acknowledged", func() harness.Settings {
			s := rtest.Capture(1024)
			s.Complete = true
			return s
		}(), func(b *rtest.Builder) {
			b.Req(wire.WriteOnly, 11, true, 1028)
			b.Ack(11, 1)
		}, violation, "as if it had been executed"},
		{"a reserved opcode acknowledged", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.Opcode(0x15), 11, true, 16)
			b.Ack(11, 2)
		}, violation, "the reserved RC opcode 0x15"},
		{"a reserved opcode dropped: a later SEND draws a sequence NAK naming it", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.Opcode(0x1A), 11, true, 16)
			b.Send(12, true)
			b.NAK(11, wire.NAKPSNSequence, 1)
		}, violation, "dropped it silently"},
		{"a reserved opcode NAKed invalid request", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.Opcode(0x15), 11, true, 16)
			b.NAK(11, wire.NAKInvalidRequest, 1)
		}, clean, ""},
		{"a reserved opcode ahead of the expected PSN", rtest.Active(1024), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.Opcode(0x15), 12, true, 16)
			b.NAK(11, wire.NAKPSNSequence, 1)
		}, nothingJudged, ""},
		{"a capture: a reserved opcode acknowledged may repeat a valid request unseen", rtest.Capture(1024), func(b *rtest.Builder) {
			b.Send(10, true)
			b.Req(wire.Opcode(0x15), 11, true, 16)
			b.Ack(11, 2)
		}, undecided, ""},
		{"no MTU known: nothing judged", rtest.Capture(0), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 3000)
			b.Ack(11, 2)
		}, nothingJudged, ""},
		{"no MTU known, but beyond the largest path MTU", rtest.Capture(0), func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 5000)
			b.Ack(11, 2)
		}, undecided, ""},
		{"a complete trace, no MTU known, beyond the largest path MTU", complete, func(b *rtest.Builder) {
			est(b)
			b.Req(wire.SendOnly, 11, true, 5000)
			b.Ack(11, 2)
		}, violation, "the largest path MTU"},
		{"a capture: the request may repeat one executed unseen", rtest.Capture(1024), func(b *rtest.Builder) {
			b.Req(wire.SendOnly, 11, true, 1028)
			b.Ack(11, 2)
		}, undecided, ""},
		{"a capture: a sequence NAK after a dropped request may follow a loss after the capture point", rtest.Capture(1024), func(b *rtest.Builder) {
			b.Send(12, true)
			b.NAK(11, wire.NAKPSNSequence, 0) // pins the expected PSN: 11
			b.Req(wire.SendOnly, 11, true, 1028)
			b.Send(12, true)
			b.NAK(11, wire.NAKPSNSequence, 0)
		}, undecided, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b rtest.Builder
			tc.build(&b)
			switch tc.want {
			case violation:
				rtest.WantViolation(t, b.Recs, tc.settings, ID, tc.fragment)
			case clean:
				rtest.WantPass(t, b.Recs, tc.settings, ID)
			case undecided:
				rtest.WantIndeterminate(t, b.Recs, tc.settings, ID)
			case nothingJudged:
				if tl := rtest.Tally(rtest.Audit(b.Recs, tc.settings, ID), ID); tl.Violations+tl.Checked+tl.Indeterminate != 0 {
					t.Fatalf("judged %+v, want nothing\n%s", tl, rtest.Dump(b.Recs))
				}
			}
		})
	}
}

// expecting11 builds the start of a capture with the requester numbering
// its packets one by one: requests up to PSN 10, then a sequence NAK that
// pins the responder's expected PSN at 11.
func expecting11() rtest.Builder {
	b := rtest.Builder{PerSender: true}
	for p := range wire.PSN(10) {
		b.Send(p, false)
	}
	b.Send(10, true)
	b.NAK(11, wire.NAKPSNSequence, 11)
	return b
}

// TestMonitorByIDs: on a capture, the requester numbering its packets
// one by one shows, with its next packet, whether the capture missed a
// valid copy of the request that the ACK could answer.
func TestMonitorByIDs(t *testing.T) {
	build := func(skip bool, copyPSN wire.PSN) []*trace.Record {
		b := expecting11()
		b.Req(wire.SendOnly, 11, true, 1028)
		if skip {
			b.Recs[len(b.Recs)-1].IPID++ // the capture missed a packet before it
		}
		b.Ack(11, 12)
		b.Req(wire.SendOnly, copyPSN, true, 16)
		return b.Recs
	}
	s := rtest.Capture(1024)
	rtest.WantViolation(t, build(false, 12), s, ID, "as if it had been executed", "ran on unbroken")
	// A valid copy the capture missed might have been answered.
	rtest.WantIndeterminate(t, build(true, 12), s, ID)
	// The next request is a valid copy of the same PSN, which may have
	// passed the capture point before the ACK.
	rtest.WantIndeterminate(t, build(false, 11), s, ID)
}

// TestReference: the clean reference NAKs each request it cannot
// execute; its two defects acknowledge it or drop it, and the monitor
// catches both in the trace (the reserved opcode and the failed
// invalidation only the active scenarios judge).
func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 20, SetPSNs: true})
		r.Send(time.Millisecond, r.SendOnly(8, true))
		r.Send(time.Millisecond, r.SendOnly(1030, true))
		r.Send(5*time.Millisecond, r.SendOnly(8, true))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	acked := run(reference.DefAckInvalidRequest)
	rtest.WantViolation(t, acked.Trace(), acked.Settings(), ID, "as if it had been executed")
	dropped := run(reference.DefDropInvalidRequest)
	rtest.WantViolation(t, dropped.Trace(), dropped.Settings(), ID, "dropped it silently")
}

// TestReferenceInvalidate: a SEND with Invalidate naming an unknown R_Key
// gets a NAK invalid request from the clean reference (and under
// drop-invalid-request, which leaves it out), a positive ACK under
// ack-invalid-request.
func TestReferenceInvalidate(t *testing.T) {
	for _, tc := range []struct {
		defect, want string
	}{
		{"", "NAK inv-req"},
		{reference.DefAckInvalidRequest, "ACK"},
		{reference.DefDropInvalidRequest, "NAK inv-req"},
	} {
		r := rtest.NewRef(t, tc.defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 20, SetPSNs: true})
		k := r.Pkt(wire.SendOnlyInvalidate, 1)
		k.Payload, k.AckReq, k.IETH = make([]byte, 8), true, r.Info.RKey^0x5A5A00
		if err := r.Conn.Send(k); err != nil {
			t.Fatal(err)
		}
		got := r.Drain(5 * time.Millisecond)
		var seen []string
		for _, rec := range got {
			seen = append(seen, rec.Packet.String())
		}
		s := strings.Join(seen, "; ")
		if len(got) != 1 || !strings.Contains(s, tc.want) || got[0].Packet.PSN != 20 {
			t.Errorf("defect %q: the device sent %q, want one packet with %q at PSN 20", tc.defect, s, tc.want)
		}
	}
}

// TestMonitorByIDsAfterANAK: a sequence NAK showed the responder
// expecting a PSN before the request's: it had not executed the
// request's PSN then. The requester's IDs unbroken from the NAK to past
// the ACK covering the request show no valid copy reached it unseen: a
// violation; a packet missed in between, or a valid copy in the trace
// before the request, leave it open.
func TestMonitorByIDsAfterANAK(t *testing.T) {
	build := func(skip, validFirst bool) []*trace.Record {
		b := expecting11()
		b.Send(11, true)
		if validFirst {
			b.Req(wire.SendOnly, 12, true, 16)
		}
		b.Req(wire.SendOnly, 12, true, 1028)
		if skip {
			b.Recs[len(b.Recs)-1].IPID++ // the capture missed a packet before it
		}
		b.Ack(12, 13)
		b.Send(13, true)
		return b.Recs
	}
	s := rtest.Capture(1024)
	rtest.WantViolation(t, build(false, false), s, ID, "as if it had been executed", "ran on unbroken")
	rtest.WantIndeterminate(t, build(true, false), s, ID)
	if tl := rtest.Tally(rtest.Audit(build(false, true), s, ID), ID); tl.Violations != 0 {
		t.Errorf("a valid copy before the request: %+v, want no violation", tl)
	}
}

// TestMonitorByIDsMTUShownLater: the path MTU shown only after the first
// ACK covering the request (by a SEND's full First), the request judged
// at a later covering ACK after which the requester sent nothing. The
// requester's packet after the first covering ACK already showed, by its
// IDs, that the capture missed no valid copy before that ACK: a
// violation there, with no wait for a packet that never comes. A packet
// missed before it leaves it open; a valid copy of the request next
// (which the ACK may answer) fails nothing.
func TestMonitorByIDsMTUShownLater(t *testing.T) {
	build := func(skip, validCopy bool) []*trace.Record {
		b := expecting11()
		b.Req(wire.SendOnly, 11, true, 1100)
		b.Ack(11, 12) // the path MTU not known yet
		if validCopy {
			b.Req(wire.SendOnly, 11, true, 16)
		}
		f := b.Req(wire.SendFirst, 12, false, 1024) // shows the MTU: 1024
		if skip {
			f.IPID++ // the capture missed a packet before it
		}
		l := b.Req(wire.SendLast, 13, true, 8)
		if skip {
			l.IPID++
		}
		b.Ack(13, 13)
		return b.Recs
	}
	s := rtest.Capture(0)
	rtest.WantViolation(t, build(false, false), s, ID, "as if it had been executed", "ran on unbroken")
	rtest.WantOpen(t, build(true, false), s, ID, "a packet of the requester's missed: the instance is undecided, want open (suspect)")
	if tl := rtest.Tally(rtest.Audit(build(false, true), s, ID), ID); tl.Violations != 0 {
		t.Errorf("a valid copy of the request next, which the ACK may answer: %+v, want no violation", tl)
	}
}

// TestMonitorByIDsTrustedLater: as TestMonitorByIDsMTUShownLater, but
// the requester's packet after the first covering ACK comes before its
// IDs have been seen to count by ones long enough to be evidence; they
// are seen to a few packets later, before a packet of it the capture
// missed: the run after the ACK proves it all the same.
func TestMonitorByIDsTrustedLater(t *testing.T) {
	b := rtest.Builder{PerSender: true}
	for p := range wire.PSN(4) {
		b.Send(p, false)
	}
	b.Send(4, true)
	b.NAK(5, wire.NAKPSNSequence, 5)
	b.Req(wire.SendOnly, 5, true, 1100)
	b.Ack(5, 6) // the path MTU not known yet
	b.Req(wire.SendFirst, 6, false, 1024)
	b.Req(wire.SendMiddle, 7, false, 1024)
	b.Req(wire.SendMiddle, 8, false, 1024)
	l := b.Req(wire.SendLast, 9, true, 8)
	l.IPID++ // the capture missed a packet before it
	b.Ack(9, 7)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "as if it had been executed", "ran on unbroken")
}

// TestMonitorByIDsMTUShownAfterTheLastACK: as TestMonitorByIDsMTUShownLater,
// but no ACK covers the request after the MTU shows (the READ answer that
// shows it acknowledges with its own opcode): the MTU, a fact of the whole
// connection, decides the first covering ACK when the trace ends.
func TestMonitorByIDsMTUShownAfterTheLastACK(t *testing.T) {
	b := expecting11()
	b.Req(wire.SendOnly, 11, true, 1100)
	b.Ack(11, 12) // the path MTU not known yet
	b.Read(12, 2048)
	b.Resp(wire.ReadResponseFirst, 12, wire.SynACK(wire.CreditInvalid), 13, 1024) // shows the MTU: 1024
	b.Resp(wire.ReadResponseLast, 13, wire.SynACK(wire.CreditInvalid), 13, 1024)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "as if it had been executed", "ran on unbroken")
}
