package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/reports"
	_ "github.com/rcconform/rcconform/rules"
	"github.com/rcconform/rcconform/rules/catalog"
	"github.com/rcconform/rcconform/rules/rulekit"
)

// suiteBinary compiles the rule suite once.
func suiteBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "rules.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("building the rule suite: %v\n%s", err, out)
	}
	return bin
}

type run struct {
	name string
	args []string
	res  *reports.Result
	out  string
	err  error
}

func runSuite(bin string, r *run, dir string) {
	jsonPath := filepath.Join(dir, strings.NewReplacer("/", "_", "=", "_", ",", "_").Replace(r.name)+".json")
	args := append([]string{"-ginkgo.no-color", "--json=" + jsonPath}, r.args...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	r.err = cmd.Run()
	r.out = buf.String()
	f, err := os.Open(jsonPath)
	if err != nil {
		r.err = fmt.Errorf("suite wrote no JSON result (%v): %w", r.err, err)
		return
	}
	defer f.Close()
	r.res, err = reports.ReadJSON(f)
	if err != nil {
		r.err = fmt.Errorf("reading %s: %w", jsonPath, err)
	}
}

func runAll(t *testing.T, bin string, runs []*run) {
	dir := t.TempDir()
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func(r *run) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			runSuite(bin, r, dir)
		}(r)
	}
	wg.Wait()
}

func verdicts(res *reports.Result) map[string]reports.ClauseResult {
	m := map[string]reports.ClauseResult{}
	for _, c := range res.Clauses {
		m[c.ID] = c
	}
	return m
}

// cleanConfigs are the open choices the clean reference must pass in.
var cleanConfigs = []string{
	"",
	"ack-policy=every-n",
	"ack-policy=delay",
	"msn-read=end",
}

func TestDefectMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the defect matrix runs the whole suite once per defect")
	}
	bin := suiteBinary(t)
	var runs []*run
	traces := t.TempDir()
	for _, c := range cleanConfigs {
		args := []string{"--seed=7"}
		if c != "" {
			args = append(args, "--settings="+c)
		}
		if c == "" {
			args = append(args, "--trace-dir="+filepath.Join(traces, "clean"))
		}
		runs = append(runs, &run{name: "clean " + c, args: args})
	}
	defects := reference.Defects()
	for _, d := range defects {
		runs = append(runs, &run{name: "defect " + d.Name, args: []string{"--seed=7", "--defect=" + d.Name,
			"--trace-dir=" + filepath.Join(traces, d.Name)}})
	}
	runAll(t, bin, runs)

	for i, r := range runs {
		if r.res == nil {
			t.Errorf("%s: %v\n%s", r.name, r.err, tail(r.out))
			continue
		}
		v := verdicts(r.res)
		if i < len(cleanConfigs) {
			if r.err != nil {
				t.Errorf("%s: the suite failed on the clean reference: %v\n%s", r.name, r.err, tail(r.out))
			}
			for _, c := range r.res.Clauses {
				switch c.Verdict {
				case reports.Pass, reports.TextUnavailable:
				default:
					t.Errorf("%s: %s is %s on the clean reference (%s)", r.name, c.ID, c.Verdict, c.Reason)
				}
			}
			continue
		}
		d := defects[i-len(cleanConfigs)]
		if r.err == nil {
			t.Errorf("defect %s: the suite passed", d.Name)
		}
		var also []string
		for _, c := range r.res.Clauses {
			if c.Verdict == reports.Fail && !contains(d.Clauses, c.ID) {
				also = append(also, c.ID)
			}
		}
		for _, id := range d.Clauses {
			if got := v[id].Verdict; got != reports.Fail {
				t.Errorf("defect %s should fail %s, but %s is %s", d.Name, id, id, got)
			}
		}
		sort.Strings(also)
		caught := auditTraces(t, filepath.Join(traces, d.Name), false)
		var passive []string
		for _, id := range d.Clauses {
			if caught[id] > 0 {
				passive = append(passive, id)
				continue
			}
			if why, ok := activeOnly[d.Name+"/"+id]; ok {
				t.Logf("defect %s: %s is caught by active scenarios only: %s", d.Name, id, why)
				continue
			}
			t.Errorf("defect %s: no passive monitor caught %s in the captures of its scenarios", d.Name, id)
		}
		t.Logf("defect %-24s fails %v (also %v); caught in captures: %v", d.Name, d.Clauses, also, passive)
	}

	// The captures of the clean run: no monitor may flag the reference.
	// Each capture is audited by the monitors of the device's side only:
	// the harness, playing the other side, breaks that side's rules on
	// purpose (gaps, duplicates, NAKs it sends to provoke a retry).
	for id, n := range auditTraces(t, filepath.Join(traces, "clean"), true) {
		t.Errorf("clean reference: the %s monitor flagged %d violations in the captures of the scenarios", id, n)
	}
}

// activeOnly lists, as "defect/clause", the deviations no capture can
// show, with the reason; every other defect must be caught under each
// clause it names by a passive monitor, in the captures of the suite's
// scenarios audited with the settings those scenarios used.
var activeOnly = map[string]string{
	"dup-read-dropped/C9-107":        "a duplicate READ left unanswered looks on the wire like a responder that no longer holds the READ's resources, which C9-107 allows",
	"too-many-reads-served/Table-58": "the number of responder resources negotiated is not on the wire, so serving one READ too many cannot be told from a larger limit",
	"ack-oldest-psn/C9-95":           "an ACK naming an older request is what a legal responder sends when it has not yet processed the newer one; in captures the missing ACK for the AckReq request is caught under C9-116",
	"implied-nak-ignored/§9.7.5.1.2": "the clause sets no deadline for re-issuing the READ, so a requester still silent when the capture ends cannot be told from a slow one (the active scenario bounds it)",
	"rnr-costs-retry/retry-counter":  "the transport retries this device gave up early are missing packets, which a capture shows only as silence; the rnr-retry monitor catches the same defect passively",
}

// sideClauses returns the clauses that bind the given side.
func sideClauses(requester bool) map[string]bool {
	m := map[string]bool{}
	for _, e := range catalog.All() {
		if (e.Side == catalog.Requester) == requester {
			m[e.ID] = true
		}
	}
	return m
}

// auditTraces audits every capture in dir, each with the settings its
// scenario used (the .json beside it), and returns violations per clause.
// With deviceSideOnly, only the monitors of the device's side run.
func auditTraces(t *testing.T, dir string, deviceSideOnly bool) map[string]int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pcapng"))
	out := map[string]int{}
	for _, f := range files {
		var ts rulekit.TraceSettings
		b, err := os.ReadFile(strings.TrimSuffix(f, ".pcapng") + ".json")
		if err == nil {
			err = json.Unmarshal(b, &ts)
		}
		if err != nil {
			t.Errorf("reading the settings of %s: %v", f, err)
			continue
		}
		var only map[string]bool
		if deviceSideOnly {
			only = sideClauses(ts.DeviceIsRequester)
		}
		for id, n := range auditFiles(t, []string{f}, ts.Settings(), only) {
			out[id] += n
		}
	}
	return out
}

func auditFiles(t *testing.T, files []string, settings harness.Settings, only map[string]bool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, f := range files {
		sink := harness.NewSink(f)
		a := harness.NewAuditor(settings, sink)
		a.Only = only
		if _, err := pcapdut.AuditFile(f, a, nil); err != nil {
			t.Errorf("auditing %s: %v", f, err)
			continue
		}
		checkSharded(t, f, settings, only, sink)
		for id, tl := range sink.Tallies {
			if tl.Violations > 0 {
				out[id] += tl.Violations
			}
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// TestEveryClauseHasADefect: every clause with public text is proven able
// to fail by at least one defect of the reference.
func TestEveryClauseHasADefect(t *testing.T) {
	named := map[string]bool{}
	for _, d := range reference.Defects() {
		for _, c := range d.Clauses {
			named[c] = true
		}
	}
	for _, e := range catalog.All() {
		if e.Status == catalog.TextUnavailable {
			if named[e.ID] {
				t.Errorf("a defect names %s, whose text is not public", e.ID)
			}
			continue
		}
		if !named[e.ID] {
			t.Errorf("no defect of the reference breaks %s: nothing proves its checks can fail", e.ID)
		}
	}
}
