package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Strict mirrors of the JUnit document, for reading it back. Every attribute
// and child rcconform writes has a field, so nothing read is lost.
type jTestsuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    string       `xml:"tests,attr"`
	Failures string       `xml:"failures,attr"`
	Errors   string       `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []jTestsuite `xml:"testsuite"`
}

type jTestsuite struct {
	Name       string      `xml:"name,attr"`
	Tests      string      `xml:"tests,attr"`
	Failures   string      `xml:"failures,attr"`
	Errors     string      `xml:"errors,attr"`
	Skipped    string      `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Properties []jProperty `xml:"properties>property"`
	Cases      []jTestcase `xml:"testcase"`
	SystemErr  *string     `xml:"system-err"`
}

type jProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type jTestcase struct {
	Name       string      `xml:"name,attr"`
	Classname  string      `xml:"classname,attr"`
	Time       string      `xml:"time,attr"`
	Properties []jProperty `xml:"properties>property"`
	Skipped    *jResult    `xml:"skipped"`
	Failure    *jResult    `xml:"failure"`
	Error      *jResult    `xml:"error"`
}

type jResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func props(ps []jProperty) map[string]string {
	m := map[string]string{}
	for _, p := range ps {
		m[p.Name] = p.Value
	}
	return m
}

func writeJUnit(t *testing.T, r *Result, suite string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, r, suite); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readJUnit(t *testing.T, doc []byte) jTestsuites {
	t.Helper()
	var s jTestsuites
	if err := xml.Unmarshal(doc, &s); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, doc)
	}
	return s
}

func TestJUnitAudit(t *testing.T) {
	r := sampleAudit()
	doc := readJUnit(t, writeJUnit(t, r, "rcconform audit"))

	if doc.Tests != "8" || doc.Failures != "2" || doc.Errors != "0" || doc.Time == "" {
		t.Errorf("testsuites tests=%s failures=%s errors=%s time=%q, want 8, 2, 0 and a time",
			doc.Tests, doc.Failures, doc.Errors, doc.Time)
	}
	if len(doc.Suites) != 2 {
		t.Fatalf("%d testsuites, want one per capture", len(doc.Suites))
	}
	for i, tc := range []struct {
		name, capture, tests, failures, skipped string
		hasErr                                  bool
	}{
		{"rcconform audit: " + captureA, captureA, "4", "1", "2", false},
		{"rcconform audit: " + captureB, captureB, "4", "1", "2", true},
	} {
		s := doc.Suites[i]
		if s.Name != tc.name || s.Tests != tc.tests || s.Failures != tc.failures || s.Skipped != tc.skipped || s.Errors != "0" || s.Time == "" {
			t.Errorf("testsuite %d = %s tests=%s failures=%s skipped=%s errors=%s time=%q, want %s %s %s %s 0",
				i, s.Name, s.Tests, s.Failures, s.Skipped, s.Errors, s.Time, tc.name, tc.tests, tc.failures, tc.skipped)
		}
		p := props(s.Properties)
		if p["kind"] != "audit" || p["dut"] != "pcap" || p["capture"] != tc.capture || p["frames"] == "" || p["bad_icrc"] == "" {
			t.Errorf("testsuite %d properties %v", i, p)
		}
		if (s.SystemErr != nil) != tc.hasErr {
			t.Errorf("testsuite %d system-err %v, want present %v", i, s.SystemErr, tc.hasErr)
		}
	}
	if e := doc.Suites[1].SystemErr; e == nil || !strings.Contains(*e, "frame 301") {
		t.Errorf("capture errors not in system-err: %v", e)
	}

	// One testcase per clause result, in order, keyed by clause ID.
	var cases []jTestcase
	for _, s := range doc.Suites {
		cases = append(cases, s.Cases...)
	}
	if len(cases) != len(r.Clauses) {
		t.Fatalf("%d testcases, want %d", len(cases), len(r.Clauses))
	}
	for i, c := range r.Clauses {
		tc := cases[i]
		if tc.Classname != c.ID {
			t.Errorf("testcase %d classname %q, want %q", i, tc.Classname, c.ID)
		}
		if want := c.Summary + " (capture " + c.Capture + ")"; tc.Name != want {
			t.Errorf("testcase %d name %q, want %q", i, tc.Name, want)
		}
		if tc.Time == "" {
			t.Errorf("testcase %d has no time", i)
		}
		p := props(tc.Properties)
		for k, want := range map[string]string{
			"section": c.Section, "side": c.Side, "level": c.Level, "verdict": string(c.Verdict),
			"capture": c.Capture, "checked": strconv.Itoa(c.Checked), "violations": strconv.Itoa(c.Violations),
			"undecided": strconv.Itoa(c.Undecided),
		} {
			if p[k] != want {
				t.Errorf("testcase %d (%s) property %s = %q, want %q", i, c.ID, k, p[k], want)
			}
		}
		if tc.Error != nil {
			t.Errorf("testcase %d (%s) is an error; violations are failures", i, c.ID)
		}
		switch c.Verdict {
		case Pass:
			if tc.Failure != nil || tc.Skipped != nil {
				t.Errorf("testcase %d (%s) passed but has failure %v / skipped %v", i, c.ID, tc.Failure, tc.Skipped)
			}
		case Fail:
			if tc.Failure == nil || tc.Skipped != nil {
				t.Errorf("testcase %d (%s) failed but has failure %v / skipped %v", i, c.ID, tc.Failure, tc.Skipped)
				continue
			}
			if tc.Failure.Type != "violation" || !strings.HasPrefix(tc.Failure.Message, c.ID+" violated: 1 violation in ") {
				t.Errorf("testcase %d failure type %q message %q", i, tc.Failure.Type, tc.Failure.Message)
			}
			fs := r.FindingsFor(c)
			if len(fs) != 1 {
				t.Fatalf("fixture: %d findings for %s in %s", len(fs), c.ID, c.Capture)
			}
			f := fs[0]
			wants := append([]string{
				f.Clause, f.Seen, f.Message, "frame " + strconv.Itoa(f.Frame), "capture " + f.Capture,
				"Acceptable outcomes:", "Exchange:",
			}, f.Expected...)
			for _, line := range strings.Split(strings.TrimSuffix(LadderText(f.Ladder), "\n"), "\n") {
				wants = append(wants, line)
			}
			for _, w := range wants {
				if !strings.Contains(tc.Failure.Text, w) {
					t.Errorf("testcase %d (%s) failure text lacks %q:\n%s", i, c.ID, w, tc.Failure.Text)
				}
			}
			// The other capture's finding belongs to the other testcase.
			for _, other := range r.Findings {
				if other.Capture != c.Capture && strings.Contains(tc.Failure.Text, other.Message) {
					t.Errorf("testcase %d (%s in %s) carries the finding of %s", i, c.ID, c.Capture, other.Capture)
				}
			}
		default:
			if tc.Skipped == nil || tc.Failure != nil {
				t.Errorf("testcase %d (%s, %s) not skipped: %+v", i, c.ID, c.Verdict, tc)
				continue
			}
			if want := string(c.Verdict) + ": " + c.Reason; tc.Skipped.Message != want {
				t.Errorf("testcase %d skipped message %q, want %q", i, tc.Skipped.Message, want)
			}
		}
	}
}

func TestJUnitSuiteRun(t *testing.T) {
	r := sampleSuite()
	doc := readJUnit(t, writeJUnit(t, r, ""))
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1 for a suite run", len(doc.Suites))
	}
	s := doc.Suites[0]
	if doc.Name != "rcconform" || s.Name != "rcconform" || s.Tests != "3" || s.Failures != "1" || s.Skipped != "1" || s.Errors != "0" {
		t.Errorf("testsuites %q, testsuite %q tests=%s failures=%s skipped=%s errors=%s", doc.Name, s.Name, s.Tests, s.Failures, s.Skipped, s.Errors)
	}
	p := props(s.Properties)
	if p["dut"] != "reference" || p["defect"] != "ack-beyond-received" || p["seed"] != "42" {
		t.Errorf("testsuite properties %v", p)
	}
	if _, ok := p["capture"]; ok {
		t.Errorf("suite run has a capture property: %v", p)
	}
	for i, c := range r.Clauses {
		tc := s.Cases[i]
		if tc.Name != c.Summary {
			t.Errorf("testcase %d name %q, want %q (no capture for suite runs)", i, tc.Name, c.Summary)
		}
		if _, ok := props(tc.Properties)["capture"]; ok {
			t.Errorf("testcase %d has a capture property", i)
		}
	}
	if f := s.Cases[0].Failure; f == nil || !strings.Contains(f.Text, `scenario "write-then-ack"`) || strings.Contains(f.Text, "frame") {
		t.Errorf("suite failure text should name the scenario and no frame: %+v", f)
	}
	if p := props(s.Cases[0].Properties); p["checks"] != "write-then-ack; coalesced-ack" {
		t.Errorf("checks property %q", p["checks"])
	}
	if sk := s.Cases[2].Skipped; sk == nil || sk.Message != "unsupported: the DUT declares no RDMA READ support" {
		t.Errorf("unsupported testcase skipped = %+v", sk)
	}
}

func TestJUnitEscaping(t *testing.T) {
	r := sampleAudit()
	nasty := "<script>alert(\"x\")</script> & ]]> \x00\x1b end"
	r.Findings[0].Message = nasty
	r.Findings[0].Seen = nasty
	r.Clauses[0].Summary = `ACK "<quoted>" & more`
	r.Clauses[2].Reason = "line one\nline two & <three>"
	out := writeJUnit(t, r, `suite "<x>"`)
	if err := validateJUnit(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	doc := readJUnit(t, out)
	tc := doc.Suites[0].Cases[0]
	if tc.Name != `ACK "<quoted>" & more (capture `+captureA+")" {
		t.Errorf("name %q", tc.Name)
	}
	want := "<script>alert(\"x\")</script> & ]]> \uFFFD\uFFFD end"
	if !strings.Contains(tc.Failure.Text, want) || !strings.Contains(tc.Failure.Message, want) {
		t.Errorf("failure lost the message %q:\nmessage %q\ntext %s", want, tc.Failure.Message, tc.Failure.Text)
	}
	if m := doc.Suites[0].Cases[2].Skipped.Message; m != "not-exercised: line one line two & <three>" {
		t.Errorf("skipped message %q", m)
	}
	if doc.Suites[0].Name != `suite "<x>": `+captureA {
		t.Errorf("suite name %q", doc.Suites[0].Name)
	}
}

func TestJUnitAuditGrouping(t *testing.T) {
	r := &Result{
		Kind:     KindAudit,
		Captures: []CaptureInfo{{File: "a.pcap"}, {File: "empty.pcap"}},
		Clauses: []ClauseResult{
			{ID: "C9-95", Verdict: Pass, Capture: "other.pcap"},
			{ID: "C9-95", Verdict: Pass, Capture: "a.pcap"},
			{ID: "C9-116", Verdict: Pass},
		},
	}
	doc := readJUnit(t, writeJUnit(t, r, "x"))
	var got []string
	for _, s := range doc.Suites {
		got = append(got, fmt.Sprintf("%s=%s", s.Name, s.Tests))
	}
	want := "[x: a.pcap=1 x: empty.pcap=0 x: other.pcap=1 x=1]"
	if fmt.Sprint(got) != want {
		t.Errorf("testsuites %v, want %s", got, want)
	}
}

// TestJUnitSchema checks the JUnit rcconform writes against the JUnit schema
// (reports/testdata/junit.xsd): with a structural check written here, since
// the standard library has no XSD validator, and with xmllint when it is
// installed.
func TestJUnitSchema(t *testing.T) {
	docs := map[string][]byte{
		"audit":  writeJUnit(t, sampleAudit(), "rcconform audit"),
		"suite":  writeJUnit(t, sampleSuite(), "rcconform"),
		"empty":  writeJUnit(t, &Result{Kind: KindSuite}, "rcconform"),
		"emptya": writeJUnit(t, &Result{Kind: KindAudit}, "rcconform"),
	}
	for name, doc := range docs {
		t.Run("structure/"+name, func(t *testing.T) {
			if err := validateJUnit(doc); err != nil {
				t.Errorf("%v\n%s", err, doc)
			}
		})
	}
	t.Run("xmllint", func(t *testing.T) {
		xmllint, err := exec.LookPath("xmllint")
		if err != nil {
			t.Skip("xmllint not installed")
		}
		dir := t.TempDir()
		for name, doc := range docs {
			path := filepath.Join(dir, name+".xml")
			if err := os.WriteFile(path, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", "testdata/junit.xsd", path).CombinedOutput()
			if err != nil {
				t.Errorf("xmllint %s: %v\n%s", name, err, out)
			}
		}
	})
	// The checker must reject what the schema rejects, or it proves nothing.
	for _, tc := range []struct{ name, doc, want string }{
		{"wrong root", `<testsuite name="x" tests="0" failures="0" errors="0" skipped="0" time="0"/>`, "root"},
		{"missing tests", `<testsuites><testsuite name="x" failures="0" errors="0" skipped="0" time="0"/></testsuites>`, `lacks required attribute "tests"`},
		{"unknown attribute", `<testsuites><testsuite name="x" tests="0" failures="0" errors="0" skipped="0" time="0" colour="red"/></testsuites>`, `unexpected attribute "colour"`},
		{"properties after testcase", `<testsuites><testsuite name="x" tests="1" failures="0" errors="0" skipped="0" time="0"><testcase name="a" classname="b" time="0"/><properties/></testsuite></testsuites>`, "<properties> in <testsuite> out of order"},
		{"failure and skipped", `<testsuites><testsuite name="x" tests="1" failures="1" errors="0" skipped="0" time="0"><testcase name="a" classname="b" time="0"><failure/><skipped/></testcase></testsuite></testsuites>`, "more than 1 <skipped|failure|error>"},
		{"testcase without classname", `<testsuites><testsuite name="x" tests="1" failures="0" errors="0" skipped="0" time="0"><testcase name="a" time="0"/></testsuite></testsuites>`, `lacks required attribute "classname"`},
		{"text in testcase", `<testsuites><testsuite name="x" tests="1" failures="0" errors="0" skipped="0" time="0"><testcase name="a" classname="b" time="0">oops</testcase></testsuite></testsuites>`, "text"},
		{"property without value", `<testsuites><testsuite name="x" tests="0" failures="0" errors="0" skipped="0" time="0"><properties><property name="a"/></properties></testsuite></testsuites>`, `lacks required attribute "value"`},
		{"counts disagree", `<testsuites tests="1"><testsuite name="x" tests="1" failures="1" errors="0" skipped="0" time="0"><testcase name="a" classname="b" time="0"/></testsuite></testsuites>`, "failures=1"},
	} {
		t.Run("rejects/"+tc.name, func(t *testing.T) {
			err := validateJUnit([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("validateJUnit = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// elemRule is the schema of one JUnit element: its attributes and the
// sequence its children must follow.
type elemRule struct {
	required, optional []string
	children           []childRule // in order
	text               bool        // may hold character data
}

// childRule is one step of a sequence: any one of names, min to max times.
type childRule struct {
	names    []string
	min, max int
}

const unbounded = 1 << 30

// junitSchema is reports/testdata/junit.xsd as Go data.
var junitSchema = map[string]elemRule{
	"testsuites": {
		optional: []string{"name", "time", "tests", "failures", "errors", "disabled"},
		children: []childRule{{[]string{"testsuite"}, 0, unbounded}},
	},
	"testsuite": {
		required: []string{"name", "tests", "failures", "errors", "skipped", "time"},
		optional: []string{"disabled", "timestamp", "hostname", "id", "package"},
		children: []childRule{
			{[]string{"properties"}, 0, 1},
			{[]string{"testcase"}, 0, unbounded},
			{[]string{"system-out"}, 0, 1},
			{[]string{"system-err"}, 0, 1},
		},
	},
	"properties": {children: []childRule{{[]string{"property"}, 0, unbounded}}},
	"property":   {required: []string{"name", "value"}},
	"testcase": {
		required: []string{"name", "classname", "time"},
		optional: []string{"assertions", "status"},
		children: []childRule{
			{[]string{"properties"}, 0, 1}, // rcconform's extension, as pytest writes it
			{[]string{"skipped", "failure", "error"}, 0, 1},
			{[]string{"system-out"}, 0, 1},
			{[]string{"system-err"}, 0, 1},
		},
	},
	"skipped":    {optional: []string{"message", "type"}, text: true},
	"failure":    {optional: []string{"message", "type"}, text: true},
	"error":      {optional: []string{"message", "type"}, text: true},
	"system-out": {text: true},
	"system-err": {text: true},
}

// validateJUnit checks doc against junitSchema, then checks that every
// testsuite's counts match its testcases and the testsuites' the sums.
func validateJUnit(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	type open struct {
		name  string
		rule  elemRule
		step  int // index into rule.children
		count int // children matched at step
	}
	var stack []*open
	sawRoot := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("parsing: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			name := tok.Name.Local
			rule, known := junitSchema[name]
			if !known {
				return fmt.Errorf("unknown element <%s>", name)
			}
			if tok.Name.Space != "" {
				return fmt.Errorf("<%s> in namespace %q", name, tok.Name.Space)
			}
			if len(stack) == 0 {
				if sawRoot || name != "testsuites" {
					return fmt.Errorf("root element <%s>, want one <testsuites>", name)
				}
				sawRoot = true
			} else if err := advance(stack[len(stack)-1].name, stack[len(stack)-1].rule, &stack[len(stack)-1].step, &stack[len(stack)-1].count, name); err != nil {
				return err
			}
			if err := checkAttrs(name, rule, tok.Attr); err != nil {
				return err
			}
			stack = append(stack, &open{name: name, rule: rule})
		case xml.EndElement:
			top := stack[len(stack)-1]
			if err := finish(top.name, top.rule, top.step, top.count); err != nil {
				return err
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && !stack[len(stack)-1].rule.text && len(bytes.TrimSpace(tok)) > 0 {
				return fmt.Errorf("text %q inside <%s>", bytes.TrimSpace(tok), stack[len(stack)-1].name)
			}
		}
	}
	if !sawRoot {
		return fmt.Errorf("no root element")
	}
	var s jTestsuites
	if err := xml.Unmarshal(doc, &s); err != nil {
		return fmt.Errorf("parsing: %w", err)
	}
	return checkCounts(s)
}

// advance matches a child named name against the parent's sequence.
func advance(parent string, rule elemRule, step, count *int, name string) error {
	for *step < len(rule.children) {
		c := rule.children[*step]
		for _, n := range c.names {
			if n == name {
				if *count >= c.max {
					return fmt.Errorf("<%s> has more than %d <%s>", parent, c.max, strings.Join(c.names, "|"))
				}
				*count++
				return nil
			}
		}
		if *count < c.min {
			return fmt.Errorf("<%s> needs <%s> before <%s>", parent, strings.Join(c.names, "|"), name)
		}
		*step++
		*count = 0
	}
	for _, c := range rule.children {
		for _, n := range c.names {
			if n == name {
				return fmt.Errorf("<%s> in <%s> out of order or repeated (the order is %v)", name, parent, rule.children)
			}
		}
	}
	return fmt.Errorf("<%s> not allowed in <%s>", name, parent)
}

// finish checks that the rest of a closed element's sequence may be empty.
func finish(name string, rule elemRule, step, count int) error {
	for i := step; i < len(rule.children); i++ {
		n := 0
		if i == step {
			n = count
		}
		if n < rule.children[i].min {
			return fmt.Errorf("<%s> lacks <%s>", name, strings.Join(rule.children[i].names, "|"))
		}
	}
	return nil
}

func checkAttrs(name string, rule elemRule, attrs []xml.Attr) error {
	have := map[string]bool{}
	for _, a := range attrs {
		if a.Name.Space != "" {
			return fmt.Errorf("<%s> has namespaced attribute %s:%s", name, a.Name.Space, a.Name.Local)
		}
		allowed := false
		for _, n := range append(rule.required, rule.optional...) {
			allowed = allowed || n == a.Name.Local
		}
		if !allowed {
			return fmt.Errorf("<%s> has unexpected attribute %q", name, a.Name.Local)
		}
		have[a.Name.Local] = true
	}
	for _, n := range rule.required {
		if !have[n] {
			return fmt.Errorf("<%s> lacks required attribute %q", name, n)
		}
	}
	return nil
}

func checkCounts(doc jTestsuites) error {
	var tests, failures, errs int
	for _, s := range doc.Suites {
		var n, f, e, sk int
		for _, c := range s.Cases {
			n++
			switch {
			case c.Failure != nil:
				f++
			case c.Error != nil:
				e++
			case c.Skipped != nil:
				sk++
			}
		}
		got := fmt.Sprintf("tests=%s failures=%s errors=%s skipped=%s", s.Tests, s.Failures, s.Errors, s.Skipped)
		if want := fmt.Sprintf("tests=%d failures=%d errors=%d skipped=%d", n, f, e, sk); got != want {
			return fmt.Errorf("testsuite %q says %s, its testcases %s", s.Name, got, want)
		}
		tests, failures, errs = tests+n, failures+f, errs+e
	}
	for _, c := range []struct {
		name, got string
		want      int
	}{{"tests", doc.Tests, tests}, {"failures", doc.Failures, failures}, {"errors", doc.Errors, errs}} {
		if c.got != "" && c.got != strconv.Itoa(c.want) {
			return fmt.Errorf("testsuites says %s=%s, its testsuites add up to %d", c.name, c.got, c.want)
		}
	}
	return nil
}

// TestJUnitGrouped: a clause with thousands of findings fails with a
// message naming its exact count and its kinds, and a text that draws the
// first instances of each kind and lists where the others are.
func TestJUnitGrouped(t *testing.T) {
	r := bigResult(5000, true)
	doc := readJUnit(t, writeJUnit(t, r, "rcconform audit"))
	seen := 0
	for _, s := range doc.Suites {
		for _, tc := range s.Cases {
			if tc.Failure == nil {
				continue
			}
			seen++
			var c ClauseResult
			for _, cr := range r.Clauses {
				if cr.ID == tc.Classname {
					c = cr
				}
			}
			cf := GroupFindings(&Result{Clauses: []ClauseResult{c}, Findings: r.FindingsFor(c)})[0]
			if want := c.ID + " violated: " + cf.KindCount() + " in " + strconv.Itoa(c.Checked) + " checked"; !strings.HasPrefix(tc.Failure.Message, want) {
				t.Errorf("%s: message %q, want it to begin %q", c.ID, tc.Failure.Message, want)
			}
			segments := strings.Split(tc.Failure.Text, "\nKind ")[1:]
			if len(segments) != len(cf.Groups) {
				t.Fatalf("%s: %d kinds in the text, want %d", c.ID, len(segments), len(cf.Groups))
			}
			for i, g := range cf.Groups {
				if want := fmt.Sprintf("%d × %s (%s)", g.Count(), g.Headline(), g.Span()); !strings.Contains(tc.Failure.Message, want) {
					t.Errorf("%s: message lacks %q", c.ID, want)
				}
				if want := fmt.Sprintf("Kind %d of %d: %d instances (%s): ", i+1, len(cf.Groups), g.Count(), g.Span()); !strings.Contains(tc.Failure.Text, want) {
					t.Errorf("%s: text lacks %q", c.ID, want)
				}
				if n := strings.Count(segments[i], fmt.Sprintf("of %d: capture ", g.Count())); n != DrawnPerGroup {
					t.Errorf("%s: %d instances of the kind of %d drawn, want %d", c.ID, n, g.Count(), DrawnPerGroup)
				}
				if want := fmt.Sprintf("%d instances more of this kind: frame %d; ", g.Count()-DrawnPerGroup, g.Findings[DrawnPerGroup].Frame); !strings.Contains(segments[i], want) {
					t.Errorf("%s: text lacks the places of the undrawn instances (%q)", c.ID, want)
				}
			}
			if len(tc.Failure.Text) > 100_000 {
				t.Errorf("%s: failure text of %d bytes", c.ID, len(tc.Failure.Text))
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d failed testcases, want 3", seen)
	}
}
