package c9_107

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const q = wire.PSN(700)
	const m = 256
	orig := func(b *dupnak.TraceBuilder) {
		b.Read(q, 4*m)
		b.ReadStream(q, 4*m, 1)
	}
	partial := func(b *dupnak.TraceBuilder) *dupnak.TraceBuilder {
		r := b.Read(q+2, 2*m)
		r.Packet.RETH.VA += 2 * m
		return b
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"a whole replay", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
			b.ReadStream(q, 4*m, 1)
		}, true, false, true},
		{"a partial replay from the duplicate's PSN", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadStream(q+2, 2*m, 1)
		}, true, false, true},
		{"a partial replay starting with a Middle", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadResp(wire.ReadResponseMiddle, q+2, m, 1)
			b.ReadResp(wire.ReadResponseLast, q+3, m, 1)
		}, true, true, false},
		{"a replay of the whole original for a partial duplicate", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadStream(q, 4*m, 1)
		}, true, true, false},
		{"a replay ending early", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
			b.ReadResp(wire.ReadResponseFirst, q, m, 1)
			b.ReadResp(wire.ReadResponseLast, q+1, m, 1)
		}, true, true, false},
		{"a one-packet replay at the 2^24 wrap", func(b *dupnak.TraceBuilder) {
			b.Read(0xFFFFFF, 2*m)
			b.ReadStream(0xFFFFFF, 2*m, 1)
			r := b.Read(0, m)
			r.Packet.RETH.VA += m
			b.ReadStream(0, m, 1)
		}, true, false, true},
		{"a duplicate never answered is no violation", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
		}, true, false, false},
		{"capture: a partial replay starting with a Middle", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadResp(wire.ReadResponseMiddle, q+2, m, 1)
			b.ReadResp(wire.ReadResponseLast, q+3, m, 1)
		}, false, true, false},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(m)
		tc.build(b)
		sink := dupnak.Audit(b.Recs, tc.complete, m, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}
