package rnr_retry

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

// rnr-retry, in our words: an RNR NAK says the responder had no receive
// buffer; the requester waits at least the delay the NAK's timer code
// advertises (the RNR timer, not the transport timer), resends, and pays
// one retry from its RNR retry counter, which no timeout or sequence NAK
// touches. RNRRetry = n allows n such retries (7: unlimited); the next RNR
// NAK ends the work request with "RNR retry counter exceeded" and moves
// the QP to ERROR. The harness plays the responder and answers with RNR
// NAKs; timing is measured on the device's virtual clock, from when the
// harness sent the NAK to when the device's resend left.

func scenario(timeout, retry, rnr uint8, start wire.PSN, mtu int) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: mtu, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true,
			Timeout: timeout, RetryCnt: retry, RNRRetry: rnr},
		Needs:             rulekit.Needs{PostWR: true, Completions: true, VirtualTime: true},
		DeviceIsRequester: true,
	}
}

// rnrThenResend sends an RNR NAK for the round's first PSN and expects the
// round again no sooner than the code's delay.
func rnrThenResend(rs *requester.Responder, round []*trace.Record, code uint8) []*trace.Record {
	want := wire.RNRDelay(code)
	at := rs.RNR(round[0].Packet.PSN, code)
	again := rs.ExpectRound(round, requester.Upper(want), fmt.Sprintf("the resend after an RNR NAK with timer code %d (%v)", code, want))
	if gap := again[0].Time - at; gap < want {
		rs.Fail([]string{fmt.Sprintf("a resend no sooner than %v after the RNR NAK (timer code %d)", want, code)},
			fmt.Sprintf("PSN %d resent %v after the RNR NAK", again[0].Packet.PSN, gap), again[0])
	}
	return again
}

func firstRound(rs *requester.Responder, start wire.PSN, wrs ...dut.WR) []*trace.Record {
	rs.Post(wrs...)
	var round []*trace.Record
	n := 0
	for _, wr := range wrs {
		n += wire.ReadResponsePackets(uint32(len(wr.Data)), rs.Info.MTU)
	}
	for i := 0; i < n; i++ {
		round = append(round, rs.ExpectPSN("the first transmission of the posted requests, in order", requester.Liveness, start.Add(i)))
	}
	return round
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	realtime.Scenarios(r) // the same rules on a real clock (live devices)
	// Every timer code of the table: the resend waits at least the
	// advertised delay. The transport timer (67 ms) is shorter than the
	// delays of codes 0 and 24–31: it must not fire meanwhile.
	for code := uint8(0); code < 32; code++ {
		code := code
		want := wire.RNRDelay(code)
		r.Active(fmt.Sprintf("RNR timer code %d: the SEND is resent no sooner than %v after the RNR NAK", code, want),
			scenario(14, 7, 7, wire.PSN(0xFFFFF0).Add(int(code)), 1024), func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				start := wire.PSN(0xFFFFF0).Add(int(code))
				round := firstRound(rs, start, requester.SendWR(1, 48))
				round = rnrThenResend(rs, round, code)
				rs.Answer(round[len(round)-1])
				rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the resend was acknowledged")
			})
	}

	// RNR NAKs on a multi-packet SEND and on a WRITE with immediate: the
	// refused first packet and what followed it are resent after the
	// delay, with the same PSNs.
	r.Active("RNR NAK on the first packet of a 4-packet SEND: the message is resent from it after the delay", scenario(14, 7, 7, 0xFFFFFE, 256),
		func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			round := firstRound(rs, 0xFFFFFE, requester.SendWR(1, 1000))
			round = rnrThenResend(rs, round, 14)
			rs.Answer(round[len(round)-1])
			rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the resend was acknowledged")
		})
	r.Active("RNR NAK on an RDMA WRITE with immediate behind an acknowledged SEND", scenario(14, 7, 7, 300, 1024),
		func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			round := firstRound(rs, 300, requester.SendWR(1, 10))
			rs.Answer(round[0])
			rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the SEND was acknowledged")
			wr := rs.WriteWR(2, 100, 0)
			wr.Op, wr.Imm = dut.OpWriteImm, 0xABCD
			round = firstRound(rs, 301, wr)
			round = rnrThenResend(rs, round, 5)
			rs.Answer(round[0])
			rs.ExpectStatus(2, dut.StatusSuccess, requester.Liveness, "the resend was acknowledged")
		})

	// Every RNR retry count below 7: n resends, then the (n+1)th RNR NAK
	// ends the work request with RNR-retry-exceeded.
	for n := 0; n < 7; n++ {
		n := n
		r.Active(fmt.Sprintf("RNR retry count %d: %d resends, then RNR-retry-exceeded and ERROR", n, n), scenario(14, 7, uint8(n), 1000, 1024),
			func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				round := firstRound(rs, 1000, requester.SendWR(1, 16), requester.SendWR(2, 16))
				for i := 0; i < n; i++ {
					round = rnrThenResend(rs, round, 1)
				}
				rs.Exhaust(round, requester.FailRNR, wire.AckTimeout(14), 1, 1, dut.StatusRNRRetryExceeded, 2)
			})
	}

	// 7 means unlimited: twenty RNR NAKs in a row are all retried.
	r.Active("RNR retry count 7 is unlimited: twenty RNR NAKs are all retried", scenario(14, 7, 7, 0xFFFFFA, 1024), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		round := firstRound(rs, 0xFFFFFA, requester.SendWR(1, 16))
		for i := 0; i < 20; i++ {
			round = rnrThenResend(rs, round, uint8(1+i%3))
		}
		rs.Answer(round[0])
		rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the 21st transmission was acknowledged")
	})

	// Timeouts and sequence NAKs never spend the RNR counter: with
	// RNRRetry 2 and RetryCnt 2, two transport failures and still two RNR
	// NAKs are retried; the third RNR NAK ends with RNR-retry-exceeded.
	for _, tc := range []struct {
		name   string
		script []requester.Failure
	}{
		{"two timeouts, then two RNR NAKs", []requester.Failure{requester.FailTimeout, requester.FailTimeout, requester.FailRNR, requester.FailRNR}},
		{"RNR, timeout, RNR, sequence NAK", []requester.Failure{requester.FailRNR, requester.FailTimeout, requester.FailRNR, requester.FailSeqNAK}},
		{"two sequence NAKs, then two RNR NAKs", []requester.Failure{requester.FailSeqNAK, requester.FailSeqNAK, requester.FailRNR, requester.FailRNR}},
	} {
		tc := tc
		r.Active("RNR retry 2, retry count 2: "+tc.name+" are all retried; the next RNR NAK exhausts the RNR counter", scenario(8, 2, 2, 0xFFFFFF, 1024),
			func(p *harness.Peer) {
				rs := requester.NewResponder(p)
				d := wire.AckTimeout(8)
				round := firstRound(rs, 0xFFFFFF, requester.SendWR(1, 16))
				round = rs.Rounds(round, tc.script, d, 3)
				rs.Exhaust(round, requester.FailRNR, d, 3, 1, dut.StatusRNRRetryExceeded)
			})
	}
})
