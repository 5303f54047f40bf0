package rulekit

import (
	"strings"
	"testing"
)

// TestTraceFile: a name made of the clause and the scenario keeps
// letters, digits, '.' and '_', turns every other run into one '-', is
// at most 100 bytes and never empty nor hidden; takeName makes it unique.
func TestTraceFile(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"c9_95", "AckReq on the third and the sixth SEND"}, "c9_95-ackreq-on-the-third-and-the-sixth-send"},
		{[]string{"c9_96", "a READ at PSN 0xFFFFFF, across the 2^24 wrap (MTU 256)"}, "c9_96-a-read-at-psn-0xffffff-across-the-2-24-wrap-mtu-256"},
		{[]string{"script", "../../etc/passwd"}, "script-..-..-etc-passwd"},
		{[]string{"", "..."}, "trace..."},
		{[]string{"s9_7_5_2", "§ ü / \\ : * ? \" < > |"}, "s9_7_5_2"},
		{[]string{"", "!!!"}, "trace"},
		{[]string{"x", strings.Repeat("ab ", 60)}, "x-" + strings.TrimSuffix(strings.Repeat("ab-", 33), "-")},
	} {
		got := traceFile(tc.parts...)
		if got != tc.want {
			t.Errorf("traceFile(%q) = %q, want %q", tc.parts, got, tc.want)
		}
		if len(got) > 100 || strings.ContainsAny(got, "/\\ ") || strings.HasPrefix(got, ".") {
			t.Errorf("traceFile(%q) = %q: not a safe file name", tc.parts, got)
		}
	}
	for i, want := range []string{"a", "a-2", "a-3"} {
		if got := takeName("a"); got != want {
			t.Errorf("take %d of %q: %q, want %q", i+1, "a", got, want)
		}
	}
	if got := takeName("a-2"); got != "a-2-2" {
		t.Errorf("a name taken as a suffix: %q, want a-2-2", got)
	}
}
