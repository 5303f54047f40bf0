package annotate

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rcconform/rcconform/reports"
)

// TestUndecidedKeepsEarliest: with Max set, each clause keeps the
// undecided instances at its Max earliest frames, whatever order
// concurrent workers add them in; a first instance the result names is
// written even when it is not among them; with Max 0 every one is kept.
func TestUndecidedKeepsEarliest(t *testing.T) {
	seed := uint64(7)
	rng := rand.New(rand.NewPCG(seed, seed))
	type add struct {
		clause string
		frame  int
	}
	var adds []add
	for f := 1; f <= 200; f++ {
		adds = append(adds, add{"C9-95", f}, add{"C9-96", 1000 + f})
	}
	for _, max := range []int{0, 3} {
		var want map[int][]string
		for round := range 4 {
			rng.Shuffle(len(adds), func(i, j int) { adds[i], adds[j] = adds[j], adds[i] })
			u := &Undecided{Max: max}
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(adds); i += 4 {
						u.Add(adds[i].clause, "why", adds[i].frame%2 == 0, adds[i].frame)
					}
				}()
			}
			wg.Wait()
			u.Add("C9-95", "never written", false, 0)
			c := &Capture{Path: "x.pcap", Undecided: u}
			named := []reports.ClauseResult{{ID: "C9-96", Capture: "x.pcap",
				UndecidedKinds: []reports.UndecidedKind{{Reason: "the first of its kind", Count: 1, Frame: 1150}}}}
			got := c.comments(named, false)
			if round == 0 {
				want = got
				n := 0
				for _, cs := range got {
					n += len(cs)
				}
				if wantN := map[int]int{0: 401, 3: 7}[max]; n != wantN {
					t.Fatalf("Max %d (seed %d): %d comments, want %d", max, seed, n, wantN)
				}
				for _, fr := range []int{1, 2, 3, 1001, 1002, 1003, 1150} {
					if len(got[fr]) == 0 || !strings.Contains(got[fr][len(got[fr])-1], "undecided") {
						t.Errorf("Max %d (seed %d): frame %d: %q", max, seed, fr, got[fr])
					}
				}
				if l := got[1150]; !strings.HasSuffix(l[len(l)-1], "undecided: the first of its kind") {
					t.Errorf("the named first instance reads %q", l)
				}
				if !strings.HasPrefix(got[2][0], "rcconform: C9-95 undecided (keeps the clause from passing): why") {
					t.Errorf("an open instance reads %q", got[2][0])
				}
				continue
			}
			for fr, cs := range want {
				if !slices.Equal(got[fr], cs) {
					t.Fatalf("Max %d (seed %d), order %d: frame %d: %q, first order gave %q", max, seed, round, fr, got[fr], cs)
				}
			}
		}
	}
}
