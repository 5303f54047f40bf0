package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSimCheckExitStatus: sim-check exits 2 without a simulator and 1
// when the simulator breaks the protocol (cat echoes the requests back),
// saying which step failed; dut/sim's TestCheck holds the steps.
func TestSimCheckExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no simulator", []string{"sim-check"}, exitUsage, "want --sim="},
		{"stray argument", []string{"sim-check", "--sim=cat", "extra"}, exitUsage, "no arguments"},
		{"not a simulator", []string{"sim-check", "--sim=cat", "--timeout=5s"}, exitViolation, `FAIL hello: saying hello to the simulator "cat"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", tc.name, code, tc.code, tc.want, stdout.String(), stderr.String())
		}
	}
}
