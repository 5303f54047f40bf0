// Package realtime holds the requester scenarios that judge a device's
// retry and RNR machines on a real clock as well as on a virtual one: the
// harness plays the responder toward the device's requester through any
// adapter that can post work requests and read completions (the live
// adapter included), and judges only what real time allows.
//
//   - Lower bounds exactly, less the adapter's stated tolerance (the
//     measured round trip and its own timer lateness, never the device's
//     timer granularity; zero on a virtual clock):
//     no retransmission sooner than 4.096 µs × 2^timeout after the
//     previous transmission (C9-140), no resend sooner than an RNR NAK's
//     delay after the NAK left the harness (rnr-retry).
//   - Counts exactly: retry count + 1 transmissions, then a
//     retry-exceeded completion and nothing more (retry-counter); the same
//     for the RNR budget, where 7 means unlimited (rnr-retry); the two
//     budgets independent; no retry after a fatal NAK (§9.9.2.2).
//   - Order exactly: go-back-N from the NAK's PSN or the oldest
//     unacknowledged one, with the same PSNs and contents; a READ
//     re-requested as an exact subset (go-back-n, §9.7.5.1.2).
//   - Upper bounds only as liveness, with a bound generous enough for a
//     loaded machine: how late a timer may fire is not public text
//     (C9-140; docs/interpretations.md, "Transport timer").
//
// Timeouts are small (10 to 14, 4.2 ms to 67 ms) and counts few, so the
// whole set takes seconds on a live device. Each rule's spec file calls
// Scenarios; the scenarios of each clause are in this package's
// clause-named files.
package realtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// Prefix starts every real-time scenario's name, so that a run can pick
// them (ginkgo --focus) and reports tell them from the virtual-clock ones.
const Prefix = "real time: "

// Timing is how exactly time can be judged on a connection.
type Timing struct {
	// Tol is subtracted from every lower bound before it is judged: the
	// adapter's measured round trip and its own timer lateness, never the
	// device's timer granularity (on a virtual clock the link's round
	// trip, which the adapter states).
	Tol time.Duration
	// Tick is the device's timer granularity as the adapter reports it
	// (0: unknown or exact): a finding on an early timer names it.
	Tick time.Duration
	// Live bounds how long the harness waits for what no device timer
	// makes happen (an answer to its own packet, a completion).
	Live time.Duration
	// Real says the clock is real.
	Real bool
}

// tolerancer is implemented by connections on a real clock (dut/live).
type tolerancer interface{ Tolerance() time.Duration }

// ticker is implemented by connections whose adapter knows the device's
// timer granularity (dut/live).
type ticker interface{ TimerTick() time.Duration }

// TimingOf returns the timing of connection c of the suite's adapter.
func TimingOf(c dut.Conn) Timing {
	t := Timing{Live: requester.Liveness}
	if tc, ok := c.(tolerancer); ok {
		t.Tol = tc.Tolerance()
	}
	if tc, ok := c.(ticker); ok {
		t.Tick = tc.TimerTick()
	}
	if d := rulekit.DUT(); d != nil && d.Capabilities().VirtualTime {
		return t
	}
	t.Real, t.Live = true, 2*time.Second
	return t
}

// Upper is the liveness bound for something a device timer of interval
// d makes happen: the specification bounds such timers only from below.
func (t Timing) Upper(d time.Duration) time.Duration { return 4*d + t.Live }

// Scenario is the connection of a real-time requester scenario.
func Scenario(mtu int, start wire.PSN, timeout, retry, rnr uint8) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: mtu, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true, SetRetry: true,
			Timeout: timeout, RetryCnt: retry, RNRRetry: rnr},
		Needs:             rulekit.Needs{PostWR: true, Completions: true},
		DeviceIsRequester: true,
	}
}

// Run is one scenario in progress: the harness as responder, and the
// connection's timing.
type Run struct {
	*requester.Responder
	T Timing
	// Timeout is the device's transport timer interval.
	Timeout time.Duration
	// TimerBound and RNRBound say whether the scenario judges the lower
	// bounds of the transport timer (C9-140's) and of the RNR delay
	// (rnr-retry's); other clauses' scenarios only count and order, so
	// that a timing defect is blamed on the clause it breaks.
	TimerBound, RNRBound bool
	// early holds, per PSN, the earliest harness time at which the
	// device's latest transmission of it can have left: its arrival for a
	// first transmission (whose delivery latency the tolerance covers),
	// the moment the harness's NAK left for a resend the NAK asked for,
	// and the previous one's plus the interval for a timer's resend. Lower
	// bounds are measured from it, so that a transmission the device (or
	// its host's scheduler) sent late does not shorten the next interval
	// the harness measures.
	early map[wire.PSN]time.Duration
	// judged and vacuous count the lower bounds checked and those the
	// tolerance swallowed (vacuousWhat says the last of them).
	judged, vacuous int
	vacuousWhat     string
	// unconfirmed holds the checks of posts whose first transmission
	// came before the agent confirmed them (First), run when the
	// scenario's body returns.
	unconfirmed []func()
	// answerLag is the longest the harness took to answer a round
	// (AnswerAll) after the round's last packet arrived.
	answerLag time.Duration
	// unattributed, on a real clock, says why a resend the harness asked
	// for with a NAK may have been the transport timer's instead (it came
	// past half the timer interval after the NAK: a loaded host), so the
	// retry budgets cannot be told apart ("" when none).
	unattributed string
}

// New starts a scenario on the peer's connection.
func New(p *harness.Peer) *Run {
	rs := requester.NewResponder(p)
	return &Run{Responder: rs, T: TimingOf(p.Conn), Timeout: wire.AckTimeout(rs.Info.Config.Timeout), early: map[wire.PSN]time.Duration{}}
}

// Scenarios registers the real-time scenarios of the rule r describes.
func Scenarios(r *rulekit.R) {
	if f := byClause[r.Entry.ID]; f != nil {
		f(r)
	}
}

var byClause = map[string]func(r *rulekit.R){}

// active registers one real-time scenario.
func active(r *rulekit.R, name string, sc rulekit.Scenario, body func(x *Run)) {
	id := r.Entry.ID
	r.Active(Prefix+name, sc, func(p *harness.Peer) {
		x := New(p)
		x.TimerBound, x.RNRBound = id == "C9-140", id == "rnr-retry"
		body(x)
		for _, confirm := range x.unconfirmed {
			confirm()
		}
		if x.vacuous > 0 && x.judged == 0 {
			// Every lower bound of the scenario was within the tolerance:
			// it ran, but its timing was not judged.
			rulekit.Indeterminate(fmt.Sprintf("the adapter's timing tolerance %v is not below the interval%s, so no lower bound could be judged on this setup (a slow or emulated device, a loaded host)",
				x.T.Tol, x.vacuousWhat))
		}
	})
}

// First posts wrs and expects their first transmission, every request
// packet in order from PSN start.
func (x *Run) First(start wire.PSN, wrs ...dut.WR) []*trace.Record {
	ginkgo.GinkgoHelper()
	wait := x.post(wrs)
	n := 0
	for _, wr := range wrs {
		n += packets(wr, x.Info.MTU)
	}
	var out []*trace.Record
	next := start
	for i := 0; i < n; i++ {
		what := fmt.Sprintf("the first transmission of the posted requests, in order (packet %d of %d)", i+1, n)
		rec := x.Next(x.T.Live)
		if rec == nil {
			// Nothing came: a refused post explains it before the device.
			x.posted(wait, len(wrs))
			x.Fail([]string{fmt.Sprintf("%s within %v", what, x.T.Live)}, "nothing; "+x.Status(), nil)
		}
		if !rec.Packet.Opcode.IsRequest() {
			x.Fail([]string{fmt.Sprintf("%s within %v, before anything else", what, x.T.Live)}, rec.Packet.String(), rec)
		}
		if psn := rec.Packet.PSN; psn != next {
			if len(out) > 0 && psn.InRange(start, next.Add(-1)) && x.T.Real {
				// The device's timer expired before the agent had posted
				// every work request (one request each, over its control
				// connection): the scenario's premise is gone.
				rulekit.Indeterminate(fmt.Sprintf("the device resent PSN %d %v after its first transmission, before the agent had posted every work request of the scenario (a loaded host)",
					psn, rec.Time-out[0].Time))
			}
			x.Fail([]string{fmt.Sprintf("%s: PSN %d", what, next)}, rec.Packet.String(), rec)
		}
		out = append(out, rec)
		x.early[rec.Packet.PSN] = rec.Time
		if rec.Packet.Opcode == wire.ReadRequest {
			next = next.Add(wire.ReadResponsePackets(rec.Packet.RETH.Length, x.Info.MTU))
		} else {
			next = next.Next()
		}
	}
	// Every packet came, so the device took the work requests; the
	// agent's confirmation is checked when the scenario ends, not waited
	// for now (it can come long after the device's packets).
	if wait != nil {
		x.unconfirmed = append(x.unconfirmed, func() { x.posted(wait, len(wrs)) })
	}
	return out
}

// batchPoster is implemented by adapters that post several work requests
// at once (dut/live: one request to the agent instead of one each).
type batchPoster interface{ PostSends(wrs []dut.WR) error }

// startPoster is implemented by adapters that post without waiting for
// the device's host to confirm (dut/live: the agent answers a post on a
// slow or emulated host long after the device sent its first packet, too
// late for the harness to answer before the device's timer).
type startPoster interface {
	StartPostSends(wrs []dut.WR) (wait func() error)
}

// post posts wrs together where the adapter can, so that the device's
// timer does not run while the harness is still posting; where the
// adapter can start a post, it returns the wait for its confirmation
// (see posted).
func (x *Run) post(wrs []dut.WR) (wait func() error) {
	ginkgo.GinkgoHelper()
	if sp, ok := x.Conn.(startPoster); ok {
		return sp.StartPostSends(wrs)
	}
	bp, ok := x.Conn.(batchPoster)
	if !ok || len(wrs) < 2 {
		x.Post(wrs...)
		return nil
	}
	x.postErr(bp.PostSends(wrs), len(wrs))
	return nil
}

// posted waits for a started post's confirmation and fails (or skips, if
// the device cannot do it) when the device refused it.
func (x *Run) posted(wait func() error, n int) {
	ginkgo.GinkgoHelper()
	if wait != nil {
		x.postErr(wait(), n)
	}
}

func (x *Run) postErr(err error, n int) {
	ginkgo.GinkgoHelper()
	if err == nil {
		return
	}
	if errors.Is(err, dut.ErrUnsupported) {
		ginkgo.Skip("unsupported: posting the scenario's work requests: " + err.Error())
	}
	x.Fail([]string{"the device accepts the work requests"}, fmt.Sprintf("posting %d work requests: %v", n, err), nil)
}

func packets(wr dut.WR, mtu int) int {
	switch wr.Op {
	case dut.OpSend, dut.OpSendImm, dut.OpSendInv, dut.OpWrite, dut.OpWriteImm:
		return wire.ReadResponsePackets(uint32(len(wr.Data)), mtu)
	}
	return 1
}

// Again expects the round resent: the same packets, in order, each
// repeating the original, the first within wait.
func (x *Run) Again(round []*trace.Record, wait time.Duration, what string) []*trace.Record {
	ginkgo.GinkgoHelper()
	var out []*trace.Record
	for i, o := range round {
		within := x.T.Live
		if i == 0 {
			within = wait
		}
		rec := x.ExpectPSN(fmt.Sprintf("%s: PSN %d (packet %d of %d), in order", what, o.Packet.PSN, i+1, len(round)), within, o.Packet.PSN)
		if ok, diff := requester.Same(o.Packet, rec.Packet); !ok {
			x.Fail([]string{fmt.Sprintf("PSN %d resent as it was first sent", o.Packet.PSN)}, diff, rec)
		}
		out = append(out, rec)
	}
	return out
}

// AtLeast fails unless gap, measured from what since describes, is at
// least bound less the tolerance.
func (x *Run) AtLeast(gap, bound time.Duration, since string, rec *trace.Record) {
	ginkgo.GinkgoHelper()
	if bound <= x.T.Tol {
		x.vacuous++
		x.vacuousWhat = fmt.Sprintf(" %v after %s", bound, since)
		return
	}
	x.judged++
	if gap >= bound-x.T.Tol {
		return
	}
	tol := ""
	if x.T.Tol > 0 {
		tol = fmt.Sprintf(" (less the adapter's timing tolerance %v)", x.T.Tol)
	}
	seen := fmt.Sprintf("%v after %s", gap, since)
	if rec != nil {
		seen = fmt.Sprintf("PSN %d sent %s", rec.Packet.PSN, seen)
	}
	if x.T.Tick > 0 {
		seen += fmt.Sprintf(": %v early, against a device timer tick of %v (a coarse timer may fire late, never early)", bound-gap, x.T.Tick)
	}
	x.Fail([]string{fmt.Sprintf("nothing sooner than %v after %s%s", bound, since, tol)}, seen, rec)
}

// Failure is how the harness makes one round of requests fail.
type Failure uint8

// Failures.
const (
	Timeout Failure = iota // stay silent until the transport timer expires
	SeqNAK                 // a PSN-sequence-error NAK naming the round's first PSN
	RNR                    // an RNR NAK for the round's first PSN, with the run's timer code
)

func (f Failure) String() string { return [...]string{"timeout", "sequence NAK", "RNR NAK"}[f%3] }

// FailRound makes the round fail with f and expects it resent, with the
// timing each failure bounds; rnr is the RNR NAKs' timer code.
func (x *Run) FailRound(round []*trace.Record, f Failure, rnr uint8, what string) []*trace.Record {
	ginkgo.GinkgoHelper()
	first := round[0]
	from := x.earliest(first)
	var again []*trace.Record
	switch f {
	case SeqNAK:
		at := x.react(round, f)
		x.NAK(first.Packet.PSN, wire.NAKPSNSequence)
		again = x.Again(round, x.T.Live, what+" (after a sequence NAK)")
		x.setEarly(again, func(wire.PSN) time.Duration { return at })
		x.noteLate(again, at, "sequence NAK")
	case RNR:
		x.react(round, f)
		delay := wire.RNRDelay(rnr)
		at := x.RNR(first.Packet.PSN, rnr)
		again = x.Again(round, x.T.Upper(delay), fmt.Sprintf("%s (after an RNR NAK, timer code %d)", what, rnr))
		if x.RNRBound {
			x.AtLeast(again[0].Time-at, delay, fmt.Sprintf("the RNR NAK with timer code %d", rnr), again[0])
		}
		x.setEarly(again, func(wire.PSN) time.Duration { return at })
		x.noteLate(again, at, "RNR NAK")
	default:
		again = x.Again(round, x.T.Upper(x.Timeout), what+" (after the transport timer)")
		if x.TimerBound {
			x.AtLeast(again[0].Time-from, x.Timeout, fmt.Sprintf("the previous transmission of PSN %d (local ACK timeout %d)",
				first.Packet.PSN, x.Info.Config.Timeout), again[0])
		}
		x.setEarly(again, func(psn wire.PSN) time.Duration { return x.early[psn] + x.Timeout })
	}
	return again
}

// noteLate notes, on a real clock, a resend that came past half the
// device's transport timer interval after the harness's NAK asked for it:
// the timer may have brought it instead, and which budget each retry
// spent (the transport or the RNR retry counter) cannot be told.
func (x *Run) noteLate(again []*trace.Record, at time.Duration, nak string) {
	if !x.T.Real || x.Timeout <= 0 || len(again) == 0 || x.unattributed != "" {
		return
	}
	if d := again[0].Time - at; d >= x.Timeout/2 {
		x.unattributed = fmt.Sprintf("the device resent PSN %d %v after the harness's %s, past half its transport timer interval %v: its timer may have brought that resend, so which retry budget each transmission spent cannot be told (a loaded host)",
			again[0].Packet.PSN, d, nak, x.Timeout)
	}
}

// earliest returns the earliest time rec's transmission can have left.
func (x *Run) earliest(rec *trace.Record) time.Duration {
	if t, ok := x.early[rec.Packet.PSN]; ok && t <= rec.Time {
		return t
	}
	return rec.Time
}

func (x *Run) setEarly(round []*trace.Record, f func(wire.PSN) time.Duration) {
	for _, rec := range round {
		t := f(rec.Packet.PSN)
		if t > rec.Time {
			t = rec.Time
		}
		x.early[rec.Packet.PSN] = t
	}
}

// react checks that the harness answers the round before the device's
// transport timer can have fired: when it is late (a loaded host), the
// device may already have gone back on its own, and what follows cannot
// tell the two apart, so the scenario is indeterminate.
func (x *Run) react(round []*trace.Record, what fmt.Stringer) time.Duration {
	ginkgo.GinkgoHelper()
	now := x.Conn.Now()
	if x.Timeout > 0 && now-round[0].Time >= x.Timeout/2 {
		rulekit.Indeterminate(fmt.Sprintf("the harness sent its %v %v after the device's packet (PSN %d), past half the device's transport timer interval %v: the timer may have fired first, so the retry cannot be attributed (a loaded host)",
			what, now-round[0].Time, round[0].Packet.PSN, x.Timeout))
	}
	if !x.T.Real && x.Timeout > 0 && now-round[0].Time+x.T.Tol >= x.Timeout/2 {
		// The link's round trip (the adapter's tolerance on a virtual
		// clock) is part of the time the device's timer runs before the
		// harness's answer can reach it.
		rulekit.Indeterminate(fmt.Sprintf("the link's round trip (%v) and the harness's answer (%v after the device's packet PSN %d) take half the device's transport timer interval %v or more: the timer may fire before the %v arrives, so the retry cannot be attributed",
			x.T.Tol, now-round[0].Time, round[0].Packet.PSN, x.Timeout, what))
	}
	return now
}

// Script runs failures one after the other, each answered by a resend.
func (x *Run) Script(round []*trace.Record, script []Failure, rnr uint8) []*trace.Record {
	ginkgo.GinkgoHelper()
	for i, f := range script {
		round = x.FailRound(round, f, rnr, fmt.Sprintf("the resend after failure %d of %d (%v)", i+1, len(script), f))
	}
	return round
}

// Exhaust makes the round fail once more with f, when the budget is
// spent: work request wr must end with status want and nothing more be
// sent (no further transmission, before or after), the QP go to ERROR
// and the work requests flushed be flushed.
func (x *Run) Exhaust(round []*trace.Record, f Failure, rnr uint8, wr uint64, want dut.Status, flushed ...uint64) {
	ginkgo.GinkgoHelper()
	first := round[0]
	at := x.Conn.Now()
	wait := x.T.Live
	var bound time.Duration
	since := ""
	switch f {
	case SeqNAK:
		at = x.react(round, f)
		x.NAK(first.Packet.PSN, wire.NAKPSNSequence)
	case RNR:
		at = x.react(round, f)
		x.RNR(first.Packet.PSN, rnr)
	default:
		at, wait, bound = x.earliest(first), x.T.Upper(x.Timeout), x.Timeout
		since = fmt.Sprintf("the last transmission of PSN %d (local ACK timeout %d)", first.Packet.PSN, x.Info.Config.Timeout)
	}
	if x.unattributed != "" {
		// The count the budget is judged by is unknown.
		rulekit.Indeterminate(x.unattributed)
	}
	quiet := fmt.Sprintf("no further transmission: the budget is spent after this %v, so work request %d ends with %q", f, wr, want)
	// How many transmissions the budget allows, and what ends it, is the
	// budget's rule (the transport retry counter, or the RNR retry
	// counter): in another clause's scenario (C9-140's timer) it is a
	// setup step of that rule, so that one wrong count fails one clause.
	budget := "retry-counter"
	if f == RNR {
		budget = "rnr-retry"
	}
	var c dut.Completion
	x.P.Step(budget, fmt.Sprintf("the %v budget ends work request %d with %q", f, wr, want), func() {
		c = x.endsWith(wr, want, wait, quiet)
	})
	if bound > 0 && x.TimerBound {
		x.AtLeast(c.Time-at, bound, since+", before the work request ended", nil)
	}
	x.P.Step(budget, "a spent budget moves the QP to ERROR and silences it", func() {
		x.ExpectState(dut.StateError, "a spent retry budget moves the QP to ERROR")
		for _, id := range flushed {
			x.ExpectStatus(id, dut.StatusFlushed, x.T.Live, "work requests behind the failed one are flushed in ERROR")
		}
		x.Quiet("request from a QP in ERROR", x.quietFor())
	})
}

// quietFor is how long the harness watches for packets that must not
// come: twice the transport timer and at least 50 ms (on a real clock,
// 200 ms).
func (x *Run) quietFor() time.Duration {
	q := 2*x.Timeout + 50*time.Millisecond
	if x.T.Real {
		q += 150 * time.Millisecond
	}
	return q
}

// endsWith waits up to wait for work request wr to complete with status
// want, failing on any packet the device sends meanwhile.
func (x *Run) endsWith(wr uint64, want dut.Status, wait time.Duration, quiet string) dut.Completion {
	ginkgo.GinkgoHelper()
	start := x.Conn.Now()
	step := max(wait/200, 50*time.Microsecond)
	for {
		if c, ok := x.TryCompletion(wr, 0); ok {
			if rec := x.Next(0); rec != nil {
				x.FailSeen([]string{quiet}, rec.Packet.String()+" before the completion", rec)
			}
			if c.Status != want {
				x.Fail([]string{fmt.Sprintf("work request %d completes with %q", wr, want)}, fmt.Sprintf("status %q", c.Status), nil)
			}
			return c
		}
		if rec := x.Next(step); rec != nil {
			x.FailSeen([]string{quiet}, rec.Packet.String()+"; "+x.Status(), rec)
		}
		if x.Conn.Now()-start > wait {
			x.Fail([]string{fmt.Sprintf("work request %d completing with %q within %v", wr, want, wait)}, "no completion; "+x.Status(), nil)
			return dut.Completion{}
		}
	}
}

// AnswerAll answers every request of the round as a correct responder
// would.
func (x *Run) AnswerAll(round []*trace.Record) {
	ginkgo.GinkgoHelper()
	if n := len(round); n > 0 {
		x.answerLag = max(x.answerLag, x.Conn.Now()-round[n-1].Time)
	}
	for _, rec := range round {
		x.Answer(rec)
	}
}

// Finish answers whatever the device sends (go-back-N resends
// included) until every listed work request has completed successfully.
func (x *Run) Finish(why string, ids ...uint64) {
	ginkgo.GinkgoHelper()
	done := map[uint64]bool{}
	start := x.Conn.Now()
	for len(done) < len(ids) {
		if rec := x.Next(x.T.Live / 100); rec != nil {
			x.Answer(rec)
		}
		for _, id := range ids {
			if done[id] {
				continue
			}
			if c, ok := x.TryCompletion(id, 0); ok {
				if c.Status != dut.StatusSuccess {
					x.Fail([]string{fmt.Sprintf("work request %d completes with %q (%s)", id, dut.StatusSuccess, why)}, fmt.Sprintf("status %q", c.Status), nil)
				}
				done[id] = true
			}
		}
		if x.Conn.Now()-start > x.T.Live {
			x.Fail([]string{fmt.Sprintf("work requests %v completing successfully within %v (%s)", ids, x.T.Live, why)}, x.Status(), nil)
		}
	}
}

// Succeed expects every listed work request to complete successfully.
func (x *Run) Succeed(why string, ids ...uint64) {
	ginkgo.GinkgoHelper()
	if x.T.Real && x.answerLag > x.Timeout-x.T.Tol {
		// On a real clock the harness answered a round only after the
		// device's transport timer could have fired again: further
		// retries may have spent the budget before the answer arrived,
		// so a retry-exceeded end decides nothing.
		for _, id := range ids {
			c := x.Completion(id, x.T.Live)
			switch c.Status {
			case dut.StatusSuccess:
				continue
			case dut.StatusRetryExceeded:
				rulekit.Indeterminate(fmt.Sprintf("the harness answered %v after the device's transmission, past its transport timer interval %v, and the device ended work request %d with %q: its retries may have spent the budget before the answer arrived (a loaded host)",
					x.answerLag, x.Timeout, id, c.Status))
			}
			x.Fail([]string{fmt.Sprintf("work request %d completes with %q (%s)", id, dut.StatusSuccess, why)}, fmt.Sprintf("status %q", c.Status), nil)
		}
		return
	}
	for _, id := range ids {
		x.ExpectStatus(id, dut.StatusSuccess, x.T.Live, why)
	}
}

// Subset checks that req re-requests an exact subset of the READ orig:
// its PSN is that of a response packet not yet received (at most the
// first missing one, missing counting from orig's PSN), and its RETH's
// address and length are moved by whole MTUs to match.
func (x *Run) Subset(orig, req *trace.Record, missing int) {
	ginkgo.GinkgoHelper()
	o, k := orig.Packet, req.Packet
	mtu := x.Info.MTU
	n := wire.ReadResponsePackets(o.RETH.Length, mtu)
	skip := k.PSN.Diff(o.PSN)
	want := []string{fmt.Sprintf("the READ re-requested as an exact subset: PSN %d..%d, with VA and length moved by whole MTUs (%d bytes) to match",
		o.PSN, o.PSN.Add(missing), mtu)}
	if k.Opcode != wire.ReadRequest {
		x.Fail(want, k.String(), req)
	}
	if skip < 0 || skip > missing || (skip > 0 && skip >= n) {
		x.Fail(want, fmt.Sprintf("READ request with PSN %d (the first missing response of %d was number %d)", k.PSN, n, missing+1), req)
	}
	moved := uint64(skip * mtu)
	if k.RETH.VA != o.RETH.VA+moved || k.RETH.Length != o.RETH.Length-uint32(moved) || k.RETH.RKey != o.RETH.RKey {
		x.Fail(want, fmt.Sprintf("PSN %d (%d packets in) with VA 0x%x, length %d, R_Key 0x%x; the original: VA 0x%x, length %d, R_Key 0x%x",
			k.PSN, skip, k.RETH.VA, k.RETH.Length, k.RETH.RKey, o.RETH.VA, o.RETH.Length, o.RETH.RKey), req)
	}
}

// Repeat returns n copies of f.
func Repeat(f Failure, n int) []Failure {
	s := make([]Failure, n)
	for i := range s {
		s[i] = f
	}
	return s
}
