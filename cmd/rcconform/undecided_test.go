package main

import (
	"strings"
	"testing"

	"github.com/rcconform/rcconform/reports"
)

// TestUndecidedShown: on the project's own captures and, when they are
// beside the repository, the shared ones, every clause result's undecided
// instances are all accounted for by kind (the counts add up to
// undecided, each kind with a reason and its first frame), and the text
// output lists them.
func TestUndecidedShown(t *testing.T) {
	caps := append(sharedCaptures(t, "*"), ownCaptures(t)...)
	out, _ := auditOut(t, caps...)
	res, err := reports.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	undecided := 0
	for _, c := range res.Clauses {
		sum := 0
		for _, k := range c.UndecidedKinds {
			if k.Reason == "" || k.Count <= 0 || k.Frame <= 0 || k.At != 0 {
				t.Errorf("%s in %s: kind %+v: want a reason, a count, its first frame and no shard position", c.ID, c.Capture, k)
			}
			sum += k.Count
		}
		if sum != c.Undecided {
			t.Errorf("%s in %s: kinds account for %d undecided instances of %d", c.ID, c.Capture, sum, c.Undecided)
		}
		undecided += c.Undecided
	}
	if undecided == 0 {
		t.Fatal("no undecided instance in the captures: nothing to show")
	}
	_, text, _ := invoke(t, append([]string{"audit"}, caps...)...)
	if !strings.Contains(text, "== Undecided ==") {
		t.Error("the text output has no Undecided section")
	}
	for _, c := range res.Clauses {
		if len(c.UndecidedKinds) > 0 && !strings.Contains(text, c.UndecidedKinds[0].Line()) {
			t.Errorf("%s in %s: the text output lacks %q", c.ID, c.Capture, c.UndecidedKinds[0].Line())
		}
	}
}
