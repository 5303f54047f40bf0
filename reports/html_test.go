package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func writeHTML(t *testing.T, r *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTML(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Result
	}{
		{"audit", sampleAudit()},
		{"suite", sampleSuite()},
		{"empty", &Result{Kind: KindSuite}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := writeHTML(t, tc.r)
			if err := checkTagBalance(page); err != nil {
				t.Errorf("tags: %v", err)
			}
			if !strings.HasPrefix(page, "<!DOCTYPE html>") {
				t.Errorf("page does not start with a doctype")
			}

			// Self-contained: no resource from anywhere. The only URL is the SVG namespace.
			rest := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
			for _, bad := range []string{"http://", "https://", "//cdn", "<link", "<img", "<iframe", "@import", "url(", " src="} {
				if strings.Contains(rest, bad) {
					t.Errorf("page refers to an outside resource: contains %q", bad)
				}
			}
			if n := strings.Count(page, "<script"); n != 1 {
				t.Errorf("%d <script> elements, want the one inline filter script", n)
			}

			// Every verdict in the counts, and every clause result in the table with its verdict.
			for _, v := range Verdicts {
				n := tc.r.Counts()[v]
				if want := fmt.Sprintf(`<span class="badge v-%s%s">%d %s</span>`, v, map[bool]string{true: " zero"}[n == 0], n, v); !strings.Contains(page, want) {
					t.Errorf("verdict count %q missing", want)
				}
			}
			rows := regexp.MustCompile(`<tr class="([a-z-]+)" data-side="([a-z]*)" data-verdict="([a-z-]+)">`).FindAllStringSubmatch(page, -1)
			if len(rows) != len(tc.r.Clauses) {
				t.Fatalf("%d clause rows, want %d", len(rows), len(tc.r.Clauses))
			}
			for i, c := range tc.r.Clauses {
				if rows[i][2] != c.Side || rows[i][3] != string(c.Verdict) {
					t.Errorf("row %d: side %q verdict %q, want %q %q", i, rows[i][2], rows[i][3], c.Side, c.Verdict)
				}
				if c.Reason != "" && !strings.Contains(page, `<td class="reason">`+htmlText(c.Reason)) {
					t.Errorf("row %d: reason %q missing", i, c.Reason)
				}
				for _, l := range UndecidedLines(c) {
					if !strings.Contains(page, "<li>"+htmlText(l)+"</li>") {
						t.Errorf("row %d: undecided kind %q missing", i, l)
					}
				}
			}

			// Filters: hidden until the script shows them, one box per side and verdict present.
			if !strings.Contains(page, `<form class="filters" id="filters" hidden>`) {
				t.Errorf("filter form is not hidden by default")
			}
			for _, c := range tc.r.Clauses {
				for _, box := range []string{`name="side" value="` + c.Side + `"`, `name="verdict" value="` + string(c.Verdict) + `"`} {
					if !strings.Contains(page, box) {
						t.Errorf("filter lacks %s", box)
					}
				}
			}

			// One SVG sequence diagram per finding with a ladder.
			svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
			if len(svgs) != len(tc.r.Findings) {
				t.Fatalf("%d <svg>, want one per finding (%d)", len(svgs), len(tc.r.Findings))
			}
			for i, f := range tc.r.Findings {
				checkDiagram(t, svgs[i], f)
				for _, s := range append([]string{f.Message, f.Seen, f.Clause}, f.Expected...) {
					if !strings.Contains(page, htmlText(s)) {
						t.Errorf("finding %d: %q not on the page", i+1, s)
					}
				}
			}
		})
	}
}

// checkDiagram parses one SVG as strict XML and checks it draws the ladder:
// two lanes, one arrow per rung in the right direction with its labels, and
// the highlighted rung in red and thicker than the others.
func checkDiagram(t *testing.T, svg string, f Finding) {
	t.Helper()
	type text struct {
		X    string `xml:"x,attr"`
		Fill string `xml:"fill,attr"`
		Body string `xml:",chardata"`
	}
	type line struct {
		X1          string `xml:"x1,attr"`
		X2          string `xml:"x2,attr"`
		Stroke      string `xml:"stroke,attr"`
		StrokeWidth string `xml:"stroke-width,attr"`
	}
	type group struct {
		Class     string `xml:"class,attr"`
		Dir       string `xml:"data-dir,attr"`
		Highlight string `xml:"data-highlight,attr"`
		Title     string `xml:"title"`
		Texts     []text `xml:"text"`
		Lines     []line `xml:"line"`
		Polygon   struct {
			Fill string `xml:"fill,attr"`
		} `xml:"polygon"`
	}
	var doc struct {
		XMLName xml.Name `xml:"svg"`
		Title   string   `xml:"title"`
		Groups  []group  `xml:"g"`
	}
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("finding %s: SVG is not well-formed XML: %v\n%s", f.ID, err, svg)
	}
	if doc.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Errorf("SVG namespace %q", doc.XMLName.Space)
	}
	if len(doc.Groups) != len(f.Ladder)+1 || doc.Groups[0].Class != "lanes" {
		t.Fatalf("finding %s: %d groups, want the lanes and %d rungs", f.ID, len(doc.Groups), len(f.Ladder))
	}
	var lanes []string
	for _, tx := range doc.Groups[0].Texts {
		lanes = append(lanes, tx.Body)
	}
	if got := strings.Join(lanes, ","); got != "requester,responder,time" {
		t.Errorf("lane labels %q", got)
	}
	if len(doc.Groups[0].Lines) != 2 {
		t.Errorf("%d lane lines, want 2", len(doc.Groups[0].Lines))
	}
	reqX, rspX := doc.Groups[0].Lines[0].X1, doc.Groups[0].Lines[1].X1
	var normalWidth float64
	for i, g := range f.Ladder {
		grp := doc.Groups[i+1]
		if grp.Class != "rung" || grp.Dir != g.Dir || (grp.Highlight == "true") != g.Highlight {
			t.Errorf("rung %d: class %q dir %q highlight %q, want %q %v", i, grp.Class, grp.Dir, grp.Highlight, g.Dir, g.Highlight)
		}
		if len(grp.Lines) != 1 {
			t.Fatalf("rung %d: %d lines", i, len(grp.Lines))
		}
		l := grp.Lines[0]
		wantFrom := reqX
		if g.Dir == DirRspToReq {
			wantFrom = rspX
		}
		if l.X1 != wantFrom {
			t.Errorf("rung %d (%s) starts at x=%s, want the sender's lane x=%s", i, g.Dir, l.X1, wantFrom)
		}
		var all []string
		for _, tx := range grp.Texts {
			all = append(all, tx.Body)
		}
		texts := strings.Join(all, " | ")
		wants := []string{g.Opcode + "  PSN " + strconv.Itoa(int(g.PSN)), "µs"}
		if g.AckReq {
			wants = append(wants, "PSN "+strconv.Itoa(int(g.PSN))+"  A")
		}
		if g.Syndrome != "" {
			wants = append(wants, g.Syndrome)
		}
		if g.MSN != nil {
			wants = append(wants, "MSN "+strconv.Itoa(int(*g.MSN)))
		}
		if g.Frame != 0 {
			wants = append(wants, "frame "+strconv.Itoa(g.Frame))
		}
		for _, w := range wants {
			if !strings.Contains(texts, w) {
				t.Errorf("rung %d labels %q lack %q", i, texts, w)
			}
		}
		if !g.AckReq && strings.Contains(texts, "  A") {
			t.Errorf("rung %d without AckReq labelled A: %q", i, texts)
		}
		if !strings.Contains(grp.Title, "QP "+qpText(g.QP)) {
			t.Errorf("rung %d tooltip %q lacks its QP", i, grp.Title)
		}
		width, err := strconv.ParseFloat(l.StrokeWidth, 64)
		if err != nil {
			t.Fatalf("rung %d stroke-width %q", i, l.StrokeWidth)
		}
		if g.Highlight {
			if !isRed(l.Stroke) || !isRed(grp.Polygon.Fill) {
				t.Errorf("highlighted rung %d drawn in %s / %s, want red", i, l.Stroke, grp.Polygon.Fill)
			}
			if normalWidth != 0 && width <= normalWidth {
				t.Errorf("highlighted rung %d width %v not thicker than %v", i, width, normalWidth)
			}
		} else {
			if isRed(l.Stroke) {
				t.Errorf("rung %d is red but not highlighted", i)
			}
			normalWidth = width
		}
	}
}

// isRed reports whether a #rrggbb colour is clearly red.
func isRed(c string) bool {
	if len(c) != 7 || c[0] != '#' {
		return c == "red"
	}
	v, err := strconv.ParseUint(c[1:], 16, 32)
	if err != nil {
		return false
	}
	r, g, b := v>>16, v>>8&0xff, v&0xff
	return r >= 0xb0 && g <= 0x40 && b <= 0x40
}

// htmlText is s as html/template escapes text.
func htmlText(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `'`, "&#39;", "+", "&#43;").Replace(s)
}

func TestHTMLEscaping(t *testing.T) {
	r := sampleAudit()
	evil := `<script>alert("pwned")</script>`
	r.DUT = evil
	r.Defect = `"><img src=x onerror=alert(1)>`
	r.Captures[0].File = `</td><script>x()</script>`
	r.Clauses[0].Summary = evil
	r.Clauses[0].Side = `"><script>y()</script>`
	r.Clauses[2].Reason = evil
	r.Findings[0].Message = "ACK for " + evil
	r.Findings[0].Seen = evil
	r.Findings[0].Expected = []string{evil}
	r.Findings[0].Ladder[3].Opcode = evil
	r.Findings[0].Ladder[3].Note = evil
	r.Findings[0].Ladder[0].Syndrome = `]]></text><script>z()</script>`
	page := writeHTML(t, r)
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d <script> elements: escaping failed", n)
	}
	for _, bad := range []string{"<img", "</td><script", `"><script>y()`, "<script>z()", "</text><script"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	if !strings.Contains(page, "ACK for &lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;") {
		t.Errorf("finding message not escaped as text")
	}
	if err := checkTagBalance(page); err != nil {
		t.Errorf("tags: %v", err)
	}
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	for _, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		d.Strict = true
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("SVG broken by escaping: %v", err)
			}
		}
	}
}

func TestHTMLLongNoteIsCut(t *testing.T) {
	r := sampleSuite()
	long := strings.Repeat("very long note ", 10)
	r.Findings[0].Ladder[3].Note = long
	page := writeHTML(t, r)
	if !strings.Contains(page, "…</text>") {
		t.Errorf("long note not cut in the diagram")
	}
	if !strings.Contains(page, strings.TrimSpace(long)) {
		t.Errorf("long note not kept whole in the tooltip or text ladder")
	}
}

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// checkTagBalance is a small HTML tag checker: every element opened is
// closed, in order, except void elements and self-closed SVG elements;
// comments, the doctype and raw-text elements (script, style) are skipped.
func checkTagBalance(page string) error {
	var stack []string
	line := func(i int) int { return strings.Count(page[:i], "\n") + 1 }
	for i := 0; i < len(page); {
		j := strings.IndexByte(page[i:], '<')
		if j < 0 {
			break
		}
		i += j
		switch {
		case strings.HasPrefix(page[i:], "<!--"):
			k := strings.Index(page[i:], "-->")
			if k < 0 {
				return fmt.Errorf("line %d: unclosed comment", line(i))
			}
			i += k + 3
			continue
		case strings.HasPrefix(page[i:], "<!"):
			k := strings.IndexByte(page[i:], '>')
			if k < 0 {
				return fmt.Errorf("line %d: unclosed declaration", line(i))
			}
			i += k + 1
			continue
		}
		end := tagEnd(page, i)
		if end < 0 {
			return fmt.Errorf("line %d: unclosed tag", line(i))
		}
		tag := page[i+1 : end]
		i = end + 1
		if strings.HasPrefix(tag, "/") {
			name := strings.ToLower(strings.TrimSpace(tag[1:]))
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return fmt.Errorf("line %d: </%s> closes %v", line(end), name, stack)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		name := strings.ToLower(strings.FieldsFunc(tag, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '/' })[0])
		if voidElements[name] || strings.HasSuffix(tag, "/") {
			continue
		}
		if name == "script" || name == "style" {
			k := strings.Index(strings.ToLower(page[i:]), "</"+name)
			if k < 0 {
				return fmt.Errorf("line %d: unclosed <%s>", line(i), name)
			}
			i += k
			stack = append(stack, name)
			continue
		}
		stack = append(stack, name)
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed elements at the end: %v", stack)
	}
	return nil
}

// tagEnd returns the index of the '>' ending the tag that starts at i,
// skipping quoted attribute values, or -1.
func tagEnd(s string, i int) int {
	var quote byte
	for k := i + 1; k < len(s); k++ {
		switch c := s[k]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return k
		}
	}
	return -1
}

func TestCheckTagBalance(t *testing.T) {
	for _, tc := range []struct {
		page string
		ok   bool
	}{
		{`<!DOCTYPE html><html><head><meta charset="utf-8"><style>a > b {}</style></head><body><p title="a>b">x</p><svg><line x1="0"/></svg><script>if (a < b) {}</script></body></html>`, true},
		{`<div><p>x</div></p>`, false},
		{`<div><span>x</span>`, false},
		{`<div></div></div>`, false},
		{`<!-- <div> --><br><input type="checkbox" checked>`, true},
	} {
		if err := checkTagBalance(tc.page); (err == nil) != tc.ok {
			t.Errorf("checkTagBalance(%s) = %v, want ok %v", tc.page, err, tc.ok)
		}
	}
}
