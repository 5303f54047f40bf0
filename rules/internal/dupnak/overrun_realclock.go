package dupnak

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/realclock"
	"github.com/rcconform/rcconform/wire"
)

// overrunRace decides, on a real clock, whether the responder-resource
// overrun case proves anything: the READ at PSN e went out just after
// Config.MaxDestRdAtomic READs of 32 MTUs each; if the device answered
// one of those in full too soon after e left, it may have had a resource
// free when e arrived, and the case ends indeterminate. It waits for the
// earlier READs' answers and reads them from the connection's trace,
// leaving them to be received. A device that served e only after it had
// finished the oldest READ may have taken e from its receive queue then,
// holding fewer READs than its resources: that run is indeterminate too
// (realclock.ServedLate), never a Table 58 finding.
func overrunRace(p *harness.Peer, e wire.PSN) {
	real, _ := realclock.Timing(p.Conn)
	if !real {
		return
	}
	sent := p.Conn.Now()
	n := p.Info.Config.MaxDestRdAtomic
	p.Conn.Wait(Liveness)
	recs := p.Conn.Trace()
	for i := 0; i < n; i++ {
		last := e.Add(-32*(n-i) + 31)
		realclock.FinishedFirst(p.Conn, realclock.Find(recs, func(r *trace.Record) bool {
			return r.Packet.Opcode.Class() == wire.ClassReadResponse && r.Packet.PSN == last
		}), sent, fmt.Sprintf("the READ at PSN %d", e.Add(-32*(n-i))), "the READ beyond the responder resources")
	}
	oldestLast := e.Add(-32*n + 31)
	realclock.ServedLate(p.Conn, realclock.Find(recs, func(r *trace.Record) bool {
		return r.Packet.Opcode.Class() == wire.ClassReadResponse && r.Packet.PSN == oldestLast
	}), realclock.Find(recs, func(r *trace.Record) bool {
		return r.Packet.Opcode.Class() == wire.ClassReadResponse && r.Packet.Opcode.StartsMessage() && r.Packet.PSN == e
	}), fmt.Sprintf("the READ at PSN %d", e.Add(-32*n)), "the READ beyond the responder resources")
}
