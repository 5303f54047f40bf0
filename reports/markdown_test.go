package reports

import (
	"bytes"
	"strings"
	"testing"
)

func writeMarkdown(t *testing.T, r *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      *Result
		header string
		wants  []string
	}{
		{
			"audit", sampleAudit(),
			"| Clause | What is checked | Capture | Section | Side | Level | Verdict | Checked | Violations | Undecided | Reason |",
			[]string{
				"## rcconform audit: FAIL",
				"**Verdicts:** 2 pass · 2 fail · 1 not-exercised · 1 indeterminate · 1 unsupported · 1 text-unavailable",
				"capture rdma-write.pcapng (1204 frames, 1180 RoCE, 24 skipped, 1 bad ICRC, 0 truncated)",
				"| C9-95 | An ACK acknowledges only requests that were received | rdma-write.pcapng | 9.7.5.1.1 | responder | mandatory | **fail** | 412 | 1 | 0 |  |",
				"| C9-116 | A requester resends from the PSN a sequence-error NAK names | rdma-write.pcapng | 9.7.6.1.2 | requester | mandatory | pass, 2 undecided | 3 | 0 | 2 |  |",
				"| o9-66 | RDMA READ responses are generated in order | send-retry.pcap | 9.7.5.2.8 | responder | optional | indeterminate, 1 undecided | 0 | 0 | 1 | the connection began before the capture; outstanding READs unknown |",
				"### Violations (2 in 2 clause results)",
				"#### C9-116: A requester resends from the PSN a sequence-error NAK names",
				"**1 violation** in 1 checked · capture send-retry.pcap",
				"- **1 ×** after a PSN sequence error NAK for PSN 501, the requester resent from PSN 502 (frame 124)",
				"  - _1 of 1:_ capture send-retry.pcap, frame 124, QP 0x000031, PSN 502",
				"      - resend beginning at PSN 501",
				"    - **Seen:** resend beginning at PSN 502",
				"_Nothing left out. The whole result: the JSON result._",
			},
		},
		{
			"suite", sampleSuite(),
			"| Clause | What is checked | Section | Side | Level | Verdict | Checked | Violations | Undecided | Reason |",
			[]string{
				"DUT reference · defect ack-beyond-received · seed 42",
				"- **1 ×** ACK for PSN 1203 acknowledges a request that was never sent (scenario write-then-ack)",
				`  - _1 of 1:_ QP 0x000012, PSN 1203, scenario "write-then-ack"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := writeMarkdown(t, tc.r)
			for _, w := range append([]string{tc.header}, tc.wants...) {
				if !strings.Contains(md, w) {
					t.Errorf("Markdown lacks %q:\n%s", w, md)
				}
			}
			// One table row per clause result, each with as many cells as the header.
			cells := strings.Count(tc.header, "|")
			var rows int
			for _, line := range strings.Split(md, "\n") {
				if strings.HasPrefix(line, "| ") && line != tc.header {
					rows++
					if n := strings.Count(line, "|") - strings.Count(line, `\|`); n != cells {
						t.Errorf("row has %d cell borders, want %d: %s", n, cells, line)
					}
				}
			}
			if rows != len(tc.r.Clauses) {
				t.Errorf("%d table rows, want %d", rows, len(tc.r.Clauses))
			}
			// Every ladder whole inside a text fence, indented under its instance.
			for _, f := range tc.r.Findings {
				ladder := "    " + strings.ReplaceAll(strings.TrimSuffix(LadderText(f.Ladder), "\n"), "\n", "\n    ")
				if want := "    ```text\n" + ladder + "\n    ```\n"; !strings.Contains(md, want) {
					t.Errorf("ladder of %s not fenced whole:\n%s", f.ID, md)
				}
			}
		})
	}
}

func TestMarkdownPassing(t *testing.T) {
	md := writeMarkdown(t, &Result{Kind: KindSuite, Clauses: []ClauseResult{{ID: "C9-95", Verdict: Pass, Checked: 3}}})
	if !strings.Contains(md, "## rcconform suite: no violation") || strings.Contains(md, "### Violations") {
		t.Errorf("passing run:\n%s", md)
	}
}

func TestMarkdownEscaping(t *testing.T) {
	r := sampleSuite()
	r.Clauses[0].Summary = "a | b <script>alert(1)</script> [link](x) *bold*\nnext"
	r.Findings[0].Message = "<b>bold</b> & `code`"
	r.Findings[0].Ladder[0].Opcode = "OP```X"
	md := writeMarkdown(t, r)
	for _, want := range []string{
		`| a \| b &lt;script&gt;alert(1)&lt;/script&gt; \[link\](x) \*bold\* next |`,
		"&lt;b&gt;bold&lt;/b&gt; &amp; \\`code\\`",
		"````text\n", // a fence longer than the backticks inside
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "<script>") || strings.Contains(md, "<b>") {
		t.Errorf("raw HTML in Markdown:\n%s", md)
	}
}
