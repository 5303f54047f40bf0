package o9_66

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// o9-66, in our words: a duplicate ATOMIC is never executed again; if its
// PSN matches a saved result, the saved original value goes back. The
// scenarios read the device's memory afterwards to see that it changed
// only once. Optional: a device without atomics reports unsupported.

const liveness = 100 * time.Millisecond

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name    string
		op      wire.Opcode
		initial uint64
		swapAdd uint64
		compare uint64
		after   uint64 // memory after one execution
		start   wire.PSN
		between int // new requests between the original and the duplicate
	}
	cases := []tc{
		{"CmpSwap replayed at once returns the saved original", wire.CompareSwap, 7, 99, 7, 99, 100, 0},
		{"FetchAdd replayed at once returns the saved original", wire.FetchAdd, 40, 2, 0, 42, 200, 0},
		{"FetchAdd replayed after two later SENDs", wire.FetchAdd, 1, 1, 0, 2, 300, 2},
		{"CmpSwap at the 2^24 wrap, replayed", wire.CompareSwap, 5, 6, 5, 6, 0xFFFFFF, 0},
	}
	for _, c := range cases {
		c := c
		r.Active(c.name, rulekit.Scenario{Config: dut.ConnConfig{MTU: 1024, ExpectedPSN: c.start, SetPSNs: true, MaxDestRdAtomic: 4},
			Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) {
				// Atomics work on a 64-bit word in the responder's host byte
				// order; the first answer tells which order that is.
				var init [8]byte
				binary.LittleEndian.PutUint64(init[:], c.initial)
				if err := p.Conn.WriteMemory(64, init[:]); err != nil {
					p.Fail([]string{"writable device memory"}, err.Error(), nil)
				}
				at := p.Atomic(c.op, 64, c.swapAdd, c.compare)
				p.Send(at)
				first := p.ExpectAtomicAck(at.PSN, "the original ATOMIC", liveness)
				var order binary.ByteOrder
				switch first.Packet.AtomicAck {
				case c.initial:
					order = binary.LittleEndian
				case binary.BigEndian.Uint64(init[:]):
					order = binary.BigEndian
				default:
					p.Fail([]string{fmt.Sprintf("original value 0x%x (memory read in either byte order)", c.initial)},
						fmt.Sprintf("0x%x", first.Packet.AtomicAck), first)
				}
				initial := first.Packet.AtomicAck
				for i := 0; i < c.between; i++ {
					p.Send(p.Message(wire.SendOnly, 8, 0, true)...)
					p.Collect(liveness / 10)
				}
				dup := *at
				p.Send(&dup)
				var replay *trace.Record
				for _, rec := range p.Collect(liveness) {
					k := rec.Packet
					if k.Opcode == wire.AtomicAcknowledge && k.PSN == at.PSN {
						replay = rec
					}
					if k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
						p.Fail([]string{"no NAK for a duplicate ATOMIC"}, k.String(), rec)
					}
				}
				if replay == nil {
					p.Fail([]string{fmt.Sprintf("an ATOMIC acknowledgment with PSN %d returning the saved value 0x%x (the result was saved: it is among the %d most recent)", at.PSN, initial, 4)},
						"no answer to the duplicate", nil)
				}
				if replay.Packet.AtomicAck != initial {
					p.Fail([]string{fmt.Sprintf("the saved original value 0x%x", initial)}, fmt.Sprintf("0x%x: the duplicate was executed again", replay.Packet.AtomicAck), replay)
				}
				mem, err := p.Conn.ReadMemory(64, 8)
				if err != nil {
					p.Fail([]string{"readable device memory"}, err.Error(), nil)
				}
				if got := order.Uint64(mem); got != c.after {
					p.Fail([]string{fmt.Sprintf("memory 0x%x after one execution", c.after)}, fmt.Sprintf("memory 0x%x", got), replay)
				}
			})
	}
})
