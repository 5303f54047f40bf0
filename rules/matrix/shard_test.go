package matrix

import (
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
)

// checkSharded audits the scenario trace f again with a ShardedAuditor of
// 3 workers and holds it to what the single auditor put in want: the
// same findings, in the same order, and the same tallies.
func checkSharded(t *testing.T, f string, settings harness.Settings, only map[string]bool, want *harness.Sink) {
	t.Helper()
	sink := harness.NewSink(f)
	a := harness.NewShardedAuditor(settings, sink, 3)
	a.Only = only
	if _, err := pcapdut.AuditFile(f, a, nil); err != nil {
		t.Errorf("auditing %s on 3 workers: %v", f, err)
		return
	}
	if d := harness.DiffSinks(want, sink); d != "" {
		t.Errorf("%s: the sharded audit differs from the single one: %s", f, d)
	}
}
