package s9_9_2_2

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/realtime"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// §9.9.2.2, in our words: only the sequence-error NAK and the RNR NAK ask
// the requester to retry. A NAK for an invalid request, a remote access
// error or a remote operational error reports a failure the requester
// must hand to its client at once: the work request completes with the
// matching status on the first such NAK, nothing is retried (so neither
// retry counter is spent, and with both counters at 0 the status is still
// the NAK's, not an exceeded counter's), the QP moves to ERROR, the work
// requests behind it are flushed, and nothing more is sent. The harness
// plays the responder and answers with each NAK code.

// timeout is the device's local ACK timeout (4.2 ms): a retry would show
// well within the harness's wait.
const timeout = 10

var statusOf = map[uint8]dut.Status{
	wire.NAKInvalidRequest: dut.StatusRemoteInvalidRequest,
	wire.NAKRemoteAccess:   dut.StatusRemoteAccessError,
	wire.NAKRemoteOp:       dut.StatusRemoteOperationalError,
}

var codeName = map[uint8]string{
	wire.NAKInvalidRequest: "invalid request",
	wire.NAKRemoteAccess:   "remote access error",
	wire.NAKRemoteOp:       "remote operational error",
}

func scenario(mtu int, start wire.PSN, counters uint8, atomics bool) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: mtu, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true,
			Timeout: timeout, RetryCnt: counters, RNRRetry: counters},
		Needs:             rulekit.Needs{PostWR: true, Completions: true, VirtualTime: true, Atomics: atomics},
		DeviceIsRequester: true,
	}
}

// fatal sends the NAK and checks the outcome: wr completes with the
// NAK's status, the QP is in ERROR, flushed lists the work requests
// flushed behind it, and the device sends nothing more.
func fatal(rs *requester.Responder, psn wire.PSN, code uint8, wr uint64, flushed ...uint64) {
	rs.NAK(psn, code)
	rs.EndsWith(wr, statusOf[code], requester.Liveness, retries.ActiveReaction,
		fmt.Sprintf("work request %d completing with %q on the first NAK (%s), with no retry and nothing more sent", wr, statusOf[code], codeName[code]))
	rs.ExpectState(dut.StateError, "a non-retryable NAK moves the QP to ERROR")
	for _, id := range flushed {
		rs.ExpectStatus(id, dut.StatusFlushed, requester.Liveness, "work requests behind the failed one are flushed in ERROR")
	}
	rs.Quiet("request (retry or new) after a non-retryable NAK", 10*wire.AckTimeout(timeout))
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	realtime.Scenarios(r) // the same rules on a real clock (live devices)
	type opCase struct {
		name    string
		mtu     int
		atomics bool
		wr      func(rs *requester.Responder) dut.WR
	}
	ops := []opCase{
		{"SEND", 1024, false, func(*requester.Responder) dut.WR { return requester.SendWR(1, 64) }},
		{"3-packet RDMA WRITE", 256, false, func(rs *requester.Responder) dut.WR { return rs.WriteWR(1, 700, 0) }},
		{"RDMA READ", 1024, false, func(rs *requester.Responder) dut.WR { return rs.ReadWR(1, 3000, 0) }},
		{"FetchAdd", 1024, true, func(rs *requester.Responder) dut.WR { return rs.FetchAddWR(1, 8, 5) }},
	}
	for _, code := range []uint8{wire.NAKInvalidRequest, wire.NAKRemoteAccess, wire.NAKRemoteOp} {
		for _, oc := range ops {
			for _, counters := range []uint8{0, 7} {
				code, oc, counters := code, oc, counters
				start := wire.PSN(0xFFFFFE)
				r.Active(fmt.Sprintf("NAK %s on a %s, retry and RNR counts %d: reported at once, QP in ERROR, nothing retried", codeName[code], oc.name, counters),
					scenario(oc.mtu, start, counters, oc.atomics), func(p *harness.Peer) {
						rs := requester.NewResponder(p)
						rs.PostAndReceive(start, oc.wr(rs), requester.SendWR(2, 16))
						fatal(rs, start, code, 1, 2)
					})
			}
		}
	}

	// Several messages: the first acknowledged, the second NAKed, the
	// rest flushed.
	r.Active("four SENDs: the first acknowledged, the second NAKed remote operational error, the rest flushed", scenario(1024, 40, 7, false), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		for i := 1; i <= 4; i++ {
			rs.Post(requester.SendWR(uint64(i), 16))
		}
		for i := 0; i < 4; i++ {
			rs.ExpectPSN("the SENDs, in order", requester.Liveness, wire.PSN(40+i))
		}
		rs.ACK(40)
		rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "acknowledged")
		fatal(rs, 41, wire.NAKRemoteOp, 2, 3, 4)
	})

	// A NAK naming a packet in the middle of a multi-packet WRITE.
	r.Active("a NAK remote operational error on the third packet of a 5-packet WRITE", scenario(512, 0xFFFFFF, 7, false), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		rs.PostAndReceive(0xFFFFFF, rs.WriteWR(1, 5*512, 0), requester.SendWR(2, 8))
		fatal(rs, 1, wire.NAKRemoteOp, 1, 2)
	})

	// A READ whose response stream breaks off with a NAK (the responder
	// failed mid-stream: the NAK names the refused response's PSN).
	r.Active("a READ answered with two responses, then a NAK remote access error for the third", scenario(1024, 600, 7, false), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		rs.Post(rs.ReadWR(1, 4*1024, 0))
		req := rs.ExpectPSN("the READ request", requester.Liveness, 600)
		rs.SendAll(rs.ReadResponses(req.Packet, 600, 2)...)
		fatal(rs, 602, wire.NAKRemoteAccess, 1)
	})
})
