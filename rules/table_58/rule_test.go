package table_58

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const q = wire.PSN(0xFFFFF8)
	reads := func(b *dupnak.TraceBuilder) {
		b.Read(q, 4096)
		b.Read(q.Add(4), 4096)
		b.Read(q.Add(8), 4096)
	}
	cases := []struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"an RNR NAK for a READ beyond the resources", func(b *dupnak.TraceBuilder) {
			reads(b)
			b.ReadResp(wire.ReadResponseFirst, q, 1024, 1)
			b.RNR(q.Add(8), 1)
		}, true, true, false},
		{"an RNR NAK for an ATOMIC", func(b *dupnak.TraceBuilder) {
			b.Req(wire.CompareSwap, q, true)
			b.RNR(q, 0)
		}, false, true, false},
		{"a NAK invalid request for the READ beyond the resources", func(b *dupnak.TraceBuilder) {
			reads(b)
			b.ReadResp(wire.ReadResponseFirst, q, 1024, 1)
			b.NAK(wire.NAKInvalidRequest, q.Add(8), 1)
		}, true, false, true},
		{"an RNR NAK for a SEND is not this rule's", func(b *dupnak.TraceBuilder) {
			b.Send(q)
			b.RNR(q, 0)
		}, true, false, false},
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
