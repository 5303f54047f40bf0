package responses

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/realclock"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// MidStreamScenarios registers the active scenarios of the meaning C9-100
// and C9-112 share: a long READ streams, the device's memory region is
// invalidated part-way (as deregistering it would), and the response must
// end with one Acknowledge NAK whose PSN is the first response PSN not yet
// sent, with no READ response data after it. Each clause's spec file calls
// it, so both clause numbers carry the same scenarios.
//
// On a real clock the READ is realclock.LongReal packets long whatever the
// case says: the invalidation goes through the device's control path
// (milliseconds), and a software device streams a few dozen packets well
// within that, finishing before the region goes away (every run on
// soft-RoCE was undecided with 48 packets). The same on a virtual clock
// behind a slow link (realclock.LongPackets), where the harness sees the
// k-th packet only when many more have left.
func MidStreamScenarios(r *rulekit.R) {
	type tc struct {
		mtu     int
		start   wire.PSN
		packets int
		after   int // response packets received before the region is invalidated (0: before the READ arrives)
	}
	cases := []tc{
		{256, 1000, 48, 1},
		{256, 1000, 48, 5},
		{256, 1000, 48, 40},
		{1024, 50, 32, 2},
		{1024, 50, 32, 16},
		{4096, 7, 24, 3},
		{512, 0xFFFFF8, 32, 4}, // the NAK's PSN lies past the 2^24 wrap
		{2048, 333, 16, 0},
	}
	for _, c := range cases {
		c := c
		name := fmt.Sprintf("a %d-packet READ at MTU %d whose region is invalidated after %d response packets", c.packets, c.mtu, c.after)
		if c.after == 0 {
			name = fmt.Sprintf("a %d-packet READ at MTU %d whose region is invalidated before the READ arrives", c.packets, c.mtu)
		}
		if c.start.Add(c.packets).Before(c.start) {
			name += ", across the 2^24 wrap"
		}
		r.Active(name, rulekit.Scenario{Config: dut.ConnConfig{MTU: c.mtu, ExpectedPSN: c.start, SetPSNs: true, MemorySize: realclock.LongMemory(c.mtu, 0)},
			Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) {
				packets := c.packets
				if realclock.LongPackets(p.Conn) == realclock.LongReal {
					packets = realclock.LongReal
				}
				runMidStream(p, packets*c.mtu, c.packets*c.mtu, c.after)
			})
	}
}

// invalidate invalidates the device region's R_Key (unsupported when the
// adapter cannot).
func invalidate(p *harness.Peer) {
	if err := p.Conn.InvalidateRKey(); err != nil {
		ginkgo.Skip(fmt.Sprintf("unsupported: the adapter cannot invalidate the region's R_Key: %v", err))
	}
}

func isReadResponse(k *wire.Packet) bool { return k.Opcode.Class() == wire.ClassReadResponse }

// runMidStream runs one scenario: a READ of length bytes (the first fill
// of them written with a pattern first), the region invalidated once after
// response packets have arrived.
func runMidStream(p *harness.Peer, length, fill, after int) {
	ginkgo.GinkgoHelper()
	Fill(p, 0, fill)
	rd := p.Read(length, 0)
	n := wire.ReadResponsePackets(rd.RETH.Length, p.MTU())
	if after == 0 {
		// Before the READ is sent: on a real clock the invalidation goes
		// through the device's control path and would land after the
		// READ, which travels the wire in microseconds.
		invalidate(p)
	}
	p.Send(rd)
	var recs []*trace.Record
	for got := 0; got < after; {
		var rec *trace.Record
		var skipped []*trace.Record
		p.Step("C9-116", "the device answers the READ", func() { rec, skipped = p.Expect("READ response packets", Liveness, isReadResponse) })
		recs = append(recs, skipped...)
		recs = append(recs, rec)
		got++
	}
	if after > 0 {
		invalidate(p)
	}
	recs = append(recs, p.CollectQuiet(Liveness)...)
	resp := Responses(recs)

	// Find where the response ended.
	sent := 0
	var nak *trace.Record
	for _, rec := range resp {
		k := rec.Packet
		if k.Opcode == wire.Acknowledge && answers.NAKKind(k) {
			nak = rec
			break
		}
		if isReadResponse(k) && answers.NAKKind(k) {
			nak = rec
			break
		}
		if isReadResponse(k) {
			sent++
		}
	}
	next := rd.PSN.Add(sent)
	want := []string{fmt.Sprintf("READ response packets with PSNs %d.. up to some PSN x, then one Acknowledge (opcode 0x11) with a NAK syndrome and PSN x+1, the first response packet not sent, and no READ response after it", rd.PSN)}
	if nak == nil {
		if sent >= n {
			// The device finished the stream before the invalidation took
			// effect (a fast device on a real clock): this run cannot show
			// how it ends a READ mid-stream.
			if after == 0 {
				// Invalidated before the READ was sent, and still answered
				// in full: the invalidation never reached the device's
				// R_Key check, so nothing here shows a READ failing.
				rulekit.Indeterminate(fmt.Sprintf("all %d response packets came although the region was invalidated before the READ was sent: the invalidation did not take effect on the device, so no READ failed mid-stream", n))
			}
			rulekit.Indeterminate(fmt.Sprintf("all %d response packets left before the region's invalidation took effect (the device finished first)", n))
		}
		p.Fail(want, fmt.Sprintf("%d response packets and no NAK: %s", sent, Summary(resp)), nil)
	}
	k := nak.Packet
	if k.Opcode != wire.Acknowledge {
		// The opcode every NAK must have is C9-113.a1's; the PSN of the
		// NAK ending the stream is this clause's.
		p.Setup("C9-113.a1", "the NAK ending the stream is an Acknowledge", func() {
			p.Fail([]string{"an Acknowledge (opcode 0x11) carrying the NAK"}, fmt.Sprintf("the NAK in %s with PSN %d", k.Opcode, k.PSN), nak)
		})
		p.Fail(want, fmt.Sprintf("after %d response packets the refused packet went out as %s with PSN %d carrying %s, not as an Acknowledge",
			sent, k.Opcode, k.PSN, k.AETH), nak)
	}
	if k.PSN != next {
		what := ""
		if k.PSN == rd.PSN && sent > 0 {
			what = " (the READ request's own PSN)"
		}
		p.Fail(want, fmt.Sprintf("after %d response packets (PSNs %d..%d) the NAK carries PSN %d%s instead of %d",
			sent, rd.PSN, next.Add(-1), k.PSN, what, next), nak)
	}
	// Nothing of the READ after the NAK.
	after2 := false
	for _, rec := range resp {
		if rec == nak {
			after2 = true
			continue
		}
		if after2 && isReadResponse(rec.Packet) {
			p.Fail(want, fmt.Sprintf("READ response %s with PSN %d after the NAK", rec.Packet.Opcode, rec.Packet.PSN), rec)
		}
	}
	p.Collect(time.Millisecond)
}
