package verdicts

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// What a capture's order cannot tell is left undecided, and what it can
// still fails: a response its IPv4 ID shows was sent before responses the
// capture showed earlier (late: delayed or copied by the network or the
// capture) is not judged by where it stands; the same response under a
// new ID is the responder's own, and judged. A capture beginning with a
// response is one connection with the requests that follow.

// numbered gives every record its sender's next IPv4 ID (senders that
// count up), as it is added.
func numbered(t *ht.Trace) {
	t.IPIDs(1000, 5000)
}

func TestLateResponseUndecidedNewOneFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		late   bool // the last response keeps an old ID
		clause string
	}{
		{name: "an old ACK, late", late: true, clause: "C9-95"},
		{name: "an old ACK, sent again", late: false, clause: "C9-95"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &ht.Trace{}
			for i := range 12 {
				tr.Req(wire.SendOnly, wire.PSN(300+i), true)
				tr.Ack(wire.PSN(300+i), uint32(i+1))
			}
			numbered(tr)
			// The ACK of 303 again, after the ACK of 311. Late: with its
			// own old ID (a copy whose original the capture lost, or one
			// the network delayed). Sent again: with the next ID.
			again := tr.Ack(303, 4)
			again.HasIPID, again.IPID = true, 5000+3
			if !tc.late {
				again.IPID = 5000 + 12
			}
			// The original is lost: only the late one is in the capture.
			tr.Remove(7)
			tallies, fs := ht.AuditAll(tr, ht.Capture())
			failed := false
			for _, f := range fs {
				failed = failed || f.ID == tc.clause || f.ID == "C9-148"
			}
			if tc.late {
				if len(fs) > 0 {
					t.Fatalf("a late ACK fails %s: %s", fs[0].ID, fs[0].Message)
				}
				if tl := tallies[tc.clause]; tl == nil || tl.Indeterminate == 0 {
					t.Errorf("%s: the late ACK is not counted undecided: %+v", tc.clause, tl)
				}
				return
			}
			if !failed {
				t.Errorf("an ACK going back under a new ID passes %s and C9-148", tc.clause)
			}
		})
	}
}

// An ACK with a PSN past a READ, seen before the READ's response: the
// ACK overtook it (C9-101) when the response's ID is newer than the
// ACK's; with an older ID the response was sent first and the capture
// shows it late, which is no violation.
func TestReadResponseOrderByID(t *testing.T) {
	for _, late := range []bool{false, true} {
		tr := &ht.Trace{}
		for i := range 10 {
			tr.Req(wire.SendOnly, wire.PSN(300+i), true)
			tr.Ack(wire.PSN(300+i), uint32(i+1))
		}
		tr.Read(310, 8)
		tr.Req(wire.SendOnly, 311, true)
		numbered(tr)
		ack := tr.Ack(311, 12)
		ack.HasIPID, ack.IPID = true, 5000+11
		// More exchanges than the reorder buffer holds back, then the
		// READ's response.
		for i := range 10 {
			q := tr.Req(wire.SendOnly, wire.PSN(312+i), true)
			q.HasIPID, q.IPID = true, uint16(1012+i)
			a := tr.Ack(wire.PSN(312+i), uint32(13+i))
			a.HasIPID, a.IPID = true, uint16(5012+i)
		}
		rsp := tr.ReadResp(wire.ReadResponseOnly, 310, 11, 8)
		rsp.HasIPID, rsp.IPID = true, 5000+30
		if late {
			rsp.IPID = 5000 + 10
		}
		_, fs := ht.AuditAll(tr, ht.Capture())
		var c9101 []string
		for _, f := range fs {
			if f.ID == "C9-101" {
				c9101 = append(c9101, f.Message)
			}
		}
		switch {
		case late && len(c9101) > 0:
			t.Errorf("a READ response sent before the ACK (older ID) fails C9-101: %s", strings.Join(c9101, "; "))
		case !late && len(c9101) == 0:
			t.Errorf("an ACK overtaking the READ's response (newer ID) passes C9-101")
		}
	}
}

// A capture that begins with the responder's ACK: the requests after it
// join that connection (one connection, both QPs known), and the
// monitors judge them together; a request to another responder QP whose
// PSN is far from the responses starts a connection of its own.
func TestResponseFirstOneConnection(t *testing.T) {
	tr := &ht.Trace{}
	tr.Ack(299, 7)
	for i := range 6 {
		tr.Req(wire.SendOnly, wire.PSN(300+i), true)
		tr.Ack(wire.PSN(300+i), uint32(8+i))
	}
	numbered(tr)
	far := tr.Req(wire.SendOnly, 900000, true)
	far.Packet.DestQP = ht.ResponderQP + 1
	far.HasIPID, far.IPID = true, 1006
	sink := harness.NewSink("t")
	a := harness.NewAuditor(ht.Capture(), sink)
	for _, r := range tr.Records {
		a.Observe(r)
	}
	a.End()
	conns := a.Conns()
	if len(conns) != 2 {
		t.Fatalf("%d connections, want 2 (the ACK's with its requests, and the far request's)", len(conns))
	}
	c := conns[0]
	if c.ResponderQP != ht.ResponderQP || c.RequesterQP != ht.RequesterQP || c.Packets != 13 {
		t.Errorf("connection 1: responder QP %#x, requester QP %#x, %d packets; want %#x, %#x, 13", c.ResponderQP, c.RequesterQP, c.Packets, ht.ResponderQP, ht.RequesterQP)
	}
	if tl := sink.Tallies["C9-95"]; tl == nil || tl.Checked < 6 {
		t.Errorf("C9-95 checked %+v: the ACKs are not judged with their requests", tl)
	}
	_ = trace.ToRequester
}

// An ACK the network delayed past the next one: the capture shows the
// ACK of 310 after the ACK of 311 (both requests sent before either). A responder that counts its IPv4 IDs
// up shows the order it sent them in (the auditor puts them back: no
// instance is open); one that draws its IDs at random shows nothing
// (its IDs vary, but order no two packets), so the ACK going back is
// left open, never failed: the responder sending it again and the
// network delaying it both explain it.
func TestDelayedACKRandomIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	for _, random := range []bool{false, true} {
		tr := &ht.Trace{}
		for i := range 10 {
			tr.Req(wire.SendOnly, wire.PSN(300+i), true)
			tr.Ack(wire.PSN(300+i), uint32(i+1))
		}
		tr.Req(wire.SendOnly, 310, true)
		tr.Req(wire.SendOnly, 311, true)
		tr.Ack(310, 11)
		tr.Ack(311, 12)
		numbered(tr)
		if random {
			for _, r := range tr.Records {
				if r.Dir == trace.ToRequester {
					r.IPID = uint16(rng.Uint32())
				}
			}
		}
		n := len(tr.Records)
		tr.Swap(n-2, n-1) // the ACK of 310 delayed past the ACK of 311
		tallies, fs := ht.AuditAll(tr, ht.Capture())
		if len(fs) > 0 {
			t.Fatalf("random IDs %v: a delayed ACK fails %s at frame %d: %s", random, fs[0].ID, fs[0].Frame, fs[0].Message)
		}
		for _, id := range []string{"C9-95", "C9-148"} {
			if tl := tallies[id]; tl == nil || (tl.Open > 0) != random {
				t.Errorf("random IDs %v: %s open %+v, want open only with random IDs", random, id, tl)
			}
		}
	}
}

// TestRepeatedNAKBehindCaptureStart: the capture begins inside a message
// (its first request the Middle at PSN 209); the responder NAKs 208, the
// requester resends from 208, the responder acknowledges 208 and then NAKs
// 208 again, under a new ID of a responder whose IDs count: the resend at
// 208, though behind the first PSN the capture showed, was a request the
// trace saw, so the ACK shows the responder past 208, and the repeated NAK
// fails (its PSN, or the latch had it been built before: one finding).
func TestRepeatedNAKBehindCaptureStart(t *testing.T) {
	tr := &ht.Trace{}
	tr.Req(wire.SendMiddle, 209, false)
	tr.Req(wire.SendLast, 210, true)
	tr.NAK(208, wire.NAKPSNSequence, 504)
	tr.Req(wire.SendFirst, 208, true)
	tr.Req(wire.SendMiddle, 209, false)
	tr.Ack(208, 504)
	tr.NAK(208, wire.NAKPSNSequence, 504)
	tr.Req(wire.SendLast, 210, true)
	tr.Ack(210, 505)
	for i := range 10 {
		tr.Req(wire.SendOnly, wire.PSN(211+i), true)
		tr.Ack(wire.PSN(211+i), uint32(506+i))
	}
	numbered(tr)
	_, fs := ht.AuditAll(tr, ht.Capture())
	for _, f := range fs {
		if f.ID == "C9-111" || f.ID == "C9-114" {
			return
		}
	}
	t.Errorf("a sequence NAK repeated after the ACK of its resend fails neither C9-111 nor C9-114: %v", fs)
}
