package c9_103

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// established: six SENDs acknowledged, so the expected PSN is e.
func established(b *dupnak.TraceBuilder, e wire.PSN) {
	for i := 6; i >= 1; i-- {
		b.Req(wire.SendOnly, e.Add(-i), i == 1)
	}
	b.Ack(e.Add(-1), 6)
}

func TestMonitor(t *testing.T) {
	const e = wire.PSN(100)
	cases := []struct {
		name       string
		build      func(b *dupnak.TraceBuilder)
		complete   bool
		violations bool
	}{
		{"the duplicate moved the expected PSN to the duplicate's PSN + 1", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Ack(e-1, 6)
			b.Send(e + 1)
			b.NAK(wire.NAKPSNSequence, e-3, 6)
		}, true, true},
		{"the duplicate left the expected PSN alone", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Ack(e-1, 6)
			b.Send(e + 1)
			b.NAK(wire.NAKPSNSequence, e, 6)
			b.Send(e)
			b.Send(e + 1)
			b.Ack(e+1, 8)
		}, true, false},
		{"across the 2^24 wrap: moved", func(b *dupnak.TraceBuilder) {
			established(b, 1)
			b.Send(0xFFFFFE)
			b.Send(2)
			b.NAK(wire.NAKPSNSequence, 0xFFFFFF, 6)
		}, true, true},
		{"capture: a NAK behind the acknowledged PSN after a duplicate", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Send(e + 1)
			b.NAK(wire.NAKPSNSequence, e-3, 6)
		}, false, true},
		{"capture: a NAK ahead after a duplicate is undecided", func(b *dupnak.TraceBuilder) {
			established(b, e)
			b.Send(e - 4)
			b.Send(e + 3)
			b.NAK(wire.NAKPSNSequence, e+2, 6)
		}, false, false},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(1024)
		tc.build(b)
		sink := dupnak.Audit(b.Recs, tc.complete, 1024, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violations && tl.Violations == 0 {
			t.Errorf("%s: want a violation of %s, got %+v", tc.name, ID, tl)
		}
		if !tc.violations && tl.Violations != 0 {
			t.Errorf("%s: want no violation, got %+v: %v", tc.name, tl, sink.Findings)
		}
		if !tc.violations && tc.complete && tl.Checked == 0 {
			t.Errorf("%s: want checked instances, got %+v", tc.name, tl)
		}
	}
}
