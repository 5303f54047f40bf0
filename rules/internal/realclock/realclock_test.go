package realclock

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

func TestMargin(t *testing.T) {
	for _, tc := range []struct{ tol, want time.Duration }{
		{0, 5 * time.Millisecond},
		{time.Millisecond, 7 * time.Millisecond},
		{3 * time.Millisecond, 11 * time.Millisecond},
	} {
		if got := Margin(tc.tol); got != tc.want {
			t.Errorf("Margin(%v) = %v, want %v", tc.tol, got, tc.want)
		}
	}
}

// TestFind: only the device's packets count, the first match wins.
func TestFind(t *testing.T) {
	mk := func(dir trace.Dir, psn wire.PSN) *trace.Record {
		return &trace.Record{Dir: dir, Packet: &wire.Packet{BTH: wire.BTH{Opcode: wire.ReadResponseLast, PSN: psn}}}
	}
	recs := []*trace.Record{mk(trace.ToResponder, 7), mk(trace.ToRequester, 5), mk(trace.ToRequester, 7), mk(trace.ToRequester, 7)}
	is7 := func(r *trace.Record) bool { return r.Packet.PSN == 7 }
	if got := Find(recs, is7); got != recs[2] {
		t.Errorf("Find returned %v, want the device's first packet with PSN 7", got)
	}
	if got := Find(recs[:2], is7); got != nil {
		t.Errorf("Find returned %v for a harness packet", got)
	}
}

// TestTakenAfter: only an answer that starts at or after the finishing
// packet counts, and a missing packet never does.
func TestTakenAfter(t *testing.T) {
	at := func(d time.Duration) *trace.Record { return &trace.Record{Time: d} }
	for _, tc := range []struct {
		name        string
		done, start *trace.Record
		want        bool
	}{
		{"answer after the work ended", at(5 * time.Millisecond), at(6 * time.Millisecond), true},
		{"answer at the same instant", at(5 * time.Millisecond), at(5 * time.Millisecond), true},
		{"answer while the work went on", at(5 * time.Millisecond), at(4 * time.Millisecond), false},
		{"work never finished", nil, at(4 * time.Millisecond), false},
		{"stimulus never answered", at(5 * time.Millisecond), nil, false},
	} {
		if got := TakenAfter(tc.done, tc.start); got != tc.want {
			t.Errorf("%s: TakenAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}
