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
	writeUndecided(ew, r)
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

// textPlacesListed bounds the places of undrawn instances listed per kind.
const textPlacesListed = 20

// writeFindings lists the findings clause result by clause result, in the
// order of the result's clauses (the catalogue's), grouped by kind (see
// reports.GroupFindings): each kind with its count and first and last
// instance, its first instances in full, and where the others are.
func writeFindings(w io.Writer, r *reports.Result) {
	fmt.Fprintf(w, "\n== Violations ==\n")
	cfs := reports.GroupFindings(r)
	if len(cfs) == 0 {
		fmt.Fprintf(w, "none\n")
		return
	}
	for i := range cfs {
		cf := &cfs[i]
		c := cf.Clause
		fmt.Fprintf(w, "\n%s  %s  %s, %s\n", c.ID, c.Section, c.Side, c.Level)
		if c.Summary != "" {
			fmt.Fprintf(w, "  %s\n", c.Summary)
		}
		if len(cf.Groups) > 0 && cf.Groups[0].First().Clause != "" {
			fmt.Fprintf(w, "  clause: %s\n", cf.Groups[0].First().Clause)
		}
		count := "  " + cf.KindCount()
		if c.Checked > 0 {
			count += fmt.Sprintf(" in %d checked", c.Checked)
		}
		if c.Undecided > 0 {
			count += fmt.Sprintf(", %d undecided", c.Undecided)
		}
		if c.Capture != "" {
			count += " (capture " + c.Capture + ")"
		}
		fmt.Fprintln(w, count)
		for _, g := range cf.Groups {
			fmt.Fprintf(w, "\n  [%d ×] %s (%s)\n", g.Count(), g.Headline(), g.Span())
			drawn := min(reports.DrawnPerGroup, g.Count())
			for k := 0; k < drawn; k++ {
				writeFinding(w, g.Findings[k], fmt.Sprintf("#%d of %d", k+1, g.Count()))
			}
			if rest := g.Findings[drawn:]; len(rest) > 0 {
				var places []string
				for k, f := range rest {
					if k == textPlacesListed {
						places = append(places, "…")
						break
					}
					places = append(places, place(f))
				}
				fmt.Fprintf(w, "\n    %d more of this kind: %s\n", len(rest), strings.Join(places, "; "))
			}
		}
		if cf.NotKept > 0 {
			in := ""
			if c.Capture != "" {
				in = " in " + c.Capture
			}
			fmt.Fprintf(w, "\n  … and %d more violations of %s%s not kept as findings (raise --max-findings to see them)\n", cf.NotKept, c.ID, in)
		}
	}
}

// writeUndecided lists every clause result's undecided instances by the
// kind of their reason (reports.UndecidedLines), so that no doubt hides
// behind a pass.
func writeUndecided(w io.Writer, r *reports.Result) {
	first := true
	for _, c := range r.Clauses {
		lines := reports.UndecidedLines(c)
		if len(lines) == 0 {
			continue
		}
		if first {
			fmt.Fprintf(w, "\n== Undecided ==\n")
			first = false
		}
		in := ""
		if c.Capture != "" {
			in = " (capture " + c.Capture + ")"
		}
		fmt.Fprintf(w, "\n%s%s: %s, %d undecided\n", c.ID, in, c.Verdict, c.Undecided)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// place is where a finding is: its frame, else its scenario, else its QP
// and PSN.
func place(f reports.Finding) string {
	switch {
	case f.Frame != 0:
		return fmt.Sprintf("frame %d", f.Frame)
	case f.Scenario != "":
		return "scenario " + f.Scenario
	}
	return fmt.Sprintf("QP 0x%06x PSN %d", f.QP, f.PSN)
}

func writeFinding(w io.Writer, f reports.Finding, label string) {
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
	fmt.Fprintf(w, "\n    %s: %s\n", label, strings.Join(where, ", "))
	fmt.Fprintf(w, "      %s\n", f.Message)
	if len(f.Expected) > 0 {
		fmt.Fprintf(w, "      acceptable:\n")
		for _, e := range f.Expected {
			fmt.Fprintf(w, "        - %s\n", e)
		}
	}
	if f.Seen != "" {
		fmt.Fprintf(w, "      seen: %s\n", f.Seen)
	}
	if l := reports.LadderText(f.Ladder); l != "" {
		fmt.Fprintf(w, "      ladder:\n")
		for _, line := range strings.Split(strings.TrimRight(l, "\n"), "\n") {
			fmt.Fprintf(w, "        %s\n", line)
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
		fmt.Fprintln(tw, "ID\tVERDICT\tCHECKED\tVIOLATIONS\tUNDECIDED\tREASON")
		for _, c := range groups[capture] {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", c.ID, reports.VerdictText(c), c.Checked, c.Violations, c.Undecided, oneLine(c.Reason))
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
