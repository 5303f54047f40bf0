package retries

import (
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Timing allowances. A capture shows packets where it was taken, not
// where the requester decided to send them.
var (
	// ActiveReaction is how long after the harness sent a response a
	// device packet may still have been sent before the device saw it, in
	// active runs: the reference's link latency (1 µs) with room for a
	// slower --settings latency.
	ActiveReaction = 20 * time.Microsecond
	// CaptureReaction is the same allowance in captures, where the
	// capture point, the network and the requester's processing add
	// unknown delays: packets seen within it after a response may have
	// been sent before the requester processed that response.
	CaptureReaction = time.Millisecond
	// CaptureTimerSlack is the fraction of a timer interval a capture's
	// timestamps may shorten it by (queueing between the requester and
	// the capture point can delay one transmission more than the next).
	CaptureTimerSlack = 0.10
)

// Reaction returns the in-flight allowance for the connection's trace.
// On a real clock (a live device) the trace's timestamps are the
// harness's, off from when the device sent by up to the adapter's
// tolerance, so a packet seen within the allowance plus that tolerance
// after a response may still have left before the device saw it.
func Reaction(c *harness.Conn) time.Duration {
	if c.Settings.Active {
		return ActiveReaction + c.Settings.Tolerance
	}
	return CaptureReaction
}

// TimerFloor returns the shortest interval the trace may show for a timer
// of interval d without proving it fired early: d itself in active runs,
// d less the capture slack in captures.
func TimerFloor(c *harness.Conn, d time.Duration) time.Duration {
	if c.Settings.Active {
		// On a real clock the trace's timestamps are the harness's, off
		// from the device's own by up to the adapter's tolerance.
		return d - c.Settings.Tolerance
	}
	return d - time.Duration(float64(d)*CaptureTimerSlack)
}

// Delivered reports whether every response the trace shows is known to
// have reached the requester: in active runs the harness sent them to the
// device itself; in a capture only when the user says it is complete
// (--complete: taken where nothing is lost, so a response seen is a
// response received). Otherwise a response may have been lost between the
// capture point and the requester, and a requester that ignores it is not
// at fault.
func Delivered(c *harness.Conn) bool { return c.Complete() }

// AckTimeout returns the transport timer interval from the connection's
// settings; known is false when the user did not give --ack-timeout.
func AckTimeout(c *harness.Conn) (d time.Duration, zero, known bool) {
	t := c.Settings.AckTimeout
	if t < 0 {
		return 0, false, false
	}
	return wire.AckTimeout(uint8(t)), t&0x1F == 0, true
}

// Fresh reports whether a NAK or acknowledgment seen at time at can be
// taken to answer the latest transmission of s: s was sent only once, or
// its latest resend left at least the in-flight allowance earlier (else
// the response may answer an older copy, and a requester may ignore it
// as stale because it has already gone back).
func Fresh(c *harness.Conn, s *Sent, at time.Duration) bool {
	if s == nil || s.Sends <= 1 || s.Last == nil {
		return true
	}
	return at-s.Last.Time >= Reaction(c)
}

// AsksResendNow reports whether response r, had it reached the requester
// first, would have asked it to resend PSN p at once: a sequence NAK
// naming p or an earlier PSN (an RNR NAK asks for its delay first). For
// the excuse of Conn.ViolationUnlessMissed: a response recorded just
// after an early resend that may have passed the capture point before it.
func AsksResendNow(r *trace.Record, p wire.PSN) bool {
	rp := r.Packet
	return rp.Opcode == wire.Acknowledge && rp.AETH.IsNAK(wire.NAKPSNSequence) && rp.PSN.AtOrBefore(p)
}
