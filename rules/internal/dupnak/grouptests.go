// The monitor tests shared by the clauses of one
// shared-meaning group. Each clause package calls its group's function
// with its own ID, so every clause's registered monitor is tested
// against the same table.

package dupnak

import (
	"testing"

	"github.com/rcconform/rcconform/wire"
)

// CheckNAKPSNMonitor tests the NAK-PSN judge shared by C9-111, C9-121 and C9-125, registered under ID.
func CheckNAKPSNMonitor(t *testing.T, ID string) {
	t.Helper()
	const e = wire.PSN(0xFFFFFF) // the expected PSN sits at the 2^24 wrap
	est := func(b *TraceBuilder) {
		b.Send(e - 2)
		b.Send(e - 1)
		b.Ack(e-1, 2)
	}
	type tc struct {
		name      string
		build     func(b *TraceBuilder)
		complete  bool
		violation bool
	}
	seq := []tc{
		{"sequence NAK with the expected PSN", func(b *TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e, 2)
		}, true, false},
		{"sequence NAK with the received PSN", func(b *TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e.Add(2), 2)
		}, true, true},
		{"capture: sequence NAK behind the acknowledged PSN", func(b *TraceBuilder) {
			est(b)
			b.Send(e.Add(2))
			b.NAK(wire.NAKPSNSequence, e-2, 2)
		}, false, true},
	}
	inv := []tc{
		{"invalid request NAK with the expected PSN", func(b *TraceBuilder) {
			est(b)
			b.Req(wire.SendMiddle, e, true)
			b.NAK(wire.NAKInvalidRequest, e, 2)
		}, true, false},
		{"invalid request NAK with the received PSN, ahead", func(b *TraceBuilder) {
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
		b := NewTraceBuilder(1024)
		c.build(b)
		sink := Audit(b.Recs, c.complete, 1024, ID)
		tl := Tally(sink, ID)
		if c.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", c.name, c.violation, tl, sink.Findings)
		}
		if !c.violation && c.complete && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", c.name, tl)
		}
	}
}

// CheckLatchMonitor tests the NAK-latch monitor shared by C9-114 and C9-122, registered under ID.
func CheckLatchMonitor(t *testing.T, ID string) {
	t.Helper()
	const e = wire.PSN(0xFFFFFF)
	gap := func(b *TraceBuilder) {
		b.Send(e - 1)
		b.Ack(e-1, 1)
		b.Send(e.Add(1))
		b.Send(e.Add(2))
		b.Send(e.Add(3))
		b.NAK(wire.NAKPSNSequence, e, 1)
	}
	cases := []struct {
		name      string
		build     func(b *TraceBuilder)
		complete  bool
		violation bool
		checked   bool
	}{
		{"one NAK per gap", func(b *TraceBuilder) {
			gap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Ack(e.Add(1), 3)
		}, true, false, true},
		{"a NAK per out-of-sequence packet (no latch)", func(b *TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
			b.NAK(wire.NAKPSNSequence, e, 1)
		}, true, true, false},
		{"a new request executed past the gap while latched", func(b *TraceBuilder) {
			gap(b)
			b.Ack(e.Add(3), 2)
		}, true, true, false},
		{"a new gap after the first was repaired", func(b *TraceBuilder) {
			gap(b)
			b.Send(e)
			b.Send(e.Add(1))
			b.Send(e.Add(3))
			b.Ack(e.Add(1), 3)
			b.NAK(wire.NAKPSNSequence, e.Add(2), 3)
		}, true, false, true},
		{"capture: a second NAK with no resend in the capture is undecided", func(b *TraceBuilder) {
			gap(b)
			b.NAK(wire.NAKPSNSequence, e, 1)
		}, false, false, false},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(1024)
		tc.build(b)
		sink := Audit(b.Recs, tc.complete, 1024, ID)
		tl := Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if tc.checked && tl.Checked == 0 {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}

// CheckDupErrorMonitor tests the duplicate-error monitor shared by C9-106 and C9-115, registered under ID.
func CheckDupErrorMonitor(t *testing.T, ID string) {
	t.Helper()
	const q = wire.PSN(0xFFFFFE) // the READ's PSNs cross the 2^24 wrap
	cases := []struct {
		name      string
		build     func(b *TraceBuilder)
		complete  bool
		violation bool
	}{
		{"a duplicate READ NAKed remote access", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, true, true},
		{"a partial duplicate READ NAKed invalid request", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q.Add(2), 512)
			b.NAK(wire.NAKInvalidRequest, q.Add(2), 1)
		}, true, true},
		{"a duplicate READ dropped silently", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.Send(q.Add(4))
			b.Ack(q.Add(4), 2)
		}, true, false},
		{"an access error on a new WRITE (not a duplicate)", func(b *TraceBuilder) {
			b.Send(q)
			b.Ack(q, 1)
			b.Req(wire.WriteOnly, q.Add(1), true)
			b.NAK(wire.NAKRemoteAccess, q.Add(1), 1)
		}, true, false},
		{"capture: a duplicate READ NAKed", func(b *TraceBuilder) {
			b.Read(q, 1024)
			b.ReadStream(q, 1024, 1)
			b.Read(q, 1024)
			b.NAK(wire.NAKRemoteAccess, q, 1)
		}, false, true},
	}
	for _, tc := range cases {
		b := NewTraceBuilder(256)
		tc.build(b)
		sink := Audit(b.Recs, tc.complete, 256, ID)
		tl := Tally(sink, ID)
		if tc.violation != (tl.Violations > 0) {
			t.Errorf("%s: violation want %v, got %+v %v", tc.name, tc.violation, tl, sink.Findings)
		}
		if !tc.violation && tc.complete && tl.Checked == 0 && tc.name != "an access error on a new WRITE (not a duplicate)" {
			t.Errorf("%s: want checked, got %+v", tc.name, tl)
		}
	}
}
