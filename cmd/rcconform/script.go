package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/rcconform/rcconform/dut"
	_ "github.com/rcconform/rcconform/dut/live" // --dut=live
	_ "github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/rules/script"
)

// exitUndecided: no clause failed, but a script's clause was left
// indeterminate, not exercised or unsupported (never a pass).
const exitUndecided = 3

const scriptSynopsis = "[--dut reference|live] [--defect NAME] [--seed N] [--settings k=v,...] [--format text|json] SCRIPT|FOLDER...\n" +
	"       rcconform script --from CAPTURE --connection N --side requester|responder [--mtu M] [--out FILE]"

// runScript runs scenario scripts against a device (the reference
// transport by default) and reports each clause they check, and the
// passive monitors' findings over their traces.
func runScript(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("script", scriptSynopsis, stderr)
	dutName := fs.String("dut", "reference", "device adapter: "+strings.Join(dut.Names(), ", "))
	defect := fs.String("defect", "", "reference: the defect to switch on (see `rcconform defects`)")
	seed := fs.Int64("seed", 1, "seed for the QP numbers and PSNs a script leaves to the adapter")
	settings := fs.String("settings", "", "adapter settings, key=value,key=value (live: device=IP,agent=HOST:PORT)")
	format := fs.String("format", "text", "output: text or json")
	from := fs.String("from", "", "write a script from this capture's connection instead of running scripts")
	conn := fs.Int("connection", 0, "--from: the connection's number (as `rcconform audit` numbers them)")
	side := fs.String("side", "", "--from: the side the device under test takes: responder (the script plays the recorded requester) or requester (it plays the recorded responder)")
	mtu := fs.Int("mtu", 0, "--from: the connection's path MTU (default: from its packets)")
	outFile := fs.String("out", "", "--from: write the script to this file (default: standard output)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if *from != "" {
		if len(pos) > 0 {
			return usageErr(stderr, "script", fmt.Errorf("--from writes a script: it runs none (%q)", pos[0]))
		}
		return runFrom(*from, *conn, *side, *mtu, *outFile, stdout, stderr)
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return usageErr(stderr, "script", err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, "script", fmt.Errorf("no script given\nusage: rcconform script %s", scriptSynopsis))
	}
	var files []string
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			return usageErr(stderr, "script", fmt.Errorf("reading script: %w", err))
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		fs, err := script.Files(p)
		if err != nil {
			return usageErr(stderr, "script", err)
		}
		files = append(files, fs...)
	}
	// Every script is read before any runs: a bad one stops the run.
	var scripts []*script.Script
	for _, f := range files {
		s, err := script.ParseFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "rcconform script: %v\n", err)
			return exitUsage
		}
		scripts = append(scripts, s)
	}
	d, err := dut.New(*dutName, dut.Options{Defect: *defect, Seed: *seed, Settings: rulekit.ParseSettings(*settings)})
	if err != nil {
		return usageErr(stderr, "script", err)
	}
	status := exitOK
	var results []*script.Result
	for _, s := range scripts {
		res := s.Run(d)
		results = append(results, res)
		switch {
		case res.Err != nil:
			status = exitUsage
		case res.Failed() && status != exitUsage:
			status = exitViolation
		case !res.Decided() && status == exitOK:
			status = exitUndecided
		}
	}
	if *format == "json" {
		if err := writeScriptJSON(stdout, results); err != nil {
			fmt.Fprintf(stderr, "rcconform script: %v\n", err)
			return exitUsage
		}
		return status
	}
	for _, res := range results {
		writeScriptText(stdout, res)
	}
	return status
}

// scriptVerdict is a script's overall verdict: fail when any clause
// failed, pass when every clause it checks passed, else the first
// undecided outcome's.
func scriptVerdict(res *script.Result) reports.Verdict {
	switch {
	case res.Err != nil:
		return "error"
	case res.Failed():
		return reports.Fail
	}
	for _, o := range res.Outcomes {
		if o.Verdict != reports.Pass {
			return o.Verdict
		}
	}
	return reports.Pass
}

func writeScriptText(w io.Writer, res *script.Result) {
	fmt.Fprintf(w, "== %s: %s\n", res.File, scriptVerdict(res))
	for _, o := range res.Outcomes {
		fmt.Fprintf(w, "  %-12s %s", o.ID, o.Verdict)
		if o.Reason != "" {
			fmt.Fprintf(w, ": %s", o.Reason)
		}
		fmt.Fprintln(w)
	}
	if res.Err != nil {
		fmt.Fprintf(w, "  error: %v\n", res.Err)
	}
	finding := func(f reports.Finding) {
		fmt.Fprintf(w, "  %s: %s\n", f.ID, f.Message)
		if len(f.Expected) > 0 {
			fmt.Fprintf(w, "    acceptable: %s\n", strings.Join(f.Expected, " | "))
		}
		if f.Seen != "" {
			fmt.Fprintf(w, "    seen: %s\n", f.Seen)
		}
		for _, l := range strings.Split(strings.TrimRight(reports.LadderText(f.Ladder), "\n"), "\n") {
			if l != "" {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	if res.Failure != nil {
		fmt.Fprintf(w, "  the failed line:\n")
		finding(*res.Failure)
	}
	if len(res.Monitors) > 0 {
		fmt.Fprintf(w, "  passive monitors over the trace:\n")
		for _, f := range res.Monitors {
			finding(f)
		}
	}
	if len(res.Undecided) > 0 {
		var ids []string
		for id := range res.Undecided {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var s []string
		for _, id := range ids {
			s = append(s, fmt.Sprintf("%s %d", id, res.Undecided[id]))
		}
		fmt.Fprintf(w, "  undecided instances of the passive monitors: %s\n", strings.Join(s, ", "))
	}
}

// scriptJSON is one script's result in --format json.
type scriptJSON struct {
	File      string            `json:"file"`
	Verdict   reports.Verdict   `json:"verdict"`
	Clauses   []rulekit.Outcome `json:"clauses"`
	Failure   *reports.Finding  `json:"failure,omitempty"`
	Monitors  []reports.Finding `json:"monitor_findings"`
	Undecided map[string]int    `json:"monitor_undecided,omitempty"`
	Error     string            `json:"error,omitempty"`
}

func writeScriptJSON(w io.Writer, results []*script.Result) error {
	out := []scriptJSON{}
	for _, r := range results {
		j := scriptJSON{File: r.File, Verdict: scriptVerdict(r), Clauses: r.Outcomes, Failure: r.Failure,
			Monitors: append([]reports.Finding{}, r.Monitors...), Undecided: r.Undecided}
		if r.Err != nil {
			j.Error = r.Err.Error()
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("writing the scripts' results: %w", err)
	}
	return nil
}
