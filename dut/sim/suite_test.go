package sim_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/internal/suiterun"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/reports"
)

// suiteRun is one run of the rule suite.
type suiteRun struct {
	name string
	args []string
	res  *reports.Result
	out  string
	err  error
}

func build(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (r *suiteRun) run(bin, dir string) {
	jsonPath := filepath.Join(dir, strings.NewReplacer(" ", "_", "/", "_").Replace(r.name)+".json")
	args := append([]string{"-ginkgo.no-color", "--seed=7", "--json=" + jsonPath}, r.args...)
	r.res, r.out, r.err = suiterun.Exec(bin, "../../rules", jsonPath, args)
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// TestSuiteThroughSim runs the whole rule suite in-process against the
// reference and through the sim adapter against rcconform-refsim, clean
// and with every defect: each clause gets the same verdict, with the same
// counts of checked, violating and undecided instances. A refsim whose
// timers fire one 4 ns cycle early fails C9-140 and nothing else.
func TestSuiteThroughSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the rule suite twice per defect")
	}
	dir := t.TempDir()
	bin, refsim := filepath.Join(dir, "rules.test"), filepath.Join(dir, "rcconform-refsim")
	build(t, "test", "-c", "-o", bin, "../../rules")
	build(t, "build", "-o", refsim, "../../cmd/rcconform-refsim")
	defects := append([]string{""}, reference.DefectNames()...)
	if raceOn {
		defects = []string{"", reference.DefAckPSNAhead, reference.DefRNRStaleTimer, reference.DefGBNNewPSN}
	}
	var runs []*suiteRun
	for _, d := range defects {
		ref := &suiteRun{name: "reference " + d, args: []string{"--dut=reference"}}
		sim := &suiteRun{name: "sim " + d, args: []string{"--dut=sim", "--sim=" + refsim}}
		if d != "" {
			ref.args = append(ref.args, "--defect="+d)
			sim.args[1] += " --defect=" + d
		}
		runs = append(runs, ref, sim)
	}
	early := &suiteRun{name: "sim timer-early", args: []string{"--dut=sim", "--sim=" + refsim + " --timer-early=4ns"}}
	runs = append(runs, early)
	start := time.Now()
	suiterun.Parallel(len(runs), 2, func(i int) { runs[i].run(bin, dir) })
	t.Logf("%d suite runs in %v", len(runs), time.Since(start).Round(time.Second))
	for i, d := range defects {
		ref, sim := runs[2*i], runs[2*i+1]
		if ref.res == nil || sim.res == nil {
			t.Errorf("defect %q: %v / %v\n%s\n%s", d, ref.err, sim.err, tail(ref.out), tail(sim.out))
			continue
		}
		want := map[string]reports.ClauseResult{}
		for _, c := range ref.res.Clauses {
			want[c.ID] = c
		}
		for _, c := range sim.res.Clauses {
			w := want[c.ID]
			if c.Verdict != w.Verdict || c.Checked != w.Checked || c.Violations != w.Violations || c.Undecided != w.Undecided {
				t.Errorf("defect %q: %s is %s (checked %d, violations %d, undecided %d) through the sim adapter, %s (%d, %d, %d) in-process; reason: %s",
					d, c.ID, c.Verdict, c.Checked, c.Violations, c.Undecided, w.Verdict, w.Checked, w.Violations, w.Undecided, c.Reason)
			}
		}
		if (ref.err == nil) != (sim.err == nil) {
			t.Errorf("defect %q: the suite's exit differs: in-process %v, through the sim adapter %v", d, ref.err, sim.err)
		}
	}
	if early.res == nil {
		t.Fatalf("timer-early: %v\n%s", early.err, tail(early.out))
	}
	for _, c := range early.res.Clauses {
		if got, want := c.Verdict, map[bool]reports.Verdict{true: reports.Fail, false: c.Verdict}[c.ID == "C9-140"]; got != want || c.ID != "C9-140" && c.Verdict == reports.Fail {
			t.Errorf("timers 4 ns early: %s is %s (%s)", c.ID, c.Verdict, c.Reason)
		}
	}
}

// TestSuiteStopsOnBrokenSimulator: a simulator that hangs mid-run stops
// the suite within the wall-clock timeout, with the adapter's error, and
// no clause fails for it.
func TestSuiteStopsOnBrokenSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the rule suite")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rules.test")
	build(t, "test", "-c", "-o", bin, "../../rules")
	for _, tc := range []struct{ name, selects string }{
		{"a clause's Go scenarios and scripts", "-ginkgo.label-filter=rule: containsAny {C9-95}"},
		{"a script alone", "-ginkgo.focus=c9_95-coalesced-ack.rcs"},
	} {
		t.Run(tc.name, func(t *testing.T) { stopsOnHang(t, bin, dir, tc.selects) })
	}
}

// stopsOnHang runs the suite binary bin, the specs that selects picks,
// against a simulator that hangs: the run stops saying why, and no
// clause fails.
func stopsOnHang(t *testing.T, bin, dir, selects string) {
	r := &suiteRun{name: "hang", args: []string{"--dut=sim", "--sim=" + fakeSim(t, "hang"), "--settings=timeout=2s", selects}}
	r.run(bin, dir)
	if r.err == nil {
		t.Fatalf("the suite passed with a simulator that hangs:\n%s", tail(r.out))
	}
	for _, want := range []string{"the device adapter broke", "sent nothing answering within 2s of wall-clock time", "model: waiting for a clock edge"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the suite's output does not say %q:\n%s", want, tail(r.out))
		}
	}
	if r.res == nil {
		t.Fatalf("no result: %v", r.err)
	}
	stopped := 0
	for _, c := range r.res.Clauses {
		if c.Verdict == reports.Fail {
			t.Errorf("%s fails for a simulator that hung: %s", c.ID, c.Reason)
		}
		if strings.HasPrefix(c.Reason, "the run stopped before this clause: the device adapter broke") {
			stopped++
		}
	}
	if stopped == 0 {
		t.Errorf("no clause says the run stopped:\n%s", tail(r.out))
	}
}
