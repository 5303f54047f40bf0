package reports

import "fmt"

// UndecidedKindsShown bounds the kinds of undecided instance listed per
// clause result in text, HTML, Markdown and JUnit (the JSON keeps them
// all); a last line counts the rest.
const UndecidedKindsShown = 10

// Place says where a kind's first instance was: its frame, else its
// scenario.
func (k UndecidedKind) Place() string {
	switch {
	case k.Frame != 0:
		return fmt.Sprintf("first at frame %d", k.Frame)
	case k.Scenario != "":
		return "first in " + k.Scenario
	}
	return ""
}

// Line is one kind in a line: its count, whether it blocks a pass, its
// first instance's reason and where that was.
func (k UndecidedKind) Line() string {
	s := fmt.Sprintf("%d × ", k.Count)
	if k.Open {
		s += "(keeps the clause from passing) "
	}
	s += oneLine(k.Reason)
	if p := k.Place(); p != "" {
		s += " (" + p + ")"
	}
	return s
}

// UndecidedLines lists c's undecided instances by kind, at most
// UndecidedKindsShown kinds, then a line for the kinds left out; and a
// line for instances no kind accounts for (results of older runs).
func UndecidedLines(c ClauseResult) []string {
	var out []string
	listed, rest, restN := 0, 0, 0
	for i, k := range c.UndecidedKinds {
		listed += k.Count
		if i >= UndecidedKindsShown {
			rest++
			restN += k.Count
			continue
		}
		out = append(out, k.Line())
	}
	if rest > 0 {
		word := "kinds"
		if rest == 1 {
			word = "kind"
		}
		out = append(out, fmt.Sprintf("… and %d more %s (%s): see the JSON result's undecided_kinds", rest, word, plural(restN, "instance")))
	}
	if n := c.Undecided - listed; n > 0 {
		out = append(out, fmt.Sprintf("%s without a recorded reason kind", plural(n, "instance")))
	}
	return out
}
