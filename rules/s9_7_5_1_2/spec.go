package s9_7_5_1_2

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/realtime"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// §9.7.5.1.2, in our words: responses come back in PSN order, so an
// acknowledgment whose PSN is later than an outstanding RDMA READ tells
// the requester that the READ's responses (or the rest of them) will not
// come: the READ was implicitly NAKed, and the requester must re-issue it
// from its first response PSN not yet received (or from its start), not
// complete it and not wait for its transport timer. The harness plays the
// responder, withholds READ responses and acknowledges a later request.
// The device's transport timer is set to 1.07 s, so a re-issue within the
// harness's 100 ms liveness bound can only come from the implied NAK.

const timeout = 18

func scenario(mtu int, start wire.PSN) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: mtu, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true,
			Timeout: timeout, RetryCnt: 7, RNRRetry: 7},
		Needs:             rulekit.Needs{PostWR: true, Completions: true, VirtualTime: true},
		DeviceIsRequester: true,
	}
}

// expectReissue expects the READ req to be re-issued from a response PSN
// no later than its missing-th, as an exact subset, before anything else.
func expectReissue(rs *requester.Responder, req *trace.Record, missing int, why string) *trace.Record {
	o := req.Packet
	mtu := rs.Info.MTU
	again := rs.Expect(fmt.Sprintf("the READ at PSN %d re-issued (%s)", o.PSN, why), requester.Liveness,
		func(k *wire.Packet) bool { return k.Opcode.IsRequest() })
	k := again.Packet
	d := k.PSN.Diff(o.PSN)
	off := uint64(max(d, 0)) * uint64(mtu)
	ok := k.Opcode == wire.ReadRequest && d >= 0 && d <= missing && (d == 0 || off < uint64(o.RETH.Length)) &&
		k.RETH == wire.RETH{VA: o.RETH.VA + off, RKey: o.RETH.RKey, Length: o.RETH.Length - uint32(min(off, uint64(o.RETH.Length)))}
	if !ok {
		var want []string
		for i := 0; i <= missing; i++ {
			off := uint64(i) * uint64(mtu)
			if i > 0 && off >= uint64(o.RETH.Length) {
				break
			}
			want = append(want, fmt.Sprintf("READ PSN %d va=0x%x rkey=0x%x len=%d", o.PSN.Add(i), o.RETH.VA+off, o.RETH.RKey, o.RETH.Length-uint32(off)))
		}
		rs.Fail(want, k.String(), again)
	}
	return again
}

// finish answers whatever the device sends until every listed work
// request has completed, and checks they all succeeded.
func finish(rs *requester.Responder, first *trace.Record, ids map[uint64]int) {
	if first != nil {
		rs.Answer(first)
	}
	for i := 0; i < 64; i++ {
		rec := rs.Next(requester.Liveness)
		if rec == nil {
			break
		}
		rs.Answer(rec)
	}
	for id, n := range ids {
		c := rs.ExpectStatus(id, dut.StatusSuccess, requester.Liveness, "every request was answered")
		if n >= 0 && c.Bytes != n {
			rs.Fail([]string{fmt.Sprintf("work request %d completing with %d bytes", id, n)}, fmt.Sprintf("%d bytes", c.Bytes), nil)
		}
	}
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	realtime.Scenarios(r) // the same rules on a real clock (live devices)
	// A READ followed by a SEND; the harness withholds the READ's
	// responses and acknowledges the SEND.
	for _, tc := range []struct {
		length int
		mtu    int
		start  wire.PSN
	}{{0, 1024, 100}, {1, 1024, 200}, {1024, 1024, 300}, {1025, 1024, 0xFFFFFF}, {8 * 1024, 1024, 0xFFFFFC}, {3 * 4096, 4096, 5}, {5*256 - 1, 256, 0x400000}} {
		tc := tc
		r.Active(fmt.Sprintf("a %d-byte READ (MTU %d) passed by the ACK of the SEND after it is re-issued", tc.length, tc.mtu), scenario(tc.mtu, tc.start),
			func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				rs.Post(rs.ReadWR(1, tc.length, 128), requester.SendWR(2, 40))
				req := rs.ExpectPSN("the READ request", requester.Liveness, tc.start)
				n := wire.ReadResponsePackets(uint32(tc.length), tc.mtu)
				send := rs.ExpectPSN("the SEND after the READ's response PSNs", requester.Liveness, tc.start.Add(n))
				rs.ACK(send.Packet.PSN)
				again := expectReissue(rs, req, 0, "an ACK passed it with no response received")
				rs.NoCompletion(1, "none of the READ's data has arrived")
				finish(rs, again, map[uint64]int{1: tc.length, 2: 40})
			})
	}

	// Part of the READ answered, then the later request acknowledged: the
	// re-issue may cover the missing part only, or the whole READ.
	r.Active("a 4-MTU READ with two responses received, passed by an ACK: re-issued from no later than the third response", scenario(1024, 0xFFFFFE),
		func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			rs.Post(rs.ReadWR(1, 4*1024, 0), requester.SendWR(2, 40))
			req := rs.ExpectPSN("the READ request", requester.Liveness, 0xFFFFFE)
			send := rs.ExpectPSN("the SEND", requester.Liveness, wire.PSN(0xFFFFFE).Add(4))
			rs.SendAll(rs.ReadResponses(req.Packet, req.Packet.PSN, 2)...)
			rs.ACK(send.Packet.PSN)
			again := expectReissue(rs, req, 2, "an ACK passed it after two of its four responses")
			rs.NoCompletion(1, "half of the READ's data is missing")
			rs.SendAll(rs.ReadResponses(req.Packet, again.Packet.PSN, -1)...)
			finish(rs, nil, map[uint64]int{1: 4 * 1024, 2: 40})
		})

	// Two READs outstanding, both passed: the older one is re-issued
	// first.
	r.Active("two READs passed by the ACK of a later WRITE: the older is re-issued first", scenario(512, 9000), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		rs.Post(rs.ReadWR(1, 1000, 0), rs.ReadWR(2, 512, 4096), rs.WriteWR(3, 64, 8192))
		r1 := rs.ExpectPSN("the first READ", requester.Liveness, 9000)
		rs.ExpectPSN("the second READ", requester.Liveness, 9002)
		w := rs.ExpectPSN("the WRITE", requester.Liveness, 9003)
		rs.ACK(w.Packet.PSN)
		again := expectReissue(rs, r1, 0, "an ACK passed both READs with no response")
		finish(rs, again, map[uint64]int{1: 1000, 2: 512, 3: 64})
	})

	// The response of a later READ passes an earlier one.
	r.Active("the response of a second READ passes the first, unanswered: the first is re-issued", scenario(1024, 0xFFFFFF), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		rs.Post(rs.ReadWR(1, 2048, 0), rs.ReadWR(2, 100, 4096))
		r1 := rs.ExpectPSN("the first READ", requester.Liveness, 0xFFFFFF)
		r2 := rs.ExpectPSN("the second READ", requester.Liveness, 1)
		rs.SendAll(rs.ReadResponses(r2.Packet, r2.Packet.PSN, -1)...)
		again := expectReissue(rs, r1, 0, "the second READ's response passed it")
		rs.NoCompletion(1, "none of the first READ's data has arrived")
		finish(rs, again, map[uint64]int{1: 2048, 2: 100})
	})
})
