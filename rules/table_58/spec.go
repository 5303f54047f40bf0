package table_58

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

// Table 58, in our words: a READ or ATOMIC arriving while all the
// negotiated READ/ATOMIC responder resources are in use is answered with
// a NAK invalid request, not an RNR NAK (and not served). Each scenario
// configures the device with N responder resources and sends N+1 large
// READs (or N READs and an ATOMIC) back to back, so the first N are still
// being answered when the last arrives. Expected: the first N answered,
// a NAK invalid request whose PSN is the last request's (the expected
// PSN, C9-125), no response to the last, and the QP in ERROR afterwards.

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		n      int
		mtu    int
		start  wire.PSN
		atomic bool
	}
	cases := []tc{
		{1, 1024, 100, false},
		{2, 256, 2000, false},
		{4, 4096, 3000, false},
		{3, 512, 0xFFFFF0, false},
		{2, 1024, 5000, true},
	}
	for _, c := range cases {
		c := c
		cfg := dupnak.Cfg(c.mtu, c.start)
		cfg.MaxDestRdAtomic = c.n
		last := "READ"
		if c.atomic {
			last = "ATOMIC"
		}
		r.Active(fmt.Sprintf("%d responder resources, %d READs and one %s more back to back (MTU %d, PSNs from %d)", c.n, c.n, last, c.mtu, c.start),
			// The extra request must arrive while the others still hold
			// their resources: on a real clock, a run where the device
			// answered one of them in full before the extra request can
			// have reached it is indeterminate (realclock).
			rulekit.Scenario{Config: cfg, Needs: rulekit.Needs{Completions: true, Atomics: c.atomic}},
			func(p *harness.Peer) {
				m := p.MTU()
				var reads []*wire.Packet
				for i := 0; i < c.n; i++ {
					reads = append(reads, p.Read(32*m, 0))
				}
				var extra *wire.Packet
				if c.atomic {
					extra = p.Atomic(wire.FetchAdd, 64, 1, 0)
				} else {
					extra = p.Read(32*m, 0)
				}
				p.Send(append(reads, extra)...)
				sent := p.Conn.Now()
				recs := p.Collect(dupnak.Liveness)
				firstLast := reads[0].PSN.Add(wire.ReadResponsePackets(reads[0].RETH.Length, m) - 1)
				firstDone := realclock.Find(recs, func(r *trace.Record) bool {
					return r.Packet.Opcode.Class() == wire.ClassReadResponse && r.Packet.PSN == firstLast
				})
				for _, rd := range reads {
					last := rd.PSN.Add(wire.ReadResponsePackets(rd.RETH.Length, m) - 1)
					realclock.FinishedFirst(p.Conn, realclock.Find(recs, func(r *trace.Record) bool {
						return r.Packet.Opcode.Class() == wire.ClassReadResponse && r.Packet.PSN == last
					}), sent, fmt.Sprintf("the READ at PSN %d", rd.PSN), "the request beyond the responder resources")
				}
				want := fmt.Sprintf("a NAK invalid request with PSN %d, the %s beyond the %d responder resources (and the expected PSN)", extra.PSN, extra.Opcode, c.n)
				type wireRec struct {
					k   *wire.Packet
					rec *trace.Record
				}
				var nak *wireRec
				for _, rec := range recs {
					k := rec.Packet
					switch {
					case k.Opcode == wire.Acknowledge && !k.AETH.IsACK():
						if nak == nil {
							nak = &wireRec{rec.Packet, rec}
						}
					case k.PSN == extra.PSN && (k.Opcode.Class() == wire.ClassReadResponse && k.Opcode.StartsMessage() || k.Opcode == wire.AtomicAcknowledge):
						// The first packet of an answer to the extra request
						// (a response numbered off by one, C9-96's concern,
						// may put another packet at its PSN).
						// On a real clock a device that answers one READ at a
						// time may take the next request from its receive
						// queue only once the oldest READ is answered: it
						// then holds fewer READs than its resources, and
						// serving the request is legal (realclock).
						realclock.ServedLate(p.Conn, firstDone, rec, fmt.Sprintf("the READ at PSN %d", reads[0].PSN), "the request beyond the responder resources")
						p.Fail([]string{want}, fmt.Sprintf("%s: the request beyond the responder resources was served", k), rec)
					}
				}
				if nak == nil {
					p.Fail([]string{want}, "no NAK", nil)
				}
				if k := nak.k; !k.AETH.IsNAK(wire.NAKInvalidRequest) || k.PSN != extra.PSN {
					p.Fail([]string{want}, k.String(), nak.rec)
				}
				for _, rd := range reads {
					if len(dupnak.ReadResponses(recs, rd.PSN, rd.PSN)) == 0 {
						for _, rec := range recs {
							if k := rec.Packet; k.Opcode.Class() == wire.ClassReadResponse && k.Opcode.StartsMessage() && k.PSN == rd.PSN.Next() {
								// Answered, one PSN off: C9-96's finding.
								p.Setup("C9-96", "READ responses numbered from the request's PSN", func() {
									p.Fail([]string{fmt.Sprintf("the READ at PSN %d answered from its PSN", rd.PSN)}, k.String(), rec)
								})
							}
						}
						p.Fail([]string{fmt.Sprintf("the READ at PSN %d, within the responder resources, answered", rd.PSN)}, "no response to it", nil)
					}
				}
				if st, err := p.Conn.State(); err != nil || st != dut.StateError {
					p.Fail([]string{"the device QP in ERROR after the invalid request NAK"}, fmt.Sprintf("%v (%v)", st, err), nak.rec)
				}
			})
	}
})
