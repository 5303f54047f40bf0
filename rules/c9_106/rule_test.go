package c9_106

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const q = wire.PSN(0xFFFFFE) // the READ's PSNs cross the 2^24 wrap
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
	}{
		{"a duplicate READ NAKed remote access", func(b *dupnak.TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, true, true},
		{"a partial duplicate READ NAKed invalid request", func(b *dupnak.TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q.Add(2), 512)
			b.NAK(wire.NAKInvalidRequest, q.Add(2), 1)
		}, true, true},
		{"a duplicate READ dropped silently", func(b *dupnak.TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.Send(q.Add(4))
			b.Ack(q.Add(4), 2)
		}, true, false},
		{"an access error on a new WRITE (not a duplicate)", func(b *dupnak.TraceBuilder) {
			b.Send(q)
			b.Ack(q, 1)
			b.Req(wire.WriteOnly, q.Add(1), true)
			b.NAK(wire.NAKRemoteAccess, q.Add(1), 1)
		}, true, false},
		{"capture: a duplicate READ NAKed", func(b *dupnak.TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, false, true},
	}
	for _, tc := range cases {
		b := dupnak.NewTraceBuilder(256)
		tc.build(b)
		sink := dupnak.Audit(b.Recs, tc.complete, 256, ID)
		tl := dupnak.Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if !tc.violation && tc.complete && tl.Checked == 0 && tc.name != "an access error on a new WRITE (not a duplicate)" {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}
