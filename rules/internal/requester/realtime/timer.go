package realtime

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-140 in real time: the transport timer fires no sooner than
// 4.096 µs × 2^timeout after the previous transmission, and never with
// timeout 0.
func timerScenarios(r *rulekit.R) {
	for _, tc := range []struct {
		timeout uint8
		start   wire.PSN
	}{{10, 0xFFFFFF}, {12, 40}, {14, 0x7FFFFF}} {
		d := wire.AckTimeout(tc.timeout)
		active(r, fmt.Sprintf("timeout %d (%v), retry count 2: an unanswered SEND is sent three times, each no sooner than the interval after the one before, then retry-exceeded",
			tc.timeout, d), Scenario(1024, tc.start, tc.timeout, 2, 0), func(x *Run) {
			round := x.First(tc.start, requester.SendWR(1, 32))
			round = x.Script(round, Repeat(Timeout, 2), 0)
			x.Exhaust(round, Timeout, 0, 1, dut.StatusRetryExceeded)
		})
	}
	active(r, "timeout 13: a 3-packet RDMA WRITE left unanswered is resent whole, no sooner than the interval", Scenario(256, 0xFFFFFE, 13, 3, 0), func(x *Run) {
		round := x.First(0xFFFFFE, x.WriteWR(1, 700, 0))
		round = x.FailRound(round, Timeout, 0, "the go-back-N of the unanswered WRITE")
		x.AnswerAll(round)
		x.Succeed("the resent WRITE was acknowledged", 1)
	})
	active(r, "timeout 0 disables the timer: an unanswered SEND is never retransmitted", Scenario(1024, 500, 0, 7, 0), func(x *Run) {
		round := x.First(500, requester.SendWR(1, 16))
		x.Quiet("retransmission: a local ACK timeout of 0 disables the transport timer", x.quietFor()+500*time.Millisecond)
		x.NoCompletion(1, "with the timer disabled the request waits for its acknowledgment")
		x.ExpectState(dut.StateRTS, "no timer can have expired")
		x.AnswerAll(round)
		x.Succeed("the request was answered at last", 1)
	})
	active(r, "timeout 14: an ACK at half the interval stops the timer, nothing is retransmitted", Scenario(1024, 77, 14, 7, 0), func(x *Run) {
		round := x.First(77, requester.SendWR(1, 16))
		if left := x.Timeout/2 - (x.Conn.Now() - round[0].Time); left > 0 {
			if rec := x.Next(left); rec != nil {
				// Only what left before the interval is early; a packet
				// later than that means the harness overslept (a loaded
				// host), and the ACK can no longer come in time.
				x.AtLeast(rec.Time-round[0].Time, x.Timeout, fmt.Sprintf("the first transmission of PSN %d", rec.Packet.PSN), rec)
				rulekit.Indeterminate(fmt.Sprintf("the harness woke %v after the SEND, past the interval %v, so it could not acknowledge it at half the interval (a loaded host)",
					x.Conn.Now()-round[0].Time, x.Timeout))
			}
		}
		if late := x.Conn.Now() - round[0].Time; late >= x.Timeout-x.T.Tol {
			rulekit.Indeterminate(fmt.Sprintf("the harness could send its ACK only %v after the SEND, not before the interval %v ended (a loaded host)", late, x.Timeout))
		}
		x.AnswerAll(round)
		x.Succeed("the SEND was acknowledged in time", 1)
		x.Quiet("retransmission of an acknowledged request", x.quietFor())
	})
}

func init() { byClause["C9-140"] = timerScenarios }
