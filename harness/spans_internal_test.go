package harness

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// spanAtByScan is ReadSpanAt without the early stop: the newest span of
// the ring that may hold p.
func spanAtByScan(c *Conn, p wire.PSN) *ReadSpan {
	for i := 1; i <= min(c.nSpans, spanRing); i++ {
		if s := &c.spans[(c.nSpans-i)&(len(c.spans)-1)]; s.Holds(p) {
			return s
		}
	}
	return nil
}

// TestReadSpanAtStopsEarlyExactly: ReadSpanAt, which stops at the first
// span ending before p while the ring is ordered, finds the span a scan
// of the whole ring finds, on rings that are ordered, that become ordered
// again as spans leave, that wrap the PSN space, and that never are
// (spans out of order, overlapping, far apart or long), with spans
// narrowing as they learn their ends.
func TestReadSpanAtStopsEarlyExactly(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := &Conn{} // MTU unknown: ReadSpanAt narrows nothing
		psn := wire.PSN(rng.Uint32N(wire.PSNMask + 1))
		disorder := []int{0, 2, 30, 300}[seed%4] // 1 span in disorder of this many
		checked, early := 0, 0
		for range 3 * spanRing {
			step := 1 + int(rng.Uint32N(64))
			length := uint32(1 + rng.Uint32N(64*1024))
			if disorder > 0 && rng.IntN(disorder) == 0 {
				switch rng.IntN(3) {
				case 0:
					step = -int(rng.Uint32N(2000)) // back, into earlier spans
				case 1:
					step = orderedStep + int(rng.Uint32N(1<<20)) // far ahead
				default:
					length = 1 << 31 // longer than orderedStep PSNs, MTU unknown
				}
			}
			psn = psn.Add(step)
			pkt := &wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: psn}, RETH: wire.RETH{Length: length}}
			s := c.newSpan(&trace.Record{Packet: pkt})
			if rng.IntN(2) == 0 && !s.Known() { // the span learns its end
				s.fix(s.LastMin.Add(rng.IntN(s.LastMax.Diff(s.LastMin) + 1)))
			}
			psn = s.LastMax
			for range 20 {
				p := psn.Add(int(rng.Uint32N(1<<16)) - 1<<15)
				if rng.IntN(10) == 0 {
					p = wire.PSN(rng.Uint32N(wire.PSNMask + 1))
				}
				want, got := spanAtByScan(c, p), c.ReadSpanAt(p)
				if got != want {
					t.Fatalf("seed %d, %d spans (%d unordered): span at %d: got %+v, want %+v", seed, c.nSpans, c.unordered, p, got, want)
				}
				checked++
				if c.unordered == 0 {
					early++
				}
			}
		}
		var unordered int
		for i := 1; i < min(c.nSpans, spanRing); i++ {
			if !c.spans[(c.nSpans-i)&(len(c.spans)-1)].ordered {
				unordered++
			}
		}
		if unordered != c.unordered {
			t.Fatalf("seed %d: %d unordered spans counted, %d in the ring", seed, c.unordered, unordered)
		}
		if disorder == 0 && early != checked {
			t.Errorf("seed %d: an ordered ring searched in full (%d of %d)", seed, checked-early, checked)
		}
	}
}

// TestReqEntryCompact: a request PSN's entry takes 16 bytes (a connection
// keeps up to reqWindow of them), its flags are independent and its send
// count stops at 65535 instead of wrapping to 0 (ReqSends is compared
// with 0 and 1).
func TestReqEntryCompact(t *testing.T) {
	if n := unsafe.Sizeof(reqEntry{}); n != 16 {
		t.Errorf("reqEntry takes %d bytes, want 16", n)
	}
	c := &Conn{}
	pkt := &wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: 0xFFFFFF, AckReq: true}}
	r := &trace.Record{Frame: 1 << 40, Dir: trace.ToResponder, Packet: pkt}
	for range 70000 {
		c.absorb(r)
	}
	op, ack, frame, ok := c.Req(0xFFFFFF)
	if !ok || op != wire.SendOnly || !ack || frame != 1<<40 || c.ReqSends(0xFFFFFF) != math.MaxUint16 {
		t.Fatalf("Req %v %v %d %v, %d sends", op, ack, frame, ok, c.ReqSends(0xFFFFFF))
	}
	e := c.reqAt(0xFFFFFF)
	e.setDropped(true)
	if !c.Dropped(0xFFFFFF) || e.flags&reqAckReq == 0 || !e.holds(0xFFFFFF) {
		t.Fatalf("flags %b after setDropped(true)", e.flags)
	}
	e.setDropped(false)
	if c.Dropped(0xFFFFFF) || e.flags&reqAckReq == 0 || c.Dropped(0xFFFFFE) || c.ReqSends(0xFFFFFE) != 0 {
		t.Fatalf("flags %b after setDropped(false)", e.flags)
	}
}

// connByScan is connFor as a walk through the connections in ID order
// (for responses, the walk connFor falls back on), without changing
// anything: the connection r belongs to, nil when a new
// one is to be made.
func connByScan(a *Auditor, r *trace.Record) *Conn {
	p := r.Packet
	if opc.IsRequest(p.Opcode) {
		for _, c := range a.conns {
			if c.reqKeyed && !c.replaced && c.ResponderQP == p.DestQP && c.Requester == r.Src && c.Responder == r.Dst {
				if c.reborn(r) == "" {
					return c
				}
				if c.Follows != 0 && a.conns[c.Follows-1].reborn(r) == "" {
					return a.conns[c.Follows-1] // a late request of the QPs before
				}
				return nil // QPs made anew (rebirth)
			}
		}
		// A connection its responses began, with no request yet: the
		// one whose latest response PSN is nearest (adoptRequests).
		var best *Conn
		bestDist := 1 << 16
		for _, c := range a.conns {
			if c.reqRouted || c.ResponderQP != 0 || !c.respRouted || c.Requester != r.Src || c.Responder != r.Dst {
				continue
			}
			if d := p.PSN.Diff(c.respPSN); d >= -adoptBehind && d <= adoptAhead && abs(d) < bestDist {
				best, bestDist = c, abs(d)
			}
		}
		return best
	}
	found, best, exact := a.walkResponse(r)
	if found != nil {
		return found
	}
	x := a.unadoptable(r)
	if best != nil && exact && (x == nil || best.lastReqFrame > x.lastReqFrame) {
		return best
	}
	if x != nil {
		return nil // a new connection takes the adopted requests' key
	}
	return best
}

// TestConnForIndexed: the Auditor's indexes find the connection a walk
// through the connections finds, on random traffic among three hosts
// whose QP numbers collide (requests, responses to known and unknown
// requester QPs, responses with no request), observed and assigned.
func TestConnForIndexed(t *testing.T) {
	hosts := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")}
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		a := NewAuditor(UnknownSettings(), NewSink("t"))
		ids := map[byte]uint16{}
		a.mons = []Monitor{{Clause: "none", New: func(*Conn) Checker { return nopChecker{} }}}
		for i := range 3000 {
			src, dst := hosts[rng.IntN(3)], hosts[rng.IntN(3)]
			op, dir := wire.SendOnly, trace.ToResponder
			if rng.IntN(2) == 0 {
				op, dir = wire.Acknowledge, trace.ToRequester
			}
			pkt := &wire.Packet{BTH: wire.BTH{Opcode: op, DestQP: uint32(rng.IntN(4)), PSN: wire.PSN(rng.IntN(1 << 17))}}
			r := &trace.Record{Frame: i + 1, Dir: dir, Src: src, Dst: dst, Packet: pkt}
			if seed%4 == 1 {
				// IDs counting up: the Auditor holds records back to
				// restore the senders' order, and a connection sees its
				// first response late.
				ids[src.As4()[3]]++
				r.IPID, r.HasIPID = ids[src.As4()[3]], true
			}
			want, n := connByScan(a, r), len(a.conns)
			var got *Conn
			if seed%2 == 0 {
				got = a.Assign(r)
			} else {
				a.Observe(r)
				got = a.cur(r)
			}
			if want == nil && (got == nil || got.ID != n+1) || want != nil && got != want {
				t.Fatalf("seed %d, frame %d (%s %v->%v QP %d PSN %d): connection %v, a walk finds %v (of %d)", seed, i+1, op, src, dst, pkt.DestQP, pkt.PSN, id(got), id(want), n)
			}
		}
		if len(a.conns) < 10 {
			t.Errorf("seed %d: only %d connections", seed, len(a.conns))
		}
	}
}

// TestConnForIndexedLowestID: two connections paired with the same
// requester QP both had a response routed to them: later responses go to
// the one with the lower ID, as a walk finds.
func TestConnForIndexedLowestID(t *testing.T) {
	h1, h2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	a := NewAuditor(UnknownSettings(), NewSink("t"))
	a.mons = []Monitor{{Clause: "none", New: func(*Conn) Checker { return nopChecker{} }}}
	c1, c2 := a.newConn(h1, h2, 10, true), a.newConn(h1, h2, 11, true)
	for _, c := range []*Conn{c1, c2} {
		c.RequesterQP, c.respRouted = 7, true
		a.indexResponder(c)
	}
	r := &trace.Record{Dir: trace.ToRequester, Src: h2, Dst: h1, Packet: &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, DestQP: 7}}}
	if got, want := a.connFor(r), connByScan(a, r); got != c1 || want != c1 {
		t.Fatalf("response to QP 7 goes to connection %d, a walk finds %d; want 1", id(got), id(want))
	}
}

func id(c *Conn) int {
	if c == nil {
		return 0
	}
	return c.ID
}

// cur returns the connection the last Observe gave r to (the one whose
// model saw it, or that holds it back).
func (a *Auditor) cur(r *trace.Record) *Conn {
	for _, c := range a.conns {
		if c.cur == r {
			return c
		}
		for i := range c.nHeld {
			if c.heldAt(i) == r {
				return c
			}
		}
	}
	return nil
}

type nopChecker struct{}

func (nopChecker) Observe(*Conn, *trace.Record) {}
func (nopChecker) End(*Conn)                    {}

// refHeld is the reorder buffer as a slice shifted on every record (what
// the ring replaced), for TestHoldRing.
type refHeld struct {
	ids       [2]idOrder
	held      []*trace.Record
	reordered int
}

func (b *refHeld) hold(r *trace.Record) []*trace.Record {
	b.ids[r.Dir&1].learn(r)
	if len(b.held) == 0 && !b.ids[0].countsUp() && !b.ids[1].countsUp() {
		return []*trace.Record{r}
	}
	at := len(b.held)
	if r.HasIPID && !r.Copy && b.ids[r.Dir&1].countsUp() {
		for i := len(b.held) - 1; i >= 0; i-- {
			if h := b.held[i]; h.IPID-r.IPID != 0 && h.IPID-r.IPID < idStep && h.Dir == r.Dir && h.HasIPID && !h.Copy && h.Src == r.Src {
				at = i
			}
		}
	}
	b.held = append(b.held[:at], append([]*trace.Record{r}, b.held[at:]...)...)
	if at < len(b.held)-1 {
		b.reordered++
	}
	if len(b.held) <= reorderDepth {
		return nil
	}
	return []*trace.Record{b.release()}
}

func (b *refHeld) release() *trace.Record {
	first := 0
	if f := b.held[0]; f.HasIPID && !f.Copy && b.ids[f.Dir&1].countsUp() {
		for i := 1; i < len(b.held); i++ {
			if h := b.held[i]; f.IPID-h.IPID-1 < idStep-1 && h.Dir == f.Dir && h.HasIPID && !h.Copy && h.Src == f.Src {
				first, f = i, h
			}
		}
	}
	if first != 0 {
		b.reordered++
	}
	r := b.held[first]
	b.held = append(b.held[:first], b.held[first+1:]...)
	return r
}

// TestHoldKeepsACopyInPlace: a request the network copied, recorded after
// a response of the other direction with the ID of a request sent before
// it, keeps its place: its sender sent the packet once, already taken in
// its own place, and the copy reached the capture point, and the peer,
// where it was recorded. A request delayed by the network, no copy, goes
// back to its sender's order.
func TestHoldKeepsACopyInPlace(t *testing.T) {
	h1, h2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for _, copied := range []bool{true, false} {
		c := &Conn{}
		var recs []*trace.Record
		add := func(d trace.Dir, id uint16) *trace.Record {
			r := &trace.Record{Frame: len(recs) + 1, Dir: d, Src: []netip.Addr{h1, h2}[d], IPID: id, HasIPID: true}
			recs = append(recs, r)
			return r
		}
		for i := range uint16(10) { // both senders shown to count up
			add(trace.ToResponder, 100+i)
			add(trace.ToRequester, 500+i)
		}
		add(trace.ToResponder, 111)
		nak := add(trace.ToRequester, 510)
		late := add(trace.ToResponder, 110)
		late.Copy = copied
		var got []*trace.Record
		for _, r := range recs {
			got = append(got, c.hold(r)...)
		}
		got = append(got, c.flush()...)
		at := map[*trace.Record]int{}
		for i, r := range got {
			at[r] = i
		}
		if moved := at[late] < at[nak]; moved == copied {
			t.Errorf("copied %v: the request with ID 110 delivered before the response recorded before it: %v", copied, moved)
		}
	}
}

// TestHoldRing: the reorder buffer's ring gives the records, and counts
// the reorderings, as a shifted slice does (which scans for every
// record, where the ring leaves out the scans its ID chains show would
// find nothing), on two senders counting their IDs up with packets
// swapped by the network, IDs that do not count up, jump or repeat, a
// third sender the same way as one of them, and records without IDs;
// flush included.
func TestHoldRing(t *testing.T) {
	h1, h2, h3 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		c, ref := &Conn{}, &refHeld{}
		var got, want []*trace.Record
		id := [2]uint16{uint16(rng.Uint32()), uint16(rng.Uint32())}
		var recs []*trace.Record
		for i := range 2000 {
			d := trace.Dir(rng.IntN(2))
			src := []netip.Addr{h1, h2}[d]
			id[d] += uint16(1 + rng.IntN(3))
			r := &trace.Record{Frame: i + 1, Dir: d, Src: src, IPID: id[d], HasIPID: true}
			switch x := rng.IntN(100); {
			case x < int(seed%4)*3:
				r.IPID = uint16(rng.Uint32()) // not counting up
			case x < 12:
				r.HasIPID = false
			case seed%3 != 1 || x >= 15:
			case x < 13:
				id[d] += uint16(rng.IntN(6000)) // a jump past chainStep
				r.IPID = id[d]
			case x < 14:
				r.IPID = id[d] - uint16(1+rng.IntN(3)) // an ID again
				r.Copy = rng.IntN(2) == 0              // some of them a request's copy
			default:
				r.Src = h3 // another sender the same way
			}
			recs = append(recs, r)
		}
		for i := 0; i+1 < len(recs); i++ { // the network swaps neighbours
			if rng.IntN(64) == 0 {
				recs[i], recs[i+1] = recs[i+1], recs[i]
			}
		}
		for _, r := range recs {
			got = append(got, c.hold(r)...)
			want = append(want, ref.hold(r)...)
		}
		got = append(got, c.flush()...)
		for len(ref.held) > 0 {
			want = append(want, ref.release())
		}
		if len(got) != len(want) || c.Reordered != ref.reordered {
			t.Fatalf("seed %d: %d records, %d reordered; want %d, %d", seed, len(got), c.Reordered, len(want), ref.reordered)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("seed %d: record %d is frame %d, want frame %d", seed, i, got[i].Frame, want[i].Frame)
			}
		}
		if seed%4 == 0 && c.Reordered == 0 { // IDs that count up, but for the swaps
			t.Errorf("seed %d: nothing reordered", seed)
		}
	}
}

func abs(d int) int {
	if d < 0 {
		return -d
	}
	return d
}
