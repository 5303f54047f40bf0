package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rcconform/rcconform/reports"
)

// The lab runs the scenario scripts (rules/scripts, ci/rxe/repro) against
// rxe with `rcconform script --format json`, one file of results per run,
// in the folder scripts/ next to the suite's result.json. Their verdicts
// are baselined per script and clause in expected.json's "scripts", under
// the ID "<script file> <clause>": a reproducer that stops failing, or an
// example that starts to, is a difference like any clause's.

// scriptsDir is the folder of a run's script results.
const scriptsDir = "scripts"

// scriptRun is one script's result as `rcconform script --format json`
// writes it.
type scriptRun struct {
	File    string `json:"file"`
	Clauses []struct {
		ID      string          `json:"id"`
		Verdict reports.Verdict `json:"verdict"`
		Reason  string          `json:"reason"`
	} `json:"clauses"`
	Failure  *reports.Finding  `json:"failure"`
	Monitors []reports.Finding `json:"monitor_findings"`
	Error    string            `json:"error"`
}

// scriptID is the ID of a script's clause in expected.json.
func scriptID(file, clause string) string { return file + " " + clause }

// isScriptID reports whether id names a script's clause.
func isScriptID(id string) bool {
	f, _, ok := strings.Cut(id, " ")
	return ok && strings.HasSuffix(f, ".rcs")
}

// addScripts adds to r, as clause results with script IDs, the verdicts of
// every script result file in the folder scripts/ next to the run's
// result.json (none when it does not exist). A clause the script checks
// takes its outcome; a setup line's clause or a passive monitor's that
// failed is a fail of that clause in that script, its finding kept (a
// monitor's clause the script does not check is absent from a run whose
// monitors found nothing on it: compare reads that as pass, observed).
func addScripts(r *reports.Result, resultPath string) error {
	dir := filepath.Join(filepath.Dir(resultPath), scriptsDir)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return fmt.Errorf("listing the script results in %s: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading script results: %w", err)
		}
		var runs []scriptRun
		if err := json.Unmarshal(b, &runs); err != nil {
			return fmt.Errorf("reading script results %s: %w", f, err)
		}
		for _, s := range runs {
			if s.File == "" {
				return fmt.Errorf("script results %s: a result without its file", f)
			}
			at := map[string]int{}
			for _, c := range s.Clauses {
				if !c.Verdict.Valid() {
					return fmt.Errorf("script results %s: %s %s: unknown verdict %q", f, s.File, c.ID, c.Verdict)
				}
				reason := c.Reason
				if s.Error != "" {
					reason = strings.TrimSpace(reason + " (" + s.Error + ")")
				}
				at[c.ID] = len(r.Clauses)
				r.Clauses = append(r.Clauses, reports.ClauseResult{ID: scriptID(s.File, c.ID), Verdict: c.Verdict, Reason: reason})
			}
			var found []reports.Finding
			if s.Failure != nil {
				found = append(found, *s.Failure)
			}
			found = append(found, s.Monitors...)
			for _, fd := range found {
				clause := fd.ID
				fd.ID = scriptID(s.File, clause)
				r.Findings = append(r.Findings, fd)
				if i, ok := at[clause]; ok {
					r.Clauses[i].Verdict = reports.Fail
					continue
				}
				at[clause] = len(r.Clauses)
				r.Clauses = append(r.Clauses, reports.ClauseResult{ID: fd.ID, Verdict: reports.Fail})
			}
		}
	}
	return nil
}
