package rulekit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rcconform/rcconform/reports"
)

// WriteTable writes the run's per-clause verdicts as a table for people,
// as `rcconform audit` does in its text output: clause, verdict, checked,
// violations, undecided, reason. The suite prints it after Ginkgo's
// summary, so that which clauses failed is read off the run's end.
func WriteTable(w io.Writer) error {
	res := Result()
	n := res.Counts()
	var counts []string
	for _, v := range reports.Verdicts {
		counts = append(counts, fmt.Sprintf("%d %s", n[v], v))
	}
	status := "no violation"
	if res.Failed() {
		status = "FAIL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nrcconform clause verdicts (dut=%s", res.DUT)
	if res.Defect != "" {
		fmt.Fprintf(&b, ", defect=%s", res.Defect)
	}
	fmt.Fprintf(&b, ", seed=%d): %s\n%s\n\n", res.Seed, status, strings.Join(counts, ", "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLAUSE\tVERDICT\tCHECKED\tVIOLATIONS\tUNDECIDED\tREASON")
	for _, c := range res.Clauses {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", c.ID, c.Verdict, c.Checked, c.Violations, c.Undecided, cut(c.Reason, 160))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the clause table: %w", err)
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("writing the clause table: %w", err)
	}
	return nil
}

func cut(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
