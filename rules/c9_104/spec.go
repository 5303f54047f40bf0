package c9_104

import (
	"fmt"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/internal/realclock"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-104, in our words: duplicates are answered in PSN order, oldest
// first. Shares its meaning with C9-110 (whose scenarios cover the
// preemption half: an older duplicate arriving while a later answer is
// being sent). Here several duplicates wait at once, sent back to back in
// PSN order, and their answers must come oldest first: READ replays,
// ATOMIC acknowledgments, and the ACK that answers a duplicate SEND.

// item is one duplicate of a scenario and how its answer is recognised.
type item struct {
	req   *wire.Packet
	label string
	first wire.PSN // PSN of the answer's first packet
	n     int      // answer packets
	kind  string   // read, atomic, send
}

func (it item) is(k *wire.Packet) bool {
	switch it.kind {
	case "read":
		return k.Opcode.Class() == wire.ClassReadResponse && k.PSN.InRange(it.first, it.first.Add(it.n-1))
	case "atomic":
		return k.Opcode == wire.AtomicAcknowledge && k.PSN == it.first
	}
	return harness.IsAck(k)
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name  string
		mtu   int
		start wire.PSN
		// ops lists the original requests in PSN order: "R<k>" a READ of
		// k MTUs, "L" a long READ (realclock.LongPackets: on a real clock
		// its replay is still streaming well after the newer duplicates
		// can have reached the device, so the run decides), "r" a 1-byte
		// READ, "S" a SEND, "A" an ATOMIC; dups lists
		// the indices replayed, in the order sent (oldest PSN first).
		ops     []string
		dups    []int
		partial bool // replay the first READ from its second packet
		atomics bool
	}
	cases := []tc{
		{"two duplicate READs waiting: the older is answered first", 1024, 100, []string{"R4", "R4"}, []int{0, 1}, false, false},
		{"three duplicate READs waiting, answered in PSN order", 256, 2000, []string{"R3", "r", "R5"}, []int{0, 1, 2}, false, false},
		{"an older partial duplicate READ before a newer full one", 512, 3000, []string{"R4", "R2"}, []int{0, 1}, true, false},
		{"a duplicate READ before a newer duplicate SEND's ACK", 4096, 4000, []string{"R3", "S"}, []int{0, 1}, false, false},
		{"a duplicate SEND's ACK before a newer duplicate READ", 2048, 5000, []string{"S", "R3"}, []int{0, 1}, false, false},
		{"duplicates across the 2^24 wrap", 256, 0xFFFFFC, []string{"R3", "R3"}, []int{0, 1}, false, false},
		{"a duplicate ATOMIC before a newer duplicate READ", 1024, 6000, []string{"A", "R4"}, []int{0, 1}, false, true},
		{"a duplicate READ before a newer duplicate ATOMIC", 1024, 7000, []string{"R4", "A"}, []int{0, 1}, false, true},
		{"a long duplicate READ with newer duplicates waiting behind it", 1024, 8000, []string{"L", "r", "S"}, []int{0, 1, 2}, false, false},
	}
	for _, c := range cases {
		c := c
		r.Active(fmt.Sprintf("%s (MTU %d, PSNs from %d)", c.name, c.mtu, c.start),
			rulekit.Scenario{Config: config(c.mtu, c.start), Needs: rulekit.Needs{Atomics: c.atomics}},
			func(p *harness.Peer) {
				var items []item
				for i, op := range c.ops {
					items = append(items, original(p, op, 1024*i))
				}
				var dups []item
				var pkts []*wire.Packet
				for k, i := range c.dups {
					it := items[i]
					d := dupnak.Dup(it.req, true)
					if k == 0 && c.partial && it.kind == "read" && it.n > 1 {
						d.PSN = d.PSN.Next()
						d.RETH.VA += uint64(p.MTU())
						d.RETH.Length -= uint32(p.MTU())
						it.first, it.n = d.PSN, it.n-1
						it.label = fmt.Sprintf("the partial duplicate READ at PSN %d", d.PSN)
					}
					it.req = d
					dups = append(dups, it)
					pkts = append(pkts, d)
				}
				p.Send(pkts...)
				sent := p.Conn.Now()
				recs := p.CollectQuiet(dupnak.Liveness)
				dupnak.NoNAK(p, recs, "duplicates are answered, not NAKed")
				inOrder(p, recs, dups)
				// Answers in order show the order only if the newer
				// duplicates were waiting while the oldest was being
				// answered: a device that finished that answer before
				// they could have reached it had only one duplicate at a
				// time to answer. The oldest answer's first packet bounds
				// the way there and back (the newer duplicates left with
				// the oldest), so its last packet must come later still:
				// a one-packet answer never shows it, on either clock.
				var rtt time.Duration
				if first := firstAnswer(recs, dups[0]); first != nil {
					rtt = first.Time - sent
				}
				realclock.FinishedFirstRTT(p.Conn, lastAnswer(recs, dups[0]), sent, rtt,
					"answering "+dups[0].label, "the newer duplicates")
				dupnak.Alive(p, "the connection goes on after the duplicates")
			})
	}
})

// config is the scenarios' connection: PSNs from start, path MTU mtu, and
// memory for a long READ (the originals are at most 1024 bytes apart per
// request).
func config(mtu int, start wire.PSN) dut.ConnConfig {
	cfg := dupnak.Cfg(mtu, start)
	cfg.MemorySize = realclock.LongMemory(mtu, 8*1024)
	return cfg
}

// original runs one original request and returns how its duplicate's
// answer will be recognised.
func original(p *harness.Peer, op string, off int) item {
	switch {
	case op == "S":
		k := dupnak.Send(p, 16, true)
		p.Send(k)
		dupnak.ExpectAck(p, k.PSN, "the original SEND")
		return item{req: k, kind: "send", label: fmt.Sprintf("the duplicate SEND at PSN %d", k.PSN)}
	case op == "A":
		k := p.Atomic(wire.FetchAdd, off, 3, 0)
		p.Send(k)
		p.ExpectAtomicAck(k.PSN, "the original ATOMIC", dupnak.Liveness)
		return item{req: k, kind: "atomic", first: k.PSN, n: 1, label: fmt.Sprintf("the duplicate ATOMIC at PSN %d", k.PSN)}
	default:
		length := 1
		switch op {
		case "r":
		case "L":
			length = realclock.LongPackets(p.Conn) * p.MTU()
		default:
			var m int
			fmt.Sscanf(op, "R%d", &m)
			length = m * p.MTU()
		}
		k := dupnak.CompleteRead(p, length, off)
		n := wire.ReadResponsePackets(uint32(length), p.MTU())
		return item{req: k, kind: "read", first: k.PSN, n: n, label: fmt.Sprintf("the duplicate READ at PSN %d", k.PSN)}
	}
}

// firstAnswer returns the first packet of recs answering it (nil if none).
func firstAnswer(recs []*trace.Record, it item) *trace.Record {
	for _, r := range recs {
		if r.Dir == trace.ToRequester && it.is(r.Packet) {
			return r
		}
	}
	return nil
}

// lastAnswer returns the last packet of recs answering it (nil if none).
func lastAnswer(recs []*trace.Record, it item) *trace.Record {
	var last *trace.Record
	for _, r := range recs {
		if r.Dir == trace.ToRequester && it.is(r.Packet) {
			last = r
		}
	}
	return last
}

// inOrder checks that each duplicate's answer comes, whole, before the
// next one's first packet.
func inOrder(p *harness.Peer, recs []*trace.Record, dups []item) {
	first := make([]int, len(dups))
	last := make([]int, len(dups))
	count := make([]int, len(dups))
	for i := range dups {
		first[i], last[i] = -1, -1
	}
	for j, rec := range recs {
		for i, it := range dups {
			if it.is(rec.Packet) {
				if first[i] < 0 {
					first[i] = j
				}
				last[i] = j
				count[i]++
				break
			}
		}
	}
	var order []string
	for i, it := range dups {
		order = append(order, fmt.Sprintf("%s (PSN %d)", it.kind, it.req.PSN))
		if first[i] < 0 {
			if i == 0 {
				// Whether a duplicate is answered at all is the rule of
				// its kind; C9-104 judges only the order of answers.
				p.Setup(map[string]string{"read": "C9-107", "atomic": "o9-66", "send": "C9-105"}[it.kind],
					"the device answers "+it.label, func() {
						p.Fail([]string{fmt.Sprintf("an answer to %s, the oldest duplicate waiting", it.label)}, "no answer to it", nil)
					})
			}
			continue
		}
		if it.kind == "read" && count[i] < it.n {
			p.Fail([]string{fmt.Sprintf("%d READ response packets answering %s (%s)", it.n, it.label, dupnak.PSNRange(it.first, it.n))},
				fmt.Sprintf("%d of them", count[i]), recs[last[i]])
		}
		for j := 0; j < i; j++ {
			if first[j] >= 0 && first[i] < last[j] {
				p.Fail([]string{fmt.Sprintf("the answers in PSN order, oldest first: %s", strings.Join(order[:i+1], " then ")),
					fmt.Sprintf("the answer to %s complete before the answer to the later %s begins", dups[j].label, it.label)},
					fmt.Sprintf("the answer to %s began before the answer to %s was complete", it.label, dups[j].label), recs[first[i]])
			}
		}
	}
}
