package retries

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// TestWalksSkipNothing: the walks over the window (cover, Outstanding)
// visit only the entries that may begin a run of live ones. On random
// request streams (new requests of every kind, READs of every size,
// resends, go-back-N sweeps, gaps, jumps far beyond the window, the wrap;
// ACKs, NAKs of every kind, READ responses, ATOMIC acknowledgments) the
// model must answer exactly as when the walks visit every entry.
func TestWalksSkipNothing(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		s := harness.UnknownSettings()
		s.MTU = [...]int{0, 256, 1024, 4096}[seed%4]
		a := harness.NewAuditor(s, harness.NewSink("test"))
		a.Only = map[string]bool{probeClause: true}
		n := 0
		var failed string
		probeNew = func(c *harness.Conn) harness.Checker {
			fast, slow := NewTracker(c), NewTracker(c)
			slow.exhaustive = true
			return probeFunc(func(c *harness.Conn, r *trace.Record) {
				n++
				if failed != "" {
					return
				}
				var a, b any
				if r.Packet.Opcode.IsRequest() {
					a, b = fast.Request(r), slow.Request(r)
				} else {
					a, b = fast.Response(r), slow.Response(r)
				}
				if !reflect.DeepEqual(a, b) {
					failed = fmt.Sprintf("packet %d (%s): event\n%+v\nwhere every entry is walked:\n%+v", n, r.Packet, a, b)
					return
				}
				if n%7 == 0 {
					if !reflect.DeepEqual(fast.Outstanding(), slow.Outstanding()) {
						failed = fmt.Sprintf("packet %d: Outstanding differs", n)
					}
					b1, ok1 := fast.Base()
					b2, ok2 := slow.Base()
					if b1 != b2 || ok1 != ok2 {
						failed = fmt.Sprintf("packet %d: Base %d %v, walking every entry %d %v", n, b1, ok1, b2, ok2)
					}
				}
			})
		}
		g := &streamGen{rng: rng, next: wire.PSN(rng.Uint32() & wire.PSNMask)}
		if seed%3 == 0 {
			g.next = wire.PSN(wire.PSNMask - uint32(rng.IntN(500)))
		}
		for i := range 4000 {
			a.Observe(route(g.record(time.Duration(i) * time.Microsecond)))
		}
		a.End()
		if failed != "" {
			t.Fatalf("seed %d, %s", seed, failed)
		}
		if n < 4000 {
			t.Fatalf("seed %d: the trackers saw %d of 4000 packets", seed, n)
		}
	}
}

// streamGen makes a random request and response stream of one connection.
type streamGen struct {
	rng   *rand.Rand
	next  wire.PSN
	sent  []wire.Packet // recent requests
	ipid  uint16
	reads []wire.Packet
}

func (g *streamGen) record(at time.Duration) *trace.Record {
	rng := g.rng
	g.ipid++
	r := &trace.Record{Time: at, IPID: g.ipid, HasIPID: rng.IntN(10) != 0, ICRC: wire.ICRCOK, PayloadLen: rng.IntN(300)}
	p := &wire.Packet{}
	r.Packet = p
	switch x := rng.IntN(100); {
	case x < 35: // a new request
		ops := []wire.Opcode{wire.SendOnly, wire.SendFirst, wire.SendMiddle, wire.SendLast, wire.WriteOnly, wire.WriteFirst,
			wire.ReadRequest, wire.ReadRequest, wire.FetchAdd, wire.CompareSwap}
		p.Opcode = ops[rng.IntN(len(ops))]
		p.PSN = g.next
		p.AckReq = rng.IntN(3) == 0
		n := 1
		if p.Opcode == wire.ReadRequest {
			switch rng.IntN(8) {
			case 0:
				p.RETH.Length = 0
			case 1:
				p.RETH.Length = uint32(256 * (1 + rng.IntN(3*maxEnts)))
			default:
				p.RETH.Length = uint32(1 + rng.IntN(40*256))
			}
			if mtu := 256; rng.IntN(2) == 0 {
				n = wire.ReadResponsePackets(p.RETH.Length, mtu)
			}
			g.reads = append(g.reads, *p)
		}
		g.next = g.next.Add(n)
		g.sent = append(g.sent, *p)
	case x < 47: // a resend, often a go-back-N sweep
		if len(g.sent) == 0 {
			return g.record(at)
		}
		k := *&g.sent[len(g.sent)-1-rng.IntN(min(len(g.sent), 40))]
		if rng.IntN(4) == 0 && len(g.reads) > 0 {
			k = g.reads[rng.IntN(len(g.reads))]
			k.PSN = k.PSN.Add(rng.IntN(4))
		}
		*p = k
		if rng.IntN(5) == 0 {
			r.IPID = g.ipid - 1 // looks like a network duplicate
		}
	case x < 50: // PSNs lost or skipped, or a jump far away
		switch rng.IntN(4) {
		case 0:
			g.next = g.next.Add(2*maxEnts + rng.IntN(maxEnts))
		case 1:
			g.next = g.next.Add(-rng.IntN(3 * maxEnts))
		default:
			g.next = g.next.Add(1 + rng.IntN(30))
		}
		return g.record(at)
	case x < 72: // an ACK
		p.Opcode = wire.Acknowledge
		p.PSN = g.next.Add(-1 - rng.IntN(20))
		if rng.IntN(8) == 0 {
			p.PSN = g.next.Add(rng.IntN(10))
		}
		p.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid)}
	case x < 80: // a NAK or RNR NAK
		p.Opcode = wire.Acknowledge
		p.PSN = g.next.Add(-rng.IntN(30))
		syn := []uint8{wire.SynNAK(wire.NAKPSNSequence), wire.SynRNR(uint8(rng.IntN(32))), wire.SynNAK(wire.NAKInvalidRequest),
			wire.SynNAK(wire.NAKRemoteAccess), wire.SynNAK(wire.NAKRemoteOp), wire.SynNAK(uint8(rng.IntN(32))), uint8(rng.IntN(256))}
		p.AETH = wire.AETH{Syndrome: syn[rng.IntN(len(syn))]}
	case x < 95: // a READ response
		if len(g.reads) == 0 {
			return g.record(at)
		}
		rd := g.reads[len(g.reads)-1-rng.IntN(min(len(g.reads), 8))]
		ops := []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseMiddle, wire.ReadResponseLast, wire.ReadResponseOnly}
		p.Opcode = ops[rng.IntN(len(ops))]
		p.PSN = rd.PSN.Add(rng.IntN(12))
		p.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid)}
	default: // an ATOMIC acknowledgment
		p.Opcode = wire.AtomicAcknowledge
		p.PSN = g.next.Add(-1 - rng.IntN(20))
		p.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid)}
	}
	if len(g.sent) > 400 {
		g.sent = g.sent[200:]
	}
	if len(g.reads) > 50 {
		g.reads = g.reads[25:]
	}
	return r
}
