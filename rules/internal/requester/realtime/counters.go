package realtime

import (
	"fmt"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// retry-counter in real time: RetryCnt = n allows n retries, paid by
// timeouts and sequence NAKs alike; the next failure ends the work
// request with retry-exceeded and nothing more is sent (7 included: it
// allows seven retries, not unlimited ones). RNR NAKs spend their own
// budget, never this one.
func retryScenarios(r *rulekit.R) {
	for _, n := range []int{0, 1, 3, 6, 7} {
		start := wire.PSN(0xFFFFFF - wire.PSN(n))
		active(r, fmt.Sprintf("retry count %d, timeouts only: %d transmissions, then retry-exceeded, ERROR and silence", n, n+1),
			Scenario(1024, start, 10, uint8(n), 0), func(x *Run) {
				round := x.First(start, requester.SendWR(1, 32))
				round = x.Script(round, Repeat(Timeout, n), 0)
				x.Exhaust(round, Timeout, 0, 1, dut.StatusRetryExceeded)
			})
	}
	for _, tc := range []struct {
		name   string
		retry  uint8
		script []Failure
		last   Failure
	}{
		{"retry count 2, sequence NAKs only", 2, Repeat(SeqNAK, 2), SeqNAK},
		{"retry count 2, a timeout, a sequence NAK, then a timeout finds none left", 2, []Failure{Timeout, SeqNAK}, Timeout},
	} {
		active(r, tc.name+": two SENDs, the second flushed", Scenario(1024, 3000, 12, tc.retry, 0), func(x *Run) {
			round := x.First(3000, requester.SendWR(1, 16), requester.SendWR(2, 16))
			round = x.Script(round, tc.script, 0)
			x.Exhaust(round, tc.last, 0, 1, dut.StatusRetryExceeded, 2)
		})
	}
	active(r, "retry count 1, RNR retry 3: three RNR NAKs and a timeout are all retried; the second timeout exhausts the transport budget",
		Scenario(1024, 60000, 12, 1, 3), func(x *Run) {
			round := x.First(60000, requester.SendWR(1, 16))
			round = x.Script(round, []Failure{RNR, RNR, RNR, Timeout}, 1)
			x.Exhaust(round, Timeout, 1, 1, dut.StatusRetryExceeded)
		})
}

// rnr-retry in real time: the resend waits at least the NAK's delay, for
// every timer code; RNRRetry = n allows n resends (7: unlimited); the
// next RNR NAK ends the work request with RNR-retry-exceeded.
func rnrScenarios(r *rulekit.R) {
	for code := uint8(0); code < 32; code++ {
		delay := wire.RNRDelay(code)
		// A transport timer at least twice the delay: only the RNR
		// timer can bring the resend.
		timeout := uint8(12)
		for wire.AckTimeout(timeout) < 2*delay {
			timeout++
		}
		start := wire.PSN(0xFFFFF0).Add(int(code))
		active(r, fmt.Sprintf("RNR timer code %d: the SEND is resent no sooner than %v after the RNR NAK", code, delay),
			Scenario(1024, start, timeout, 7, 7), func(x *Run) {
				round := x.First(start, requester.SendWR(1, 48))
				round = x.FailRound(round, RNR, code, "the resend after the RNR NAK")
				x.AnswerAll(round)
				x.Succeed("the resend was acknowledged", 1)
			})
	}
	for _, n := range []int{0, 1, 3} {
		active(r, fmt.Sprintf("RNR retry count %d: %d resends, then RNR-retry-exceeded, ERROR and silence", n, n),
			Scenario(1024, 1000, 12, 7, uint8(n)), func(x *Run) {
				round := x.First(1000, requester.SendWR(1, 16), requester.SendWR(2, 16))
				round = x.Script(round, Repeat(RNR, n), 5)
				x.Exhaust(round, RNR, 5, 1, dut.StatusRNRRetryExceeded, 2)
			})
	}
	active(r, "RNR retry count 7 is unlimited: ten RNR NAKs in a row are all retried", Scenario(1024, 0xFFFFFA, 12, 7, 7), func(x *Run) {
		round := x.First(0xFFFFFA, requester.SendWR(1, 16))
		round = x.Script(round, Repeat(RNR, 10), 3)
		x.AnswerAll(round)
		x.Succeed("the eleventh transmission was acknowledged", 1)
	})
	active(r, "RNR retry 2, retry count 2: two timeouts and two RNR NAKs are all retried; the third RNR NAK exhausts the RNR budget",
		Scenario(1024, 0xFFFFFF, 12, 2, 2), func(x *Run) {
			round := x.First(0xFFFFFF, requester.SendWR(1, 16))
			round = x.Script(round, []Failure{Timeout, RNR, Timeout, RNR}, 2)
			x.Exhaust(round, RNR, 2, 1, dut.StatusRNRRetryExceeded)
		})
}

func init() {
	byClause["retry-counter"] = retryScenarios
	byClause["rnr-retry"] = rnrScenarios
}
