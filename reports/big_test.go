package reports

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var bigJSON = flag.String("big-json", "", "TestReportSizes writes its suite results (515 findings like issue 17's run, 5,000, 50,000) to this directory as big-N.json")

// bigResult is a run like the one issue 17 reports (the suite against
// soft-RoCE): n findings, 94 % of them one and the same fact (credit code
// 0x1F in an ACK of a QP without an SRQ, one per ACK), the rest of two
// other clauses in two kinds each. An audit puts frames on the findings;
// a suite run names scenarios. Every failed clause result's violations
// equal its findings.
func bigResult(n int, audit bool) *Result {
	const capture = "rxe-long.pcap"
	r := &Result{Kind: KindSuite, DUT: "live", Findings: []Finding{}}
	if audit {
		r.Kind, r.DUT = KindAudit, "pcap"
		r.Captures = []CaptureInfo{{File: capture, Format: "pcap", Frames: 3 * n, RoCEFrames: 3 * n}}
	}
	credit := n * 94 / 100
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		psn := uint32(16776000 + 3*i)
		f := Finding{Capture: "", Frame: 0, QP: 0x11 + uint32(i%4), PSN: psn}
		switch {
		case i < credit:
			f.ID = "C9-150.2.1"
			f.Message = fmt.Sprintf("ACK with PSN %d on a QP without an SRQ carries credit code 0x1F, \"no valid credit count\"", psn)
			f.Expected = []string{"an ACK credit code 0x00–0x1E giving the receive WQEs still posted"}
			f.Seen = "syndrome 0x1f (ACK cr=0x1f)"
			f.Clause = "On every QP without a shared receive queue, ACKs carry end-to-end credits, not 0x1F."
		case i%2 == 0:
			f.ID = "C9-95"
			if i%4 == 0 {
				f.Message = fmt.Sprintf("ACK PSN %d is beyond every request sent so far (newest %d)", psn, psn-2)
			} else {
				f.Message = fmt.Sprintf("ACK PSN %d goes back behind the earlier ACK PSN %d", psn, psn+5)
			}
			f.Expected = []string{fmt.Sprintf("the PSN of the newest request covered, at most %d", psn-2)}
			f.Seen = fmt.Sprintf("ACK PSN %d", psn)
			f.Clause = "An ACK acknowledges only requests the responder has received."
		default:
			f.ID = "C9-148"
			op := []string{"RDMA WRITE Only", "SEND Only"}[(i/2)%2]
			f.Message = fmt.Sprintf("the %s at PSN %d did not advance the MSN (still %d)", op, psn, i)
			f.Seen = fmt.Sprintf("MSN %d", i)
			f.Clause = "The MSN counts every completed request message."
		}
		counts[f.ID]++
		if audit {
			f.Capture, f.Frame = capture, 3*i+2
		} else {
			f.Scenario = fmt.Sprintf("C9-%d: scenario %03d", 95+i%20, i%50)
		}
		t0 := int64(i) * 1_000_000
		for k := 0; k < 6+i%10; k++ {
			g := Rung{TimeNS: t0 + int64(k)*1500, Dir: DirReqToRsp, Opcode: "SEND_ONLY", PSN: psn - uint32(6+i%10) + uint32(k), AckReq: k%2 == 0, QP: f.QP}
			if k%3 == 2 {
				g.Dir, g.Opcode, g.Syndrome, g.MSN = DirRspToReq, "ACKNOWLEDGE", "ACK cr=0x1f", msn(uint32(k))
			}
			if audit {
				g.Frame = f.Frame - 6 + k
			}
			f.Ladder = append(f.Ladder, g)
		}
		f.Ladder = append(f.Ladder, Rung{TimeNS: t0 + 20_000, Dir: DirRspToReq, Opcode: "ACKNOWLEDGE", PSN: psn, Syndrome: "ACK cr=0x1f", MSN: msn(3), Frame: f.Frame, QP: 0x10, Highlight: true, Note: "credit code 0x1F"})
		r.Findings = append(r.Findings, f)
	}
	// 49 clause results, as the catalogue has: three fail, the rest pass or
	// are not exercised, some with doubt.
	for i := 0; i < 49; i++ {
		c := ClauseResult{ID: fmt.Sprintf("X-%02d", i), Section: "9.7", Side: []string{"responder", "requester"}[i%2], Level: "mandatory",
			Summary: fmt.Sprintf("illustrative clause %d", i), Verdict: Pass, Checked: 10 + i}
		switch i {
		case 0:
			c.ID, c.Summary = "C9-95", "An ACK acknowledges only requests that were received"
		case 10:
			c.ID, c.Summary = "C9-148", "The MSN counts every completed message"
		case 20:
			c.ID, c.Summary = "C9-150.2.1", "ACKs carry credits on a QP without an SRQ"
		}
		if v := counts[c.ID]; v > 0 {
			c.Verdict, c.Violations, c.Undecided = Fail, v, i%7
		} else if i%5 == 0 {
			c.Verdict, c.Checked, c.Reason = NotExercised, 0, "nothing applied"
		} else if i%3 == 0 {
			c.Undecided = 12
		}
		if audit {
			c.Capture = capture
		}
		r.Clauses = append(r.Clauses, c)
	}
	r.Sort()
	return r
}

func render(t *testing.T, r *Result) (md, page string) {
	t.Helper()
	var m, h bytes.Buffer
	if err := WriteMarkdownOptions(&m, r, MarkdownOptions{Whole: "out/result.json", HTML: "out/report.html"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	return m.String(), h.String()
}

// TestReportSizes: for runs of 515 (issue 17's), 5,000 and 50,000
// findings, suite and audit, the Markdown fits a GitHub comment and the
// HTML stays within 2 MB, and both show every failed clause with its exact
// count and at least one drawn instance.
func TestReportSizes(t *testing.T) {
	sizes := []int{515, 5000, 50000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		for _, audit := range []bool{false, true} {
			name := fmt.Sprintf("%d/suite", n)
			if audit {
				name = fmt.Sprintf("%d/audit", n)
			}
			t.Run(name, func(t *testing.T) {
				r := bigResult(n, audit)
				if !audit && *bigJSON != "" {
					f, err := os.Create(filepath.Join(*bigJSON, fmt.Sprintf("big-%d.json", n)))
					if err != nil {
						t.Fatal(err)
					}
					if err := r.WriteJSON(f); err != nil {
						t.Fatal(err)
					}
					f.Close()
				}
				md, page := render(t, r)
				t.Logf("%d findings: Markdown %d bytes (%d characters), HTML %d bytes", n, len(md), len([]rune(md)), len(page))
				if len(md) > MarkdownLimit {
					t.Errorf("Markdown is %d bytes, over %d", len(md), MarkdownLimit)
				}
				if len(page) > HTMLLimit {
					t.Errorf("HTML is %d bytes, over %d", len(page), HTMLLimit)
				}
				if err := checkTagBalance(page); err != nil {
					t.Errorf("HTML tags: %v", err)
				}
				if !strings.Contains(md, "_Left out to fit a comment: ") || !strings.Contains(md, "The whole result: `out/result.json`") {
					t.Errorf("Markdown lacks its closing line:\n%s", md[max(0, len(md)-2000):])
				}
				for _, c := range r.Clauses {
					if c.Verdict != Fail {
						continue
					}
					checkClauseShown(t, md, page, r, c)
				}
				// The table links each failed clause to its section.
				for _, m := range regexp.MustCompile(`<td class="id"><a href="#(clause-\d+)">`).FindAllStringSubmatch(page, -1) {
					if !strings.Contains(page, `<section class="clause-findings" id="`+m[1]+`"`) {
						t.Errorf("the table links to #%s, which is not on the page", m[1])
					}
				}
				if n == 515 { // a run like the issue's: every instance is on the page, drawn or listed
					drawn := strings.Count(page, "<h4>Instance ")
					listed := len(regexp.MustCompile(`<tr><td class="num">\d+</td><td class="mono">`).FindAllString(page, -1))
					if drawn+listed != n || strings.Contains(page, `<p class="more">`) {
						t.Errorf("%d drawn and %d listed of %d instances", drawn, listed, n)
					}
				}
			})
		}
	}
}

// checkClauseShown checks that the Markdown and the HTML show failed clause
// c with its exact count, every kind's exact count, and at least one drawn
// instance.
func checkClauseShown(t *testing.T, md, page string, r *Result, c ClauseResult) {
	t.Helper()
	cfs := GroupFindings(&Result{Clauses: []ClauseResult{c}, Findings: r.FindingsFor(c)})
	cf := cfs[0]
	// Markdown: the section of c runs from its header to the next one.
	at := strings.Index(md, "\n#### "+mdEscape(c.ID)+":")
	if at < 0 {
		t.Fatalf("Markdown has no section for %s", c.ID)
	}
	sec := md[at+1:]
	if end := strings.Index(sec, "\n#### "); end >= 0 {
		sec = sec[:end]
	}
	if want := "**" + mdEscape(cf.KindCount()) + "**"; !strings.Contains(sec, want) || !strings.HasPrefix(cf.KindCount(), plural(c.Violations, "violation")) {
		t.Errorf("Markdown section of %s lacks %q", c.ID, want)
	}
	if !strings.Contains(sec, "  - _1 of ") || !strings.Contains(sec, "```text\n") {
		t.Errorf("Markdown section of %s draws no instance", c.ID)
	}
	// HTML: likewise between its section's tags.
	re := regexp.MustCompile(`(?s)<section class="clause-findings" id="clause-\d+" data-side="[a-z]*" data-verdict="fail">\s*<h3>` + regexp.QuoteMeta(htmlText(c.ID)) + ` .*?</section>`)
	hsec := re.FindString(page)
	if hsec == "" {
		t.Fatalf("HTML has no section for %s", c.ID)
	}
	if !strings.Contains(hsec, "<strong>"+cf.KindCount()) {
		t.Errorf("HTML section of %s lacks %q", c.ID, cf.KindCount())
	}
	for _, g := range cf.Groups {
		if !strings.Contains(hsec, fmt.Sprintf(`<span class="count">%d ×</span>`, g.Count())) {
			t.Errorf("HTML section of %s lacks its kind of %d", c.ID, g.Count())
		}
	}
	if !strings.Contains(hsec, "<h4>Instance 1 of ") || !strings.Contains(hsec, "<svg ") {
		t.Errorf("HTML section of %s draws no instance", c.ID)
	}
}

// TestGroupCounts: every clause's kinds add up to its findings exactly,
// the kinds are the expected ones, and counts of a clause whose findings
// were capped say so.
func TestGroupCounts(t *testing.T) {
	r := bigResult(5000, true)
	cfs := GroupFindings(r)
	want := map[string][]int{"C9-95": {75, 75}, "C9-148": {75, 75}, "C9-150.2.1": {4700}}
	if len(cfs) != len(want) {
		t.Fatalf("%d clause results with findings, want %d", len(cfs), len(want))
	}
	total := 0
	for _, cf := range cfs {
		var got []int
		sum := 0
		for _, g := range cf.Groups {
			got = append(got, g.Count())
			sum += g.Count()
			for k := 1; k < g.Count(); k++ {
				if g.Findings[k].Frame < g.Findings[k-1].Frame {
					t.Errorf("%s: instances out of frame order", cf.Clause.ID)
				}
			}
		}
		if !reflect.DeepEqual(got, want[cf.Clause.ID]) {
			t.Errorf("%s: kinds of %v, want %v", cf.Clause.ID, got, want[cf.Clause.ID])
		}
		if sum != cf.Clause.Violations || cf.Kept != sum || cf.NotKept != 0 || cf.Violations() != sum {
			t.Errorf("%s: kinds add to %d, kept %d, not kept %d, clause says %d", cf.Clause.ID, sum, cf.Kept, cf.NotKept, cf.Clause.Violations)
		}
		total += sum
	}
	if total != len(r.Findings) {
		t.Errorf("groups hold %d findings, the result %d", total, len(r.Findings))
	}

	// Capped by --max-findings: the clause still counts every violation.
	r.Clauses[20].Violations += 1234
	cf := GroupFindings(r)[2]
	if cf.Clause.ID != "C9-150.2.1" || cf.NotKept != 1234 || cf.Violations() != 4700+1234 {
		t.Errorf("capped clause: %s not kept %d, violations %d", cf.Clause.ID, cf.NotKept, cf.Violations())
	}
	md, _ := render(t, r)
	if !strings.Contains(md, "**5934 violations** in 30 checked, 6 undecided · capture rxe-long.pcap · 4700 kept as findings, 1234 more counted (--max-findings)") {
		t.Errorf("Markdown lacks the capped count")
	}
}

// TestGroupingStable: the grouping and every rendering depend only on the
// set of findings, not on the order a run added them in.
func TestGroupingStable(t *testing.T) {
	seed := int64(17)
	t.Logf("seed %d", seed)
	for _, audit := range []bool{false, true} {
		a := bigResult(3000, audit)
		b := bigResult(3000, audit)
		rng := rand.New(rand.NewSource(seed))
		rng.Shuffle(len(b.Findings), func(i, j int) { b.Findings[i], b.Findings[j] = b.Findings[j], b.Findings[i] })
		if !reflect.DeepEqual(GroupFindings(a), GroupFindings(b)) {
			t.Fatalf("audit=%v: grouping depends on the order of findings", audit)
		}
		mda, pagea := render(t, a)
		mdb, pageb := render(t, b)
		if mda != mdb || pagea != pageb {
			t.Errorf("audit=%v: renderings depend on the order of findings", audit)
		}
		var ja, jb bytes.Buffer
		if err := WriteJUnit(&ja, a, ""); err != nil {
			t.Fatal(err)
		}
		if err := WriteJUnit(&jb, b, ""); err != nil {
			t.Fatal(err)
		}
		if ja.String() != jb.String() {
			t.Errorf("audit=%v: JUnit depends on the order of findings", audit)
		}
	}
}

// TestMarkdownAnyRun: a run with thousands of failed clause results (an
// audit of many captures) still fits, and so does any smaller limit.
func TestMarkdownAnyRun(t *testing.T) {
	r := &Result{Kind: KindAudit}
	for i := 0; i < 3000; i++ {
		capture := fmt.Sprintf("captures/host-%04d.pcap", i)
		r.Captures = append(r.Captures, CaptureInfo{File: capture, Frames: 10})
		r.Clauses = append(r.Clauses, ClauseResult{ID: "C9-95", Summary: "An ACK acknowledges only requests that were received",
			Verdict: Fail, Violations: 2, Checked: 9, Capture: capture})
		for k := 0; k < 2; k++ {
			r.Findings = append(r.Findings, Finding{ID: "C9-95", Capture: capture, Frame: 4 + k, Message: fmt.Sprintf("ACK PSN %d goes back", k),
				Ladder: []Rung{{Dir: DirRspToReq, Opcode: "ACKNOWLEDGE", PSN: uint32(k), Highlight: true}}})
		}
	}
	for _, limit := range []int{0, 20000, 4000} {
		var b bytes.Buffer
		if err := WriteMarkdownOptions(&b, r, MarkdownOptions{Limit: limit}); err != nil {
			t.Fatal(err)
		}
		want := limit
		if want == 0 {
			want = MarkdownLimit
		}
		md := b.String()
		if len(md) > want {
			t.Errorf("limit %d: %d bytes", want, len(md))
		}
		if !strings.Contains(md, "_Left out to fit a comment: ") || !strings.Contains(md, "The whole result: the JSON result") {
			t.Errorf("limit %d: no closing line:\n%s", want, md[max(0, len(md)-600):])
		}
		if strings.Count(md, "```")%2 != 0 {
			t.Errorf("limit %d: a fence is left open", want)
		}
	}
}

func TestMessageTemplate(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{`ACK with PSN 16776192 on a QP without an SRQ carries credit code 0x1F, "no valid credit count"`,
			`ACK with PSN 7 on a QP without an SRQ carries credit code 0x1e, "no valid credit count"`},
		{"PSN 5 was resent 1.5ms after the RNR NAK", "PSN 12 was resent 800µs after the RNR NAK"},
		{"PSN 5 was resent 1m2.5s after", "PSN 6 was resent 3s after"},
		{"sent the NAK for the 2nd time", "sent the NAK for the 13th time"},
		{"READ at PSN 10..14 (frame 3)", "READ at PSN 100..140 (frame 31)"},
	} {
		if x, y := MessageTemplate(tc.a), MessageTemplate(tc.b); x != y {
			t.Errorf("%q and %q are one kind, got templates %q and %q", tc.a, tc.b, x, y)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"the RDMA WRITE Only at PSN 4 did not advance the MSN", "the SEND Only at PSN 4 did not advance the MSN"},
		{"ACK PSN 5 is beyond every request", "ACK PSN 5 goes back behind the earlier ACK"},
	} {
		if MessageTemplate(tc.a) == MessageTemplate(tc.b) {
			t.Errorf("%q and %q are different kinds, got one template %q", tc.a, tc.b, MessageTemplate(tc.a))
		}
	}
	// An explicit kind wins over the message.
	a := Finding{Message: "one thing", Kind: "credits"}
	b := Finding{Message: "another thing", Kind: "credits"}
	if KindOf(a) != KindOf(b) || KindOf(a) == KindOf(Finding{Message: "credits"}) {
		t.Errorf("explicit kinds: %q %q", KindOf(a), KindOf(b))
	}
}
