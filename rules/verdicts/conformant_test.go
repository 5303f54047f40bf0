package verdicts

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// conformantTrace builds, from rng, an exchange in which both sides follow
// every rule, written independently of the reference transport: a
// requester sending SENDs and WRITEs of one or more packets, READs of any
// length (zero included) and ATOMICs in PSN order, and a responder that
// executes them in order and answers as §9.7.5 demands. SENDs and WRITEs
// are acknowledged at once or coalesced into a later ACK (C9-95: the ACK
// carries the newest PSN it covers), a READ is answered by its whole
// response stream and an ATOMIC by its Atomic Acknowledge (both implicitly
// acknowledge what came before, C9-97), every response carrying the
// responder's MSN: the count of messages completed (C9-148). Time passes
// between packets; no request waits unanswered long enough for any ACK
// timeout to expire, and the last requests are answered before the end.
//
// A trace that is to be audited as complete starts with a new QP (MSN
// 0); the others start anywhere. The capture may then drop packets (lossy) or record some twice (copies,
// same IPv4 ID): things that happen at a capture point, not on the wire.
func conformantTrace(rng *rand.Rand, mtu int, lossy, copies bool) *ht.Trace {
	t := &ht.Trace{}
	next := wire.PSN(rng.IntN(1 << 24))
	msn := uint32(0) // a new QP's, when the capture holds it from its start
	if lossy || copies {
		msn = uint32(rng.IntN(1 << 24)) // a capture begun later
	}
	ackPending := wire.PSN(0)
	pending := false // SENDs or WRITEs not acknowledged yet
	for range 1 + rng.IntN(40) {
		switch k := rng.IntN(10); {
		case k < 5: // a SEND or a WRITE of 0 to 4 MTUs and a bit
			size := []int{0, 1, 100, mtu, mtu + 1, 3 * mtu, 4*mtu - 3}[rng.IntN(7)]
			n := max(1, (size+mtu-1)/mtu)
			write := rng.IntN(2) == 0
			for i := range n {
				op := wire.SendMiddle
				switch {
				case n == 1 && write:
					op = wire.WriteOnly
				case n == 1:
					op = wire.SendOnly
				case i == 0 && write:
					op = wire.WriteFirst
				case i == 0:
					op = wire.SendFirst
				case i == n-1 && write:
					op = wire.WriteLast
				case i == n-1:
					op = wire.SendLast
				case write:
					op = wire.WriteMiddle
				}
				r := t.Req(op, next.Add(i), i == n-1)
				if op == wire.WriteFirst || op == wire.WriteOnly {
					r.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 0x42, Length: uint32(size)}
				}
				m := min(mtu, size-i*mtu)
				r.Packet.Payload = make([]byte, m)
				r.PayloadLen = m
			}
			msn = (msn + 1) & 0xFFFFFF
			ackPending, pending = next.Add(n-1), true
			next = next.Add(n)
			if rng.IntN(3) > 0 { // acknowledged now; else coalesced later
				t.Ack(ackPending, msn)
				pending = false
			}
		case k < 8: // a READ and its response stream
			size := []int{0, 8, mtu, 2 * mtu, 3*mtu + 7}[rng.IntN(5)]
			t.Read(next, uint32(size))
			msn = (msn + 1) & 0xFFFFFF
			t.ReadStream(next, size, mtu, msn)
			next = next.Add(wire.ReadResponsePackets(uint32(size), mtu))
			pending = false
		default: // an ATOMIC and its acknowledgement
			op := wire.FetchAdd
			if rng.IntN(2) == 0 {
				op = wire.CompareSwap
			}
			t.Atomic(op, next)
			msn = (msn + 1) & 0xFFFFFF
			t.AtomicAck(next, msn, rng.Uint64())
			next = next.Add(1)
			pending = false
		}
		if rng.IntN(4) == 0 {
			t.Wait(time.Duration(rng.IntN(500)) * time.Microsecond)
		}
	}
	if pending {
		t.Ack(ackPending, msn)
	}
	t.IPIDs(uint16(rng.Uint32()), uint16(rng.Uint32()))
	if copies {
		for range 1 + rng.IntN(3) {
			t.Recopy(rng.IntN(len(t.Records)))
		}
	}
	if lossy {
		for range 1 + rng.IntN(4) {
			if len(t.Records) > 1 {
				t.Remove(rng.IntN(len(t.Records)))
			}
		}
	}
	return t
}

// TestConformantExchangesPass: no clause may fail on an exchange where
// both sides follow the rules, whether the capture holds all of it
// (audited as complete and as a capture of unknown settings), lost some
// of it or recorded some packets twice (audited as a capture). The seeds
// are fixed (CONFORMANT_SEED runs one other, CONFORMANT_N sets the
// exchanges per seed) and every failure prints its seed. Each default
// seed made some clause fail falsely before the fix it is named for.
func TestConformantExchangesPass(t *testing.T) {
	seeds := []uint64{
		95, // C9-148: an ACK inside a READ's open end (MTU unknown) after missed requests
		2,  // C9-101: a late copy of a READ response whose original the capture lost
		5,  // C9-148: a request inside a READ's open end after missed requests
		7,  // C9-148: a late copy with the MSN of an earlier moment
		21, // go-back-n: requests split from a connection its responses began
	}
	n := 3000
	if testing.Short() {
		seeds, n = seeds[:1], 600
	}
	seeds, n = seedsFromEnv(t, "CONFORMANT", seeds, n)
	for _, seed := range seeds {
		conformantSeed(t, seed, n)
	}
}

// conformantSeed audits n conformant exchanges made from seed.
func conformantSeed(t *testing.T, seed uint64, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	checked := 0
	for i := range n {
		mtu := []int{256, 1024, 4096}[rng.IntN(3)]
		lossy, copies := rng.IntN(3) == 0, rng.IntN(3) == 0
		tr := conformantTrace(rng, mtu, lossy, copies)
		settings := []harness.Settings{ht.Capture()}
		if !lossy && !copies {
			complete := ht.Complete()
			complete.MTU = mtu
			settings = append(settings, complete)
		}
		for _, s := range settings {
			tallies, fs := ht.AuditAll(tr, s)
			for _, tl := range tallies {
				checked += tl.Checked
			}
			if len(fs) > 0 {
				t.Errorf("seed %d trace %d (MTU %d, lossy %v, copies %v, complete %v): a conformant exchange fails %s at frame %d: %s\n%s",
					seed, i, mtu, lossy, copies, s.Complete, fs[0].ID, fs[0].Frame, fs[0].Message, dump(tr))
				return
			}
		}
	}
	// The exchanges are judged, not waved through.
	if checked < 10*n {
		t.Errorf("seed %d: only %d instances checked in %d conformant exchanges", seed, checked, n)
	}
	t.Logf("seed %d: %d conformant exchanges, %d instances checked, none failed", seed, n, checked)
}

// dump renders a trace a line a record.
func dump(t *ht.Trace) string {
	s := ""
	for _, r := range t.Records {
		s += fmt.Sprintf("  %v ipid %d\n", r, r.IPID)
	}
	return s
}

// TestConformantQPsInterleaved: several connections between the same two
// hosts, each a conformant exchange, interleaved as a capture shows them
// and cut to begin anywhere (so that a connection may begin with a
// response, or with a request whose response the cut removed): the audit
// pairs each connection's requests and responses (a response first makes
// a connection its requests then join) and no clause fails.
func TestConformantQPsInterleaved(t *testing.T) {
	seed, n := uint64(33), 400
	if testing.Short() || raceEnabled {
		n = 100
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	for i := range n {
		it := interleavedTrace(rng, seed, i, false, false, false)
		if msg := it.audit(); msg != "" {
			t.Fatalf("seed %d trace %d: %s", seed, i, msg)
		}
	}
}

// TestSameStartPSNPairedByPort: as TestConformantQPsInterleaved, but
// every connection starts at the same PSN (a device that does not
// randomise its starting PSNs), so PSNs alone cannot tell the
// connections apart, and the capture holds each connection from its
// start. Each connection's packets carry the UDP source port a Linux
// stack gives both its directions (derived from both QP numbers alike).
// With the ports every connection is paired and no clause fails (the
// first response goes to the connection whose request it answers and
// whose port it shares); without them (the contrast, showing what
// decides) some are mispaired.
//
// Not covered: a capture that begins mid-connection, whose first
// response may come before any request of its own connection was seen;
// there neither PSNs nor ports can tell, and such a response is still
// paired by nearness.
func TestSameStartPSNPairedByPort(t *testing.T) {
	seed, n := uint64(41), 400
	if testing.Short() || raceEnabled {
		n = 100
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	bad := 0
	for i := range n {
		it := interleavedTrace(rng, seed, i, true, true, true)
		if msg := it.audit(); msg != "" {
			t.Fatalf("seed %d trace %d: %s", seed, i, msg)
		}
		if msg := it.auditWith(2); msg != "" {
			t.Fatalf("seed %d trace %d, 2 workers: %s", seed, i, msg)
		}
		for _, r := range it.recs {
			r.SrcPort = 0
		}
		if it.audit() != "" {
			bad++
		}
	}
	if bad == 0 {
		t.Fatalf("seed %d: without UDP ports no trace of %d was mispaired: the test does not reach the pairing it checks", seed, n)
	}
	t.Logf("seed %d: without UDP source ports %d of %d traces mispaired or failed a clause; with them none", seed, bad, n)
}

// TestShardedPairsInterleavedAlike: a sharded auditor (3 workers) gives
// the tallies and findings of one auditor on interleaved connections
// between two hosts, cut to begin anywhere: the traces where pairing has
// choices to make (every QP at the same PSN, or apart; UDP ports or
// none, ports that vary), findings included where a choice goes wrong;
// half of them a lossy link's exchanges, whose NAKs and RNR NAKs answer
// no request exactly and are paired by nearness. (The divergence that
// TestPairingByRoutingState pins down needs a rarer arrangement: this
// test did not meet it in 5000 traces on the code before that fix.)
func TestShardedPairsInterleavedAlike(t *testing.T) {
	seed, n := uint64(47), 300
	if testing.Short() || raceEnabled {
		n = 60
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	failed := 0
	for i := range n {
		samePSN, ports := rng.IntN(3) > 0, rng.IntN(2) == 0
		// Conformant exchanges, or a lossy link's (NAKs, retries and
		// RNR NAKs: responses that answer no request exactly, paired by
		// nearness) seen in the middle.
		exchange := func() *ht.Trace { return conformantTrace(rng, 1024, false, false) }
		if i%2 == 1 {
			exchange = func() *ht.Trace { return retryExchange(rng, 1024, 0.1, viewMiddle, false, false) }
		}
		it := interleavedOf(rng, seed, i, samePSN, ports, false, exchange)
		if ports && i%3 == 0 {
			// A stack that varies a connection's port (per packet, or
			// on a resend): the latest response's port is not the
			// first one's.
			for _, r := range it.recs {
				r.SrcPort ^= uint16(rng.IntN(3))
			}
		}
		tallies, findings := ht.AuditAll(&ht.Trace{Records: it.recs}, ht.Capture())
		if len(findings) > 0 {
			failed++
		}
		sameSharded(t, ht.Capture(), it.recs, 3, tallies, findings)
	}
	// Some traces are mispaired, so that findings are compared too.
	if failed == 0 {
		t.Fatalf("seed %d: no trace of %d had a finding: the comparison never covers findings", seed, n)
	}
}

// interleaved is a trace of k conformant connections between the same
// two hosts; requests of connection q go to QP 0x100+q, its responses to
// QP 0x200+q.
type interleaved struct {
	recs   []*trace.Record
	k, cut int // connections, and records cut from the start
}

// linuxPort is a UDP source port derived from both QP numbers alike, as
// Linux stacks do (both directions of a connection share it), in the
// range 0xC000-0xFFFF.
func linuxPort(a, b uint32) uint16 {
	v := uint64(a) * uint64(b)
	v ^= v >> 20
	v ^= v >> 40
	return 0xC000 | uint16(v^v>>14)&0x3FFF
}

// interleavedTrace builds trace i: 2 to 4 conformant connections,
// interleaved as a capture shows them and cut to begin anywhere (so
// that a connection may begin with a response, or with a request whose
// response the cut removed). samePSN starts every connection at the
// same PSN; ports gives each connection's packets its UDP source port.
func interleavedTrace(rng *rand.Rand, seed uint64, i int, samePSN, ports, whole bool) *interleaved {
	return interleavedOf(rng, seed, i, samePSN, ports, whole, func() *ht.Trace { return conformantTrace(rng, 1024, false, false) })
}

// interleavedOf is interleavedTrace with the connections' exchanges made
// by exchange.
func interleavedOf(rng *rand.Rand, seed uint64, i int, samePSN, ports, whole bool, exchange func() *ht.Trace) *interleaved {
	k := 2 + rng.IntN(3)
	var all []*trace.Record
	var start wire.PSN
	if samePSN {
		start = wire.PSN(rng.Uint32()) & wire.PSNMask
	}
	for q := range k {
		tr := exchange()
		if len(tr.Records) == 0 {
			continue // a lossy link's exchange the capture saw nothing of
		}
		// Connections whose PSNs lie within the requests in flight
		// of each other cannot be told apart by their PSNs: keep
		// them 2^22 apart, as random starting PSNs mostly are.
		shift := wire.PSN(q<<22) - tr.Records[0].Packet.PSN
		if samePSN {
			shift = start - tr.Records[0].Packet.PSN
		}
		for _, r := range tr.Records {
			r.Packet.PSN += shift
			r.Packet.PSN &= wire.PSNMask
		}
		// Spread each connection's records over the same time span.
		stretch := time.Duration(1 + rng.IntN(3))
		port := linuxPort(uint32(0x100+q), uint32(0x200+q))
		for _, r := range tr.Records {
			r.Time = r.Time*stretch + time.Duration(q)*300*time.Nanosecond
			if r.Dir == trace.ToResponder {
				r.Packet.DestQP = uint32(0x100 + q)
			} else {
				r.Packet.DestQP = uint32(0x200 + q)
			}
			if ports {
				r.SrcPort = port
			}
		}
		all = append(all, tr.Records...)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].Time < all[b].Time })
	// How the two hosts fill the IPv4 ID: one counter per host for
	// all its QPs (as Linux does per destination), as the generator
	// left it (a counter per QP), or IPv6 (none).
	// (Its own generator: the traces the main one makes stay those
	// that failed before the pairing fix.)
	idRng := rand.New(rand.NewPCG(seed, uint64(i)))
	switch idRng.IntN(3) {
	case 0:
		ids := [2]uint16{uint16(idRng.Uint32()), uint16(idRng.Uint32())}
		for _, r := range all {
			r.IPID = ids[r.Dir&1]
			ids[r.Dir&1]++
		}
	case 1:
		for _, r := range all {
			r.HasIPID, r.IPID = false, 0
			if r.Dir == trace.ToResponder {
				r.Src, r.Dst = requester6, responder6
			} else {
				r.Src, r.Dst = responder6, requester6
			}
		}
	}
	cut := 0
	if n := len(all) / 2; n > 0 {
		cut = rng.IntN(n)
	}
	if whole {
		cut = 0
	}
	all = all[cut:]
	for f, r := range all {
		r.Frame = f + 1
	}
	return &interleaved{recs: all, k: k, cut: cut}
}

// audit audits the trace as a capture with unknown settings and says
// what is wrong ("" when nothing): a clause failed, a connection's
// requests paired with another's responses, or more connections than
// there are.
func (it *interleaved) audit() string { return it.auditWith(0) }

// auditWith is audit by a single auditor (workers 0) or by a sharded one
// with so many workers (whose pairing model sees each record at once,
// not after the reorder buffer). With INTERLEAVED_DUMP set in the
// environment, a failed clause's message also lists the connections and
// the trace's first records.
func (it *interleaved) auditWith(workers int) string {
	conns, sink := auditConns(it.recs, workers)
	if len(sink.Findings) > 0 {
		f := sink.Findings[0]
		msg := fmt.Sprintf("(%d connections, cut %d): a conformant exchange fails %s at frame %d: %s", it.k, it.cut, f.ID, f.Frame, f.Message)
		if os.Getenv("INTERLEAVED_DUMP") != "" {
			for _, c := range conns {
				msg += fmt.Sprintf("\n conn %d rsp %#x req %#x firstReq %d", c.ID, c.ResponderQP, c.RequesterQP, c.FirstReq)
			}
			for _, r := range it.recs[:min(len(it.recs), 60)] {
				msg += fmt.Sprintf("\n  %v port %#x", r, r.SrcPort)
			}
		}
		return msg
	}
	// Each connection is one, its requests and responses together,
	// unless the cut left it no request or no response.
	for _, c := range conns {
		if c.ResponderQP != 0 && c.RequesterQP != 0 && c.ResponderQP-0x100 != c.RequesterQP-0x200 {
			dbg := ""
			for _, c2 := range conns {
				dbg += fmt.Sprintf("\n conn %d rsp %#x req %#x firstReq %d", c2.ID, c2.ResponderQP, c2.RequesterQP, c2.FirstReq)
			}
			for _, r := range it.recs[:min(len(it.recs), 400)] {
				dbg += fmt.Sprintf("\n  %v", r)
			}
			return fmt.Sprintf("requests to QP %#x paired with responses to QP %#x%s", c.ResponderQP, c.RequesterQP, dbg)
		}
	}
	if len(conns) > it.k {
		return fmt.Sprintf("%d connections audited for %d", len(conns), it.k)
	}
	return ""
}

// auditConns audits recs as a capture with unknown settings, by a single
// auditor (workers 0) or by a sharded one with so many workers (whose
// pairing model sees each record at once, not after the reorder
// buffer), and returns the connections and the sink.
func auditConns(recs []*trace.Record, workers int) ([]*harness.Conn, *harness.Sink) {
	sink := harness.NewSink("t")
	var a interface {
		Observe(*trace.Record)
		End()
		Conns() []*harness.Conn
	}
	if workers == 0 {
		a = harness.NewAuditor(ht.Capture(), sink)
	} else {
		a = harness.NewShardedAuditor(ht.Capture(), sink, workers)
	}
	for _, r := range recs {
		a.Observe(r)
	}
	a.End()
	return a.Conns(), sink
}
