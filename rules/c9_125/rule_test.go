package c9_125

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	const e = wire.PSN(0xFFFFFF) // the expected PSN sits at the 2^24 wrap
	est := func(b *dupnak.TraceBuilder) {
		b.Send(e - 2)
		b.Send(e - 1)
		b.Ack(e-1, 2)
	}
	type tc struct {
		name      string
		build     func(b *dupnak.TraceBuilder)
		complete  bool
		violation bool
	}
	seq := []tc{
		{"sequence NAK with the expected PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e, 2)
		}, true, false},
		{"sequence NAK with the received PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e.Add(2), 2)
		}, true, true},
		{"capture: sequence NAK behind the acknowledged PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e-2, 2)
		}, false, true},
	}
	inv := []tc{
		{"invalid request NAK with the expected PSN", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.SendMiddle, e, true)
			b.NAK(wire.NAKInvalidRequest, e, 2)
		}, true, false},
		{"invalid request NAK with the received PSN, ahead", func(b *dupnak.TraceBuilder) {
			est(b)
			b.Req(wire.SendMiddle, e.Add(2), true)
			b.NAK(wire.NAKInvalidRequest, e.Add(2), 2)
		}, true, true},
	}
	var cases []tc
	switch ID {
	case "C9-121":
		cases = seq
	case "C9-125":
		cases = inv
	default:
		cases = append(seq, inv...)
	}
	for _, c := range cases {
		b := dupnak.NewTraceBuilder(1024)
		c.build(b)
		sink := dupnak.Audit(b.Recs, c.complete, 1024, ID)
		tl := dupnak.Tally(sink, ID)
		if c.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", c.name, c.violation, tl, sink.Findings)
		}
		if !c.violation && c.complete && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", c.name, tl)
		}
	}
}
