package reference

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/catalog"
	"github.com/rcconform/rcconform/wire"
)

// dscen is a scripted exchange that shows one defect: run once clean and
// once with the defect, the QP's packets must differ.
type dscen struct {
	cfg func(c *Config)
	run func(p *peer)
}

func readScen(n uint32, gap time.Duration) dscen {
	return dscen{cfg: func(c *Config) { c.PacketGap = gap }, run: func(p *peer) {
		p.send(p.read(e, 0, n))
		p.settle()
	}}
}

func sendsThen(ps ...wire.Packet) dscen {
	return dscen{run: func(p *peer) {
		postRecvs(16, 2048)(p)
		for _, x := range ps {
			p.send(x)
			p.run(10 * time.Microsecond)
		}
		p.settle()
	}}
}

func midStreamFailure() dscen {
	return dscen{cfg: func(c *Config) { c.PacketGap = time.Microsecond }, run: func(p *peer) {
		p.send(p.read(e, 0, 8*1024))
		p.run(3500 * time.Nanosecond)
		p.mr.Invalidate()
		p.settle()
	}}
}

func dupReadScen(dup func(p *peer) wire.Packet) dscen {
	return dscen{run: func(p *peer) {
		p.send(p.read(e, 0, 4*1024))
		p.settle()
		p.send(dup(p))
		p.settle()
		p.send(sendOnly(e+4, true))
		p.settle()
	}}
}

func tooManyReads() dscen {
	return dscen{cfg: func(c *Config) { c.MaxDestRdAtomic, c.PacketGap = 2, time.Microsecond }, run: func(p *peer) {
		for i := 0; i < 3; i++ {
			p.send(p.read(e+wire.PSN(4*i), 0, 4*1024))
		}
		p.settle()
	}}
}

// requester scenarios: the QP posts, the test answers.
func reqScen(mod func(c *Config), run func(p *peer)) dscen {
	return dscen{cfg: func(c *Config) {
		c.Timeout, c.RetryCnt, c.RNRRetry = 8, 3, 3
		if mod != nil {
			mod(c)
		}
	}, run: run}
}

func postSends(p *peer, n int) {
	for i := 0; i < n; i++ {
		p.qp.PostSend(dut.WR{ID: uint64(i), Op: dut.OpSend, Data: buf(8, byte(i))})
	}
}

var defectScenarios = map[string]dscen{
	DefAckOldestPSN:    sendsThen(sendOnly(e, false), sendOnly(e+1, false), sendOnly(e+2, true)),
	DefAckPSNAhead:     sendsThen(sendOnly(e, true)),
	DefReadRespPSNSkew: readScen(2048, 0),
	DefAtomicAckPSNSkew: {run: func(p *peer) {
		p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0))
		p.settle()
	}},
	DefReadFirstNoAETH:    readScen(3*1024, 0),
	DefReadLastNoAETH:     readScen(3*1024, 0),
	DefReadFailRequestPSN: midStreamFailure(),
	DefNAKInReadResponse:  midStreamFailure(),
	DefAckOvertakesRead: {cfg: func(c *Config) { c.PacketGap = time.Microsecond }, run: func(p *peer) {
		p.send(p.read(e, 0, 6*1024))
		p.send(p.write(wire.WriteOnly, e+6, true, 0, 4, []byte("abcd")))
		p.settle()
	}},
	DefDupMovesEPSN: sendsThen(sendOnly(e, false), sendOnly(e+1, false), sendOnly(e+2, true), sendOnly(e, false), sendOnly(e+4, true)),
	DefDupNewestFirst: {cfg: func(c *Config) { c.ResponseDelay = 10 * time.Microsecond }, run: func(p *peer) {
		for i := 0; i < 3; i++ {
			p.send(p.read(e+wire.PSN(i), 0, 8))
		}
		p.settle()
		for i := 2; i >= 0; i-- {
			p.send(p.read(e+wire.PSN(i), 0, 8))
		}
		p.settle()
	}},
	DefReadNoPreempt: {cfg: func(c *Config) { c.PacketGap = time.Microsecond }, run: func(p *peer) {
		p.send(p.read(e, 0, 1024))
		p.send(p.read(e+1, 0, 16*1024))
		p.settle()
		p.send(p.read(e+1, 0, 16*1024))
		p.run(3 * time.Microsecond)
		p.send(p.read(e, 0, 1024))
		p.settle()
	}},
	DefDupSendReexecuted: sendsThen(sendOnly(e, false), sendOnly(e+1, true), sendOnly(e, true)),
	DefDupErrorNAK: dupReadScen(func(p *peer) wire.Packet {
		return p.read(e, 0, 5*1024) // beyond the original RETH
	}),
	DefDupReadDropped:   dupReadScen(func(p *peer) wire.Packet { return p.read(e, 0, 4*1024) }),
	DefReadReplayMiddle: dupReadScen(func(p *peer) wire.Packet { return p.read(e+2, 2048, 2048) }),
	DefDupAtomicReexecuted: {run: func(p *peer) {
		p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0))
		p.settle()
		p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0))
		p.settle()
	}},
	DefDupAtomicUnknownNAK: {cfg: func(c *Config) { c.MaxDestRdAtomic = 1 }, run: func(p *peer) {
		p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0))
		p.settle()
		p.send(p.atomic(wire.FetchAdd, e+1, 0, 1, 0))
		p.settle()
		p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0))
		p.settle()
	}},
	DefNAKSeqReceivedPSN: sendsThen(sendOnly(e+3, true)),
	DefNAKInvReqReceivedPSN: sendsThen(pkt(wire.SendFirst, e, false, buf(1024, 0)),
		pkt(wire.WriteMiddle, e+2, true, buf(1024, 0))),
	DefRNRNAKWrongPSN: {run: func(p *peer) {
		p.send(sendOnly(e, true))
		p.settle()
	}},
	DefNAKLatchOff:   sendsThen(sendOnly(e+1, true), sendOnly(e+2, true)),
	DefAckReqIgnored: sendsThen(sendOnly(e, true)),
	DefAccessNAKExpectedPSN: {run: func(p *peer) {
		off := uint64(p.mr.Len() - 2*1024 - 10)
		p.send(p.write(wire.WriteFirst, e, false, off, 4*1024, buf(1024, 0)))
		p.send(pkt(wire.WriteMiddle, e+1, false, buf(1024, 0)))
		p.send(pkt(wire.WriteMiddle, e+2, false, buf(1024, 0)))
		p.settle()
	}},
	DefMSNReadSkipped:      readScen(8, 0),
	DefMSNDupBump:          sendsThen(sendOnly(e, true), sendOnly(e, false), sendOnly(e+1, true)),
	DefNAKMSNZero:          sendsThen(sendOnly(e, true), sendOnly(e+2, true)),
	DefDupAckRegister:      sendsThen(sendOnly(e-2, true)),
	DefCreditsInvalidNoSRQ: sendsThen(sendOnly(e, true)),
	DefSRQCredits: {cfg: func(c *Config) { c.SRQ = NewSRQ() }, run: func(p *peer) {
		postRecvs(4, 64)(p)
		p.send(sendOnly(e, true))
		p.settle()
	}},
	DefSyndromeReservedBit: sendsThen(sendOnly(e, true)),
	DefNAKCodeReserved: sendsThen(pkt(wire.SendFirst, e, false, buf(1024, 0)), pkt(wire.SendMiddle, e+1, false, buf(1024, 0)),
		pkt(wire.SendLast, e+2, true, buf(100, 0))),
	DefUnsolicitedNAKRepeat: {run: func(p *peer) {
		p.send(sendOnly(e+1, true))
		p.run(time.Millisecond)
	}},
	DefRetryBeforeTimeout: reqScen(nil, func(p *peer) {
		postSends(p, 1)
		p.run(2 * wire.AckTimeout(8))
	}),
	DefRetryTimeoutZero: reqScen(func(c *Config) { c.Timeout = 0 }, func(p *peer) {
		postSends(p, 1)
		p.run(5 * time.Millisecond)
	}),
	DefTimerOneTickEarly: reqScen(nil, func(p *peer) {
		postSends(p, 1)
		p.run(2 * wire.AckTimeout(12))
	}),
	DefRetryCountPlusOne: reqScen(func(c *Config) { c.RetryCnt = 1 }, func(p *peer) {
		postSends(p, 1)
		p.run(10 * wire.AckTimeout(8))
	}),
	DefRetry7Unlimited: reqScen(func(c *Config) { c.RetryCnt = 7 }, func(p *peer) {
		postSends(p, 1)
		p.run(12 * wire.AckTimeout(8))
	}),
	DefRNRCostsRetry: reqScen(func(c *Config) { c.RetryCnt = 1 }, func(p *peer) {
		postSends(p, 1)
		p.settle()
		p.send(nak(s0, wire.SynRNR(1)))
		p.run(10 * wire.AckTimeout(8))
	}),
	DefRNRResendEarly: reqScen(nil, func(p *peer) {
		postSends(p, 1)
		p.settle()
		p.send(nak(s0, wire.SynRNR(14)))
		p.run(2 * time.Millisecond)
	}),
	DefRNRStaleTimer: reqScen(nil, func(p *peer) {
		postSends(p, 1)
		p.settle()
		p.send(nak(s0, wire.SynRNR(1)))
		p.run(2 * time.Millisecond)
	}),
	DefRNRRetry7Finite: reqScen(func(c *Config) { c.RNRRetry = 7 }, func(p *peer) {
		postSends(p, 1)
		p.settle()
		for i := 0; i < 9; i++ {
			p.send(nak(s0, wire.SynRNR(1)))
			p.settle()
		}
	}),
	DefGBNNewPSN: reqScen(nil, func(p *peer) {
		postSends(p, 3)
		p.settle()
		p.send(nak(s0+1, wire.SynNAK(wire.NAKPSNSequence)))
		p.settle()
	}),
	DefGBNSkipOne: reqScen(nil, func(p *peer) {
		postSends(p, 3)
		p.settle()
		p.send(nak(s0+1, wire.SynNAK(wire.NAKPSNSequence)))
		p.settle()
	}),
	DefImpliedNAKIgnored: reqScen(nil, func(p *peer) {
		p.qp.PostSend(dut.WR{ID: 1, Op: dut.OpRead, Length: 8, RemoteVA: 8, RKey: 1})
		p.qp.PostSend(dut.WR{ID: 2, Op: dut.OpSend, Data: buf(8, 0)})
		p.settle()
		p.send(ack(s0+1, 2))
		p.settle()
	}),
	DefRetryAfterFatalNAK: reqScen(nil, func(p *peer) {
		postSends(p, 1)
		p.settle()
		p.send(nak(s0, wire.SynNAK(wire.NAKRemoteAccess)))
		p.settle()
	}),
	DefTooManyReadsRNR:    tooManyReads(),
	DefTooManyReadsServed: tooManyReads(),
	DefAckInvalidRequest:  invalidRequests(),
	DefDropInvalidRequest: invalidRequests(),
}

// invalidRequests sends a SEND Only longer than the MTU, then, at the
// next PSN, a SEND with Invalidate of an unknown R_Key and a reserved
// opcode: the clean reference NAKs the first and is in ERROR after it; a
// defect that executes it ACKs the first two; one that drops it still
// expects its PSN, so a sequence NAK answers the two after it.
func invalidRequests() dscen {
	return dscen{run: func(p *peer) {
		postRecvs(4, 8192)(p)
		p.send(pkt(wire.SendOnly, e, true, buf(1100, 0)))
		p.settle()
		inv := pkt(wire.SendOnlyInvalidate, e+1, true, buf(8, 0))
		inv.IETH = p.mr.RKey ^ 0x5A5A00
		p.send(inv)
		p.settle()
		p.send(pkt(wire.Opcode(0x15), e+1, true, buf(8, 0)))
		p.settle()
	}}
}

// transcript renders what the QP sent, with times, for comparison.
func transcript(p *peer) []string {
	var out []string
	for i, g := range p.got {
		pay := g.Payload
		if len(pay) > 8 {
			pay = pay[:8]
		}
		out = append(out, fmt.Sprintf("%v %v pay=%x", p.times[i], g, pay))
	}
	cs := p.qp.PollCQ()
	for _, c := range cs {
		out = append(out, fmt.Sprintf("completion %d recv=%v %v", c.ID, c.Recv, c.Status))
	}
	return append(out, "state "+p.qp.State().String())
}

func runScenario(t *testing.T, s dscen, defect string) []string {
	p := newPeer(t, func(c *Config) {
		if s.cfg != nil {
			s.cfg(c)
		}
		c.Defect = defect
	})
	s.run(p)
	return transcript(p)
}

// TestDefects shows every defect happening: the same scripted exchange
// gives a different transcript with the defect switched on.
func TestDefects(t *testing.T) {
	for _, d := range Defects() {
		t.Run(d.Name, func(t *testing.T) {
			s, ok := defectScenarios[d.Name]
			if !ok {
				t.Fatalf("no scenario shows defect %s", d.Name)
			}
			clean := runScenario(t, s, "")
			bad := runScenario(t, s, d.Name)
			if slices.Equal(clean, bad) {
				t.Fatalf("defect %s changed nothing:\n%v", d.Name, clean)
			}
			if testing.Verbose() {
				for i := 0; i < max(len(clean), len(bad)); i++ {
					var c, b string
					if i < len(clean) {
						c = clean[i]
					}
					if i < len(bad) {
						b = bad[i]
					}
					if c != b {
						t.Logf("first difference at line %d:\n  clean:  %s\n  defect: %s", i, c, b)
						break
					}
				}
			}
		})
	}
}

// TestDefectCatalogue checks the catalogue: sorted, unique names, each
// defect tied to rules of the rule catalogue that have public text, and
// every such rule broken by at least one defect.
func TestDefectCatalogue(t *testing.T) {
	ds := Defects()
	if !sort.SliceIsSorted(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name }) {
		t.Errorf("Defects() is not sorted by name")
	}
	covered := map[string]bool{}
	for i, d := range ds {
		if i > 0 && ds[i-1].Name == d.Name {
			t.Errorf("defect %s listed twice", d.Name)
		}
		if len(d.Clauses) == 0 || d.Description == "" {
			t.Errorf("defect %s has no clause or description", d.Name)
		}
		for _, id := range d.Clauses {
			e, ok := catalog.Lookup(id)
			if !ok {
				t.Errorf("defect %s cites %s, which is not in the rule catalogue", d.Name, id)
				continue
			}
			if e.Status == catalog.TextUnavailable {
				t.Errorf("defect %s cites %s, whose text is not public", d.Name, id)
			}
			covered[id] = true
		}
		if got, ok := LookupDefect(d.Name); !ok || got.Name != d.Name {
			t.Errorf("LookupDefect(%q) failed", d.Name)
		}
	}
	for _, e := range catalog.All() {
		if e.Status != catalog.TextUnavailable && !covered[e.ID] {
			t.Errorf("rule %s has public text but no defect breaks it", e.ID)
		}
	}
	if _, ok := LookupDefect("nonsense"); ok {
		t.Errorf("LookupDefect accepted an unknown name")
	}
}
