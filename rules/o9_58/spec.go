package o9_58

import (
	"encoding/binary"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// o9-58, in our words (binding devices that support atomics; rulekit
// reports the scenarios unsupported on others): the ATOMIC Acknowledge
// answering a Compare & Swap or Fetch & Add carries that request's PSN,
// and the ATOMIC takes exactly that one PSN. The scenarios send ATOMICs
// alone, several back to back, mixed with SENDs and READs, and across the
// 2^24 wrap, and expect exactly one ATOMIC Acknowledge per ATOMIC, at its
// PSN.

// atomic is one ATOMIC a scenario sends, at an 8-byte aligned offset.
type atomic struct {
	op      wire.Opcode
	off     int
	swapAdd uint64
	compare uint64
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name    string
		start   wire.PSN
		atomics []atomic
		mixed   bool // SENDs and a READ between the ATOMICs
	}
	cases := []tc{
		{"a Compare & Swap", 40, []atomic{{wire.CompareSwap, 0, 7, 0x1111}}, false},
		{"a Fetch & Add", 40, []atomic{{wire.FetchAdd, 8, 5, 0}}, false},
		{"four ATOMICs back to back on the same word", 1234, []atomic{
			{wire.FetchAdd, 16, 1, 0}, {wire.CompareSwap, 16, 99, 0x2223}, {wire.FetchAdd, 16, 1, 0}, {wire.CompareSwap, 16, 5, 0}}, false},
		{"ATOMICs between SENDs and a READ", 600, []atomic{{wire.FetchAdd, 24, 3, 0}, {wire.CompareSwap, 32, 1, 0x4444}}, true},
		{"ATOMICs at PSNs 0xFFFFFE, 0xFFFFFF and 0", 0xFFFFFE, []atomic{
			{wire.FetchAdd, 40, 1, 0}, {wire.FetchAdd, 40, 1, 0}, {wire.CompareSwap, 40, 0, 0x5557}}, false},
	}
	for _, c := range cases {
		c := c
		r.Active(c.name, rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: c.start, SetPSNs: true},
			Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) {
				// Memory values the ATOMICs will see, computed as they run.
				mem := map[int]uint64{}
				for _, a := range c.atomics {
					if _, ok := mem[a.off]; !ok {
						v := uint64(0x1111*(a.off/8+1)) + 0x1111
						mem[a.off] = v
						b := make([]byte, 8)
						binary.LittleEndian.PutUint64(b, v)
						if err := p.Conn.WriteMemory(a.off, b); err != nil {
							ginkgo.Fail(fmt.Sprintf("writing the device's memory: %v", err))
						}
					}
				}
				var pkts []*wire.Packet
				var reqs []*wire.Packet
				var origs []uint64
				for i, a := range c.atomics {
					if c.mixed {
						pkts = append(pkts, p.Message(wire.SendOnly, 20, 0, i == 0)...)
						if i == 1 {
							pkts = append(pkts, p.Read(3*1024, 4096))
						}
					}
					k := p.Atomic(a.op, a.off, a.swapAdd, a.compare)
					pkts = append(pkts, k)
					reqs = append(reqs, k)
					orig := mem[a.off]
					origs = append(origs, orig)
					switch a.op {
					case wire.FetchAdd:
						mem[a.off] = orig + a.swapAdd
					case wire.CompareSwap:
						if orig == a.compare {
							mem[a.off] = a.swapAdd
						}
					}
				}
				p.Send(pkts...)
				check(p, p.Collect(responses.Liveness), reqs, origs)
			})
	}
})

// check expects exactly one ATOMIC Acknowledge per request, carrying the
// request's PSN, and none at any other PSN. (Whether the original value is
// right is not this clause's concern, and depends on the host's byte
// order.)
func check(p *harness.Peer, recs []*trace.Record, reqs []*wire.Packet, origs []uint64) {
	acks := map[wire.PSN][]*trace.Record{}
	for _, rec := range responses.Responses(recs) {
		if rec.Packet.Opcode == wire.AtomicAcknowledge {
			acks[rec.Packet.PSN] = append(acks[rec.Packet.PSN], rec)
		}
	}
	want := func(q *wire.Packet, orig uint64) []string {
		return []string{fmt.Sprintf("one ATOMIC Acknowledge with PSN %d, the %s's own (memory held 0x%x before it, in host byte order)", q.PSN, q.Opcode, orig)}
	}
	for i, q := range reqs {
		got := acks[q.PSN]
		switch {
		case len(got) == 0:
			p.Fail(want(q, origs[i]), "no ATOMIC Acknowledge with that PSN; responses: "+responses.Summary(responses.Responses(recs)), nil)
		case len(got) > 1:
			p.Fail(want(q, origs[i]), fmt.Sprintf("%d ATOMIC Acknowledges with that PSN", len(got)), got[1])
		}
		delete(acks, q.PSN)
	}
	for psn, got := range acks {
		p.Fail([]string{"ATOMIC Acknowledges only at the PSNs of the ATOMIC requests"},
			fmt.Sprintf("an ATOMIC Acknowledge with PSN %d, which no ATOMIC used", psn), got[0])
	}
}
