package o9_67

import (
	"encoding/binary"
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// o9-67, in our words: a duplicate ATOMIC whose result is no longer saved
// is dropped, with neither an ATOMIC acknowledgment nor a NAK. Optional:
// a device without atomics reports unsupported.
//
// Each scenario runs ATOMICs (and READs) one at a time on a QP with few
// READ/ATOMIC responder resources, so the oldest ATOMIC's saved result is
// pushed out, then replays that oldest ATOMIC. Acceptable: silence, or —
// if the device keeps more results than it must — the saved original
// value (o9-66). Not acceptable: a NAK, or the ATOMIC executed again
// (memory changed a second time, or another value returned).

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name      string
		op        wire.Opcode
		resources int
		later     string // what pushes the result out: "atomics" or "reads"
		mtu       int
		start     wire.PSN
	}
	cases := []tc{
		{"FetchAdd replayed after four later ATOMICs", wire.FetchAdd, 2, "atomics", 1024, 100},
		{"CmpSwap replayed after four later ATOMICs", wire.CompareSwap, 2, "atomics", 256, 2000},
		{"FetchAdd replayed after three later READs", wire.FetchAdd, 1, "reads", 4096, 3000},
		{"CmpSwap replayed after later ATOMICs, one resource", wire.CompareSwap, 1, "atomics", 512, 4000},
		{"FetchAdd replayed across the 2^24 wrap", wire.FetchAdd, 2, "atomics", 1024, 0xFFFFFE},
	}
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.MaxDestRdAtomic = c.resources
		r.Active(fmt.Sprintf("%s (%d responder resources, MTU %d, PSNs from %d)", c.name, c.resources, c.mtu, c.start),
			rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) {
				const off = 512
				var init [8]byte
				binary.LittleEndian.PutUint64(init[:], 40)
				dupnak.SetMemory(p, off, init[:])
				orig := p.Atomic(c.op, off, 7, 40)
				p.Send(orig)
				first := p.ExpectAtomicAck(orig.PSN, "the original ATOMIC", dupnak.Liveness)
				saved := first.Packet.AtomicAck
				for i := 0; i < 4; i++ {
					if c.later == "reads" {
						if i < 3 {
							dupnak.CompleteRead(p, 2*p.MTU(), 4096)
						}
						continue
					}
					a := p.Atomic(wire.FetchAdd, 1024+8*i, 1, 0)
					p.Send(a)
					p.ExpectAtomicAck(a.PSN, "an ATOMIC", dupnak.Liveness)
				}
				after := dupnak.Memory(p, off, 8)
				p.Send(dupnak.Dup(orig, true))
				for _, rec := range p.Collect(dupnak.Liveness) {
					k := rec.Packet
					switch {
					case k.Opcode == wire.Acknowledge && !k.AETH.IsACK():
						p.Fail([]string{fmt.Sprintf("no answer to the duplicate ATOMIC at PSN %d (its result was pushed out of the %d responder resources): it is dropped", orig.PSN, c.resources),
							fmt.Sprintf("an ATOMIC acknowledgment returning the saved original value 0x%x, if the device kept it (o9-66)", saved)},
							k.String(), rec)
					case k.Opcode == wire.AtomicAcknowledge && k.PSN == orig.PSN && k.AtomicAck != saved:
						p.Fail([]string{"no answer to the duplicate ATOMIC (dropped)", fmt.Sprintf("the saved original value 0x%x", saved)},
							fmt.Sprintf("%s: the duplicate was executed again", k), rec)
					}
				}
				if got := dupnak.Memory(p, off, 8); string(got) != string(after) {
					p.Fail([]string{"memory unchanged by the duplicate ATOMIC (it is never executed again)"},
						fmt.Sprintf("memory changed from % x to % x", after, got), nil)
				}
				dupnak.Alive(p, "the duplicate was dropped and the connection goes on")
			})
	}
})
