package c9_110

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const m = 256
	const a, b = wire.PSN(0xFFFFFC), wire.PSN(0) // A's four PSNs cross the 2^24 wrap
	setup := func(tb *dupnak.TraceBuilder) {
		tb.Read(a, 4*m)
		tb.ReadStream(a, 4*m, 1)
		tb.Read(b, 8*m)
		tb.ReadStream(b, 8*m, 2)
	}
	cases := []struct {
		name      string
		build     func(tb *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"waiting duplicates answered oldest first", func(tb *dupnak.TraceBuilder) {
			setup(tb)
			tb.Read(a, 4*m)
			tb.Read(b, 8*m)
			tb.ReadStream(a, 4*m, 2)
			tb.ReadStream(b, 8*m, 2)
		}, true, false, true},
		{"waiting duplicates answered newest first", func(tb *dupnak.TraceBuilder) {
			setup(tb)
			tb.Read(a, 4*m)
			tb.Read(b, 8*m)
			tb.ReadStream(b, 8*m, 2)
			tb.ReadStream(a, 4*m, 2)
		}, true, true, false},
		{"an older duplicate ATOMIC answered after a newer READ replay", func(tb *dupnak.TraceBuilder) {
			tb.Req(wire.FetchAdd, a, true)
			tb.AtomicAck(a, 9, 1)
			tb.Read(a.Add(1), 4*m)
			tb.ReadStream(a.Add(1), 4*m, 2)
			tb.Req(wire.FetchAdd, a, true)
			tb.Read(a.Add(1), 4*m)
			tb.ReadStream(a.Add(1), 4*m, 2)
			tb.AtomicAck(a, 9, 2)
		}, true, true, false},
		{"an older duplicate preempts a replay, which is abandoned", func(tb *dupnak.TraceBuilder) {
			setup(tb)
			tb.Read(b, 8*m)
			tb.ReadResp(wire.ReadResponseFirst, b, m, 2)
			tb.Read(a, 4*m)
			tb.ReadResp(wire.ReadResponseMiddle, b.Add(1), m, 2)
			tb.ReadStream(a, 4*m, 2)
		}, true, false, true},
		{"a preempted replay resumed mid-stream", func(tb *dupnak.TraceBuilder) {
			setup(tb)
			tb.Read(b, 8*m)
			tb.ReadResp(wire.ReadResponseFirst, b, m, 2)
			tb.Read(a, 4*m)
			tb.ReadStream(a, 4*m, 2)
			tb.ReadResp(wire.ReadResponseMiddle, b.Add(1), m, 2)
		}, true, true, false},
		// Off a complete trace, a duplicate READ at b and the First of its
		// answer that the capture dropped explain the Middle: open, not
		// failed.
		{"capture: a preempted replay resumed mid-stream", func(tb *dupnak.TraceBuilder) {
			setup(tb)
			tb.Read(b, 8*m)
			tb.ReadResp(wire.ReadResponseFirst, b, m, 2)
			tb.Read(a, 4*m)
			tb.ReadStream(a, 4*m, 2)
			tb.ReadResp(wire.ReadResponseMiddle, b.Add(1), m, 2)
		}, false, false, false},
		{"capture: newest first cannot be decided", func(tb *dupnak.TraceBuilder) {
			setup(tb)
			tb.Read(a, 4*m)
			tb.Read(b, 8*m)
			tb.ReadStream(b, 8*m, 2)
			tb.ReadStream(a, 4*m, 2)
		}, false, false, false},
	}
	for _, tc := range cases {
		tb := dupnak.NewTraceBuilder(m)
		tc.build(tb)
		sink := dupnak.Audit(tb.Recs, tc.complete, m, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}
