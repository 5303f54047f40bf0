package c9_110

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/internal/realclock"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-110, in our words: requests are answered logically earliest first;
// when a duplicate with a logically earlier PSN arrives while another
// answer (new or duplicate) is being sent, that answer is abandoned and
// the earlier request is answered. Shares its meaning with C9-104 (whose
// scenarios cover duplicates waiting together).
//
// Each scenario starts a long answer B (a READ replay, or a new READ's
// response), sends an older duplicate A as soon as B's first packet is
// seen, and expects: A answered from its PSN; B stopped (a packet or two
// may have been in flight, but B does not run to its end); B not resumed
// after A's answer began.

// The interrupted answer is realclock.LongPackets long: long enough that a
// responder which never preempts is seen sending it all, and, on a real
// clock, that it is still streaming well after the older duplicate can
// have reached the device (a software device streams 64 packets within
// the real clock's margin, which left every run undecided).

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name    string
		mtu     int
		start   wire.PSN
		newB    bool // B is a new READ (its first answer), not a replay
		atomicA bool // A is a duplicate ATOMIC
		partial bool // A replays only the second half of its READ
	}
	cases := []tc{
		{"an older duplicate READ preempts a READ replay", 256, 100, false, false, false},
		{"an older duplicate READ preempts a READ replay", 1024, 20000, false, false, false},
		{"an older duplicate READ preempts a READ replay", 4096, 0xFFFFF0, false, false, false},
		{"an older partial duplicate READ preempts a READ replay", 512, 3000, false, false, true},
		{"an older duplicate READ preempts a new READ's response", 256, 4000, true, false, false},
		{"an older duplicate READ preempts a new READ's response", 2048, 0xFFFFFE, true, false, false},
		{"an older duplicate ATOMIC preempts a READ replay", 1024, 6000, false, true, false},
	}
	for _, c := range cases {
		c := c
		r.Active(fmt.Sprintf("%s (MTU %d, PSNs from %d)", c.name, c.mtu, c.start),
			// The older duplicate must arrive while the long answer is
			// still streaming: on a real clock, a run where the answer
			// ended too soon after the duplicate left to tell which came
			// first at the device is indeterminate (realclock).
			rulekit.Scenario{Config: config(c.mtu, c.start), Needs: rulekit.Needs{Atomics: c.atomicA}},
			func(p *harness.Peer) {
				m := p.MTU()
				longPackets := realclock.LongPackets(p.Conn)
				// A: the older request, answered once.
				var a *wire.Packet
				aFirst, aN := wire.PSN(0), 1
				if c.atomicA {
					a = p.Atomic(wire.FetchAdd, 0, 5, 0)
					p.Send(a)
					p.ExpectAtomicAck(a.PSN, "an ATOMIC", dupnak.Liveness)
					aFirst = a.PSN
				} else {
					a = dupnak.CompleteRead(p, 4*m, 0)
					aFirst, aN = a.PSN, 4
				}
				// B: the long answer that A interrupts.
				var b *wire.Packet
				if c.newB {
					b = p.Read(longPackets*m, 8*m)
				} else {
					b = dupnak.Dup(dupnak.CompleteRead(p, longPackets*m, 8*m), true)
				}
				bLast := b.PSN.Add(longPackets - 1)
				dupA := dupnak.Dup(a, true)
				if c.partial {
					dupA.PSN = dupA.PSN.Add(2)
					dupA.RETH.VA += uint64(2 * m)
					dupA.RETH.Length -= uint32(2 * m)
					aFirst, aN = dupA.PSN, 2
				}
				p.Send(b)
				bSent := p.Conn.Now()
				started := dupnak.ExpectResponseStart(p, b, true)
				p.Send(dupA)
				sent := p.Conn.Now()
				recs := append([]*trace.Record{started}, p.CollectQuiet(dupnak.Liveness)...)
				// B's request to its first packet bounds A's way to the
				// device and B's packets' way back: a device on a slow
				// link may have finished B before A arrived, on either
				// clock.
				realclock.FinishedFirstRTT(p.Conn, realclock.Find(recs, func(r *trace.Record) bool {
					return r.Packet.Opcode.Class() == wire.ClassReadResponse && r.Packet.PSN == bLast
				}), sent, started.Time-bSent, fmt.Sprintf("the long answer to the READ at PSN %d", b.PSN), "the older duplicate")
				dupnak.NoNAK(p, recs, "neither answer fails")
				check(p, recs, b.PSN, bLast, aFirst, aN, c.atomicA)
				// The abandoned answer is given again when asked again.
				again := dupnak.Dup(b, true)
				p.Send(again)
				all := p.CollectQuiet(dupnak.Liveness)
				got := dupnak.ReadResponses(all, b.PSN, bLast)
				if len(got) == 0 {
					dupnak.DupUnanswered(p, all, false, fmt.Sprintf("the READ at PSN %d answered in full (%d packets) when requested again", b.PSN, longPackets), "0 packets")
				}
				if len(got) != longPackets {
					p.Fail([]string{fmt.Sprintf("the READ at PSN %d answered in full (%d packets) when requested again", b.PSN, longPackets)},
						fmt.Sprintf("%d packets", len(got)), nil)
				}
				dupnak.Alive(p, "the connection goes on after the preemption")
			})
	}
})

// config is the scenarios' connection: PSNs from start, path MTU mtu, and
// memory for the long answer at 8 MTUs' offset.
func config(mtu int, start wire.PSN) dut.ConnConfig {
	cfg := dupnak.Cfg(mtu, start)
	cfg.MemorySize = realclock.LongMemory(mtu, 8*mtu)
	return cfg
}

// check judges the answers after the older duplicate A was sent while B's
// answer was streaming.
func check(p *harness.Peer, recs []*trace.Record, bFirst, bLast, aFirst wire.PSN, aN int, atomicA bool) {
	isA := func(k *wire.Packet) bool {
		if atomicA {
			return k.Opcode == wire.AtomicAcknowledge && k.PSN == aFirst
		}
		return k.Opcode.Class() == wire.ClassReadResponse && k.PSN.InRange(aFirst, aFirst.Add(aN-1))
	}
	isB := func(k *wire.Packet) bool {
		return k.Opcode.Class() == wire.ClassReadResponse && k.PSN.InRange(bFirst, bLast)
	}
	aStart, aCount, bCount := -1, 0, 0
	var bEnd *trace.Record
	for j, rec := range recs {
		k := rec.Packet
		switch {
		case isA(k):
			if aStart < 0 {
				aStart = j
				if !atomicA && k.PSN != aFirst {
					p.Fail([]string{fmt.Sprintf("the older duplicate's answer starting at its PSN %d", aFirst)}, k.String(), rec)
				}
			}
			aCount++
		case isB(k):
			bCount++
			if k.PSN == bLast {
				bEnd = rec
			}
			if aStart >= 0 {
				p.Fail([]string{fmt.Sprintf("the answer to the READ at PSN %d abandoned once the older duplicate's answer (PSN %d) began", bFirst, aFirst)},
					fmt.Sprintf("%s after the older duplicate's answer began", k), rec)
			}
		}
	}
	if aStart < 0 {
		dupnak.DupUnanswered(p, recs, atomicA, fmt.Sprintf("an answer to the older duplicate at PSN %d", aFirst), "none")
	}
	if aCount < aN {
		p.Fail([]string{fmt.Sprintf("the older duplicate answered in full (%d packets from PSN %d)", aN, aFirst)}, fmt.Sprintf("%d packets", aCount), nil)
	}
	if bEnd != nil {
		p.Fail([]string{fmt.Sprintf("the answer to the READ at PSN %d stopped soon after the older duplicate at PSN %d arrived (it was sent after B's first packet; a few packets may be in flight)", bFirst, aFirst)},
			fmt.Sprintf("all %d packets of B's answer, to PSN %d, before the older duplicate's answer", bCount, bLast), bEnd)
	}
}
