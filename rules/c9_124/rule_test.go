package c9_124

import (
	"testing"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const e = wire.PSN(0xFFFFFE)
	est := func(b *dupnak.TraceBuilder) {
		b.Send(e - 1)
		b.Ack(e-1, 1)
	}
	overrun := func(b *dupnak.TraceBuilder) {
		est(b)
		b.Req(wire.WriteFirst, e, true)
		b.Req(wire.WriteMiddle, e.Add(1), true)
		b.Req(wire.WriteMiddle, e.Add(2), true)
		b.Req(wire.WriteLast, e.Add(3), true)
		b.Ack(e, 1)
		b.Ack(e.Add(1), 1)
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"the third packet of a WRITE refused, NAK with its PSN", func(b *dupnak.TraceBuilder) {
			overrun(b)
			b.NAK(wire.NAKRemoteAccess, e.Add(2), 1)
		}, true, false, true},
		{"the third packet refused, NAK with the message's first PSN", func(b *dupnak.TraceBuilder) {
			overrun(b)
			b.NAK(wire.NAKRemoteAccess, e, 1)
		}, true, true, false},
		{"a WRITE refused at its First, before any ACK", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.WriteFirst, e, false)
			b.Req(wire.WriteLast, e.Add(1), true)
			b.NAK(wire.NAKRemoteAccess, e, 1)
		}, true, false, true},
		{"a NAK with a PSN no request carried", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.WriteOnly, e, true)
			b.NAK(wire.NAKRemoteAccess, e.Add(1), 1)
		}, true, true, false},
		{"a READ refused, NAK with its PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Read(e, 4096)
			b.NAK(wire.NAKRemoteAccess, e, 1)
		}, true, false, true},
		{"a mid-stream READ failure is C9-100's", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Read(e, 4096)
			b.ReadResp(wire.ReadResponseFirst, e, 1024, 2)
			b.NAK(wire.NAKRemoteAccess, e.Add(1), 2)
		}, true, false, false},
		{"capture: the NAK names an acknowledged packet (undecided)", func(b *dupnak.TraceBuilder) {
			overrun(b)
			b.NAK(wire.NAKRemoteAccess, e, 1)
		}, false, false, false},
		{"capture: the NAK names the refused packet", func(b *dupnak.TraceBuilder) {
			overrun(b)
			b.NAK(wire.NAKRemoteAccess, e.Add(2), 1)
		}, false, false, true},
		// A requester numbering its packets one by one shows, with its
		// next packet, that the capture missed no resend.
		{"capture, IDs unbroken: the NAK names an acknowledged packet", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			idRun(b, e-9)
			idOverrun(b)
			b.NAK(wire.NAKRemoteAccess, e, 1)
			b.Send(e.Add(4))
		}, false, true, false},
		{"capture, IDs unbroken, the next packet resends the PSN (undecided)", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			idRun(b, e-9)
			idOverrun(b)
			b.NAK(wire.NAKRemoteAccess, e, 1)
			b.Req(wire.WriteFirst, e, false)
		}, false, false, false},
		{"capture, a requester packet missed: the NAK names an acknowledged packet (undecided)", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			idRun(b, e-9)
			b.SkipID = true
			idOverrun(b)
			b.NAK(wire.NAKRemoteAccess, e, 1)
			b.Send(e.Add(4))
		}, false, false, false},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(1024)
		tc.build(b)
		sink := dupnak.Audit(b.Recs, tc.complete, 1024, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}

// idRun sends requests from PSN first on (no AckReq: the ACK that follows
// covers them), enough for the requester's IDs to count as evidence.
func idRun(b *dupnak.TraceBuilder, first wire.PSN) {
	for i := range 8 {
		b.Req(wire.SendOnly, first.Add(i), false)
	}
}

// idOverrun is TestMonitor's overrun after idRun: its ACKs carry the MSNs
// of a new QP that took idRun's eight requests first, so the trace shows
// the connection's beginning.
func idOverrun(b *dupnak.TraceBuilder) {
	const e = wire.PSN(0xFFFFFE)
	b.Send(e - 1)
	b.Ack(e-1, 9)
	b.Req(wire.WriteFirst, e, true)
	b.Req(wire.WriteMiddle, e.Add(1), true)
	b.Req(wire.WriteMiddle, e.Add(2), true)
	b.Req(wire.WriteLast, e.Add(3), true)
	b.Ack(e, 9)
	b.Ack(e.Add(1), 9)
}

// TestBehindEither: a remote access NAK naming a WRITE the responder had
// already acknowledged, on a capture where the requester's IDs show a
// packet missed and the responder's IDs count up (the NAK sent after the
// ACK): either the NAK names a packet that did not fail (C9-124), or the
// responder NAKed an error on a duplicate a missed resend brought
// (C9-106, and C9-115 which shares its meaning). One finding names them
// all, and each fails; without IDs to date the NAK it stays open.
func TestBehindEither(t *testing.T) {
	const s = wire.PSN(100)
	for _, dated := range []bool{true, false} {
		b := dupnak.NewTraceBuilder(1024)
		b.PerSender = true
		for i := range 10 {
			b.Req(wire.WriteOnly, s.Add(i), true)
			b.Ack(s.Add(i), uint32(i+1))
		}
		b.SkipID = true
		b.Req(wire.WriteOnly, s.Add(10), true)
		b.NAK(wire.NAKRemoteAccess, s.Add(6), 10)
		b.Req(wire.WriteOnly, s.Add(11), true)
		for _, r := range b.Recs {
			if r.Dir == trace.ToRequester && !dated {
				r.HasIPID = false
			}
		}
		sink := dupnak.Audit(b.Recs, false, 1024, ID, "C9-106", "C9-115")
		own := dupnak.Tally(sink, ID)
		failed := own.Violations
		for _, c := range []string{"C9-106", "C9-115"} {
			failed += dupnak.Tally(sink, c).Violations
		}
		switch {
		case dated && (failed != 3 || len(sink.Findings) != 3 || len(sink.Findings[0].Alternatives) != 3):
			t.Errorf("dated: want one finding naming C9-124, C9-106 and C9-115 under each, got %d violations, %+v", failed, sink.Findings)
		case !dated && (failed != 0 || own.Open != 1):
			t.Errorf("not dated: want C9-124 open, got %+v %+v", own, sink.Findings)
		}
	}
}

// TestMidResponseNAK: a remote access NAK naming a READ whose answer had
// begun may end a READ failing mid-response, which C9-100 and C9-112
// judge: C9-124 does not fail it. (This trace is held by the older guard
// on a READ answer's acknowledged PSN; the guard in dupError, for a trace
// whose answer's First the model does not take as acknowledging, is held
// by the soft-RoCE 6.12 lab, whose mid-response NAKs it keeps open.)
func TestMidResponseNAK(t *testing.T) {
	b := dupnak.NewTraceBuilder(1024)
	b.PerSender = true
	for i := range 10 {
		b.Req(wire.WriteOnly, wire.PSN(40+i), true)
		b.Ack(wire.PSN(40+i), uint32(i+1))
	}
	b.Read(50, 8*1024)
	b.SkipRspID = true // its First lost before the capture point
	for i := 1; i < 5; i++ {
		b.ReadResp(wire.ReadResponseMiddle, wire.PSN(50+i), 1024, 10)
	}
	b.NAK(wire.NAKRemoteAccess, 50, 10)
	b.SkipID = true
	b.Req(wire.WriteOnly, 58, true)
	sink := dupnak.Audit(b.Recs, false, 1024, ID)
	if own := dupnak.Tally(sink, ID); own.Violations != 0 {
		t.Errorf("C9-124 failed on a READ's mid-response NAK: %+v %v", own, sink.Findings)
	}
}
