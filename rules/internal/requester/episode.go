package requester

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Failure is one way the harness, as responder, makes a round of requests
// fail.
type Failure uint8

// Failures.
const (
	// FailTimeout: the harness stays silent until the device's transport
	// timer expires.
	FailTimeout Failure = iota
	// FailSeqNAK: the harness answers the round with a PSN-sequence-error
	// NAK naming the round's first PSN (as if that packet was lost).
	FailSeqNAK
	// FailRNR: the harness answers the round's first packet with an RNR
	// NAK.
	FailRNR
)

func (f Failure) String() string {
	return [...]string{"timeout", "sequence NAK", "RNR NAK"}[f%3]
}

// Rounds drives a retry episode: round holds the device's packets of one
// transmission of its outstanding requests (first transmission or a
// go-back-N), and for each failure of script the harness makes the round
// fail and expects the device to go back and send the same packets again,
// in order, with the same PSNs. RNR NAKs carry timer code rnr; timeout is
// the device's transport timer interval. It returns the last round.
func (r *Responder) Rounds(round []*trace.Record, script []Failure, timeout time.Duration, rnr uint8) []*trace.Record {
	ginkgo.GinkgoHelper()
	for i, f := range script {
		wait := r.Fail1(round, f, timeout, rnr)
		round = r.ExpectRound(round, wait, fmt.Sprintf("the go-back-N after failure %d of %d (%v)", i+1, len(script), f))
	}
	return round
}

// Fail1 makes one round fail with f and returns how long the device may
// take to start its resend.
func (r *Responder) Fail1(round []*trace.Record, f Failure, timeout time.Duration, rnr uint8) time.Duration {
	ginkgo.GinkgoHelper()
	first := round[0].Packet.PSN
	switch f {
	case FailSeqNAK:
		r.NAK(first, wire.NAKPSNSequence)
		return Liveness
	case FailRNR:
		r.RNR(first, rnr)
		return Upper(wire.RNRDelay(rnr))
	}
	return Upper(timeout)
}

// ExpectRound expects the device to send the packets of round again, in
// order, each repeating the original, the first within wait.
func (r *Responder) ExpectRound(round []*trace.Record, wait time.Duration, what string) []*trace.Record {
	ginkgo.GinkgoHelper()
	var out []*trace.Record
	for i, orig := range round {
		within := Liveness
		if i == 0 {
			within = wait
		}
		want := fmt.Sprintf("%s: PSN %d again (packet %d of %d)", what, orig.Packet.PSN, i+1, len(round))
		rec := r.Next(within)
		if rec == nil {
			// Whether and when a resend comes is the scenario's own
			// matter (timer, counters), unless the silence cannot be
			// told from a wrong go-back-N (NoResend).
			r.NoResend(orig.Packet.PSN, fmt.Sprintf("%s within %v", want, within))
			r.Fail([]string{fmt.Sprintf("%s within %v", want, within)}, "nothing; "+r.Status(), nil)
			return out
		}
		// What is resent is go-back-n's: unless the scenario is one of
		// go-back-n, a wrong resend is a finding of go-back-n and leaves the
		// scenario's clause undecided. Going back to the round's first PSN
		// again is a second go-back-N (startedOver): round[0] is the oldest
		// unacknowledged PSN, and the harness acknowledges nothing while the
		// round is resent, so that is the only PSN a go-back-N may start from
		// (docs/interpretations.md, "Go-back-N"); going back to the middle of
		// the round is a wrong resend.
		if k := rec.Packet; i > 0 && k.Opcode.IsRequest() && k.PSN == round[0].Packet.PSN {
			r.startedOver("the device resends the round to its end", k, func() {
				r.Fail([]string{fmt.Sprintf("%s within %v, before anything else", want, within)}, k.String(), rec)
			})
		}
		r.Step("go-back-n", fmt.Sprintf("the device goes back to PSN %d and resends the same packets in order", round[0].Packet.PSN), func() {
			if k := rec.Packet; !k.Opcode.IsRequest() || k.PSN != orig.Packet.PSN {
				r.Fail([]string{fmt.Sprintf("%s within %v, before anything else", want, within)}, k.String(), rec)
			}
			if ok, diff := Same(orig.Packet, rec.Packet); !ok {
				r.Fail([]string{"a resent packet that repeats the original, with the same PSN"}, diff, rec)
			}
		})
		out = append(out, rec)
	}
	return out
}

// Exhaust makes the round fail once more with f, when the device has no
// retry left of the kind f costs: the oldest work request wr must
// complete with status want, the QP go to ERROR, the other work requests
// (others) complete as flushed, and nothing more be sent.
func (r *Responder) Exhaust(round []*trace.Record, f Failure, timeout time.Duration, rnr uint8, wr uint64, want dut.Status, others ...uint64) {
	ginkgo.GinkgoHelper()
	wait := r.Fail1(round, f, timeout, rnr)
	if f == FailTimeout {
		wait = Upper(timeout)
	}
	r.EndsWith(wr, want, wait, 0, fmt.Sprintf("no more retries after this %v: the counter it costs is spent, so work request %d ends with %q", f, wr, want))
	r.ExpectState(dut.StateError, "a spent retry counter moves the QP to ERROR")
	for _, id := range others {
		r.ExpectStatus(id, dut.StatusFlushed, Liveness, "work requests behind the failed one are flushed when the QP enters ERROR")
	}
	quiet := 4 * timeout
	if quiet < Liveness {
		quiet = Liveness
	}
	r.Quiet("request from a QP in ERROR", quiet)
}

// Packets returns how many request packets wr takes at path MTU mtu.
func Packets(wr dut.WR, mtu int) int {
	switch wr.Op {
	case dut.OpSend, dut.OpSendImm, dut.OpSendInv, dut.OpWrite, dut.OpWriteImm:
		return wire.ReadResponsePackets(uint32(len(wr.Data)), mtu)
	}
	return 1
}

// PostAndReceive posts wrs and expects their first transmission: every
// request packet in order, PSNs from start on.
func (r *Responder) PostAndReceive(start wire.PSN, wrs ...dut.WR) []*trace.Record {
	ginkgo.GinkgoHelper()
	r.Post(wrs...)
	n := 0
	for _, wr := range wrs {
		n += Packets(wr, r.Info.MTU)
	}
	var out []*trace.Record
	next := start
	for i := 0; i < n; i++ {
		rec := r.ExpectPSN(fmt.Sprintf("the first transmission of the posted requests, in order (packet %d of %d)", i+1, n), Liveness, next)
		out = append(out, rec)
		if rec.Packet.Opcode == wire.ReadRequest {
			next = next.Add(wire.ReadResponsePackets(rec.Packet.RETH.Length, r.Info.MTU))
		} else {
			next = next.Next()
		}
	}
	return out
}

// EndsWith waits up to wait for work request wr to complete with status
// want while the device sends nothing (packets leaving within inFlight of
// now aside, as already on their way); quiet says what the device should
// have done instead of sending.
func (r *Responder) EndsWith(wr uint64, want dut.Status, wait, inFlight time.Duration, quiet string) dut.Completion {
	ginkgo.GinkgoHelper()
	start := r.Conn.Now()
	for {
		if c, ok := r.TryCompletion(wr, 0); ok {
			if c.Status != want {
				r.Fail([]string{fmt.Sprintf("work request %d completes with %q", wr, want)},
					fmt.Sprintf("status %q, %v later", c.Status, c.Time-start), nil)
			}
			return c
		}
		if rec := r.Next(Liveness / 100); rec != nil && rec.Time-start > inFlight {
			r.Fail([]string{quiet}, rec.Packet.String()+"; "+r.Status(), rec)
		}
		if r.Conn.Now()-start > wait {
			r.Fail([]string{fmt.Sprintf("work request %d completing with %q within %v", wr, want, wait)}, "no completion; "+r.Status(), nil)
			return dut.Completion{}
		}
	}
}
