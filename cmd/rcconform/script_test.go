package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeScript(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "s.rcs")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestScriptExitStatus: every outcome of `rcconform script` has its
// documented exit status and says why.
func TestScriptExitStatus(t *testing.T) {
	undecided := writeScript(t, "< SEND_ONLY len=8 ackreq\n> READ_RESPONSE_ONLY within 1ms [setup]\n> ACK [C9-95]\n")
	bad := writeScript(t, "< SEND_ONLY len=8\n> ACK psn=epsn frobnicate=1 [C9-95]\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"clean examples", []string{"script", "../../rules/scripts"}, exitOK, []string{"c9_95-coalesced-ack.rcs: pass", "C9-95        pass"}},
		{"defect", []string{"script", "--defect", "ack-psn-ahead", "../../rules/scripts/c9_95-coalesced-ack.rcs"}, exitViolation,
			[]string{"c9_95-coalesced-ack.rcs: fail", "C9-95        fail", "acceptable: Acknowledge syndrome=ack psn=1002 (line 10)", "defect ack-psn-ahead", "passive monitors over the trace"}},
		{"undecided", []string{"script", undecided}, exitUndecided, []string{"C9-95        indeterminate: line 2: precondition not met"}},
		{"parse error", []string{"script", bad}, exitUsage, []string{bad + ":2:16: unknown field \"frobnicate\""}},
		{"missing file", []string{"script", "nope.rcs"}, exitUsage, []string{"nope.rcs"}},
		{"no script", []string{"script"}, exitUsage, []string{"no script given"}},
		{"bad format", []string{"script", "--format", "xml", "x.rcs"}, exitUsage, []string{"unknown --format"}},
		{"unknown defect", []string{"script", "--defect", "nonsense", "../../rules/scripts"}, exitUsage, []string{"nonsense"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}

// TestScriptJSON: --format json gives each script's clauses and the
// failed line's finding.
func TestScriptJSON(t *testing.T) {
	code, out, errOut := invoke(t, "script", "--format", "json", "--defect", "rnr-nak-wrong-psn", "../../rules/scripts/c9_113-rnr-nak.rcs")
	if code != exitViolation {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res []scriptJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Verdict != "fail" || len(res[0].Clauses) != 1 || res[0].Clauses[0].Verdict != "fail" ||
		res[0].Failure == nil || res[0].Failure.ID != "C9-113" || len(res[0].Failure.Ladder) == 0 {
		t.Errorf("unexpected result: %s", out)
	}
}
