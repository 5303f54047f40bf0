package rulekit

import (
	"strings"
	"testing"

	"github.com/rcconform/rcconform/reports"
)

// A run whose device under test cannot be set up still writes a result,
// and every clause it could have judged says the run stopped, and why
// (not only "not exercised").
func TestSetupFailureNamedInResult(t *testing.T) {
	saved, savedBroken := Cfg, broken
	t.Cleanup(func() { Cfg, broken = saved, savedBroken })
	Cfg.DUT, Cfg.Partial, Cfg.Traces = "no-such-adapter", true, ""
	broken = nil
	err := Setup()
	if err == nil {
		t.Fatal("Setup accepted an unknown adapter")
	}
	res := Result()
	named := 0
	for _, c := range res.Clauses {
		if c.Verdict == reports.Pass || c.Verdict == reports.Fail {
			t.Errorf("%s: %s after a failed setup", c.ID, c.Verdict)
		}
		if c.Verdict == reports.NotExercised && strings.Contains(c.Reason, "setting up the run: ") && strings.Contains(c.Reason, err.Error()) {
			named++
		}
	}
	if named == 0 {
		t.Errorf("no clause names the setup error %q", err)
	}
}
