package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MarkdownLimit is the most characters a GitHub comment holds; a Markdown
// report never exceeds it (counted in bytes, which is never fewer).
const MarkdownLimit = 65536

// markdownMaxCaptures bounds the captures named one by one in the header.
const markdownMaxCaptures = 20

// MarkdownOptions tune [WriteMarkdownOptions].
type MarkdownOptions struct {
	// Limit is the most bytes written; 0 means MarkdownLimit.
	Limit int
	// Whole says where the whole result is (a path or URL); the closing
	// line names it. Empty: "the JSON result".
	Whole string
	// HTML, when set, names the HTML report that draws more instances.
	HTML string
}

// WriteMarkdown writes r as GitHub-flavoured Markdown for a pull-request
// comment with the default options: at most [MarkdownLimit] characters.
func WriteMarkdown(w io.Writer, r *Result) error {
	return WriteMarkdownOptions(w, r, MarkdownOptions{})
}

// WriteMarkdownOptions writes r as GitHub-flavoured Markdown for a
// pull-request comment: a line with the count of each verdict, a table of
// the clause results, and the violations grouped per clause by kind (see
// [GroupFindings]): each kind with its count and first and last instance,
// and its first instances drawn in full (acceptable outcomes, what was seen
// and the ladder as a fenced text block). The whole stays within
// o.Limit: every failed clause's header with its exact counts comes first,
// then one drawn instance per failed clause, then the kinds, then more
// drawn instances, as they fit. When the full table does not fit in half
// the limit it keeps the failed clause results only. A closing line says
// what was left out and where the whole result is. Text from the result is
// escaped, so it cannot open links, HTML or table cells of its own.
func WriteMarkdownOptions(w io.Writer, r *Result, o MarkdownOptions) error {
	limit := o.Limit
	if limit <= 0 {
		limit = MarkdownLimit
	}
	var b strings.Builder
	writeMarkdownHead(&b, r)
	writeMarkdownCertificate(&b, r, limit/8)
	var left []string

	audit := r.Kind == KindAudit
	table, rows := markdownTable(r, audit, func(ClauseResult) bool { return true })
	if len(r.Clauses) > 0 && b.Len()+len(table) > limit/2 {
		failed := func(c ClauseResult) bool { return c.Verdict == Fail }
		table, rows = markdownTable(r, audit, failed)
		notFailed := len(r.Clauses) - countIf(r.Clauses, failed)
		left = append(left, fmt.Sprintf("the table's %s that did not fail", plural(notFailed, "clause result")))
	}
	if over := b.Len() + len(table) - limit/2; over > 0 && rows > 0 {
		// Thousands of failed clause results: keep the rows that fit.
		lines := strings.SplitAfter(table, "\n")
		keep, size := 0, 0
		for keep < len(lines) && b.Len()+size+len(lines[keep]) <= limit/2 {
			size += len(lines[keep])
			keep++
		}
		dropped := len(lines) - 1 - keep // the last element is ""
		table = strings.Join(lines[:keep], "") + "\n"
		if dropped > 0 {
			left = append(left, fmt.Sprintf("%s more of the table", plural(dropped, "row")))
		}
	}
	b.WriteString(table)

	cfs := GroupFindings(r)
	headers := make([]string, len(cfs))
	groups := make([][]string, len(cfs))
	for c := range cfs {
		headers[c] = markdownClauseHeader(&cfs[c])
		groups[c] = make([]string, len(cfs[c].Groups))
		for g := range cfs[c].Groups {
			groups[c][g] = markdownGroupLine(&cfs[c].Groups[g])
		}
	}
	drawn := map[[3]int]string{}
	drawnText := func(c, g, k int) string {
		key := [3]int{c, g, k}
		s, ok := drawn[key]
		if !ok {
			s = markdownInstance(&cfs[c].Groups[g], k)
			drawn[key] = s
		}
		return s
	}
	var violationsHead string
	if len(cfs) > 0 {
		violationsHead = fmt.Sprintf("### Violations (%d in %s)\n", totalViolations(cfs), plural(len(cfs), "clause result"))
	}
	// Room for the closing line: generous, its text is short.
	const closingRoom = 1024
	budget := limit - b.Len() - len(violationsHead) - closingRoom
	p := newPlan(cfs, budget, planCosts{
		// A header's cost includes room for its "… and N more kinds" line.
		header: func(c int) int { return len(headers[c]) + 64 },
		group:  func(c, g int) int { return len(groups[c][g]) },
		drawn:  func(c, g, k int) int { return len(drawnText(c, g, k)) },
	})
	var body strings.Builder
	body.WriteString(violationsHead)
	for c := range cfs {
		body.WriteString(headers[c])
		hidden, hiddenN := 0, 0
		for g := range cfs[c].Groups {
			if !p.groupShown[c][g] {
				hidden++
				hiddenN += cfs[c].Groups[g].Count()
				continue
			}
			body.WriteString(groups[c][g])
			for k := 0; k < p.drawn[c][g]; k++ {
				body.WriteString(drawnText(c, g, k))
			}
		}
		if hidden > 0 {
			fmt.Fprintf(&body, "- … and %s more (%s) not listed here\n", plural(hidden, "kind"), plural(hiddenN, "instance"))
		}
	}
	if b.Len()+body.Len()+closingRoom > limit {
		// Only when the clause headers alone overflow: cut at a line.
		s := body.String()
		cut := strings.LastIndexByte(s[:max(0, limit-closingRoom-b.Len())], '\n') + 1
		body.Reset()
		body.WriteString(s[:cut])
		left = append(left, "the violations past this point (the comment limit was reached)")
	}
	b.WriteString(body.String())
	if dropped := writeMarkdownUndecided(&b, r, limit-closingRoom); dropped > 0 {
		left = append(left, plural(dropped, "line")+" of the undecided instances by kind")
	}

	lg, li := p.leftOut(cfs)
	if li > 0 {
		left = append(left, plural(li, "instance")+" not drawn")
	}
	if lg > 0 {
		left = append(left, plural(lg, "kind")+" not listed")
	}
	notKept := 0
	for _, c := range cfs {
		notKept += c.NotKept
	}
	if notKept > 0 {
		left = append(left, plural(notKept, "violation")+" counted but not kept as findings by the run (--max-findings)")
	}
	whole := "the JSON result"
	if o.Whole != "" {
		whole = mdCode(o.Whole)
	}
	more := ""
	if o.HTML != "" {
		more = "; " + mdCode(o.HTML) + " draws more"
	}
	b.WriteString("\n---\n")
	if len(left) == 0 {
		if o.HTML != "" {
			more = "; the HTML report: " + mdCode(o.HTML)
		}
		fmt.Fprintf(&b, "_Nothing left out. The whole result: %s%s._\n", whole, more)
	} else {
		fmt.Fprintf(&b, "_Left out to fit a comment: %s. The whole result: %s%s._\n", strings.Join(left, "; "), whole, more)
	}
	out := b.String()
	if len(out) > limit { // never: closingRoom is generous; kept as a hard guarantee
		out = out[:strings.LastIndexByte(out[:limit-1], '\n')+1]
	}
	if _, err := io.WriteString(w, out); err != nil {
		return fmt.Errorf("writing Markdown report: %w", err)
	}
	return nil
}

func writeMarkdownHead(b *strings.Builder, r *Result) {
	kind := r.Kind
	if kind == "" {
		kind = "run"
	}
	status := "no violation"
	if r.Failed() {
		status = "FAIL"
	}
	fmt.Fprintf(b, "## rcconform %s: %s\n\n", mdEscape(kind), status)
	fmt.Fprintf(b, "**Verdicts:** %s\n\n", countLine(r, " · "))

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
	for i, c := range r.Captures {
		if i == markdownMaxCaptures {
			meta = append(meta, fmt.Sprintf("and %s more", plural(len(r.Captures)-i, "capture")))
			break
		}
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
}

// markdownEvidenceLen bounds one clause's evidence in the Markdown summary.
const markdownEvidenceLen = 400

// writeMarkdownCertificate writes r's certificate (see Certificate): the
// device and what it declared, the suite, the date, the settings, and
// the clause results that did not pass with their evidence, those within
// room bytes (the rest are counted, and in the table).
func writeMarkdownCertificate(b *strings.Builder, r *Result, room int) {
	c := r.Certificate()
	start := b.Len()
	// fields lists fs within size bytes.
	fields := func(fs []Field, size int) string {
		var parts []string
		n := 0
		for i, f := range fs {
			p := mdEscape(f.Name) + ": `" + strings.ReplaceAll(oneLine(f.Value), "`", "'") + "`"
			if n += len(p) + 4; n > size {
				parts = append(parts, fmt.Sprintf("and %d more", len(fs)-i))
				break
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " · ")
	}
	b.WriteString("### Certificate\n\n")
	fmt.Fprintf(b, "- **Device:** %s\n", fields(c.Device, room/3))
	fmt.Fprintf(b, "- **Suite:** %s\n- **Date:** %s\n", mdEscape(c.Suite), mdEscape(c.Date))
	if len(c.Settings) > 0 {
		fmt.Fprintf(b, "- **Settings:** %s\n", fields(c.Settings, room/4))
	}
	fmt.Fprintf(b, "- **Not passed:** %s\n", plural(len(c.NotPassed), "clause result"))
	for i, np := range c.NotPassed {
		ev := np.Evidence
		if len(ev) > markdownEvidenceLen {
			ev = strings.ToValidUTF8(ev[:markdownEvidenceLen], "") + "…"
		}
		line := fmt.Sprintf("  - %s **%s**", mdEscape(np.ID), np.Verdict)
		if np.Capture != "" {
			line += " (" + mdEscape(np.Capture) + ")"
		}
		line += ": " + mdEscape(ev) + "\n"
		if b.Len()-start+len(line) > room {
			fmt.Fprintf(b, "  - … and %d more, in the table below\n", len(c.NotPassed)-i)
			break
		}
		b.WriteString(line)
	}
	b.WriteString("\n")
}

// markdownTable is the verdict table of the clause results keep accepts,
// and its number of rows.
func markdownTable(r *Result, audit bool, keep func(ClauseResult) bool) (string, int) {
	if len(r.Clauses) == 0 {
		return "", 0
	}
	var b strings.Builder
	b.WriteString("| Clause | What is checked |")
	if audit {
		b.WriteString(" Capture |")
	}
	b.WriteString(" Section | Side | Level | Verdict | Checked | Violations | Undecided | Reason |\n")
	b.WriteString("|---|---|")
	if audit {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|--:|--:|--:|---|\n")
	rows := 0
	for _, c := range r.Clauses {
		if !keep(c) {
			continue
		}
		rows++
		verdict := mdEscape(VerdictText(c))
		if c.Verdict == Fail {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(&b, "| %s | %s |", mdEscape(c.ID), mdEscape(c.Summary))
		if audit {
			fmt.Fprintf(&b, " %s |", mdEscape(c.Capture))
		}
		fmt.Fprintf(&b, " %s | %s | %s | %s | %d | %d | %d | %s |\n",
			mdEscape(c.Section), mdEscape(c.Side), mdEscape(c.Level), verdict,
			c.Checked, c.Violations, c.Undecided, mdEscape(c.Reason))
	}
	b.WriteString("\n")
	return b.String(), rows
}

func countIf(cs []ClauseResult, f func(ClauseResult) bool) int {
	n := 0
	for _, c := range cs {
		if f(c) {
			n++
		}
	}
	return n
}

func totalViolations(cfs []ClauseFindings) int {
	n := 0
	for i := range cfs {
		n += cfs[i].Violations()
	}
	return n
}

// markdownClauseHeader is a failed clause's heading with its exact counts.
func markdownClauseHeader(c *ClauseFindings) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n#### %s", mdEscape(c.Clause.ID))
	if c.Clause.Summary != "" {
		fmt.Fprintf(&b, ": %s", mdEscape(c.Clause.Summary))
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "**%s**", mdEscape(c.KindCount()))
	if c.Clause.Checked > 0 {
		fmt.Fprintf(&b, " in %d checked", c.Clause.Checked)
	}
	if c.Clause.Undecided > 0 {
		fmt.Fprintf(&b, ", %d undecided", c.Clause.Undecided)
	}
	if c.Clause.Capture != "" {
		fmt.Fprintf(&b, " · capture %s", mdEscape(c.Clause.Capture))
	}
	if c.NotKept > 0 {
		fmt.Fprintf(&b, " · %d kept as findings, %d more counted (--max-findings)", c.Kept, c.NotKept)
	}
	b.WriteString("\n")
	if len(c.Groups) > 0 && c.Groups[0].First().Clause != "" {
		fmt.Fprintf(&b, "\n> %s\n", mdEscape(c.Groups[0].First().Clause))
	}
	b.WriteString("\n")
	return b.String()
}

// markdownGroupLine is a kind's summary line: count, headline and span.
func markdownGroupLine(g *Group) string {
	return fmt.Sprintf("- **%d ×** %s (%s)\n", g.Count(), mdEscape(g.Headline()), mdEscape(g.Span()))
}

// markdownInstance draws instance k of g in full, indented under its
// group's line.
func markdownInstance(g *Group, k int) string {
	f := g.Findings[k]
	var b strings.Builder
	fmt.Fprintf(&b, "  - _%d of %d:_ %s\n", k+1, g.Count(), mdEscape(findingWhere(f)))
	if k > 0 || f.Message != g.Headline() {
		fmt.Fprintf(&b, "    %s\n", mdEscape(f.Message))
	}
	if len(f.Expected) > 0 {
		b.WriteString("    - **Acceptable:**\n")
		for _, e := range f.Expected {
			fmt.Fprintf(&b, "      - %s\n", mdEscape(e))
		}
	}
	if f.Seen != "" {
		fmt.Fprintf(&b, "    - **Seen:** %s\n", mdEscape(f.Seen))
	}
	if ladder := LadderText(f.Ladder); ladder != "" {
		fence := mdFence(ladder)
		fmt.Fprintf(&b, "\n    %stext\n", fence)
		for _, line := range strings.SplitAfter(strings.TrimSuffix(ladder, "\n"), "\n") {
			b.WriteString("    " + line)
		}
		fmt.Fprintf(&b, "\n    %s\n\n", fence)
	}
	return b.String()
}

// mdCode puts a path or URL in a code span, on one line and at most 300
// characters long.
func mdCode(s string) string {
	return "`" + cut(strings.ReplaceAll(oneLine(s), "`", "'"), 300) + "`"
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

// writeMarkdownUndecided lists every clause result's undecided instances
// by kind (UndecidedLines) while b stays within limit, and returns how
// many lines it left out.
func writeMarkdownUndecided(b *strings.Builder, r *Result, limit int) int {
	var lines []string
	total, clauses := 0, 0
	for _, c := range r.Clauses {
		ls := UndecidedLines(c)
		if len(ls) == 0 {
			continue
		}
		total += c.Undecided
		clauses++
		head := fmt.Sprintf("\n**%s**", mdEscape(c.ID))
		if c.Capture != "" {
			head += " in " + mdCode(c.Capture)
		}
		lines = append(lines, head+fmt.Sprintf(": %s, %d undecided\n", VerdictText(c), c.Undecided))
		for _, l := range ls {
			lines = append(lines, "- "+mdEscape(l)+"\n")
		}
	}
	if len(lines) == 0 {
		return 0
	}
	head := fmt.Sprintf("\n### Undecided (%s in %s)\n", plural(total, "instance"), plural(clauses, "clause result"))
	if b.Len()+len(head) > limit {
		return len(lines)
	}
	b.WriteString(head)
	for i, l := range lines {
		if b.Len()+len(l) > limit {
			return len(lines) - i
		}
		b.WriteString(l)
	}
	return 0
}
