package script

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/rulekit"
)

// Ext is the file extension of scenario scripts.
const Ext = ".rcs"

// Result is what a run of a script outside the Ginkgo suite came to.
type Result struct {
	File string
	// Outcomes has each clause the script checks.
	Outcomes []rulekit.Outcome
	// Failure is the failed line's finding: under a clause the script
	// checks, or under the clause governing a setup or trigger line.
	Failure *reports.Finding
	// Monitors holds the passive monitors' findings over the trace, and
	// Undecided their undecided instances per clause.
	Monitors  []reports.Finding
	Undecided map[string]int
	// Err is an adapter or harness error that stopped the run.
	Err   error
	Trace []*trace.Record
}

// Failed reports whether a clause failed: a check of the script, a setup
// line's governing clause, or a passive monitor over the trace.
func (r *Result) Failed() bool {
	if r.Failure != nil || len(r.Monitors) > 0 {
		return true
	}
	for _, o := range r.Outcomes {
		if o.Verdict == reports.Fail {
			return true
		}
	}
	return false
}

// Decided reports whether every clause the script checks passed or
// failed (none indeterminate, not exercised or unsupported).
func (r *Result) Decided() bool {
	for _, o := range r.Outcomes {
		if o.Verdict != reports.Pass && o.Verdict != reports.Fail {
			return false
		}
	}
	return r.Err == nil
}

// Run runs the script on a fresh connection of d, outside Ginkgo: the
// peer's failures stop the run as they stop a spec, and the trace is
// audited by every passive monitor, as the suite's scenarios' are.
func (s *Script) Run(d dut.DUT) *Result {
	res := &Result{File: s.File, Undecided: map[string]int{}}
	sc := s.Scenario()
	unsupported := func(reason string) *Result {
		for _, c := range s.Clauses() {
			res.Outcomes = append(res.Outcomes, rulekit.Outcome{ID: c, Verdict: reports.Unsupported, Reason: reason})
		}
		return res
	}
	caps := d.Capabilities()
	if caps.Capture {
		return unsupported("active scenario: a capture cannot be sent packets")
	}
	if miss := sc.Needs.Missing(caps); len(miss) > 0 {
		return unsupported(fmt.Sprintf("the %s adapter lacks %s", d.Name(), strings.Join(miss, ", ")))
	}
	conn, err := d.NewConn(sc.Config)
	if errors.Is(err, dut.ErrUnsupported) {
		return unsupported(fmt.Sprintf("the %s device cannot set up this connection: %v", d.Name(), err))
	}
	if err != nil {
		res.Err = fmt.Errorf("opening a connection on the %s device: %w", d.Name(), err)
		return res
	}
	defer conn.Close()
	peer := harness.NewPeer(conn, s.File, "")
	peer.TextOf = rulekit.ClauseText
	pr := &Progress{}
	stopped := false
	func() {
		defer func() {
			if v := recover(); v != nil {
				stopped = true
				if peer.Failure == nil && peer.Undecided == nil && pr.Unsupported == "" && pr.Err == nil {
					// Not a stop the peer or the runner decided: a bug.
					pr.Err = fmt.Errorf("line %d: the run panicked: %v", pr.Line, v)
				}
			}
		}()
		s.Exec(peer, pr)
	}()
	rulekit.Settle(peer, stopped, caps.VirtualTime, s.DeviceIsRequester)
	settings := harness.ActiveSettings(conn, s.DeviceIsRequester, sc.Config.SRQ)
	if n, _ := dut.ReceiveLoss(conn); n > 0 {
		settings.ReceiveLoss = true
	}
	res.Trace = conn.Trace()
	sink := harness.AuditRecords(res.Trace, settings, rulekit.ClauseText)
	res.Outcomes = s.Outcomes(peer, pr)
	own := map[string]bool{}
	for _, o := range res.Outcomes {
		own[o.ID] = true
	}
	if f := peer.Failure; f != nil {
		res.Failure = f
		f.Scenario = s.File
	}
	res.Err = pr.Err
	for id, t := range sink.Tallies {
		if t.Indeterminate > 0 {
			res.Undecided[id] = t.Indeterminate
		}
	}
	for _, f := range sink.Findings {
		f.Scenario = s.File
		res.Monitors = append(res.Monitors, f)
	}
	return res
}

// Files returns the scripts in dir and its sub-folders, sorted.
func Files(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(path, Ext) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing scripts: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

// Specs registers, in the Ginkgo suite, one spec per script under the
// folder dir() names when the tree is built (after the flags are read):
// labelled with the clauses it names, run against the suite's DUT, its
// trace audited by every passive monitor. A script that does not parse
// is a failing spec that says where. With required false a missing
// folder registers nothing (the default folder of a suite run from
// elsewhere).
func Specs(dir func() (string, bool)) bool {
	ginkgo.Describe("scenario scripts", func() {
		d, required := dir()
		if d == "" {
			return
		}
		if _, err := os.Stat(d); err != nil && !required {
			return
		}
		files, err := Files(d)
		if err != nil {
			ginkgo.It("lists the scripts of "+d, func() { ginkgo.Fail(err.Error()) })
			return
		}
		for _, f := range files {
			s, err := ParseFile(f)
			if err != nil {
				ginkgo.It(f, func() { ginkgo.Fail(err.Error()) })
				continue
			}
			pr := &Progress{}
			rulekit.Multi{
				Name: f, Clauses: s.Clauses(), Labels: s.Governing(), Scenario: s.Scenario(),
				Body: func(p *harness.Peer) {
					pr = &Progress{} // afresh for each attempt
					s.Exec(p, pr)
				},
				Outcomes: func(p *harness.Peer) []rulekit.Outcome { return s.Outcomes(p, pr) },
			}.Register()
		}
	})
	return true
}
