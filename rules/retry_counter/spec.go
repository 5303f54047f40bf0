package retry_counter

import (
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/realtime"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// retry-counter, in our words: one 3-bit transport retry counter pays for
// both kinds of loss the requester can see, a local ACK timeout and a
// PSN-sequence-error NAK, one retry each; with RetryCnt = n the device goes
// back n times, and the (n+1)th failure ends the oldest work request with
// "transport retry counter exceeded", moves the QP to ERROR (flushing the
// rest) and stops it sending. RNR NAKs spend a different counter and never
// this one. The harness plays the responder and makes every round fail,
// with no acknowledgment in between, so no reload of the counter (whose
// timing the specification leaves open here) can blur the count.

// timeout is the device's local ACK timeout in these scenarios (1.05 ms),
// short so that many rounds stay cheap.
const timeout = 8

func scenario(retry, rnr uint8, start wire.PSN) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: 1024, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true,
			Timeout: timeout, RetryCnt: retry, RNRRetry: rnr},
		Needs:             rulekit.Needs{PostWR: true, Completions: true, VirtualTime: true},
		DeviceIsRequester: true,
	}
}

func repeat(f requester.Failure, n int) []requester.Failure {
	s := make([]requester.Failure, n)
	for i := range s {
		s[i] = f
	}
	return s
}

func names(s []requester.Failure) string {
	var out []string
	for _, f := range s {
		out = append(out, f.String())
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// firstRound posts n SENDs of size bytes and returns their first
// transmission.
func firstRound(rs *requester.Responder, start wire.PSN, n, size int) []*trace.Record {
	var ids []uint64
	for i := 1; i <= n; i++ {
		rs.Post(requester.SendWR(uint64(i), size))
		ids = append(ids, uint64(i))
	}
	var round []*trace.Record
	for i := 0; i < n*wire.ReadResponsePackets(uint32(size), 1024); i++ {
		round = append(round, rs.ExpectPSN("the first transmission of the posted SENDs, in order", requester.Liveness, start.Add(i)))
	}
	return round
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	realtime.Scenarios(r) // the same rules on a real clock (live devices)
	d := wire.AckTimeout(timeout)

	// Timeouts alone, for every retry count: n retransmissions, then the
	// end. 7 has no special meaning for this counter: seven retries.
	for n := 0; n <= 7; n++ {
		n := n
		start := wire.PSN(0xFFFFFF - wire.PSN(n))
		r.Active(fmt.Sprintf("retry count %d, timeouts only: %d retransmissions, then retry-exceeded and ERROR", n, n), scenario(uint8(n), 7, start),
			func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				round := firstRound(rs, start, 1, 32)
				round = rs.Rounds(round, repeat(requester.FailTimeout, n), d, 0)
				rs.Exhaust(round, requester.FailTimeout, d, 0, 1, dut.StatusRetryExceeded)
			})
	}

	// Sequence-error NAKs spend the same counter as timeouts, one each,
	// alone or interleaved, and over several outstanding requests.
	for _, tc := range []struct {
		name   string
		retry  uint8
		script []requester.Failure
		last   requester.Failure
		sends  int
		start  wire.PSN
	}{
		{"retry count 3, sequence NAKs only", 3, repeat(requester.FailSeqNAK, 3), requester.FailSeqNAK, 2, 100},
		{"retry count 1, one sequence NAK then a timeout", 1, []requester.Failure{requester.FailSeqNAK}, requester.FailTimeout, 1, 0xFFFFFF},
		{"retry count 3, timeout, NAK, timeout, then a NAK finds none left", 3,
			[]requester.Failure{requester.FailTimeout, requester.FailSeqNAK, requester.FailTimeout}, requester.FailSeqNAK, 3, 4000},
		{"retry count 5, NAK, NAK, timeout, NAK, timeout, then a timeout finds none left", 5,
			[]requester.Failure{requester.FailSeqNAK, requester.FailSeqNAK, requester.FailTimeout, requester.FailSeqNAK, requester.FailTimeout}, requester.FailTimeout, 2, 0x7FFFFE},
		{"retry count 2, over three outstanding SENDs (the rest are flushed)", 2, repeat(requester.FailTimeout, 2), requester.FailTimeout, 3, 9},
		{"retry count 2, a 3-packet SEND and NAKs", 2, repeat(requester.FailSeqNAK, 2), requester.FailSeqNAK, 1, 0xFFFFFE},
	} {
		tc := tc
		r.Active(tc.name+" ("+names(tc.script)+"; then "+tc.last.String()+")", scenario(tc.retry, 7, tc.start), func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			size := 32
			if strings.Contains(tc.name, "3-packet") {
				size = 3000
			}
			round := firstRound(rs, tc.start, tc.sends, size)
			round = rs.Rounds(round, tc.script, d, 0)
			var others []uint64
			for i := 2; i <= tc.sends; i++ {
				others = append(others, uint64(i))
			}
			rs.Exhaust(round, tc.last, d, 0, 1, dut.StatusRetryExceeded, others...)
		})
	}

	// RNR NAKs never spend this counter: with RetryCnt 2 and RNRRetry 3,
	// three RNR NAKs are all retried and still two timeouts are, before
	// the third timeout ends the work request with retry-exceeded.
	for _, tc := range []struct {
		name   string
		script []requester.Failure
	}{
		{"three RNR NAKs, then two timeouts", []requester.Failure{requester.FailRNR, requester.FailRNR, requester.FailRNR, requester.FailTimeout, requester.FailTimeout}},
		{"RNR, timeout, RNR, timeout, RNR", []requester.Failure{requester.FailRNR, requester.FailTimeout, requester.FailRNR, requester.FailTimeout, requester.FailRNR}},
		{"three RNR NAKs, then two sequence NAKs", []requester.Failure{requester.FailRNR, requester.FailRNR, requester.FailRNR, requester.FailSeqNAK, requester.FailSeqNAK}},
	} {
		tc := tc
		r.Active("retry count 2, RNR retry 3: "+tc.name+" are all retried; the next timeout exhausts the transport counter", scenario(2, 3, 60000), func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			round := firstRound(rs, 60000, 1, 32)
			round = rs.Rounds(round, tc.script, d, 1)
			rs.Exhaust(round, requester.FailTimeout, d, 1, 1, dut.StatusRetryExceeded)
		})
	}
})
