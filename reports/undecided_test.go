package reports

import (
	"reflect"
	"strings"
	"testing"
)

// TestMergeUndecidedKinds: shards' kinds come back in the order a single
// run met them first (by position, then shard), with the first instance
// of each and the counts added, without their positions.
func TestMergeUndecidedKinds(t *testing.T) {
	a := cl(Pass, 3, 0, 4, "", 0)
	a.UndecidedKinds = []UndecidedKind{
		{Reason: "ended at PSN 9", Count: 1, Frame: 90, At: 90},
		{Reason: "no response at PSN 3", Count: 3, Frame: 30, At: 30},
	}
	b := cl(Pass, 1, 0, 3, "", 0)
	b.UndecidedKinds = []UndecidedKind{
		{Reason: "no response at PSN 1", Count: 2, Frame: 10, At: 10},
		{Reason: "ended at PSN 2", Count: 1, Frame: 20, At: 20},
	}
	m, err := Merge([]*Result{shardOf(0, 2, 0, []ClauseResult{a}), shardOf(1, 2, 0, []ClauseResult{b})})
	if err != nil {
		t.Fatal(err)
	}
	want := []UndecidedKind{
		{Reason: "no response at PSN 1", Count: 5, Frame: 10},
		{Reason: "ended at PSN 2", Count: 2, Frame: 20},
	}
	if got := m.Clauses[0].UndecidedKinds; !reflect.DeepEqual(got, want) {
		t.Errorf("merged kinds %+v, want %+v", got, want)
	}
	if m.Clauses[0].Undecided != 7 {
		t.Errorf("merged undecided %d, want 7", m.Clauses[0].Undecided)
	}
}

// TestUndecidedLines: at most UndecidedKindsShown kinds, then one line for
// the rest, and one for instances no kind accounts for; every report
// format shows them, the Markdown within its limit.
func TestUndecidedLines(t *testing.T) {
	c := cl(Pass, 5, 0, 0, "", 0)
	c.ID = "C9-95"
	for i := range UndecidedKindsShown + 2 {
		c.UndecidedKinds = append(c.UndecidedKinds, UndecidedKind{Reason: "reason " + strings.Repeat("x", i), Count: 2, Frame: i + 1})
		c.Undecided += 2
	}
	c.Undecided++ // one instance of an older result without its kind
	lines := UndecidedLines(c)
	if len(lines) != UndecidedKindsShown+2 {
		t.Fatalf("%d lines, want %d: %q", len(lines), UndecidedKindsShown+2, lines)
	}
	if lines[0] != "2 × reason (first at frame 1)" ||
		!strings.HasPrefix(lines[UndecidedKindsShown], "… and 2 more kinds (4 instances)") ||
		lines[UndecidedKindsShown+1] != "1 instance without a recorded reason kind" {
		t.Errorf("lines %q", lines)
	}
	r := &Result{Kind: KindSuite, Clauses: []ClauseResult{c}}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### Undecided (25 instances in 1 clause result)") || !strings.Contains(md.String(), "- "+mdEscape(lines[0])) {
		t.Errorf("the Markdown lacks the undecided instances:\n%s", md.String())
	}
	md.Reset()
	if err := WriteMarkdownOptions(&md, r, MarkdownOptions{Limit: 1400}); err != nil {
		t.Fatal(err)
	}
	if md.Len() > 1400 || !strings.Contains(md.String(), "of the undecided instances by kind") {
		t.Errorf("a %d-character Markdown with limit 1400 does not say what it left out:\n%s", md.Len(), md.String())
	}
}
