package realtime

import "testing"

// TestEveryRequesterRule: every requester rule has real-time scenarios.
func TestEveryRequesterRule(t *testing.T) {
	for _, id := range []string{"C9-140", "retry-counter", "rnr-retry", "go-back-n", "§9.7.5.1.2", "§9.9.2.2"} {
		if byClause[id] == nil {
			t.Errorf("%s has no real-time scenarios", id)
		}
	}
}
