package harness_test

import (
	"slices"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
)

// TestPlaceNotes: a note goes with its frame, the last packet when its
// frame is past the trace's end, the first packet at or after its time
// when it names no frame (the last when none is), and with no packet in
// an empty trace.
func TestPlaceNotes(t *testing.T) {
	var recs []*trace.Record
	for i, at := range []time.Duration{0, 0, 5, 9} {
		recs = append(recs, &trace.Record{Frame: i + 1, Time: at})
	}
	notes := []harness.Note{
		{Text: "frame 2", Frame: 2},
		{Text: "past the end", Frame: 7},
		{Text: "at 0", At: 0},
		{Text: "at 3", At: 3},
		{Text: "at 9", At: 9},
		{Text: "at 10", At: 10},
	}
	got, none := harness.PlaceNotes(recs, notes)
	want := map[int][]string{1: {"at 0"}, 2: {"frame 2"}, 3: {"at 3"}, 4: {"past the end", "at 9", "at 10"}}
	if len(none) > 0 || len(got) != len(want) {
		t.Fatalf("placed %v, with none %q; want %v", got, none, want)
	}
	for f, w := range want {
		if !slices.Equal(got[f], w) {
			t.Errorf("frame %d: %q, want %q", f, got[f], w)
		}
	}
	got, none = harness.PlaceNotes(nil, notes[:2])
	if len(got) > 0 || !slices.Equal(none, []string{"frame 2", "past the end"}) {
		t.Errorf("an empty trace: placed %v, with none %q", got, none)
	}
}
