package reports

import (
	"cmp"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Findings are grouped for people by kind: what was expected against what
// was seen. A device that breaks a rule on every packet gives hundreds of
// findings that are one and the same fact (C9-150.2.1 on soft-RoCE: credit
// code 0x1F in every ACK of a QP without an SRQ); a report shows that fact
// once, with its count, its first and last instance and the first few
// instances drawn in full, and keeps every instance in the JSON.
//
// The kind of a finding is [Finding.Kind] when its monitor set one, and
// otherwise its message with every number left out (decimal and hex
// numbers, durations, ordinals: "ACK with PSN 17 ... code 0x1F" and "ACK
// with PSN 18 ... code 0x1F" are one kind). Findings are grouped per
// clause result (clause and capture), so the same kind in two captures
// makes two groups, one under each capture's clause result.

// DrawnPerGroup is how many instances of a group the reports draw in full
// (message, acceptable outcomes, what was seen and the ladder), budget
// permitting; the others are listed or counted.
const DrawnPerGroup = 3

// numberToken matches the parts of a message that change from instance to
// instance of one kind: hex and decimal numbers with an optional unit or
// ordinal suffix, run together ("1m2.5s" is one token).
var numberToken = regexp.MustCompile(`(?:0[xX][0-9A-Fa-f]+|[0-9]+(?:\.[0-9]+)?(?:ns|µs|us|ms|s|m|h|st|nd|rd|th)?)+`)

// MessageTemplate is a message with every number replaced by "#": the
// derived kind of a finding without an explicit one.
func MessageTemplate(message string) string {
	return numberToken.ReplaceAllString(oneLine(message), "#")
}

// KindOf returns the kind of f within its clause: f.Kind when set,
// otherwise [MessageTemplate] of its message.
func KindOf(f Finding) string {
	if f.Kind != "" {
		return "kind:" + f.Kind
	}
	return "message:" + MessageTemplate(f.Message)
}

// Group is the findings of one clause result that share a kind, in
// instance order (frame, then scenario, QP, PSN, message).
type Group struct {
	Kind     string // the key from KindOf
	Findings []Finding
}

// Count is the number of findings in the group.
func (g *Group) Count() int { return len(g.Findings) }

// First is the group's first instance.
func (g *Group) First() Finding { return g.Findings[0] }

// Last is the group's last instance.
func (g *Group) Last() Finding { return g.Findings[len(g.Findings)-1] }

// ClauseFindings is the findings of one clause result, grouped by kind.
type ClauseFindings struct {
	Clause ClauseResult
	// Index is the clause result's index in Result.Clauses, or -1 for
	// findings whose clause has no result (a hand-written file); Clause
	// then holds only the ID and capture.
	Index int
	// Groups, the biggest first; groups of equal size in order of kind.
	Groups []Group
	// Kept is the number of findings the result holds for the clause.
	Kept int
	// NotKept is the number of violations counted but not kept as
	// findings (the audit's --max-findings), never negative.
	NotKept int
}

// Violations is the exact number of violations: the clause result's count,
// or the findings kept when that is larger (a hand-written file).
func (c *ClauseFindings) Violations() int { return max(c.Clause.Violations, c.Kept) }

// GroupFindings groups r's findings by clause result and kind. Clause
// results come in r's order, each with its findings or failed; findings
// whose clause has no result follow, by clause ID and capture. The result
// depends only on the set of findings, not on their order in r, so the
// grouping is the same from run to run.
func GroupFindings(r *Result) []ClauseFindings {
	type key struct{ id, capture string }
	exact := map[key]int{}
	anyCapture := map[string]int{}
	for i, c := range r.Clauses {
		k := key{c.ID, c.Capture}
		if _, ok := exact[k]; !ok {
			exact[k] = i
		}
		if c.Capture == "" {
			if _, ok := anyCapture[c.ID]; !ok {
				anyCapture[c.ID] = i
			}
		}
	}
	byClause := map[int][]Finding{}
	orphans := map[key][]Finding{}
	for _, f := range r.Findings {
		i, ok := exact[key{f.ID, f.Capture}]
		if !ok {
			i, ok = anyCapture[f.ID]
		}
		if !ok {
			k := key{f.ID, f.Capture}
			orphans[k] = append(orphans[k], f)
			continue
		}
		byClause[i] = append(byClause[i], f)
	}
	var out []ClauseFindings
	for i, c := range r.Clauses {
		fs := byClause[i]
		if len(fs) == 0 && c.Verdict != Fail {
			continue
		}
		out = append(out, newClauseFindings(c, i, fs))
	}
	keys := make([]key, 0, len(orphans))
	for k := range orphans {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].id != keys[j].id {
			return keys[i].id < keys[j].id
		}
		return keys[i].capture < keys[j].capture
	})
	for _, k := range keys {
		out = append(out, newClauseFindings(ClauseResult{ID: k.id, Capture: k.capture, Verdict: Fail}, -1, orphans[k]))
	}
	return out
}

func newClauseFindings(c ClauseResult, index int, fs []Finding) ClauseFindings {
	cf := ClauseFindings{Clause: c, Index: index, Kept: len(fs)}
	cf.NotKept = max(0, c.Violations-len(fs))
	at := map[string]int{}
	for _, f := range fs {
		k := KindOf(f)
		i, ok := at[k]
		if !ok {
			i = len(cf.Groups)
			at[k] = i
			cf.Groups = append(cf.Groups, Group{Kind: k})
		}
		cf.Groups[i].Findings = append(cf.Groups[i].Findings, f)
	}
	for i := range cf.Groups {
		slices.SortStableFunc(cf.Groups[i].Findings, compareInstances)
	}
	sort.Slice(cf.Groups, func(i, j int) bool {
		a, b := &cf.Groups[i], &cf.Groups[j]
		if len(a.Findings) != len(b.Findings) {
			return len(a.Findings) > len(b.Findings)
		}
		return a.Kind < b.Kind
	})
	return cf
}

// compareInstances orders the instances of a group: capture, frame,
// scenario, QP, PSN, message, what was seen, then the ladder's start and
// length, so that the order does not depend on the order findings were
// added in.
func compareInstances(a, b Finding) int {
	return cmp.Or(
		strings.Compare(a.Capture, b.Capture),
		cmp.Compare(a.Frame, b.Frame),
		strings.Compare(a.Scenario, b.Scenario),
		cmp.Compare(a.QP, b.QP),
		cmp.Compare(a.PSN, b.PSN),
		strings.Compare(a.Message, b.Message),
		strings.Compare(a.Seen, b.Seen),
		cmp.Compare(ladderStart(a), ladderStart(b)),
		cmp.Compare(len(a.Ladder), len(b.Ladder)),
	)
}

func ladderStart(f Finding) int64 {
	if len(f.Ladder) == 0 {
		return 0
	}
	return f.Ladder[0].TimeNS
}

// instancePlace says where an instance is: "frame 17" in a capture,
// "scenario X" in a suite run, or "QP 0x000012, PSN 5" when neither is
// known.
func instancePlace(f Finding) string {
	switch {
	case f.Frame != 0:
		return "frame " + strconv.Itoa(f.Frame)
	case f.Scenario != "":
		return "scenario " + f.Scenario
	}
	return "QP " + qpText(f.QP) + ", PSN " + strconv.FormatUint(uint64(f.PSN), 10)
}

// Span says where a group's instances are: "frame 12" for one instance,
// "frames 12 to 2987" for several, scenarios likewise.
func (g *Group) Span() string {
	first, last := instancePlace(g.First()), instancePlace(g.Last())
	if g.Count() == 1 || first == last {
		return first
	}
	if strings.HasPrefix(first, "frame ") && strings.HasPrefix(last, "frame ") {
		return "frames " + strings.TrimPrefix(first, "frame ") + " to " + strings.TrimPrefix(last, "frame ")
	}
	return "first " + first + ", last " + last
}

// Headline is the sentence that stands for a group: its first instance's
// message.
func (g *Group) Headline() string { return oneLine(g.First().Message) }

// KindCount is "484 violations of 2 kinds".
func (c *ClauseFindings) KindCount() string {
	s := plural(c.Violations(), "violation")
	if len(c.Groups) > 1 {
		s += " of " + plural(len(c.Groups), "kind")
	}
	return s
}
