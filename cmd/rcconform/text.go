package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rcconform/rcconform/reports"
)

// writeText writes a result for people: the findings grouped by clause,
// each with its message, acceptable outcomes, what was seen and its ladder
// with frame numbers; then a verdict table per capture (ID, verdict,
// checked, violations, reason); then the captures' statistics.
func writeText(w io.Writer, r *reports.Result) error {
	ew := &errWriter{w: w}
	status := "no violation"
	if r.Failed() {
		status = "FAIL"
	}
	kind := r.Kind
	if kind == "" {
		kind = "run"
	}
	fmt.Fprintf(ew, "rcconform %s: %s\n", kind, status)
	fmt.Fprintf(ew, "verdicts: %s\n", countLine(r))

	writeFindings(ew, r)
	writeVerdicts(ew, r)
	writeConnections(ew, r)
	writeCaptures(ew, r)
	return ew.err
}

func countLine(r *reports.Result) string {
	n := r.Counts()
	parts := make([]string, 0, len(reports.Verdicts))
	for _, v := range reports.Verdicts {
		parts = append(parts, fmt.Sprintf("%d %s", n[v], v))
	}
	return strings.Join(parts, ", ")
}

// writeFindings lists the findings clause by clause, in the order of the
// result's clauses (the catalogue's).
func writeFindings(w io.Writer, r *reports.Result) {
	fmt.Fprintf(w, "\n== Violations ==\n")
	if len(r.Findings) == 0 && !r.Failed() {
		fmt.Fprintf(w, "none\n")
		return
	}
	done := map[string]bool{}
	for _, c := range r.Clauses {
		if c.Verdict != reports.Fail || done[c.ID] {
			continue
		}
		done[c.ID] = true
		fmt.Fprintf(w, "\n%s  %s  %s, %s\n  %s\n", c.ID, c.Section, c.Side, c.Level, c.Summary)
		first := true
		for _, cc := range r.Clauses {
			if cc.ID != c.ID || cc.Verdict != reports.Fail {
				continue
			}
			fs := r.FindingsFor(cc)
			for i, f := range fs {
				if first && f.Clause != "" {
					fmt.Fprintf(w, "  clause: %s\n", f.Clause)
				}
				first = false
				writeFinding(w, f, i+1)
			}
			if more := cc.Violations - len(fs); more > 0 {
				fmt.Fprintf(w, "\n  … and %d more violations of %s in %s not listed (raise --max-findings to see them)\n", more, c.ID, cc.Capture)
			}
		}
	}
	// Findings whose clause has no result (a result file written by hand).
	for _, f := range r.Findings {
		if !done[f.ID] {
			writeFinding(w, f, 0)
		}
	}
}

func writeFinding(w io.Writer, f reports.Finding, n int) {
	where := []string{}
	if f.Capture != "" {
		where = append(where, f.Capture)
	}
	if f.Frame != 0 {
		where = append(where, fmt.Sprintf("frame %d", f.Frame))
	}
	where = append(where, fmt.Sprintf("QP 0x%06x", f.QP), fmt.Sprintf("PSN %d", f.PSN))
	if f.Scenario != "" {
		where = append(where, "scenario "+f.Scenario)
	}
	label := f.ID
	if n > 0 {
		label = fmt.Sprintf("#%d", n)
	}
	fmt.Fprintf(w, "\n  %s %s\n", label, strings.Join(where, ", "))
	fmt.Fprintf(w, "    %s\n", f.Message)
	if len(f.Expected) > 0 {
		fmt.Fprintf(w, "    acceptable:\n")
		for _, e := range f.Expected {
			fmt.Fprintf(w, "      - %s\n", e)
		}
	}
	if f.Seen != "" {
		fmt.Fprintf(w, "    seen: %s\n", f.Seen)
	}
	if l := reports.LadderText(f.Ladder); l != "" {
		fmt.Fprintf(w, "    ladder:\n")
		for _, line := range strings.Split(strings.TrimRight(l, "\n"), "\n") {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

// writeVerdicts prints one verdict table per capture (one in all when the
// clause results name no capture).
func writeVerdicts(w io.Writer, r *reports.Result) {
	var order []string
	groups := map[string][]reports.ClauseResult{}
	for _, c := range r.Clauses {
		if _, ok := groups[c.Capture]; !ok {
			order = append(order, c.Capture)
		}
		groups[c.Capture] = append(groups[c.Capture], c)
	}
	for _, capture := range order {
		title := "== Verdicts =="
		if capture != "" {
			title = "== Verdicts: " + capture + " =="
		}
		fmt.Fprintf(w, "\n%s\n", title)
		tw := newTable(w, 0)
		fmt.Fprintln(tw, "ID\tVERDICT\tCHECKED\tVIOLATIONS\tREASON")
		for _, c := range groups[capture] {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", c.ID, c.Verdict, c.Checked, c.Violations, oneLine(c.Reason))
		}
		tw.Flush()
	}
}

func writeCaptures(w io.Writer, r *reports.Result) {
	if len(r.Captures) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== Captures ==\n")
	tw := newTable(w, 0)
	fmt.Fprintln(tw, "FRAMES\tROCE\tSKIPPED\tBAD ICRC\tTRUNCATED\tERRORS\tCAPTURE")
	for _, c := range r.Captures {
		name := c.File
		if c.Format != "" {
			name += " (" + c.Format + ")"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\n", c.Frames, c.RoCEFrames, c.Skipped, c.BadICRC, c.Truncated, len(c.Errors), name)
	}
	tw.Flush()
	for _, c := range r.Captures {
		if len(c.Errors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", c.File)
		for _, e := range c.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// table is a tabwriter whose lines lose their trailing blanks.
type table struct {
	tw  *tabwriter.Writer
	buf strings.Builder
	out io.Writer
}

func newTable(w io.Writer, flags uint) *table {
	t := &table{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', flags)
	return t
}

func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush writes the table out.
func (t *table) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}

// errWriter remembers the first write error so that the many Fprintf
// calls need no checks of their own.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err == nil {
		if _, err := e.w.Write(p); err != nil {
			e.err = fmt.Errorf("writing the report: %w", err)
		}
	}
	return len(p), nil
}
