package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// ShardInfo says which share of the connections an audit judged: those
// whose hash falls in shard Index of Count (`rcconform audit
// --shard=Index/Count`). Each shard reads every capture whole, so each
// lists the same captures; its findings carry Finding.At and its clauses
// ClauseResult.ReasonAt, which Merge needs to put them back in the order,
// and under the findings cap, of a single run.
type ShardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// MaxFindings is the findings kept per clause and capture (0: all).
	MaxFindings int `json:"max_findings"`
}

// Merge combines results into one, as a single run over all their
// captures would have given:
//
//   - captures: each once, in the order the results first list them; a
//     capture listed by several results must be described alike by each;
//   - shards: the results of `audit --shard=I/N` over the same captures
//     merge into the result of the whole audit, provided every shard
//     0..N-1 is there once, with the same N and findings cap;
//   - clauses of one capture (or of one suite run) and one ID: counts
//     add, and the verdict is recomputed as a single run decides it: any
//     violation fails, else a checked instance passes, else an undecided
//     one is indeterminate (with the reason first given), else the clause
//     was not exercised; unsupported and text-unavailable stay as they
//     are;
//   - findings: all kept (shards': in the single run's order, cut to its
//     cap per clause), sorted as Result.Sort does.
//
// A fail anywhere fails the merged result. The merged result carries no
// ShardInfo; the results given are not modified.
func Merge(results []*Result) (*Result, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("merging results: none given")
	}
	out := &Result{Kind: results[0].Kind, DUT: results[0].DUT, Defect: results[0].Defect, Seed: results[0].Seed,
		Captures: []CaptureInfo{}, Clauses: []ClauseResult{}, Findings: []Finding{}}
	for i, r := range results {
		if r.Kind != out.Kind {
			return nil, fmt.Errorf("merging results: result %d is of kind %q, result 1 of kind %q", i+1, r.Kind, out.Kind)
		}
		if r.DUT != out.DUT {
			out.DUT = joinDistinct(out.DUT, r.DUT)
		}
		if r.Defect != out.Defect {
			out.Defect = joinDistinct(out.Defect, r.Defect)
		}
		if r.Seed != out.Seed {
			out.Seed = 0
		}
		for k, v := range r.Environment {
			if out.Environment == nil {
				out.Environment = map[string]string{}
			}
			if old, ok := out.Environment[k]; ok && old != v {
				v = joinDistinct(old, v)
			}
			out.Environment[k] = v
		}
	}
	out.Run = mergeRuns(results)
	shards, err := checkShards(results)
	if err != nil {
		return nil, err
	}
	// Captures: whoever lists a capture must list it alike; outside
	// shards, only one result may have judged it.
	owner := map[string]int{}
	for i, r := range results {
		for _, c := range r.Captures {
			j, seen := owner[c.File]
			if !seen {
				owner[c.File] = i
				out.Captures = append(out.Captures, c)
				continue
			}
			if shards == nil {
				return nil, fmt.Errorf("merging results: capture %s is in result %d and in result %d (merge shards of one audit, or results of different captures)", c.File, j+1, i+1)
			}
			if k := captureIndex(out.Captures, c.File); !reflect.DeepEqual(out.Captures[k], c) {
				return nil, fmt.Errorf("merging results: result %d describes capture %s unlike result %d (%d frames against %d): were the shards run on the same file?",
					i+1, c.File, j+1, c.Frames, out.Captures[k].Frames)
			}
		}
	}
	mergeClauses(out, results)
	mergeFindings(out, results, shards)
	mergeConnections(out, results)
	return out, nil
}

// mergeConnections lists every result's connections as one run would:
// by capture in the order of out.Captures, the audited ones by ID, then
// the handshakes no RC packet used (ID 0), which every shard of a
// capture lists alike and the merge keeps once.
func mergeConnections(out *Result, results []*Result) {
	seen := map[string]bool{}
	var all []Connection
	for _, r := range results {
		for _, c := range r.Connections {
			if c.ID == 0 {
				b, _ := json.Marshal(c)
				if seen[string(b)] {
					continue
				}
				seen[string(b)] = true
			}
			all = append(all, c)
		}
	}
	unused := func(c Connection) int { return min(c.ID, 1) ^ 1 }
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if ca, cb := captureIndex(out.Captures, a.Capture), captureIndex(out.Captures, b.Capture); ca != cb {
			return ca < cb
		}
		if ua, ub := unused(a), unused(b); ua != ub {
			return ua < ub
		}
		return a.ID < b.ID
	})
	out.Connections = all
}

// checkShards returns the shard set of results (nil when none is a
// shard), or why the results are not one complete set.
func checkShards(results []*Result) (*ShardInfo, error) {
	var first *ShardInfo
	seen := map[int]int{}
	for i, r := range results {
		s := r.Shard
		if s == nil {
			if first != nil || len(seen) > 0 {
				return nil, fmt.Errorf("merging results: result %d is a whole audit, the others shards (merge shards of one audit only with each other)", i+1)
			}
			continue
		}
		if i > 0 && first == nil {
			return nil, fmt.Errorf("merging results: result %d is a shard (%d/%d), result 1 a whole audit", i+1, s.Index, s.Count)
		}
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			return nil, fmt.Errorf("merging results: result %d: shard %d/%d is out of range", i+1, s.Index, s.Count)
		}
		if first == nil {
			first = s
		} else if s.Count != first.Count || s.MaxFindings != first.MaxFindings {
			return nil, fmt.Errorf("merging results: result %d is shard %d/%d with %d findings per clause, result 1 shard %d/%d with %d",
				i+1, s.Index, s.Count, s.MaxFindings, first.Index, first.Count, first.MaxFindings)
		}
		if j, dup := seen[s.Index]; dup {
			return nil, fmt.Errorf("merging results: results %d and %d are both shard %d/%d", j+1, i+1, s.Index, s.Count)
		}
		seen[s.Index] = i
	}
	if first == nil {
		return nil, nil
	}
	for k := 0; k < first.Count; k++ {
		if _, ok := seen[k]; !ok {
			return nil, fmt.Errorf("merging results: shard %d/%d is missing: its connections would be left unjudged", k, first.Count)
		}
	}
	return first, nil
}

func captureIndex(cs []CaptureInfo, file string) int {
	for i, c := range cs {
		if c.File == file {
			return i
		}
	}
	return -1
}

// mergeClauses adds up the clause results of each (capture, ID) and
// recomputes their verdicts.
func mergeClauses(out *Result, results []*Result) {
	type key struct{ capture, id string }
	at := map[key]int{}
	var groups [][]ClauseResult
	for _, r := range results {
		for _, c := range r.Clauses {
			k := key{c.Capture, c.ID}
			i, ok := at[k]
			if !ok {
				i = len(groups)
				at[k] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], c)
		}
	}
	for _, g := range groups {
		out.Clauses = append(out.Clauses, mergeClause(g))
	}
}

// mergeClause merges one clause's results.
func mergeClause(g []ClauseResult) ClauseResult {
	m := g[0]
	m.Checked, m.Violations, m.Undecided, m.Open, m.ReasonAt = 0, 0, 0, 0, 0
	m.Checks = nil
	m.UndecidedKinds = nil
	judged := false
	// A single run gives the reason of its first open instance if it has
	// one (Open), else that of its first undecided one.
	var reason, openReason, notExercised string
	var reasonAt, openAt int64
	seenCheck := map[string]bool{}
	for _, c := range g {
		m.Checked += c.Checked
		m.Violations += c.Violations
		m.Undecided += c.Undecided
		m.Open += c.Open
		for _, ch := range c.Checks {
			if !seenCheck[ch] {
				seenCheck[ch] = true
				m.Checks = append(m.Checks, ch)
			}
		}
		switch c.Verdict {
		case Unsupported, TextUnavailable:
			continue
		case Indeterminate:
			switch {
			case c.Reason == "":
			case c.Open > 0:
				if openReason == "" || c.ReasonAt < openAt {
					openReason, openAt = c.Reason, c.ReasonAt
				}
			case reason == "" || c.ReasonAt < reasonAt:
				reason, reasonAt = c.Reason, c.ReasonAt
			}
		case NotExercised:
			if notExercised == "" {
				notExercised = c.Reason
			}
		}
		judged = true
	}
	m.UndecidedKinds = mergeKinds(g)
	if !judged {
		return m // unsupported or text-unavailable everywhere: as it was
	}
	m.Reason = ""
	switch {
	case m.Violations > 0:
		m.Verdict = Fail
	case m.Open > 0:
		m.Verdict, m.Reason = Indeterminate, openReason
	case m.Checked > 0:
		m.Verdict = Pass
	case m.Undecided > 0 || reason != "":
		m.Verdict, m.Reason = Indeterminate, reason
	default:
		m.Verdict, m.Reason = NotExercised, notExercised
	}
	return m
}

// mergeFindings keeps every finding; shards' findings go back into the
// single run's order and under its cap per clause and capture.
func mergeFindings(out *Result, results []*Result, shards *ShardInfo) {
	if shards == nil {
		for _, r := range results {
			out.Findings = append(out.Findings, r.Findings...)
		}
		out.Sort()
		return
	}
	type found struct {
		f     Finding
		shard int
		i     int
	}
	var all []found
	for _, r := range results {
		for i, f := range r.Findings {
			all = append(all, found{f, r.Shard.Index, i})
		}
	}
	// Findings made at one place come from one connection, hence from one
	// shard, in the order it made them.
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.f.Capture != b.f.Capture {
			return a.f.Capture < b.f.Capture
		}
		if a.f.At != b.f.At {
			return a.f.At < b.f.At
		}
		if a.shard != b.shard {
			return a.shard < b.shard
		}
		return a.i < b.i
	})
	type key struct{ capture, id string }
	kept := map[key]int{}
	for _, x := range all {
		k := key{x.f.Capture, x.f.ID}
		if shards.MaxFindings > 0 && kept[k] >= shards.MaxFindings {
			continue
		}
		kept[k]++
		x.f.At = 0
		out.Findings = append(out.Findings, x.f)
	}
	out.Sort()
}

// joinDistinct joins the distinct values of a and b, comma-separated.
func joinDistinct(a, b string) string {
	parts := strings.Split(a, ",")
	for _, p := range parts {
		if p == b {
			return a
		}
	}
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "," + b
}

// mergeKinds merges the clause results' undecided kinds as one run would
// have met them (MergeUndecidedKinds), without their positions.
func mergeKinds(g []ClauseResult) []UndecidedKind {
	lists := make([][]UndecidedKind, len(g))
	for i, c := range g {
		lists[i] = c.UndecidedKinds
	}
	out := MergeUndecidedKinds(lists)
	for i := range out {
		out[i].At = 0
	}
	return out
}

// MergeUndecidedKinds merges several lists of undecided kinds (shards' or
// shard workers', or separate runs') as one list fed every instance in
// trace order would hold them: kinds in order of first appearance (by At,
// then by list and place; lists without positions keep their order), the
// counts of a kind added, each kind with its first instance.
func MergeUndecidedKinds(lists [][]UndecidedKind) []UndecidedKind {
	type at struct {
		k         UndecidedKind
		list, pos int
	}
	var all []at
	for l, ks := range lists {
		for pos, k := range ks {
			all = append(all, at{k, l, pos})
		}
	}
	slices.SortStableFunc(all, func(a, b at) int {
		return cmp.Or(cmp.Compare(a.k.At, b.k.At), cmp.Compare(a.list, b.list), cmp.Compare(a.pos, b.pos))
	})
	var out []UndecidedKind
	index := map[string]int{}
	for _, x := range all {
		key := ReasonKind(x.k.Reason, x.k.Open)
		if i, ok := index[key]; ok {
			out[i].Count += x.k.Count
			continue
		}
		index[key] = len(out)
		out = append(out, x.k)
	}
	return out
}

// mergeRuns is the certificate of merged results: each of suite, declared
// value and setting as the results give it (values that differ joined),
// dated as the latest; nil when none has one.
func mergeRuns(results []*Result) *Run {
	var out *Run
	merge := func(dst *map[string]string, src map[string]string) {
		for k, v := range src {
			if *dst == nil {
				*dst = map[string]string{}
			}
			if old, ok := (*dst)[k]; ok && old != v {
				v = joinDistinct(old, v)
			}
			(*dst)[k] = v
		}
	}
	for _, r := range results {
		run := r.Run
		if run == nil {
			continue
		}
		if out == nil {
			out = &Run{Suite: run.Suite, Date: run.Date}
		}
		if run.Suite != out.Suite {
			s := &out.Suite
			s.Module, s.Version, s.Commit = joinDistinct(s.Module, run.Suite.Module), joinDistinct(s.Version, run.Suite.Version), joinDistinct(s.Commit, run.Suite.Commit)
			s.Modified = s.Modified || run.Suite.Modified
		}
		out.Date = max(out.Date, run.Date) // RFC 3339 in UTC sorts as time
		merge(&out.Declared, run.Declared)
		merge(&out.Settings, run.Settings)
	}
	return out
}
