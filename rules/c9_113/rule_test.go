package c9_113

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const s = wire.PSN(0xFFFFFE)
	est := func(b *dupnak.TraceBuilder) {
		b.Req(wire.WriteOnly, s-1, true)
		b.Ack(s-1, 1)
	}
	// behind: eight SENDs acknowledged, then an RNR NAK naming the
	// fourth of them.
	behind := func(b *dupnak.TraceBuilder) {
		for i := range 8 {
			b.Req(wire.SendOnly, s.Add(i-7), i == 7)
		}
		b.Ack(s, 8)
		b.RNR(s.Add(-4), 8)
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"RNR with the refused SEND's PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(s)
			b.RNR(s, 1)
		}, true, false, true},
		{"RNR with the refused SEND's PSN + 1 (never sent)", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(s)
			b.RNR(s.Add(1), 1)
		}, true, true, false},
		{"RNR naming a multi-packet SEND's Middle", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.SendFirst, s, false)
			b.Req(wire.SendMiddle, s.Add(1), false)
			b.Req(wire.SendLast, s.Add(2), true)
			b.RNR(s.Add(1), 1)
		}, true, true, false},
		{"RNR naming a multi-packet SEND's First, the rest dropped", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.SendFirst, s, false)
			b.Req(wire.SendMiddle, s.Add(1), false)
			b.Req(wire.SendLast, s.Add(2), true)
			b.RNR(s, 1)
		}, true, false, true},
		{"RNR naming a WRITE Last with immediate", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.WriteFirst, s, false)
			b.Req(wire.WriteLastImm, s.Add(1), true)
			b.RNR(s.Add(1), 1)
		}, true, false, true},
		{"RNR naming a request already acknowledged", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(s)
			b.Ack(s, 2)
			b.RNR(s, 2)
		}, true, true, false},
		{"capture: RNR for a SEND the capture shows", func(b *dupnak.TraceBuilder) {
			b.Send(s)
			b.RNR(s, 1)
		}, false, false, true},
		{"capture: RNR for a request the capture missed is undecided", func(b *dupnak.TraceBuilder) {
			b.Send(s)
			b.RNR(s.Add(5), 1)
		}, false, false, false},
		// Behind the expected PSN the trace proves: only a resend the
		// capture missed explains it, which a requester numbering its
		// packets one by one rules out with its next packet.
		{"capture: RNR naming an acknowledged request is undecided", func(b *dupnak.TraceBuilder) {
			behind(b)
		}, false, false, false},
		{"capture, IDs unbroken: RNR naming an acknowledged request", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			behind(b)
			b.Send(s.Add(1))
		}, false, true, false},
		{"capture, IDs unbroken, the next packet resends the PSN (undecided)", func(b *dupnak.TraceBuilder) {
			b.PerSender = true
			behind(b)
			b.Send(s.Add(-4))
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
