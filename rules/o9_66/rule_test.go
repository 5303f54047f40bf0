package o9_66

import (
	"testing"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	cases := []struct {
		name  string
		build func(tr *ht.Trace)
		want  reports.Verdict
	}{
		{"replay returns the saved value", func(tr *ht.Trace) {
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 1, 40)
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 1, 40)
		}, reports.Pass},
		{"replay executed again", func(tr *ht.Trace) {
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 1, 40)
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 2, 41)
		}, reports.Fail},
		{"replay with another value, its MSN that of a later answer, no IPv4 ID to date it", func(tr *ht.Trace) {
			tr.Atomic(wire.FetchAdd, 10)
			tr.Read(11, 8)
			tr.AtomicAck(10, 1, 40)
			tr.ReadResp(wire.ReadResponseOnly, 11, 2, 8)
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 2, 41) // late or not, two values for one ATOMIC
			for _, r := range tr.Records {
				r.HasIPID = false
			}
		}, reports.Fail},
		{"no duplicate: nothing to decide", func(tr *ht.Trace) {
			tr.Atomic(wire.CompareSwap, 10)
			tr.AtomicAck(10, 1, 7)
		}, reports.NotExercised},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &ht.Trace{}
			c.build(tr)
			tally, fs := ht.Audit(tr, ID, ht.Capture())
			if got := tally.Verdict(); got != c.want {
				t.Fatalf("verdict %s, want %s (tally %+v, findings %+v)", got, c.want, tally, fs)
			}
		})
	}
}
