// Package realclock decides races on a real clock. Some active scenarios
// need their stimulus to reach the device while it is still busy with
// something else (responder resources still held by earlier READs, a long
// answer still streaming). On the reference's virtual clock that is
// certain; on a live device it is not, and when the trace shows that the
// device may have finished first, the scenario proves nothing either way:
// it ends indeterminate with that reason, never as a guess.
package realclock

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/rulekit"
)

type tolerancer interface{ Tolerance() time.Duration }

// Timing returns whether connection c runs on a real clock, and its
// adapter's timing tolerance there.
func Timing(c dut.Conn) (real bool, tol time.Duration) {
	if d := rulekit.DUT(); d != nil && d.Capabilities().VirtualTime {
		return false, 0
	}
	if t, ok := c.(tolerancer); ok {
		tol = t.Tolerance()
	}
	return true, tol
}

// Margin is how much later than the stimulus's departure the device's
// packet must arrive to show that the device had not finished when the
// stimulus reached it: the stimulus's delivery and the packet's delivery
// each take up to the tolerance, and, since a loaded host can hold a
// packet back longer than the tolerance measured before the run, a fixed
// 5 ms more.
func Margin(tol time.Duration) time.Duration { return 2*tol + 5*time.Millisecond }

// FinishedFirst ends the scenario as indeterminate when, on a real clock,
// the device's packet done (which shows it had finished what the stimulus
// must find unfinished) arrived too soon after the stimulus left at sent
// to tell which came first at the device. what names the unfinished work,
// stimulus the harness's packet. On a virtual clock it does nothing
// (FinishedFirstRTT also checks there).
func FinishedFirst(c dut.Conn, done *trace.Record, sent time.Duration, what, stimulus string) {
	FinishedFirstRTT(c, done, sent, 0, what, stimulus)
}

// FinishedFirstRTT is FinishedFirst on either clock, given rtt, a round
// trip measured on the connection in this scenario (a request's departure
// to its answer's first packet): that bounds the stimulus's way to the
// device plus the packet's way back, so a packet done arriving no later
// than rtt after the stimulus left may have left the device before the
// stimulus reached it. On a virtual clock with a link latency (a fast
// device on a slow link finishes a short answer before the next request
// arrives) that is the whole margin; on a real clock the margin is the
// larger of rtt and Margin(tolerance).
func FinishedFirstRTT(c dut.Conn, done *trace.Record, sent, rtt time.Duration, what, stimulus string) {
	real, tol := Timing(c)
	if done == nil || (!real && rtt <= 0) {
		return
	}
	margin, clock := rtt, "a round trip on this connection takes"
	if real && Margin(tol) >= rtt {
		margin, clock = Margin(tol), "the real clock's margin is"
	}
	if done.Time > sent+margin {
		return
	}
	when := fmt.Sprintf("%v after", done.Time-sent)
	if done.Time < sent {
		when = fmt.Sprintf("%v before", sent-done.Time)
	}
	rulekit.Indeterminate(fmt.Sprintf("the device finished %s (its packet PSN %d arrived %s %s left the harness; %s %v): it may have finished before %s reached it, so this run cannot show what it does with %s",
		what, done.Packet.PSN, when, stimulus, clock, margin, stimulus, stimulus))
}

// TakenAfter reports whether the device's answer to a stimulus, whose
// first packet is start, began only after its packet done, which ended the
// work the stimulus had to find unfinished. Both nil-safe: without either
// packet it reports false.
func TakenAfter(done, start *trace.Record) bool {
	return done != nil && start != nil && done.Time <= start.Time
}

// ServedLate ends the scenario as indeterminate when, on a real clock, the
// device served the stimulus (its answer's first packet start) only after
// it had finished the unfinished work (its packet done). A device that
// works through its receive queue one request at a time may take the
// stimulus from the queue only then, when the work it had to find
// unfinished is over (a READ beyond the responder resources then finds a
// resource free: Table 58 counts the requests the responder holds, and
// arrival at the port is not visible on the wire). What the device did
// with the stimulus is then legal, and the run shows nothing either way.
// what names the finished work, stimulus the harness's packet. On a
// virtual clock it does nothing: there the stimulus arrives first.
func ServedLate(c dut.Conn, done, start *trace.Record, what, stimulus string) {
	if real, _ := Timing(c); !real || !TakenAfter(done, start) {
		return
	}
	rulekit.Indeterminate(fmt.Sprintf("%s was served only after the device had finished %s (its packet PSN %d came %v before the answer's first packet PSN %d): a device working through its receive queue one request at a time may have taken %s from the queue only then, so this run cannot show what it does with %s while %s is unfinished",
		stimulus, what, done.Packet.PSN, start.Time-done.Time, start.Packet.PSN, stimulus, stimulus, what))
}

// LongVirtual and LongReal are the packets of a long READ answer, one a
// scenario needs still streaming when its next request reaches the device
// (an older duplicate that must preempt it, newer duplicates that must
// wait behind it). On the reference's virtual clock the harness's request
// arrives first by construction and 64 packets show a device that never
// stops. On a real clock the answer must also outlast the timing margin
// (Margin: 2 × the adapter's tolerance + 5 ms, 15–20 ms in the
// soft-RoCE lab) by a wide margin on a software device: 2048 packets,
// about 45 ms at soft-RoCE's pace in the lab's emulated VM.
const (
	LongVirtual = 64
	LongReal    = 2048
)

// LongPackets returns the packets of a long READ answer on connection c's
// clock: LongReal on a real clock, and on a virtual one whose link round
// trip (the adapter's stated tolerance) is SlowLink or more (a fast device
// behind a slow link sends 64 packets before the harness's request can
// reach it); LongVirtual otherwise.
func LongPackets(c dut.Conn) int {
	real, _ := Timing(c)
	if t, ok := c.(tolerancer); real || ok && t.Tolerance() >= SlowLink {
		return LongReal
	}
	return LongVirtual
}

// SlowLink is the link round trip from which a virtual-clock connection
// gets the long answers of a real clock.
const SlowLink = 10 * time.Microsecond

// LongMemory returns a memory region size that holds a long READ answer
// at path MTU mtu on either clock, plus extra bytes.
func LongMemory(mtu, extra int) int { return LongReal*mtu + extra }

// Find returns the first of recs the device sent that match, or nil.
func Find(recs []*trace.Record, match func(*trace.Record) bool) *trace.Record {
	for _, r := range recs {
		if r.Dir == trace.ToRequester && match(r) {
			return r
		}
	}
	return nil
}
