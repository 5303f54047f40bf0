package c9_140

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/realtime"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-140, in our words: the requester's transport timer runs for
// 4.096 µs × 2^timeout (timeout being the 5-bit local ACK timeout) from
// when a request leaves, and a timeout of 0 disables it. The harness plays
// the responder, stays silent, and measures on the device's virtual clock
// when the device retransmits: never sooner than the interval after the
// previous transmission, and never at all with timeout 0. Only the lower
// bound is the clause's; how late a timer may fire is the device's
// choice, so the scenarios wait up to twice the interval plus the
// harness's 100 ms liveness bound.

func scenario(timeout uint8, retry uint8, start wire.PSN, mtu int) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: mtu, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true,
			Timeout: timeout, RetryCnt: retry, RNRRetry: 7},
		Needs:             rulekit.Needs{PostWR: true, Completions: true, VirtualTime: true},
		DeviceIsRequester: true,
	}
}

// expectResend waits for the retransmission of orig and checks that it
// repeats orig and comes no sooner than d after prev.
func expectResend(rs *requester.Responder, orig, prev *trace.Record, d time.Duration, what string) *trace.Record {
	rec := rs.ExpectPSN(what, requester.Upper(d), orig.Packet.PSN)
	if ok, diff := requester.Same(orig.Packet, rec.Packet); !ok {
		rs.Fail([]string{"a retransmission that repeats the original packet"}, diff, rec)
	}
	if gap := rec.Time - prev.Time; gap < d {
		rs.Fail([]string{fmt.Sprintf("a retransmission no sooner than the transport timer interval %v after the previous transmission (at %v)", d, prev.Time)},
			fmt.Sprintf("PSN %d retransmitted after %v", rec.Packet.PSN, gap), rec)
	}
	return rec
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	realtime.Scenarios(r) // the same rules on a real clock (live devices)
	// Every few timeout values across the 5-bit range's practical part,
	// a single SEND left unanswered: two retransmissions, each at least
	// one interval after the transmission before it.
	for _, tc := range []struct {
		timeout uint8
		start   wire.PSN
	}{{1, 100}, {3, 0xFFFFFF}, {5, 7}, {8, 1 << 20}, {10, 0xFFFFFE}, {12, 42}, {14, 9000}, {16, 3}, {18, 0x800000}, {20, 55}} {
		tc := tc
		d := wire.AckTimeout(tc.timeout)
		r.Active(fmt.Sprintf("timeout %d (%v): an unanswered SEND is retransmitted no sooner than the interval, twice", tc.timeout, d),
			scenario(tc.timeout, 3, tc.start, 1024), func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				rs.Post(requester.SendWR(1, 64))
				first := rs.ExpectPSN("the SEND's first transmission", requester.Liveness, tc.start)
				again := expectResend(rs, first, first, d, "the first retransmission of the unanswered SEND")
				expectResend(rs, first, again, d, "the second retransmission")
			})
	}

	// Timeout 0 disables the timer: nothing is retransmitted, however
	// long the harness stays silent, and the work waits.
	for _, tc := range []struct {
		name string
		wr   func(rs *requester.Responder) dut.WR
		mtu  int
	}{
		{"a SEND", func(*requester.Responder) dut.WR { return requester.SendWR(1, 100) }, 1024},
		{"a 4-packet RDMA WRITE", func(rs *requester.Responder) dut.WR { return rs.WriteWR(1, 1024, 0) }, 256},
		{"an RDMA READ", func(rs *requester.Responder) dut.WR { return rs.ReadWR(1, 3000, 0) }, 1024},
	} {
		tc := tc
		r.Active("timeout 0: "+tc.name+" left unanswered for 10 s is never retransmitted", scenario(0, 7, 0xFFFFF0, tc.mtu), func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			sent := rs.PostAndReceive(0xFFFFF0, tc.wr(rs))
			rs.Quiet("retransmission: a local ACK timeout of 0 disables the transport timer", 10*time.Second)
			rs.NoCompletion(1, "with the timer disabled the request waits for its acknowledgment")
			rs.ExpectState(dut.StateRTS, "no timer can have expired")
			last := sent[len(sent)-1]
			rs.Answer(last)
			rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the request was answered at last")
		})
	}

	// With no retries, the one expiry ends the work request: its
	// completion shows when the timer fired, which is never sooner than
	// the interval.
	for _, timeout := range []uint8{4, 10, 16} {
		timeout := timeout
		d := wire.AckTimeout(timeout)
		r.Active(fmt.Sprintf("timeout %d (%v), retry count 0: retry-exceeded completes no sooner than the interval", timeout, d),
			scenario(timeout, 0, 500, 1024), func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				rs.Post(requester.SendWR(1, 10))
				first := rs.ExpectPSN("the SEND", requester.Liveness, 500)
				c := rs.Completion(1, requester.Upper(d))
				if c.Status != dut.StatusRetryExceeded {
					rs.Fail([]string{"a retry-exceeded completion when the only interval expires"}, c.Status.String(), nil)
				}
				if c.Time-first.Time < d {
					rs.Fail([]string{fmt.Sprintf("the timer expiring no sooner than %v after the request left (at %v)", d, first.Time)},
						fmt.Sprintf("the work request ended %v after the request left", c.Time-first.Time), first)
				}
			})
	}

	// An acknowledgment just before the interval ends stops the timer:
	// no retransmission follows.
	r.Active("an ACK at 90% of the interval prevents any retransmission", scenario(12, 7, 77, 1024), func(p *harness.Peer) {
		d := wire.AckTimeout(12)
		rs := requester.NewResponder(p)
		rs.Post(requester.SendWR(1, 10))
		first := rs.ExpectPSN("the SEND", requester.Liveness, 77)
		rs.Quiet("retransmission before the transport timer interval", d*9/10-(p.Conn.Now()-first.Time))
		rs.ACK(77)
		rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the SEND was acknowledged in time")
		rs.Quiet("retransmission of an acknowledged request", 3*d)
	})

	// A partial acknowledgment re-arms the timer against the oldest
	// request still outstanding: its retransmission comes no sooner than
	// the interval after that request itself left.
	r.Active("a partial ACK re-arms the timer against the new oldest request", scenario(14, 7, 0xFFFFFF, 1024), func(p *harness.Peer) {
		d := wire.AckTimeout(14)
		rs := requester.NewResponder(p)
		rs.Post(requester.SendWR(1, 10))
		first := rs.ExpectPSN("the first SEND", requester.Liveness, 0xFFFFFF)
		rs.Quiet("retransmission before the transport timer interval", d/2)
		rs.Post(requester.SendWR(2, 10))
		second := rs.ExpectPSN("the second SEND", requester.Liveness, 0)
		rs.Quiet("retransmission before the transport timer interval", first.Time+d*3/4-p.Conn.Now())
		rs.ACK(0xFFFFFF)
		rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the first SEND was acknowledged")
		expectResend(rs, second, second, d, "the retransmission of the second SEND, still unanswered")
		rs.ACK(0)
		rs.ExpectStatus(2, dut.StatusSuccess, requester.Liveness, "the second SEND was acknowledged")
	})

	// Multi-packet messages and READs: the go-back-N that the timer
	// starts comes no sooner than the interval after the oldest
	// outstanding packet left.
	for _, tc := range []struct {
		name string
		mtu  int
		wr   func(rs *requester.Responder) dut.WR
	}{
		{"a 4-packet RDMA WRITE", 256, func(rs *requester.Responder) dut.WR { return rs.WriteWR(1, 1000, 64) }},
		{"a 3-packet SEND", 4096, func(*requester.Responder) dut.WR { return requester.SendWR(1, 3*4096) }},
		{"an RDMA READ of 8 MTUs", 512, func(rs *requester.Responder) dut.WR { return rs.ReadWR(1, 8*512, 0) }},
	} {
		tc := tc
		r.Active("timeout 10: "+tc.name+" left unanswered is resent no sooner than the interval", scenario(10, 3, 1000, tc.mtu), func(p *harness.Peer) {
			d := wire.AckTimeout(10)
			rs := requester.NewResponder(p)
			sent := rs.PostAndReceive(1000, tc.wr(rs))
			again := expectResend(rs, sent[0], sent[0], d, "the retransmission starting at the oldest unacknowledged PSN")
			rest := []*trace.Record{again}
			for i := 1; i < len(sent); i++ {
				rec := rs.ExpectPSN("the go-back-N retransmission, in order", requester.Liveness, sent[i].Packet.PSN)
				rest = append(rest, rec)
			}
			for _, rec := range rest {
				rs.Answer(rec)
			}
			rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the retransmission was answered")
		})
	}
})
