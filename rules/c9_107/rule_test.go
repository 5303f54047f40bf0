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
	// midFirst answers a 4-packet READ at PSN psn with Middle, Middle,
	// Middle, Last: no First (C9-97's fault when it answers a new READ).
	midFirst := func(b *dupnak.TraceBuilder, psn wire.PSN) {
		for i := 0; i < 3; i++ {
			b.ReadResp(wire.ReadResponseMiddle, psn+wire.PSN(i), m, 1)
		}
		b.ReadResp(wire.ReadResponseLast, psn+3, m, 1)
	}
	// midLast answers it with First, Middle, Middle, Middle: no Last
	// (C9-98's fault when it answers a new READ).
	midLast := func(b *dupnak.TraceBuilder, psn wire.PSN) {
		b.ReadResp(wire.ReadResponseFirst, psn, m, 1)
		for i := 1; i < 4; i++ {
			b.ReadResp(wire.ReadResponseMiddle, psn+wire.PSN(i), m, 1)
		}
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
		undecided bool
	}{
		{"a whole replay opening with a Middle, where new READs open with First", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
			midFirst(b, q)
		}, true, true, false, false},
		{"a replay opening with a Middle, the new READs shown answered by Onlys alone", func(b *dupnak.TraceBuilder) {
			// An Only got right says nothing of how the device opens a
			// stream of several packets.
			b.Read(q+10, m)
			b.ReadStream(q+10, m, 1)
			b.Read(q, 4*m)
			midFirst(b, q)
		}, false, false, false, true},
		{"one root cause: every answer, new READs' too, opens with a Middle (C9-97's)", func(b *dupnak.TraceBuilder) {
			b.Read(q, 4*m)
			midFirst(b, q)
			b.Read(q, 4*m)
			midFirst(b, q)
		}, true, false, false, true},
		{"a whole replay ending with a Middle, where new READs end with Last", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
			midLast(b, q)
		}, true, true, false, false},
		{"a replay ending with a Middle, no new READ's answer showing its last packet", func(b *dupnak.TraceBuilder) {
			b.Read(q, 4*m)
			b.ReadResp(wire.ReadResponseFirst, q, m, 1)
			b.Read(q, 4*m)
			midLast(b, q)
		}, true, false, false, true},
		{"one root cause: every answer, new READs' too, ends with a Middle (C9-98's)", func(b *dupnak.TraceBuilder) {
			b.Read(q, 4*m)
			midLast(b, q)
			b.Read(q, 4*m)
			midLast(b, q)
		}, true, false, false, true},
		{"a whole replay", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
			b.ReadStream(q, 4*m, 1)
		}, true, false, true, false},
		{"a partial replay from the duplicate's PSN", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadStream(q+2, 2*m, 1)
		}, true, false, true, false},
		{"a partial replay starting with a Middle", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadResp(wire.ReadResponseMiddle, q+2, m, 1)
			b.ReadResp(wire.ReadResponseLast, q+3, m, 1)
		}, true, true, false, false},
		{"a replay of the whole original for a partial duplicate", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadStream(q, 4*m, 1)
		}, true, true, false, false},
		{"a replay ending early", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
			b.ReadResp(wire.ReadResponseFirst, q, m, 1)
			b.ReadResp(wire.ReadResponseLast, q+1, m, 1)
		}, true, true, false, false},
		{"a one-packet replay at the 2^24 wrap", func(b *dupnak.TraceBuilder) {
			b.Read(0xFFFFFF, 2*m)
			b.ReadStream(0xFFFFFF, 2*m, 1)
			r := b.Read(0, m)
			r.Packet.RETH.VA += m
			b.ReadStream(0, m, 1)
		}, true, false, true, false},
		{"a duplicate never answered is no violation", func(b *dupnak.TraceBuilder) {
			orig(b)
			b.Read(q, 4*m)
		}, true, false, false, false},
		{"capture: a partial replay starting with a Middle", func(b *dupnak.TraceBuilder) {
			orig(b)
			partial(b)
			b.ReadResp(wire.ReadResponseMiddle, q+2, m, 1)
			b.ReadResp(wire.ReadResponseLast, q+3, m, 1)
		}, false, true, false, false},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(m)
		tc.build(b)
		sink := dupnak.Audit(b.Recs, tc.complete, m, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.undecided && tl.Indeterminate == 0 {
			t.Errorf("%s: want undecided, got %+v", tc.name, tl)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}
