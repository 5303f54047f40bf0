package reports

import (
	"reflect"
	"strings"
	"testing"
)

// shardOf returns a one-capture shard result holding clauses and findings.
func shardOf(i, n, maxF int, clauses []ClauseResult, findings ...Finding) *Result {
	return &Result{Kind: KindAudit, DUT: "pcap", Shard: &ShardInfo{Index: i, Count: n, MaxFindings: maxF},
		Captures: []CaptureInfo{{File: "a.pcap", Frames: 10, RoCEFrames: 9}}, Clauses: clauses, Findings: findings}
}

func cl(v Verdict, checked, violations, undecided int, reason string, at int64) ClauseResult {
	return ClauseResult{ID: "C9-95", Capture: "a.pcap", Verdict: v, Checked: checked, Violations: violations,
		Undecided: undecided, Reason: reason, ReasonAt: at}
}

// open marks n of a clause result's undecided instances as open.
func open(c ClauseResult, n int) ClauseResult { c.Open = n; return c }

// TestMergeVerdicts: a clause's verdict is recomputed from the added
// counts as a single run decides it.
func TestMergeVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []ClauseResult
		want ClauseResult
	}{
		{"a fail anywhere fails", []ClauseResult{cl(Pass, 5, 0, 1, "", 0), cl(Fail, 2, 3, 0, "", 0)}, cl(Fail, 7, 3, 1, "", 0)},
		{"a check passes over doubt", []ClauseResult{cl(Indeterminate, 0, 0, 2, "b", 9), cl(Pass, 4, 0, 0, "", 0)}, cl(Pass, 4, 0, 2, "", 0)},
		{"the reason first given", []ClauseResult{cl(Indeterminate, 0, 0, 1, "later", 90), cl(Indeterminate, 0, 0, 2, "first", 12), cl(NotExercised, 0, 0, 0, "nothing", 0)},
			cl(Indeterminate, 0, 0, 3, "first", 0)},
		{"an open instance keeps a check from passing", []ClauseResult{open(cl(Indeterminate, 0, 0, 1, "open", 40), 1), cl(Pass, 4, 0, 0, "", 0)},
			open(cl(Indeterminate, 4, 0, 1, "open", 0), 1)},
		{"the first open reason wins over an earlier undecided one", []ClauseResult{cl(Indeterminate, 0, 0, 1, "undecided", 3), open(cl(Indeterminate, 2, 0, 2, "open", 50), 1)},
			open(cl(Indeterminate, 2, 0, 3, "open", 0), 1)},
		{"a fail wins over an open instance", []ClauseResult{open(cl(Indeterminate, 0, 0, 1, "open", 4), 1), cl(Fail, 0, 1, 0, "", 0)},
			open(cl(Fail, 0, 1, 1, "", 0), 1)},
		{"not exercised anywhere", []ClauseResult{cl(NotExercised, 0, 0, 0, "nothing", 0), cl(NotExercised, 0, 0, 0, "nothing", 0)}, cl(NotExercised, 0, 0, 0, "nothing", 0)},
		{"unsupported stays", []ClauseResult{cl(Unsupported, 0, 0, 0, "active only", 0), cl(Unsupported, 0, 0, 0, "active only", 0)}, cl(Unsupported, 0, 0, 0, "active only", 0)},
	} {
		var rs []*Result
		for i, c := range tc.in {
			rs = append(rs, shardOf(i, len(tc.in), 0, []ClauseResult{c}))
		}
		m, err := Merge(rs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(m.Clauses) != 1 || !reflect.DeepEqual(m.Clauses[0], tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, m.Clauses, tc.want)
		}
		if m.Shard != nil || len(m.Captures) != 1 {
			t.Errorf("%s: shard %+v, captures %+v", tc.name, m.Shard, m.Captures)
		}
	}
}

// TestMergeFindings: shards' findings come back in the order they were
// made, under the cap per clause, without their positions.
func TestMergeFindings(t *testing.T) {
	f := func(id string, frame int, at int64, msg string) Finding {
		return Finding{ID: id, Capture: "a.pcap", Frame: frame, At: at, Message: msg}
	}
	c := []ClauseResult{cl(Fail, 0, 3, 0, "", 0)}
	// Shard 1 made the first finding of C9-95 (at 3), shard 0 the
	// second (at 5, frame 2: an end-of-capture finding naming an early
	// frame) and third; a cap of 2 keeps the first two.
	r0 := shardOf(0, 2, 2, c, f("C9-95", 2, 5, "second"), f("C9-95", 9, 7, "third"), f("C9-96", 4, 4, "other"))
	r1 := shardOf(1, 2, 2, c, f("C9-95", 3, 3, "first"))
	m, err := Merge([]*Result{r0, r1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range m.Findings {
		got = append(got, x.Message)
		if x.At != 0 {
			t.Errorf("%s keeps its position %d", x.Message, x.At)
		}
	}
	if want := "second first other"; strings.Join(got, " ") != want {
		t.Errorf("findings %q, want %q (sorted by frame, capped to the first two made)", got, want)
	}
	if r0.Findings[0].At != 5 {
		t.Error("Merge modified its input")
	}
}

// TestMergeRefuses: results that are not one complete set of shards, or
// that judged one capture twice, are refused with the reason.
func TestMergeRefuses(t *testing.T) {
	c := []ClauseResult{cl(Pass, 1, 0, 0, "", 0)}
	whole := func() *Result { r := shardOf(0, 1, 0, c); r.Shard = nil; return r }
	other := shardOf(1, 3, 0, c)
	other.Captures[0].Frames = 11
	for _, tc := range []struct {
		name string
		in   []*Result
		want string
	}{
		{"none", nil, "none given"},
		{"a shard missing", []*Result{shardOf(0, 3, 0, c), shardOf(2, 3, 0, c)}, "shard 1/3 is missing"},
		{"a shard twice", []*Result{shardOf(0, 2, 0, c), shardOf(0, 2, 0, c), shardOf(1, 2, 0, c)}, "both shard 0/2"},
		{"counts differ", []*Result{shardOf(0, 2, 0, c), shardOf(1, 3, 0, c)}, "shard 1/3"},
		{"caps differ", []*Result{shardOf(0, 2, 0, c), shardOf(1, 2, 5, c)}, "findings per clause"},
		{"whole and shard", []*Result{whole(), shardOf(0, 1, 0, c)}, "result 1 a whole audit"},
		{"shard and whole", []*Result{shardOf(0, 1, 0, c), whole()}, "is a whole audit"},
		{"one capture twice", []*Result{whole(), whole()}, "capture a.pcap is in result 1 and in result 2"},
		{"another file", []*Result{shardOf(0, 3, 0, c), other, shardOf(2, 3, 0, c)}, "11 frames against 10"},
		{"kinds", []*Result{whole(), {Kind: KindSuite}}, "of kind"},
	} {
		_, err := Merge(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestMergeCaptures: audits of different captures merge into one result
// listing each, with every finding.
func TestMergeCaptures(t *testing.T) {
	a := &Result{Kind: KindAudit, Captures: []CaptureInfo{{File: "b.pcap"}}, Clauses: []ClauseResult{{ID: "C9-95", Capture: "b.pcap", Verdict: Pass, Checked: 1}},
		Findings: []Finding{{ID: "C9-95", Capture: "b.pcap", Frame: 1}}}
	b := &Result{Kind: KindAudit, Captures: []CaptureInfo{{File: "a.pcap"}}, Clauses: []ClauseResult{{ID: "C9-95", Capture: "a.pcap", Verdict: Fail, Violations: 1}},
		Findings: []Finding{{ID: "C9-95", Capture: "a.pcap", Frame: 7}}}
	m, err := Merge([]*Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Captures) != 2 || m.Captures[0].File != "b.pcap" || len(m.Clauses) != 2 || !m.Failed() {
		t.Errorf("merged %+v", m)
	}
	if len(m.Findings) != 2 || m.Findings[0].Capture != "a.pcap" {
		t.Errorf("findings %+v (sorted by capture)", m.Findings)
	}
}

// TestMergeRuns: merged results keep one certificate: the latest date,
// each value as the results give it, values that differ joined.
func TestMergeRuns(t *testing.T) {
	a, b := sampleAudit(), sampleAudit()
	b.Captures, b.Clauses, b.Findings = []CaptureInfo{{File: "other.pcap"}}, nil, nil
	b.Run = &Run{Suite: a.Run.Suite, Date: "2026-03-15T00:00:00Z", Settings: map[string]string{"mtu": "4096", "srq": "unknown"}}
	b.Run.Suite.Commit = "fedcba"
	m, err := Merge([]*Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Run
	if r == nil || r.Date != "2026-03-15T00:00:00Z" || r.Settings["srq"] != "unknown" || r.Settings["mtu"] != joinDistinct("1024", "4096") ||
		r.Suite.Commit != joinDistinct(a.Run.Suite.Commit, "fedcba") {
		t.Errorf("merged certificate %+v", r)
	}
	a.Run, b.Run = nil, nil
	if m, _ := Merge([]*Result{a, b}); m.Run != nil {
		t.Errorf("results without certificates merged into one: %+v", m.Run)
	}
}
