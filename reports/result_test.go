package reports

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Result
	}{
		{"audit", sampleAudit()},
		{"suite", sampleSuite()},
		{"empty suite", &Result{Kind: KindSuite, Captures: []CaptureInfo{}, Clauses: []ClauseResult{}, Findings: []Finding{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.r.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			got, err := ReadJSON(&b)
			if err != nil {
				t.Fatal(err)
			}
			want := *tc.r
			if want.Captures == nil { // written as [], read back as an empty list
				want.Captures = []CaptureInfo{}
			}
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("round trip changed the result:\n got %+v\nwant %+v", got, tc.r)
			}
		})
	}
}

// TestJSONContract checks the keys rcconform promises to users of
// `audit --format json`, and that the lists are present even when empty.
func TestJSONContract(t *testing.T) {
	t.Run("audit", func(t *testing.T) {
		var b bytes.Buffer
		if err := sampleAudit().WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Captures []map[string]any `json:"captures"`
			Clauses  []map[string]any `json:"clauses"`
			Findings []map[string]any `json:"findings"`
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		for _, c := range doc.Clauses {
			for _, k := range []string{"id", "verdict", "checked", "violations", "undecided"} {
				if _, ok := c[k]; !ok {
					t.Errorf("clause %v lacks %q", c["id"], k)
				}
			}
			if v := Verdict(c["verdict"].(string)); !v.Valid() {
				t.Errorf("clause %v: verdict %q", c["id"], v)
			}
		}
		for _, f := range doc.Findings {
			for _, k := range []string{"id", "capture", "frame", "qp", "psn", "message"} {
				if _, ok := f[k]; !ok {
					t.Errorf("finding %v lacks %q", f["id"], k)
				}
			}
		}
		for _, c := range doc.Captures {
			for _, k := range []string{"file", "frames", "roce_frames", "skipped", "bad_icrc", "truncated"} {
				if _, ok := c[k]; !ok {
					t.Errorf("capture %v lacks %q", c["file"], k)
				}
			}
		}
	})
	t.Run("nil lists", func(t *testing.T) {
		for _, marshal := range []struct {
			name string
			f    func(*Result) ([]byte, error)
		}{
			{"WriteJSON", func(r *Result) ([]byte, error) { var b bytes.Buffer; err := r.WriteJSON(&b); return b.Bytes(), err }},
			{"json.Marshal", func(r *Result) ([]byte, error) { return json.Marshal(r) }},
			{"json.Marshal value", func(r *Result) ([]byte, error) { return json.Marshal(*r) }},
		} {
			b, err := marshal.f(&Result{Kind: KindSuite, DUT: "reference"})
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"captures", "clauses", "findings"} {
				if got := string(doc[k]); got != "[]" {
					t.Errorf("%s: %q is %q, want []", marshal.name, k, got)
				}
			}
		}
	})
}

func TestReadJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"not JSON", `{"kind":`, "decoding result JSON"},
		{"missing kind", `{"captures":[],"clauses":[],"findings":[]}`, "missing kind"},
		{"unknown kind", `{"kind":"bench"}`, `unknown kind "bench"`},
		{"wrong type", `{"kind":"suite","seed":"x"}`, "Result.seed"},
		{"unknown verdict", `{"kind":"suite","clauses":[{"id":"C9-95","verdict":"passed"}]}`, `clause 1 (C9-95): unknown verdict "passed"`},
		{"missing clause id", `{"kind":"suite","clauses":[{"verdict":"pass"}]}`, "clause 1: missing id"},
		{"bad direction", `{"kind":"audit","findings":[{"id":"C9-95","ladder":[{"dir":"req>rsp"},{"dir":"up"}]}]}`, `finding 1 (C9-95), rung 2: unknown direction "up"`},
		{"two values", `{"kind":"suite"} {"kind":"suite"}`, "more than one JSON value"},
		{"negative undecided", `{"kind":"suite","clauses":[{"id":"C9-95","verdict":"pass","undecided":-2}]}`, "clause 1 (C9-95): negative count"},
		{"undecided not a number", `{"kind":"suite","clauses":[{"id":"C9-95","verdict":"pass","undecided":"12"}]}`, "clauses.undecided"},
		{"trailing garbage", `{"kind":"suite"} ]`, "after the result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("ReadJSON(%s) succeeded", tc.in)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestReadJSONWithoutUndecided: a result written before clauses carried
// "undecided" still reads, with no undecided instances.
func TestReadJSONWithoutUndecided(t *testing.T) {
	r, err := ReadJSON(strings.NewReader(`{"kind":"audit","captures":[],"clauses":[{"id":"C9-95","verdict":"pass","checked":4,"violations":0}],"findings":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Clauses[0]; c.Undecided != 0 || VerdictText(c) != "pass" {
		t.Errorf("old result read as %+v (%q)", c, VerdictText(c))
	}
	r, err = ReadJSON(strings.NewReader(`{"kind":"audit","clauses":[{"id":"C9-95","verdict":"pass","checked":4,"undecided":12}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Clauses[0]; c.Undecided != 12 || VerdictText(c) != "pass, 12 undecided" {
		t.Errorf("result read as %+v (%q)", c, VerdictText(c))
	}
}

func TestReadJSONFillsLists(t *testing.T) {
	r, err := ReadJSON(strings.NewReader(`{"kind":"suite"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Captures == nil || r.Clauses == nil || r.Findings == nil {
		t.Errorf("ReadJSON left nil lists: %+v", r)
	}
}

func TestFailed(t *testing.T) {
	for _, tc := range []struct {
		verdicts []Verdict
		want     bool
	}{
		{nil, false},
		{[]Verdict{Pass, NotExercised, Indeterminate, Unsupported, TextUnavailable}, false},
		{[]Verdict{Pass, Fail}, true},
		{[]Verdict{Fail}, true},
	} {
		r := &Result{Kind: KindSuite}
		for _, v := range tc.verdicts {
			r.Clauses = append(r.Clauses, ClauseResult{ID: "C9-95", Verdict: v})
		}
		if got := r.Failed(); got != tc.want {
			t.Errorf("Failed() with %v = %v, want %v", tc.verdicts, got, tc.want)
		}
	}
}

func TestSort(t *testing.T) {
	r := &Result{
		Kind: KindAudit,
		Clauses: []ClauseResult{
			{ID: "o9-66", Verdict: Pass}, {ID: "C9-95", Verdict: Fail}, {ID: "C9-116", Verdict: Pass},
		},
		Findings: []Finding{
			{ID: "C9-95", Capture: "b.pcap", Frame: 9},
			{ID: "C9-95", Capture: "a.pcap", Frame: 30},
			{ID: "C9-116", Capture: "b.pcap", Frame: 2},
			{ID: "C9-95", Capture: "a.pcap", Frame: 4},
			{ID: "C9-116", Capture: "a.pcap", Frame: 30},
		},
	}
	r.Sort()
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Capture+"/"+f.ID+"/"+strconv.Itoa(f.Frame))
	}
	want := []string{"a.pcap/C9-95/4", "a.pcap/C9-95/30", "a.pcap/C9-116/30", "b.pcap/C9-116/2", "b.pcap/C9-95/9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings after Sort:\n got %v\nwant %v", got, want)
	}
	if r.Clauses[0].ID != "o9-66" || r.Clauses[1].ID != "C9-95" || r.Clauses[2].ID != "C9-116" {
		t.Errorf("Sort reordered clauses: %+v", r.Clauses)
	}
}

func TestCounts(t *testing.T) {
	n := sampleAudit().Counts()
	want := map[Verdict]int{Pass: 2, Fail: 2, NotExercised: 1, Indeterminate: 1, Unsupported: 1, TextUnavailable: 1}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("Counts() = %v, want %v", n, want)
	}
	if got := countLine(sampleAudit(), ", "); got != "2 pass, 2 fail, 1 not-exercised, 1 indeterminate, 1 unsupported, 1 text-unavailable" {
		t.Errorf("countLine = %q", got)
	}
}

func TestFindingsFor(t *testing.T) {
	r := sampleAudit()
	for _, tc := range []struct {
		c    ClauseResult
		want []uint32 // PSNs
	}{
		{ClauseResult{ID: "C9-95", Capture: captureA}, []uint32{1203}},
		{ClauseResult{ID: "C9-95", Capture: captureB}, nil},
		{ClauseResult{ID: "C9-116", Capture: captureB}, []uint32{502}},
		{ClauseResult{ID: "C9-116"}, []uint32{502}}, // no capture: every finding of the clause
		{ClauseResult{ID: "o9-66"}, nil},
	} {
		var got []uint32
		for _, f := range r.FindingsFor(tc.c) {
			got = append(got, f.PSN)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FindingsFor(%s in %q) PSNs = %v, want %v", tc.c.ID, tc.c.Capture, got, tc.want)
		}
	}
}

func TestVerdictValid(t *testing.T) {
	for _, v := range Verdicts {
		if !v.Valid() {
			t.Errorf("%q not valid", v)
		}
	}
	for _, v := range []Verdict{"", "PASS", "skipped", "not exercised"} {
		if v.Valid() {
			t.Errorf("%q valid", v)
		}
	}
}
