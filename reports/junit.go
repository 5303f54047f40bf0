package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JUnit document, in the shape of the Ant/Jenkins JUnit schema
// (reports/testdata/junit.xsd). The one extension is an optional
// <properties> as the first child of <testcase>, as pytest writes them, to
// carry a clause's section, side, level and verdict.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string         `xml:"name,attr"`
	Tests      int            `xml:"tests,attr"`
	Failures   int            `xml:"failures,attr"`
	Errors     int            `xml:"errors,attr"`
	Skipped    int            `xml:"skipped,attr"`
	Time       string         `xml:"time,attr"`
	Properties *junitProps    `xml:"properties"`
	Cases      []junitCase    `xml:"testcase"`
	SystemErr  *junitCharData `xml:"system-err"`
}

type junitProps struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string        `xml:"name,attr"`
	Classname  string        `xml:"classname,attr"`
	Time       string        `xml:"time,attr"`
	Properties *junitProps   `xml:"properties"`
	Skipped    *junitSkipped `xml:"skipped"`
	Failure    *junitFailure `xml:"failure"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitCharData struct {
	Text string `xml:",cdata"`
}

// WriteJUnit writes r as JUnit XML keyed to clause numbers: one <testsuite>
// per capture for audits (one in all for suite runs), and one <testcase> per
// clause result whose classname is the clause ID, whose name says what was
// checked, and whose properties give the section, side, level, verdict and,
// for audits, the capture.
//
// A failed clause has a <failure type="violation"> whose text gives, for
// each of its findings, the clause in our words, every acceptable outcome,
// what was seen and the text ladder of the exchange. A clause not exercised,
// unsupported, indeterminate or without its text is <skipped> with the
// message "<verdict>: <reason>". Violations are failures, never errors, so
// errors is always 0.
func WriteJUnit(w io.Writer, r *Result, suiteName string) error {
	if suiteName == "" {
		suiteName = "rcconform"
	}
	doc := junitSuites{Name: xmlSafe(suiteName), Time: "0"}
	evidence := r.EvidenceOf()
	for _, g := range groupByCapture(r) {
		s := junitSuite{Name: suiteName, Time: "0"}
		if r.Kind == KindAudit && g.capture != "" {
			s.Name = suiteName + ": " + g.capture
		}
		s.Name = xmlSafe(s.Name)
		s.Properties = suiteProperties(r, g)
		if g.info != nil && len(g.info.Errors) > 0 {
			s.SystemErr = &junitCharData{Text: xmlSafe(strings.Join(g.info.Errors, "\n"))}
		}
		for _, c := range g.clauses {
			tc := junitCase{
				Name:       xmlSafe(caseName(r, c)),
				Classname:  xmlSafe(c.ID),
				Time:       "0",
				Properties: caseProperties(c, evidence(c)),
			}
			s.Tests++
			switch c.Verdict {
			case Pass:
			case Fail:
				s.Failures++
				tc.Failure = &junitFailure{
					Message: xmlSafe(failureMessage(r, c)),
					Type:    "violation",
					Text:    xmlSafe(failureText(r, c)),
				}
			default:
				s.Skipped++
				tc.Skipped = &junitSkipped{Message: xmlSafe(skipMessage(c))}
			}
			s.Cases = append(s.Cases, tc)
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("writing JUnit: %w", err)
	}
	return nil
}

// captureGroup is the clause results of one capture (or of the whole run).
type captureGroup struct {
	capture string
	info    *CaptureInfo // nil when the capture is not among r.Captures
	clauses []ClauseResult
}

// groupByCapture returns one group for a suite run, and one per capture for
// an audit: the captures of r.Captures in their order, then any other
// capture a clause names, then the clauses that name none.
func groupByCapture(r *Result) []captureGroup {
	if r.Kind != KindAudit {
		return []captureGroup{{clauses: r.Clauses}}
	}
	var groups []captureGroup
	index := map[string]int{}
	for i := range r.Captures {
		if _, dup := index[r.Captures[i].File]; dup {
			continue
		}
		index[r.Captures[i].File] = len(groups)
		groups = append(groups, captureGroup{capture: r.Captures[i].File, info: &r.Captures[i]})
	}
	var none []ClauseResult
	for _, c := range r.Clauses {
		if c.Capture == "" {
			none = append(none, c)
			continue
		}
		i, ok := index[c.Capture]
		if !ok {
			i = len(groups)
			index[c.Capture] = i
			groups = append(groups, captureGroup{capture: c.Capture})
		}
		groups[i].clauses = append(groups[i].clauses, c)
	}
	if len(none) > 0 || len(groups) == 0 {
		groups = append(groups, captureGroup{clauses: none})
	}
	return groups
}

func suiteProperties(r *Result, g captureGroup) *junitProps {
	var p []junitProperty
	add := func(name, value string) {
		if value != "" {
			p = append(p, junitProperty{Name: name, Value: xmlSafe(value)})
		}
	}
	add("kind", r.Kind)
	add("dut", r.DUT)
	add("defect", r.Defect)
	if r.Seed != 0 {
		add("seed", strconv.FormatInt(r.Seed, 10))
	}
	if run := r.Run; run != nil {
		add("suite_module", run.Suite.Module)
		add("suite_version", run.Suite.Version)
		add("suite_commit", run.Suite.Commit)
		if run.Suite.Modified {
			add("suite_modified", "true")
		}
		add("date", run.Date)
		for _, f := range sortedFields(run.Declared) {
			add("declared."+f.Name, f.Value)
		}
		for _, f := range sortedFields(run.Settings) {
			add("setting."+f.Name, f.Value)
		}
	}
	add("capture", g.capture)
	if ci := g.info; ci != nil {
		add("capture_sha256", ci.SHA256)
		add("capture_format", ci.Format)
		add("frames", strconv.Itoa(ci.Frames))
		add("roce_frames", strconv.Itoa(ci.RoCEFrames))
		add("skipped_frames", strconv.Itoa(ci.Skipped))
		add("bad_icrc", strconv.Itoa(ci.BadICRC))
		add("truncated", strconv.Itoa(ci.Truncated))
	}
	if len(p) == 0 {
		return nil
	}
	return &junitProps{Props: p}
}

func caseProperties(c ClauseResult, evidence string) *junitProps {
	p := []junitProperty{
		{Name: "section", Value: xmlSafe(c.Section)},
		{Name: "side", Value: xmlSafe(c.Side)},
		{Name: "level", Value: xmlSafe(c.Level)},
		{Name: "verdict", Value: xmlSafe(string(c.Verdict))},
		{Name: "checked", Value: strconv.Itoa(c.Checked)},
		{Name: "violations", Value: strconv.Itoa(c.Violations)},
		{Name: "undecided", Value: strconv.Itoa(c.Undecided)},
	}
	if c.Capture != "" {
		p = append(p, junitProperty{Name: "capture", Value: xmlSafe(c.Capture)})
	}
	if evidence != "" {
		p = append(p, junitProperty{Name: "evidence", Value: xmlSafe(evidence)})
	}
	if len(c.Checks) > 0 {
		p = append(p, junitProperty{Name: "checks", Value: xmlSafe(strings.Join(c.Checks, "; "))})
	}
	if c.Undecided > 0 {
		if lines := UndecidedLines(c); len(lines) > 0 {
			p = append(p, junitProperty{Name: "undecided_kinds", Value: xmlSafe(strings.Join(lines, "; "))})
		}
	}
	return &junitProps{Props: p}
}

// caseName is the sentence naming what was checked. It holds no counts, so
// that CI can follow a testcase from run to run by classname and name.
func caseName(r *Result, c ClauseResult) string {
	name := oneLine(c.Summary)
	if name == "" {
		name = "clause " + c.ID
	}
	if r.Kind == KindAudit && c.Capture != "" {
		name += " (capture " + c.Capture + ")"
	}
	return name
}

func skipMessage(c ClauseResult) string {
	if c.Reason == "" {
		return string(c.Verdict)
	}
	return string(c.Verdict) + ": " + oneLine(c.Reason)
}

// junitKindsInMessage bounds the kinds named in a failure's message.
const junitKindsInMessage = 3

// junitPlacesListed bounds the places of undrawn instances listed per kind
// in a failure's text.
const junitPlacesListed = 50

// failureMessage is one line: the clause, its exact counts and its biggest
// kinds with their counts.
func failureMessage(r *Result, c ClauseResult) string {
	cf := clauseFindingsFor(r, c)
	msg := fmt.Sprintf("%s violated: %s", c.ID, cf.KindCount())
	if c.Checked > 0 {
		msg += fmt.Sprintf(" in %d checked", c.Checked)
	}
	for i, g := range cf.Groups {
		if i == junitKindsInMessage {
			msg += fmt.Sprintf("; and %s more", plural(len(cf.Groups)-i, "kind"))
			break
		}
		msg += fmt.Sprintf("; %d × %s (%s)", g.Count(), g.Headline(), g.Span())
	}
	if cf.NotKept > 0 {
		msg += fmt.Sprintf("; %d not kept as findings", cf.NotKept)
	}
	return msg
}

// clauseFindingsFor returns the grouped findings of clause result c.
func clauseFindingsFor(r *Result, c ClauseResult) ClauseFindings {
	sub := &Result{Kind: r.Kind, Clauses: []ClauseResult{c}, Findings: r.FindingsFor(c)}
	if cfs := GroupFindings(sub); len(cfs) > 0 {
		return cfs[0]
	}
	return ClauseFindings{Clause: c, Index: 0, NotKept: c.Violations}
}

// failureText is the body of a <failure>: the clause, then its findings
// grouped by kind, each kind with its count, first and last instance, its
// first instances in full (acceptable outcomes, what was seen, ladder) and
// where the others are.
func failureText(r *Result, c ClauseResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n", c.ID, clauseTags(c), oneLine(c.Summary))
	cf := clauseFindingsFor(r, c)
	fmt.Fprintf(&b, "%s in %d checked", cf.KindCount(), c.Checked)
	if c.Undecided > 0 {
		fmt.Fprintf(&b, ", %d undecided", c.Undecided)
	}
	if c.Capture != "" {
		fmt.Fprintf(&b, " in capture %s", c.Capture)
	}
	b.WriteString(".\n")
	if cf.NotKept > 0 {
		fmt.Fprintf(&b, "%s counted but not kept as findings (--max-findings).\n", plural(cf.NotKept, "violation"))
	}
	if cf.Kept == 0 {
		b.WriteString("No finding was recorded for this clause.\n")
	}
	if lines := UndecidedLines(c); len(lines) > 0 {
		b.WriteString("Undecided instances, by kind:\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	for i, g := range cf.Groups {
		fmt.Fprintf(&b, "\nKind %d of %d: %s (%s): %s\n", i+1, len(cf.Groups), plural(g.Count(), "instance"), g.Span(), g.Headline())
		drawn := min(DrawnPerGroup, g.Count())
		for k := 0; k < drawn; k++ {
			f := g.Findings[k]
			fmt.Fprintf(&b, "\n  Instance %d of %d: %s\n", k+1, g.Count(), findingWhere(f))
			writeFindingBody(&b, f, "    ")
		}
		if rest := g.Findings[drawn:]; len(rest) > 0 {
			places := make([]string, 0, min(len(rest), junitPlacesListed))
			for k, f := range rest {
				if k == junitPlacesListed {
					places = append(places, "…")
					break
				}
				places = append(places, instancePlace(f))
			}
			fmt.Fprintf(&b, "\n  %s more of this kind: %s\n", plural(len(rest), "instance"), strings.Join(places, "; "))
		}
	}
	return b.String()
}

// clauseTags is "section 9.7.5.1, responder, mandatory", leaving out what is
// unknown.
func clauseTags(c ClauseResult) string {
	var tags []string
	if c.Section != "" {
		tags = append(tags, "section "+c.Section)
	}
	if c.Side != "" {
		tags = append(tags, c.Side)
	}
	if c.Level != "" {
		tags = append(tags, c.Level)
	}
	return strings.Join(tags, ", ")
}

// findingWhere is "capture a.pcap, frame 17, QP 0x000012, PSN 1203,
// scenario x", leaving out what is unknown.
func findingWhere(f Finding) string {
	var parts []string
	if f.Capture != "" {
		parts = append(parts, "capture "+f.Capture)
	}
	if f.Frame != 0 {
		parts = append(parts, "frame "+strconv.Itoa(f.Frame))
	}
	parts = append(parts, "QP "+qpText(f.QP), "PSN "+strconv.FormatUint(uint64(f.PSN), 10))
	if f.Scenario != "" {
		parts = append(parts, "scenario "+strconv.Quote(f.Scenario))
	}
	return strings.Join(parts, ", ")
}

// writeFindingBody writes a finding's message, clause, acceptable outcomes,
// what was seen and ladder, each line indented.
func writeFindingBody(b *strings.Builder, f Finding, indent string) {
	fmt.Fprintf(b, "%s%s\n", indent, oneLine(f.Message))
	if f.Clause != "" {
		fmt.Fprintf(b, "%sClause: %s\n", indent, oneLine(f.Clause))
	}
	if len(f.Expected) > 0 {
		fmt.Fprintf(b, "%sAcceptable outcomes:\n", indent)
		for _, e := range f.Expected {
			fmt.Fprintf(b, "%s  - %s\n", indent, oneLine(e))
		}
	}
	if f.Seen != "" {
		fmt.Fprintf(b, "%sSeen: %s\n", indent, oneLine(f.Seen))
	}
	if ladder := LadderText(f.Ladder); ladder != "" {
		fmt.Fprintf(b, "%sExchange:\n", indent)
		for _, line := range strings.SplitAfter(strings.TrimSuffix(ladder, "\n"), "\n") {
			b.WriteString(indent + "  " + line)
		}
		b.WriteByte('\n')
	}
}

func qpText(qp uint32) string { return fmt.Sprintf("0x%06x", qp) }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// xmlSafe replaces what XML 1.0 cannot carry (most control characters,
// invalid UTF-8, U+FFFE and U+FFFF) by U+FFFD. encoding/xml does the same for
// attributes and text, but not for CDATA sections.
func xmlSafe(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if !xmlChar(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		(r >= 0x20 && r <= 0xD7FF) ||
		(r >= 0xE000 && r <= 0xFFFD) ||
		(r >= 0x10000 && r <= 0x10FFFF)
}
