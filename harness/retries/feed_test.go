package retries

import (
	"net/netip"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
)

// The model's tests drive Trackers as an audit does: through an Auditor,
// whose connection shows every record to its monitors (here a probe that
// calls the Trackers) before its reconstruction absorbs the record. The
// Tracker reads the reconstruction (the next new PSN, READ spans), so it
// cannot be tested on a bare connection.

// probeClause keys the probe monitor (registered in this test binary
// only).
const probeClause = "requester-model-probe"

// probeNew makes the probe of a new connection; tests set it before
// feeding records.
var probeNew func(c *harness.Conn) harness.Checker

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: probeClause, New: func(c *harness.Conn) harness.Checker { return probeNew(c) }})
}

// probeFunc is a Checker calling a function for every record.
type probeFunc func(c *harness.Conn, r *trace.Record)

func (f probeFunc) Observe(c *harness.Conn, r *trace.Record) { f(c, r) }
func (probeFunc) End(*harness.Conn)                          {}

// The two hosts of the tests' connection.
var (
	reqHost = netip.MustParseAddr("10.0.0.2")
	rspHost = netip.MustParseAddr("10.0.0.1")
)

// route addresses r as a packet of the tests' connection.
func route(r *trace.Record) *trace.Record {
	if r.Packet.Opcode.IsRequest() {
		r.Dir, r.Src, r.Dst = trace.ToResponder, reqHost, rspHost
		r.Packet.DestQP = 0x11
	} else {
		r.Dir, r.Src, r.Dst = trace.ToRequester, rspHost, reqHost
		r.Packet.DestQP = 0x22
	}
	return r
}

// feed is an audit of one connection whose monitor is one Tracker: Step
// shows a record to the Tracker and lets the reconstruction absorb it.
// Its records carry no IPv4 ID unless the test sets one that does not
// count up, so that the Auditor holds nothing back and every event comes
// at once.
type feed struct {
	a   *harness.Auditor
	tr  *Tracker
	req ReqEvent
	rsp RespEvent
}

// newFeed returns a feed with settings s.
func newFeed(s harness.Settings) *feed {
	f := &feed{a: harness.NewAuditor(s, harness.NewSink("test"))}
	f.a.Only = map[string]bool{probeClause: true}
	probeNew = func(c *harness.Conn) harness.Checker {
		f.tr = NewTracker(c)
		return probeFunc(func(c *harness.Conn, r *trace.Record) {
			if r.Packet.Opcode.IsRequest() {
				f.req = *f.tr.Request(r)
			} else {
				f.rsp = *f.tr.Response(r)
			}
		})
	}
	return f
}

// Request feeds a request and returns the Tracker's event.
func (f *feed) Request(r *trace.Record) ReqEvent {
	f.req = ReqEvent{}
	f.a.Observe(route(r))
	return f.req
}

// Response feeds a response and returns the Tracker's event.
func (f *feed) Response(r *trace.Record) RespEvent {
	f.rsp = RespEvent{}
	f.a.Observe(route(r))
	return f.rsp
}
