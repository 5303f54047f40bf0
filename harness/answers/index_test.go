package answers_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// twins runs a Tracker with its indexes next to one that walks every READ
// (answers.Exhaustive), on every packet, and reports the first packet
// where their events, READs or pending READs differ.
type twins struct {
	fast, slow *answers.Tracker
	n          int
	diff       *string
}

func (w *twins) Observe(c *harness.Conn, r *trace.Record) {
	a, b := w.fast.Observe(c, r), w.slow.Observe(c, r)
	w.n++
	if *w.diff != "" {
		return
	}
	// Packets counts cached per READ depend on which READs a search
	// looked at: not part of the model.
	answers.ForgetPackets(w.fast)
	answers.ForgetPackets(w.slow)
	var pend []*answers.ReadReq
	for _, q := range w.slow.Reads() {
		if (!q.Dup || q.Resent) && !q.Answered && !q.Failed {
			pend = append(pend, q)
		}
	}
	var fastPend []*answers.ReadReq
	for _, q := range w.fast.Pending() {
		if (!q.Dup || q.Resent) && !q.Answered && !q.Failed {
			fastPend = append(fastPend, q)
		}
	}
	switch {
	case !reflect.DeepEqual(a, b):
		*w.diff = "event"
	case w.n%23 == 0 && !reflect.DeepEqual(w.fast.Reads(), w.slow.Reads()):
		*w.diff = "READs"
	case !samePSNs(fastPend, pend):
		*w.diff = "pending READs"
	}
	if *w.diff != "" {
		*w.diff += " differs at packet " + r.String()
	}
}

func (w *twins) End(*harness.Conn) {}

func samePSNs(a, b []*answers.ReadReq) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].PSN != b[i].PSN || a[i].Seq != b[i].Seq {
			return false
		}
	}
	return true
}

// TestIndexesFindWhatAWalkFinds: ReqAt, Covering, the search for READs
// holding a PSN and Pending use indexes over the READs; on random
// traffic (READs of every size in and out of PSN order, duplicates and
// partial retries, responses starting anywhere, NAKs, the wrap) the
// model must answer exactly as when every READ is walked.
func TestIndexesFindWhatAWalkFinds(t *testing.T) {
	const clause = "test-indexes"
	var diff string
	harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
		return &twins{fast: &answers.Tracker{}, slow: answers.Exhaustive(), diff: &diff}
	}})
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		mtu := [...]int{0, 256, 1024, 4096}[seed%4]
		var b ht.Trace
		next := wire.PSN(rng.Uint32() & wire.PSNMask)
		if seed%3 == 0 {
			next = wire.PSN(wire.PSNMask - uint32(rng.IntN(300)))
		}
		type rd struct {
			psn wire.PSN
			n   int
		}
		var reads []rd
		for range 3000 {
			switch x := rng.IntN(100); {
			case x < 25:
				var l uint32
				switch rng.IntN(6) {
				case 0:
					l = 0
				case 1:
					l = uint32(rng.IntN(1 << 22))
				default:
					l = uint32(1 + rng.IntN(20*256))
				}
				b.Read(next, l)
				n := wire.ReadResponsePackets(l, max(mtu, 256))
				reads = append(reads, rd{next, n})
				next = next.Add(min(n, 64))
			case x < 35:
				b.Req(wire.SendOnly, next, rng.IntN(2) == 0)
				next = next.Next()
			case x < 42 && len(reads) > 0: // a duplicate or a partial retry
				q := reads[len(reads)-1-rng.IntN(min(len(reads), 20))]
				b.Read(q.psn.Add(rng.IntN(min(q.n, 4))), uint32(rng.IntN(20*256)))
			case x < 46:
				next = next.Add(rng.IntN(1<<23) - 1<<22)
			case x < 80 && len(reads) > 0: // a READ response stream, or part of one
				q := reads[len(reads)-1-rng.IntN(min(len(reads), 6))]
				from := 0
				if rng.IntN(4) == 0 {
					from = rng.IntN(min(q.n, 8))
				}
				for i := from; i < min(q.n, 10); i++ {
					op := wire.ReadResponseMiddle
					switch {
					case q.n == 1:
						op = wire.ReadResponseOnly
					case i == 0:
						op = wire.ReadResponseFirst
					case i == q.n-1:
						op = wire.ReadResponseLast
					}
					if rng.IntN(15) == 0 {
						op = wire.Opcode(0x0D + rng.IntN(4))
					}
					resp(&b, op, q.psn.Add(i), wire.SynACK(4), 1, 256)
					if rng.IntN(12) == 0 {
						break
					}
				}
			case x < 90:
				b.Ack(next.Add(-rng.IntN(5)), 1)
			default:
				b.NAK(next.Add(-rng.IntN(10)), uint8(rng.IntN(4)), 1)
			}
			if len(reads) > 700 {
				reads = reads[300:]
			}
		}
		ht.Audit(&ht.Trace{Records: b.Records}, clause, ht.CaptureMTU(mtu))
		if diff != "" {
			t.Fatalf("seed %d: %s", seed, diff)
		}
	}
	// READs in PSN order all the way round the PSN space: the READ at
	// PSN 1000 holds PSN 1001 again after the requester's PSNs wrapped.
	var b ht.Trace
	b.Read(1000, 8*256)
	for i := range 8 {
		b.Read(wire.PSN(1064).Add(i<<21), 256)
	}
	b.Read(1001, 256)
	resp(&b, wire.ReadResponseFirst, 1000, wire.SynACK(4), 1, 256)
	ht.Audit(&ht.Trace{Records: b.Records}, clause, ht.CaptureMTU(256))
	if diff != "" {
		t.Fatalf("round the PSN space: %s", diff)
	}
}
