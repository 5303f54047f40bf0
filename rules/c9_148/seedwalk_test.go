package c9_148

import (
	"testing"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

// seedWalk is the walk of the specification's Response Generation text: SEND
// 300, WRITE 301, READ 302–303 (8 KiB at MTU 4096), 304 lost before the
// capture point (or seen, when !lost), SEND 305, a sequence NAK naming 304,
// 304 and 305 resent, ACK 305 with MSN 5.
func seedWalk(lost bool, lastMSN uint32) []*trace.Record {
	var b rtest.Builder
	b.Send(300, false)
	b.Req(wire.WriteOnly, 301, false, 8)
	b.Read(302, 8192)
	b.Resp(wire.ReadResponseFirst, 302, 0x04, 2, 4096)
	b.Resp(wire.ReadResponseLast, 303, 0x04, 3, 4096)
	if !lost {
		b.Send(304, false)
	}
	b.Send(305, true)
	b.NAK(304, wire.NAKPSNSequence, 3)
	b.Send(304, false)
	b.Send(305, true)
	b.Ack(305, lastMSN)
	return b.Recs
}

// The out-of-sequence 305 was dropped, the resent 304 is new (the READ's
// span ends at 303, as its Last response shows even with the MTU unknown):
// MSN 5 is right, whatever the capture knows of the MTU.
func TestSeedWalk(t *testing.T) {
	for _, mtu := range []int{0, 4096} {
		rtest.WantPass(t, seedWalk(true, 5), rtest.Capture(mtu), ID)
		rtest.WantPass(t, seedWalk(false, 5), rtest.Capture(mtu), ID)
		// Counting the dropped 305 twice (or the resent 304 as a
		// duplicate the other way round) is still caught.
		rtest.WantViolation(t, seedWalk(true, 6), rtest.Capture(mtu), ID, "too high")
	}
}
