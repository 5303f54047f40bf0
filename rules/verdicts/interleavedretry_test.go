package verdicts

import (
	"math/rand/v2"
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
// Half the traces answer replays with the original MSN, half with the
// current one (docs/interpretations.md, "MSN of a replayed answer":
// both are allowed). What it found: a
// capture that begins during a go-back-N retransmission, whose first
// requests are resends of requests the responder executed before the
// capture began, and their answers replays. C9-148 counted them as new
// messages ("MSN … is too low", "the MSN went back") and C9-101 took an
// ACK beyond such a READ before its replay for an implied NAK (default
// seed 2 and seeds 1-12 failed on the code before; c9_148's
// TestCaptureBeginsDuringARetransmission, TestAnswersBehindAnEarlierACK
// and TestReplayOfAnAtomicBeforeTheCapture, and c9_101's
// TestCaptureBeginsDuringARetransmission pin the cases down). Seeds
// 505, 606 and 615 found three more of the kind: an answer the capture
// shows before any request (C9-148's TestAcknowledgedBeforeTheFirstRequest),
// an answer below a replay of a later request (TestBelowAReplayOfALaterRequest),
// and a READ's answer with an MSN below the ACK that passed it, after an
// acknowledgment from before the resend sweep (c9_101's
// TestAnswerBelowTheACKsMSNAfterAnEarlierAcknowledgment).
func TestInterleavedRetryExchangesPass(t *testing.T) {
	seeds, n := seedsFromEnv(t, "INTERLEAVED_RETRY", []uint64{2, 505, 606, 615}, 3000)
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
				return retryExchange(rng, mtu, loss, view, false, i%2 == 1)
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
	// One counter per host for all its QPs. A QP's packets lost before
	// the capture point left gaps in its own numbering: the host's
	// counter skips as many there, so that they still show.
	ids := [2]uint16{uint16(rng.Uint32()), uint16(rng.Uint32())}
	m := map[key]uint16{}
	type qpDir struct {
		q   int
		dir trace.Dir
	}
	last := map[qpDir]uint16{}
	for _, r := range all {
		kk := key{owner[r], r.Dir, r.IPID}
		id, ok := m[kk]
		if !ok {
			qd := qpDir{owner[r], r.Dir}
			if l, seen := last[qd]; seen && r.IPID-l > 1 && r.IPID-l < 0x8000 {
				ids[r.Dir&1] += r.IPID - l - 1
			}
			last[qd] = r.IPID
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
