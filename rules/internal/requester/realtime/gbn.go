package realtime

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// go-back-n in real time: after a sequence NAK the requester resends from
// the NAK's PSN, after its timer from the oldest unacknowledged PSN, with
// the same PSNs and contents; a partly answered READ (or one answered with
// a gap) is re-requested as an exact subset.
func gbnScenarios(r *rulekit.R) {
	active(r, "a sequence NAK naming the third of four SENDs: the third and fourth are resent with the same PSNs", Scenario(1024, 0xFFFFFE, 14, 7, 7), func(x *Run) {
		round := x.First(0xFFFFFE, requester.SendWR(1, 20), requester.SendWR(2, 20), requester.SendWR(3, 20), requester.SendWR(4, 20))
		x.Answer(round[1])
		again := x.FailRound(round[2:], SeqNAK, 0, "the go-back-N from the NAK's PSN")
		x.AnswerAll(again)
		x.Succeed("the SENDs are acknowledged", 1, 2, 3, 4)
	})
	active(r, "a sequence NAK naming the second packet of a 4-packet WRITE: resumed from it, mid-message", Scenario(256, 4000, 14, 7, 7), func(x *Run) {
		round := x.First(4000, x.WriteWR(1, 1000, 0))
		again := x.FailRound(round[1:], SeqNAK, 0, "the go-back-N from the NAK's PSN")
		x.AnswerAll(again)
		x.Succeed("the resumed WRITE is acknowledged", 1)
	})
	active(r, "three SENDs, the first acknowledged, then silence: the timer resends from the second", Scenario(1024, 90, 12, 7, 7), func(x *Run) {
		round := x.First(90, requester.SendWR(1, 20), requester.SendWR(2, 20), requester.SendWR(3, 20))
		x.Answer(round[0])
		x.Succeed("the first SEND is acknowledged", 1)
		again := x.FailRound(round[1:], Timeout, 0, "the go-back-N from the oldest unacknowledged PSN")
		x.AnswerAll(again)
		x.Succeed("the resent SENDs are acknowledged", 2, 3)
	})
	for _, rc := range []struct {
		name     string
		mtu      int
		length   int
		answered []int
		start    wire.PSN
	}{
		{"a 4-MTU READ with two responses, then silence", 1024, 4 * 1024, []int{0, 1}, 7000},
		{"a 4-MTU READ answered with a gap (responses 1, 2 and 4)", 512, 4 * 512, []int{0, 1, 3}, 0xFFFFFF},
		{"an 8-MTU READ with its first response only", 256, 8 * 256, []int{0}, 31},
	} {
		active(r, rc.name+": re-requested as an exact subset from no later than the first missing response", Scenario(rc.mtu, rc.start, 12, 7, 7), func(x *Run) {
			req := x.First(rc.start, x.ReadWR(1, rc.length, 64))[0]
			resp := x.ReadResponses(req.Packet, req.Packet.PSN, -1)
			missing := len(resp)
			for i, k := range resp {
				if contains(rc.answered, i) {
					x.SendAll(k)
				} else if i < missing {
					missing = i
				}
			}
			again := x.Expect("a re-request of the READ", x.T.Upper(x.Timeout), func(k *wire.Packet) bool { return k.Opcode.IsRequest() })
			x.Subset(req, again, missing)
			x.SendAll(x.ReadResponses(again.Packet, again.Packet.PSN, -1)...)
			c := x.ExpectStatus(1, dut.StatusSuccess, x.T.Live, "every response of the READ has arrived")
			if c.Bytes != rc.length {
				x.Fail([]string{fmt.Sprintf("a READ completion of %d bytes", rc.length)}, fmt.Sprintf("%d bytes", c.Bytes), nil)
			}
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// §9.7.5.1.2 in real time: an acknowledgment whose PSN passes an
// outstanding READ implies its responses were lost: the READ is re-issued
// (an exact subset at most) and does not complete on the ACK.
func impliedScenarios(r *rulekit.R) {
	for _, tc := range []struct {
		length, mtu, answered int
		start                 wire.PSN
	}{{2048, 1024, 0, 100}, {4 * 1024, 1024, 2, 0xFFFFFE}, {1, 1024, 0, 0x400000}} {
		name := fmt.Sprintf("a %d-byte READ with %d responses received, passed by the ACK of the SEND after it, is re-issued", tc.length, tc.answered)
		active(r, name, Scenario(tc.mtu, tc.start, 12, 7, 7), func(x *Run) {
			round := x.First(tc.start, x.ReadWR(1, tc.length, 128), requester.SendWR(2, 40))
			req, send := round[0], round[1]
			if tc.answered > 0 {
				x.SendAll(x.ReadResponses(req.Packet, req.Packet.PSN, tc.answered)...)
			}
			x.ACK(send.Packet.PSN)
			again := x.Expect("the READ re-issued (the ACK implies its responses were lost)", x.T.Upper(x.Timeout),
				func(k *wire.Packet) bool { return k.Opcode.IsRequest() })
			x.Subset(req, again, tc.answered)
			x.NoCompletion(1, "the READ's data has not all arrived")
			x.Answer(again)
			x.Finish("every response of the READ has arrived and the SEND was acknowledged", 1, 2)
		})
	}
}

var fatalStatus = map[uint8]dut.Status{
	wire.NAKInvalidRequest: dut.StatusRemoteInvalidRequest,
	wire.NAKRemoteAccess:   dut.StatusRemoteAccessError,
	wire.NAKRemoteOp:       dut.StatusRemoteOperationalError,
}

var fatalName = map[uint8]string{
	wire.NAKInvalidRequest: "invalid request",
	wire.NAKRemoteAccess:   "remote access error",
	wire.NAKRemoteOp:       "remote operational error",
}

// §9.9.2.2 in real time: a NAK for an invalid request, a remote access
// error or a remote operational error ends the work request at once with
// its status: no retry, QP in ERROR, the rest flushed, silence.
func fatalScenarios(r *rulekit.R) {
	for _, code := range []uint8{wire.NAKInvalidRequest, wire.NAKRemoteAccess, wire.NAKRemoteOp} {
		for _, oc := range []struct {
			name string
			wr   func(x *Run) dut.WR
		}{
			{"SEND", func(*Run) dut.WR { return requester.SendWR(1, 24) }},
			{"RDMA WRITE", func(x *Run) dut.WR { return x.WriteWR(1, 24, 0) }},
			{"RDMA READ", func(x *Run) dut.WR { return x.ReadWR(1, 24, 0) }},
		} {
			active(r, fmt.Sprintf("NAK %s on a %s: reported at once, nothing retried, QP in ERROR, the next SEND flushed", fatalName[code], oc.name),
				Scenario(1024, 0xFFFFFF, 12, 3, 3), func(x *Run) {
					round := x.First(0xFFFFFF, oc.wr(x), requester.SendWR(2, 8))
					fatal(x, round, code)
				})
		}
	}
}

// label names a stimulus in messages.
type label string

func (l label) String() string { return string(l) }

func fatal(x *Run, round []*trace.Record, code uint8) {
	ginkgo.GinkgoHelper()
	x.react(round, label("NAK "+fatalName[code]))
	at := x.NAK(round[0].Packet.PSN, code)
	want := fatalStatus[code]
	quiet := fmt.Sprintf("no retry after a NAK %s: work request 1 ends with %q", fatalName[code], want)
	// A resend the device's own timer brought, no sooner than its
	// interval after the packet's earliest transmission, may have left
	// before the NAK reached the device (a loaded host): it proves
	// nothing either way. Anything else sent after the NAK is a retry.
	orig := map[wire.PSN]*trace.Record{}
	for _, rec := range round {
		orig[rec.Packet.PSN] = rec
	}
	var timerResend *trace.Record
	start := x.Conn.Now()
	for {
		if c, ok := x.TryCompletion(1, 0); ok {
			if c.Status != want {
				x.Fail([]string{fmt.Sprintf("work request 1 completes with %q", want)}, fmt.Sprintf("status %q", c.Status), nil)
			}
			break
		}
		if rec := x.Next(x.T.Live / 200); rec != nil {
			o := orig[rec.Packet.PSN]
			if o == nil || x.Timeout == 0 || rec.Time < x.earliest(o)+x.Timeout-x.T.Tol {
				x.Fail([]string{quiet}, fmt.Sprintf("%s, %v after the NAK left", rec.Packet, rec.Time-at), rec)
			}
			timerResend = rec
		}
		if x.Conn.Now()-start > x.T.Live {
			x.Fail([]string{fmt.Sprintf("work request 1 completing with %q within %v", want, x.T.Live)}, "no completion; "+x.Status(), nil)
		}
	}
	x.ExpectState(dut.StateError, "a non-retryable NAK moves the QP to ERROR")
	x.ExpectStatus(2, dut.StatusFlushed, x.T.Live, "work requests behind the failed one are flushed in ERROR")
	x.Quiet("request (retry or new) after a non-retryable NAK", x.quietFor())
	if timerResend != nil {
		rulekit.Indeterminate(fmt.Sprintf("the device resent PSN %d %v after the NAK %s left the harness, when its transport timer (%v) had expired: it may have left before the NAK arrived, so whether the NAK was retried cannot be told (a loaded host)",
			timerResend.Packet.PSN, timerResend.Time-at, fatalName[code], x.Timeout))
	}
}

func init() {
	byClause["go-back-n"] = gbnScenarios
	byClause["§9.7.5.1.2"] = impliedScenarios
	byClause["§9.9.2.2"] = fatalScenarios
}
