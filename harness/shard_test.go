package harness

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// placer is a checker that notes which connection saw which record.
type placer struct {
	mu   *sync.Mutex
	seen map[int]*Conn // frame -> connection
}

func (p placer) Observe(c *Conn, r *trace.Record) {
	p.mu.Lock()
	p.seen[r.Frame] = c
	p.mu.Unlock()
}
func (p placer) End(*Conn) {}

// randomTrace makes records between three hosts whose pairing is hard:
// several QPs per address pair whose PSNs advance in leaps (so that which
// connection is nearest a response changes as the trace goes), responses
// near one of them or far from all, to requester QPs from a small set,
// responses before any request, requests to QP 0, READs, and a few bad
// ICRCs.
func randomTrace(rnd *rand.Rand, n int) []*trace.Record {
	hosts := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")}
	type stream struct {
		a, b netip.Addr
		qp   uint32
		psn  wire.PSN
	}
	var streams []*stream
	for _, a := range hosts[:2] {
		for _, b := range hosts[1:] {
			if a == b {
				continue
			}
			for qp := range uint32(4) {
				streams = append(streams, &stream{a, b, qp, wire.PSN(rnd.IntN(1 << 24))})
			}
		}
	}
	var recs []*trace.Record
	for i := 1; i <= n; i++ {
		st := streams[rnd.IntN(len(streams))]
		r := &trace.Record{Frame: i, Time: time.Duration(i) * time.Microsecond, ICRC: wire.ICRCOK}
		p := &wire.Packet{}
		if rnd.IntN(2) == 0 {
			r.Dir, r.Src, r.Dst = trace.ToResponder, st.a, st.b
			ops := []wire.Opcode{wire.SendOnly, wire.WriteOnly, wire.ReadRequest, wire.SendFirst}
			st.psn = st.psn.Add(1 + rnd.IntN(30000))
			p.BTH = wire.BTH{Opcode: ops[rnd.IntN(len(ops))], DestQP: st.qp, PSN: st.psn, AckReq: true}
			p.RETH.Length = uint32(rnd.IntN(5000))
			r.PayloadLen = []int{0, 256, 1024, 100}[rnd.IntN(4)]
		} else {
			r.Dir, r.Src, r.Dst = trace.ToRequester, st.b, st.a
			ops := []wire.Opcode{wire.Acknowledge, wire.ReadResponseOnly, wire.ReadResponseFirst}
			psn := st.psn.Add(rnd.IntN(7) - 3)
			if rnd.IntN(4) == 0 {
				psn = wire.PSN(rnd.IntN(1 << 24))
			}
			p.BTH = wire.BTH{Opcode: ops[rnd.IntN(len(ops))], DestQP: 0x20 + uint32(rnd.IntN(6)), PSN: psn}
			p.AETH = wire.AETH{Syndrome: 0x1F, MSN: uint32(i)}
			r.PayloadLen = []int{0, 1024, 512}[rnd.IntN(3)]
		}
		if rnd.IntN(50) == 0 {
			r.ICRC = wire.ICRCBad
		}
		r.Packet = p
		recs = append(recs, r)
	}
	return recs
}

// placement returns, for each frame, the ID of the connection that saw it,
// and the connections' descriptions.
func placement(seen map[int]*Conn, conns []*Conn) string {
	s := ""
	for f := 1; f <= len(seen)+200; f++ {
		if c := seen[f]; c != nil {
			s += fmt.Sprintf("%d:%d ", f, c.ID)
		}
	}
	for _, c := range conns {
		s += fmt.Sprintf("\n%d %v>%v %#x/%#x", c.ID, c.Requester, c.Responder, c.RequesterQP, c.ResponderQP)
	}
	return s
}

// TestShardedPairsAsSingle: on random traces whose pairing is hard, the
// sharded auditor gives every record to the connection, numbered alike,
// that a single auditor gives it to, on 1, 2 and 5 workers, and judges in
// shard I of N exactly the connections ShardOf puts there.
func TestShardedPairsAsSingle(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]*Conn{}
	monMu.Lock()
	saved := monitors
	monitors = []Monitor{{Clause: "test", New: func(*Conn) Checker { return placer{&mu, seen} }}}
	monMu.Unlock()
	defer func() { monMu.Lock(); monitors = saved; monMu.Unlock() }()

	for seed := range uint64(150) {
		recs := randomTrace(rand.New(rand.NewPCG(seed, 7)), 300)
		clear(seen)
		single := NewAuditor(UnknownSettings(), NewSink("x"))
		for _, r := range recs {
			single.Observe(r)
		}
		single.End()
		want := placement(seen, single.Conns())
		if len(single.Conns()) < 4 {
			t.Fatalf("seed %d: %d connections: the trace is too easy", seed, len(single.Conns()))
		}
		for _, w := range []int{1, 2, 5} {
			clear(seen)
			a := NewShardedAuditor(UnknownSettings(), NewSink("x"), w)
			for _, r := range recs {
				a.Observe(r)
			}
			a.End()
			if got := placement(seen, a.Conns()); got != want {
				t.Fatalf("seed %d, %d workers: records placed\n%s\nwant\n%s", seed, w, got, want)
			}
		}
		// Shard 1 of 3 judges exactly its connections.
		clear(seen)
		a := NewShardedAuditor(UnknownSettings(), NewSink("x"), 2)
		a.Shard, a.Shards = 1, 3
		for _, r := range recs {
			a.Observe(r)
		}
		a.End()
		if a.Seen() != len(single.Conns()) {
			t.Fatalf("seed %d: shard saw %d connections, want %d", seed, a.Seen(), len(single.Conns()))
		}
		for _, c := range single.Conns() {
			judged := false
			for _, d := range a.Conns() {
				judged = judged || d.ID == c.ID
			}
			if judged != (ShardOf(c.ID, 3) == 1) {
				t.Fatalf("seed %d: connection %d judged %v in shard 1/3 (its shard: %d)", seed, c.ID, judged, ShardOf(c.ID, 3))
			}
		}
	}
}
