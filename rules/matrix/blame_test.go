package matrix

import (
	"strings"
	"testing"

	"github.com/rcconform/rcconform/internal/suiterun"
	"github.com/rcconform/rcconform/reports"
)

// TestBlame runs single clauses of the suite with a defect on and checks
// where the blame lands: a failed setup step is a finding of the clause
// governing it and leaves the scenario's clause indeterminate; a trigger
// the device does not take leaves it not exercised, with what the device
// did; the clause table follows Ginkgo's summary.
func TestBlame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the rule suite")
	}
	bin := suiterun.Build(t, "..")
	runs := []*run{
		// C9-97's scenarios start from an ACKed SEND: with ACK PSNs one
		// ahead that setup step fails, under C9-95.
		{name: "setup", args: []string{"--seed=7", "--defect=ack-psn-ahead", "-ginkgo.label-filter=rule: containsAny {C9-97, C9-95}"}},
		// C9-125's resource-overrun scenario assumes an invalid-request
		// NAK; an RNR NAK instead breaks Table-58 and leaves it unexercised.
		{name: "trigger", args: []string{"--seed=7", "--defect=too-many-reads-rnr", "-ginkgo.label-filter=rule: containsAny {C9-125, Table-58}"}},
		{name: "clean", args: []string{"--seed=7", "-ginkgo.label-filter=rule: containsAny {C9-95}"}},
	}
	runAll(t, bin, runs)
	for _, r := range runs {
		if r.res == nil {
			t.Fatalf("%s: %v\n%s", r.name, r.err, tail(r.out))
		}
		checkGinkgoAgrees(t, r)
		checkOrder(t, r)
	}
	v := verdicts(runs[0].res)
	if c := v["C9-97"]; c.Verdict != reports.Indeterminate || !strings.Contains(c.Reason, "precondition not met") || !strings.Contains(c.Reason, "(C9-95)") {
		t.Errorf("setup step: C9-97 is %s (%s), want indeterminate, precondition not met (C9-95)", c.Verdict, c.Reason)
	}
	if v["C9-95"].Verdict != reports.Fail {
		t.Errorf("setup step: C9-95 is %s, want fail", v["C9-95"].Verdict)
	}
	if !hasFinding(runs[0].res, "C9-95", "seen in a scenario of C9-97") {
		t.Errorf("setup step: no C9-95 finding from a C9-97 scenario's step")
	}

	v = verdicts(runs[1].res)
	if !hasFinding(runs[1].res, "Table-58", "seen in a scenario of C9-125") {
		t.Errorf("trigger: no Table-58 finding from C9-125's resource-overrun scenario")
	}
	if c := v["C9-125"]; c.Verdict == reports.Fail {
		t.Errorf("trigger: C9-125 fails (%s); the device's RNR NAK is Table-58's matter", c.Reason)
	}
	if v["Table-58"].Verdict != reports.Fail {
		t.Errorf("trigger: Table-58 is %s, want fail", v["Table-58"].Verdict)
	}
	if r := v["C9-125"].Reason; !strings.Contains(r, "the device did not answer more READs outstanding than the responder resources") ||
		!strings.Contains(r, "that breaks Table-58, reported under Table-58") {
		t.Errorf("trigger: C9-125's result does not say what the device did and which rule that breaks: %q", r)
	}

	// The clause table follows Ginkgo's summary, one row per clause.
	out := runs[2].out
	sum, table := strings.Index(out, "Ran "), strings.Index(out, "CLAUSE ")
	if sum < 0 || table < sum {
		t.Fatalf("no clause table after Ginkgo's summary:\n%s", tail(out))
	}
	for _, c := range runs[2].res.Clauses {
		if !strings.Contains(out[table:], "\n"+c.ID+" ") {
			t.Errorf("the clause table has no row for %s", c.ID)
		}
	}
	if !strings.Contains(out[table:], "C9-95 ") || !strings.Contains(out[table:], "UNDECIDED") {
		t.Errorf("clause table lacks columns:\n%s", out[table:])
	}
}

func hasFinding(res *reports.Result, id, text string) bool {
	for _, f := range res.Findings {
		if f.ID == id && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}
