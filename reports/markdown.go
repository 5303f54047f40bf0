package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMarkdown writes r as GitHub-flavoured Markdown for a pull-request
// comment: a line with the count of each verdict, a table of every clause
// result, and each violation with its acceptable outcomes, what was seen and
// its ladder as a fenced text block. Text from the result is escaped, so it
// cannot open links, HTML or table cells of its own.
func WriteMarkdown(w io.Writer, r *Result) error {
	var b strings.Builder
	kind := r.Kind
	if kind == "" {
		kind = "run"
	}
	status := "no violation"
	if r.Failed() {
		status = "FAIL"
	}
	fmt.Fprintf(&b, "## rcconform %s: %s\n\n", mdEscape(kind), status)
	fmt.Fprintf(&b, "**Verdicts:** %s\n\n", countLine(r, " · "))

	var meta []string
	if r.DUT != "" {
		meta = append(meta, "DUT "+mdEscape(r.DUT))
	}
	if r.Defect != "" {
		meta = append(meta, "defect "+mdEscape(r.Defect))
	}
	if r.Seed != 0 {
		meta = append(meta, "seed "+strconv.FormatInt(r.Seed, 10))
	}
	for _, c := range r.Captures {
		s := fmt.Sprintf("capture %s (%d frames, %d RoCE, %d skipped, %d bad ICRC, %d truncated",
			mdEscape(c.File), c.Frames, c.RoCEFrames, c.Skipped, c.BadICRC, c.Truncated)
		if len(c.Errors) > 0 {
			s += ", " + plural(len(c.Errors), "error")
		}
		meta = append(meta, s+")")
	}
	if len(meta) > 0 {
		b.WriteString(strings.Join(meta, " · ") + "\n\n")
	}

	audit := r.Kind == KindAudit
	if len(r.Clauses) > 0 {
		b.WriteString("| Clause | What is checked |")
		if audit {
			b.WriteString(" Capture |")
		}
		b.WriteString(" Section | Side | Level | Verdict | Checked | Violations | Reason |\n")
		b.WriteString("|---|---|")
		if audit {
			b.WriteString("---|")
		}
		b.WriteString("---|---|---|---|--:|--:|---|\n")
		for _, c := range r.Clauses {
			verdict := mdEscape(string(c.Verdict))
			if c.Verdict == Fail {
				verdict = "**" + verdict + "**"
			}
			fmt.Fprintf(&b, "| %s | %s |", mdEscape(c.ID), mdEscape(c.Summary))
			if audit {
				fmt.Fprintf(&b, " %s |", mdEscape(c.Capture))
			}
			fmt.Fprintf(&b, " %s | %s | %s | %s | %d | %d | %s |\n",
				mdEscape(c.Section), mdEscape(c.Side), mdEscape(c.Level), verdict,
				c.Checked, c.Violations, mdEscape(c.Reason))
		}
		b.WriteString("\n")
	}

	if len(r.Findings) > 0 {
		fmt.Fprintf(&b, "### Violations (%d)\n", len(r.Findings))
		for i, f := range r.Findings {
			fmt.Fprintf(&b, "\n#### %d. %s: %s\n\n", i+1, mdEscape(f.ID), mdEscape(findingWhere(f)))
			fmt.Fprintf(&b, "%s\n\n", mdEscape(f.Message))
			if f.Clause != "" {
				fmt.Fprintf(&b, "- **Clause:** %s\n", mdEscape(f.Clause))
			}
			if len(f.Expected) > 0 {
				b.WriteString("- **Acceptable:**\n")
				for _, e := range f.Expected {
					fmt.Fprintf(&b, "  - %s\n", mdEscape(e))
				}
			}
			if f.Seen != "" {
				fmt.Fprintf(&b, "- **Seen:** %s\n", mdEscape(f.Seen))
			}
			if ladder := LadderText(f.Ladder); ladder != "" {
				fence := mdFence(ladder)
				fmt.Fprintf(&b, "\n%stext\n%s%s\n", fence, ladder, fence)
			}
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing Markdown report: %w", err)
	}
	return nil
}

var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`|`, `\|`, `#`, `\#`, `~`, `\~`,
	`<`, `&lt;`, `>`, `&gt;`, `&`, `&amp;`,
)

// mdEscape puts s on one line and escapes what Markdown would read as markup.
func mdEscape(s string) string {
	return mdReplacer.Replace(oneLine(s))
}

// mdFence returns a backtick fence longer than any run of backticks in s.
func mdFence(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
