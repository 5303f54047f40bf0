package c9_105

import (
	"bytes"
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-105, in our words: a duplicate SEND or WRITE is not executed again;
// the responder answers it with an ACK carrying the PSN of the newest
// completed new request. Each scenario completes some SENDs and WRITEs,
// replays one packet (a single-packet message, a Middle or First of a
// multi-packet one, the newest request itself), and checks that the ACK
// names the newest completed PSN with an unchanged MSN, that no second
// receive completion appears, and that memory changed by the device after
// the original WRITE is not overwritten again.
//
// Without AckReq on the duplicate the public text does not say whether
// an ACK is owed (docs/interpretations.md, "Duplicate SEND or WRITE
// without AckReq"): there, no ACK is acceptable,
// but an ACK that comes must still carry the newest completed PSN.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		name   string
		kind   string // send, send-newest, send-middle, write, write-first
		ackReq bool
		mtu    int
		start  wire.PSN
		srq    bool
	}
	cases := []tc{
		{"a duplicate SEND in the middle of six", "send", true, 1024, 1000, false},
		{"a duplicate SEND without AckReq", "send", false, 256, 2000, false},
		{"a duplicate of the newest SEND", "send-newest", true, 4096, 3000, false},
		{"a duplicate Middle packet of a multi-packet SEND", "send-middle", true, 512, 4000, false},
		{"a duplicate WRITE after the device changed the memory", "write", true, 2048, 5000, false},
		{"a duplicate First packet of a multi-packet WRITE", "write-first", true, 256, 6000, false},
		{"a duplicate SEND across the 2^24 wrap", "send", true, 1024, 0xFFFFFD, false},
		{"a duplicate multi-packet SEND Middle across the wrap", "send-middle", false, 256, 0xFFFFFE, false},
		{"a duplicate SEND on a QP with an SRQ", "send", true, 1024, 7000, true},
		{"a duplicate WRITE on a QP with an SRQ", "write", false, 4096, 8000, true},
		{"a duplicate SEND while a long READ's response is being sent", "send-during-read", true, 256, 9000, false},
		{"a duplicate SEND while a long READ's response is being sent", "send-during-read", true, 1024, 0xFFFFF8, false},
	}
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.SRQ = c.srq
		r.Active(fmt.Sprintf("%s (MTU %d, PSNs from %d)", c.name, c.mtu, c.start),
			rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{Completions: true, Memory: true, SRQ: c.srq}},
			func(p *harness.Peer) {
				m := p.MTU()
				var pkts []*wire.Packet
				var dup *wire.Packet
				off, size := 4096, 0
				switch c.kind {
				case "send", "send-newest", "send-during-read":
					for i := 0; i < 6; i++ {
						pkts = append(pkts, dupnak.Send(p, 40, i == 5))
					}
					dup = pkts[2]
					if c.kind == "send-newest" {
						dup = pkts[5]
					}
				case "send-middle":
					pkts = p.Message(wire.SendOnly, 3*m+m/2, 0, false)
					dup = pkts[1]
					pkts = append(pkts, dupnak.Send(p, 8, true))
				case "write":
					pkts = []*wire.Packet{dupnak.Send(p, 8, false)}
					size = 200
					w := p.Message(wire.WriteOnly, size, off, false)
					pkts = append(pkts, w...)
					dup = w[0]
					pkts = append(pkts, dupnak.Send(p, 8, true))
				case "write-first":
					size = 3 * m
					w := p.Message(wire.WriteOnly, size, off, false)
					pkts = append(pkts, w...)
					dup = w[0]
					pkts = append(pkts, dupnak.Send(p, 8, true))
				}
				newest := pkts[len(pkts)-1].PSN
				p.Send(pkts...)
				ack := dupnak.ExpectAck(p, newest, "the original requests")
				msn := ack.Packet.AETH.MSN
				dupnak.RecvCompletions(p) // drain the originals' completions
				var changed []byte
				if size > 0 {
					changed = dupnak.Pattern(0xA0, size)
					dupnak.SetMemory(p, off, changed)
				}

				var rd *wire.Packet
				if c.kind == "send-during-read" {
					// A long READ: while its response is owed, the newest
					// completed request is still the last SEND (an ACK
					// may not pass the READ, C9-101).
					rd = p.Read(64*m, 0)
					p.Send(rd)
					first := dupnak.ExpectResponseStart(p, rd, false)
					if first.Packet.Opcode.Has(wire.HdrAETH) {
						msn = first.Packet.AETH.MSN
					}
				}
				d := dupnak.Dup(dup, c.ackReq)
				p.Send(d)
				recs := p.Collect(dupnak.Liveness)
				p.Own(func() { dupnak.NoNAK(p, recs, "a duplicate SEND or WRITE is answered with an ACK") })
				acks := dupnak.Acks(recs)
				if c.ackReq && len(acks) == 0 {
					p.Fail([]string{fmt.Sprintf("an ACK with PSN %d, the newest completed request, answering the duplicate at PSN %d (it carried AckReq)", newest, d.PSN)},
						"no ACK", nil)
				}
				readDone := false        // the long READ's response has been sent in full
				var msnBad *trace.Record // an ACK whose MSN moved for the duplicate
				for _, rec := range recs {
					k := rec.Packet
					if rd != nil && k.Opcode.Class() == wire.ClassReadResponse && k.PSN == rd.PSN.Add(63) {
						readDone = true
					}
					if !harness.IsAck(k) {
						continue
					}
					a := rec
					if readDone && a.Packet.PSN == rd.PSN.Add(63) {
						continue // the READ completed first: it is the newest completed request
					}
					if a.Packet.PSN != newest {
						p.Fail([]string{fmt.Sprintf("an ACK with PSN %d, the most recently completed new request (not the duplicate's own PSN %d)", newest, d.PSN)},
							a.Packet.String(), a)
					}
					if got := a.Packet.AETH.MSN; got != msn && !(rd != nil && got == msn+1) && msnBad == nil {
						msnBad = a
					}
				}
				if n := dupnak.RecvCompletions(p); n != 0 {
					p.Fail([]string{"no receive completion for the duplicate (it is not executed again)"},
						fmt.Sprintf("%d new receive completion(s)", n), nil)
				}
				if changed != nil {
					if got := dupnak.Memory(p, off, size); !bytes.Equal(got, changed) {
						p.Fail([]string{fmt.Sprintf("memory at offset %d left as the device changed it after the original WRITE (the duplicate is not executed again)", off)},
							"the duplicate WRITE's data written again", nil)
					}
				}
				if msnBad != nil {
					// The duplicate was not executed again (no receive
					// completion, memory unchanged): an MSN that moved is
					// C9-148's finding (never counted for a duplicate).
					p.Setup("C9-148", "the MSN stays unchanged for a duplicate", func() {
						p.Fail([]string{fmt.Sprintf("the MSN unchanged at %d: the duplicate completes no new message", msn)},
							fmt.Sprintf("MSN %d", msnBad.Packet.AETH.MSN), msnBad)
					})
				}
				if rd != nil {
					// The READ may have been abandoned for the older
					// duplicate (C9-110): ask for it again, in full.
					// (Its answer is judged under C9-107 and C9-110, not here.)
					if !readDone {
						p.Send(dupnak.Dup(rd, true))
						if len(dupnak.ReadResponses(p.Collect(dupnak.Liveness), rd.PSN.Add(63), rd.PSN.Add(63))) == 0 {
							return // the READ is still owed: no ACK may pass it, so no liveness check
						}
					}
				}
				dupnak.Alive(p, "the next new request is taken in sequence")
			})
	}

	// Duplicates with no SEND or WRITE completed before them. On a fresh
	// QP the newest completed request is the one before the first
	// expected PSN (the answer acknowledges nothing); after READs only, it
	// is the last READ's last PSN. A responder that takes the PSN for
	// duplicate ACKs from a register only SENDs, WRITEs and ATOMICs move
	// answers anything else.
	for _, c := range []struct {
		name  string
		reads int
		mtu   int
		start wire.PSN
	}{
		{"a duplicate SEND on a fresh QP, before any request", 0, 1024, 50000},
		{"a duplicate SEND after READs only", 2, 1024, 60000},
		{"a duplicate SEND on a fresh QP starting at PSN 0", 0, 256, 0},
	} {
		c := c
		r.Active(fmt.Sprintf("%s (MTU %d, PSNs from %d)", c.name, c.mtu, c.start),
			rulekit.Scenario{Config: dupnak.Cfg(c.mtu, c.start), Needs: rulekit.Needs{Completions: true, Memory: true}},
			func(p *harness.Peer) {
				newest, why := c.start.Add(-1), "the one before the QP's first expected PSN: nothing has completed"
				if c.reads > 0 {
					why = "the last READ's last PSN"
				}
				for i := 0; i < c.reads; i++ {
					rd := dupnak.CompleteRead(p, 2*p.MTU(), 0)
					newest = rd.PSN.Add(1)
				}
				d := p.Packet(wire.SendOnly, c.start.Add(-2))
				d.Payload, d.AckReq = make([]byte, 16), true
				p.Send(d)
				recs := p.Collect(dupnak.Liveness)
				p.Own(func() { dupnak.NoNAK(p, recs, "a duplicate SEND is answered with an ACK") })
				acks := dupnak.Acks(recs)
				if len(acks) == 0 {
					p.Fail([]string{fmt.Sprintf("an ACK with PSN %d, the newest completed request, answering the duplicate at PSN %d (it carried AckReq)", newest, d.PSN)},
						"no ACK", nil)
				}
				for _, a := range acks {
					if a.Packet.PSN != newest {
						p.Fail([]string{fmt.Sprintf("an ACK with PSN %d, the most recently completed new request (%s)", newest, why)},
							a.Packet.String(), a)
					}
				}
				if n := dupnak.RecvCompletions(p); n != 0 {
					p.Fail([]string{"no receive completion for the duplicate (it is not executed again)"},
						fmt.Sprintf("%d new receive completion(s)", n), nil)
				}
				dupnak.Alive(p, "the next new request is taken in sequence")
			})
	}
})
