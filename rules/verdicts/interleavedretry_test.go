package verdicts

import (
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// TestInterleavedRetryExchangesPass: 2 to 4 lossy retry exchanges (any
// MTU, loss and capture point) between the same two hosts, on QPs of
// their own with PSNs 2^22 apart, interleaved as a capture shows them,
// half of them cut to begin anywhere; one IPv4 ID counter per host that
// keeps each exchange's copies (a packet the network or the capture
// copied keeps its ID). No clause may fail and each connection pairs
// its own requests and responses. (The interleaving of
// TestShardedPairsInterleavedAlike gives every packet a new ID, which
// turns a copy into a new packet, so findings are legal there.)
//
// Left open, one cause seen two ways: a capture that begins during a
// go-back-N retransmission. Its first requests may be resends of
// requests the responder executed before the capture began, which the
// MSN model counts as new messages, and their answers may be replays.
//   - Responders answering replays with the current MSN
//     (INTERLEAVED_RETRY_SEED=1, 9 or 10, 3000 traces each: one trace
//     each fails C9-148, "MSN … is too low"; seeds 2-8, 11, 12 pass).
//   - Responders answering replays with the original MSN
//     (INTERLEAVED_RETRY_ORIG set): every seed tried fails within 3000
//     traces, C9-148 "the MSN went back" (and once C9-101), on traces cut
//     to begin mid-retransmission. The case of a resent ATOMIC before the
//     first request the capture shows is mended (TestReplayOfAnAtomicBeforeTheCapture
//     in c9_148); resends at or after it are not.
func TestInterleavedRetryExchangesPass(t *testing.T) {
	seeds, n := seedsFromEnv(t, "INTERLEAVED_RETRY", []uint64{2}, 3000)
	orig := os.Getenv("INTERLEAVED_RETRY_ORIG") != "" // triage: the open case below
	if testing.Short() {
		n = min(n, 600)
	}
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 23))
		for i := range n {
			ports, whole := rng.IntN(2) == 0, rng.IntN(2) == 0
			exchange := func() *ht.Trace {
				mtu := []int{256, 1024, 4096}[rng.IntN(3)]
				view := captureView(rng.IntN(3))
				loss := []float64{0, 0.05, 0.15}[rng.IntN(3)]
				return retryExchange(rng, mtu, loss, view, false, orig)
			}
			it := interleavedKeepIDs(rng, ports, whole, exchange)
			if msg := it.audit(); msg != "" {
				if len(msg) > 4000 {
					msg = msg[:4000]
				}
				t.Fatalf("seed %d trace %d (ports %v, whole %v): %s", seed, i, ports, whole, strings.TrimSpace(msg))
			}
		}
	}
}

// interleavedKeepIDs: interleavedOf, PSNs apart, with one IPv4 ID counter
// per host whose IDs keep each exchange's copies (one ID per original
// packet, in the order the capture shows the first copy).
func interleavedKeepIDs(rng *rand.Rand, ports, whole bool, exchange func() *ht.Trace) *interleaved {
	k := 2 + rng.IntN(3)
	var all []*trace.Record
	type key struct {
		q   int
		d   trace.Dir
		old uint16
	}
	owner := map[*trace.Record]int{}
	for q := range k {
		tr := exchange()
		if len(tr.Records) == 0 {
			continue
		}
		shift := wire.PSN(q<<22) - tr.Records[0].Packet.PSN
		stretch := time.Duration(1 + rng.IntN(3))
		port := linuxPort(uint32(0x100+q), uint32(0x200+q))
		for _, r := range tr.Records {
			r.Packet.PSN = (r.Packet.PSN + shift) & wire.PSNMask
			r.Time = r.Time*stretch + time.Duration(q)*300*time.Nanosecond
			if r.Dir == trace.ToResponder {
				r.Packet.DestQP = uint32(0x100 + q)
			} else {
				r.Packet.DestQP = uint32(0x200 + q)
			}
			if ports {
				r.SrcPort = port
			}
			owner[r] = q
		}
		all = append(all, tr.Records...)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].Time < all[b].Time })
	ids := [2]uint16{uint16(rng.Uint32()), uint16(rng.Uint32())}
	m := map[key]uint16{}
	for _, r := range all {
		kk := key{owner[r], r.Dir, r.IPID}
		id, ok := m[kk]
		if !ok {
			id = ids[r.Dir&1]
			ids[r.Dir&1]++
			m[kk] = id
		}
		r.IPID = id
	}
	cut := 0
	if n := len(all) / 2; n > 0 && !whole {
		cut = rng.IntN(n)
	}
	all = all[cut:]
	for f, r := range all {
		r.Frame = f + 1
	}
	return &interleaved{recs: all, k: k, cut: cut}
}
