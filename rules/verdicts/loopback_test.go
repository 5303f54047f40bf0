package verdicts

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
)

// TestLoopbackBothWays: a capture on one host talking to itself (soft-RoCE
// over loopback, as CI jobs run it): every packet has the same source and
// destination address and one IPv4 ID counter, and the two QPs each send
// requests to the other, so each is requester of one connection and
// responder of another. The two are told apart, and no clause fails.
func TestLoopbackBothWays(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	n := 1000
	if testing.Short() || raceEnabled {
		n = 200
	}
	for i := 0; i < n; i++ {
		var all []*trace.Record
		lossy := rng.IntN(3) == 0 // the capture lost packets
		for q := 0; q < 2; q++ {
			tr := conformantTrace(rng, 1024, false, false)
			stretch := time.Duration(1 + rng.IntN(2))
			for _, r := range tr.Records {
				r.Src, r.Dst = ht.Requester, ht.Requester
				toResponder := r.Dir == trace.ToResponder
				if (q == 0) == toResponder {
					r.Packet.DestQP = 0x22
				} else {
					r.Packet.DestQP = 0x11
				}
				r.Time = r.Time*stretch + time.Duration(q)*300
			}
			all = append(all, tr.Records...)
		}
		sort.SliceStable(all, func(a, b int) bool { return all[a].Time < all[b].Time })
		// The one counter numbers every packet sent; the capture then
		// misses some (their IDs leave gaps).
		id := uint16(rng.Uint32())
		for _, r := range all {
			r.HasIPID, r.IPID = true, id
			id++
		}
		if lossy {
			for range 1 + rng.IntN(8) {
				if len(all) > 1 {
					k := rng.IntN(len(all))
					all = append(all[:k], all[k+1:]...)
				}
			}
		}
		for f, r := range all {
			r.Frame = f + 1
		}
		settings := []harness.Settings{ht.Capture(), ht.Complete()}
		if lossy {
			settings = settings[:1]
		}
		for _, s := range settings {
			sink := harness.NewSink("t")
			a := harness.NewAuditor(s, sink)
			for _, r := range all {
				a.Observe(r)
			}
			a.End()
			if len(sink.Findings) > 0 {
				f := sink.Findings[0]
				t.Fatalf("trace %d (complete %v): a conformant exchange fails %s at frame %d: %s", i, s.Complete, f.ID, f.Frame, f.Message)
			}
			if len(a.Conns()) != 2 && !lossy {
				t.Fatalf("trace %d: %d connections audited for 2", i, len(a.Conns()))
			}
		}
	}
}
