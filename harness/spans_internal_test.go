package harness

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// spanAtByScan is ReadSpanAt without the early stop: the newest span of
// the ring that may hold p.
func spanAtByScan(c *Conn, p wire.PSN) *ReadSpan {
	for i := 1; i <= min(c.nSpans, spanRing); i++ {
		if s := &c.spans[(c.nSpans-i)%spanRing]; s.Holds(p) {
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
			if !c.spans[(c.nSpans-i)%spanRing].ordered {
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
