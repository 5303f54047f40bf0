package c9_122

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const e = wire.PSN(0xFFFFFF)
	gap := func(b *dupnak.TraceBuilder) {
		b.Send(e - 1)
		b.Ack(e-1, 1)
		b.Send(e.Add(1))
		b.Send(e.Add(2))
		b.Send(e.Add(3))
		b.NAK(wire.NAKPSNSequence, e, 1)
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"one NAK per gap", func(b *dupnak.TraceBuilder) {
			gap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Ack(e.Add(1), 3)
		}, true, false, true},
		{"a NAK per out-of-sequence packet (no latch)", func(b *dupnak.TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.NAK(wire.NAKPSNSequence, e, 1)
		}, true, true, false},
		{"a new request executed past the gap while latched", func(b *dupnak.TraceBuilder) {
			gap(b)
			b.Ack(e.Add(3), 2)
		}, true, true, false},
		{"a new gap after the first was repaired", func(b *dupnak.TraceBuilder) {
			gap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Send(e.Add(3))
			b.Ack(e.Add(1), 3)
			b.NAK(wire.NAKPSNSequence, e.Add(2), 3)
		}, true, false, true},
		{"capture: a second NAK with no resend in the capture is undecided", func(b *dupnak.TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
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
