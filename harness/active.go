package harness

import (
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
)

// ActiveSettings returns the audit settings of an active run's trace on
// conn: the whole connection from its first packet, both QPs set up by
// the run (so the responder's first expected PSN is known: the device's
// when it is the responder, the PSN its requester starts from when the
// harness answers), the retry settings the device was given, and the
// adapter's timing tolerance on a real clock.
func ActiveSettings(conn dut.Conn, deviceIsRequester, srq bool) Settings {
	info := conn.Info()
	s := UnknownSettings()
	s.Active = true
	s.MTU = info.MTU
	s.DeviceIsRequester = deviceIsRequester
	s.StartKnown, s.StartPSN = true, info.ExpectedPSN
	if deviceIsRequester {
		s.StartPSN = info.DevicePSN
	}
	if tc, ok := conn.(interface{ Tolerance() time.Duration }); ok {
		s.Tolerance = tc.Tolerance()
	}
	s.AckTimeout = int(info.Config.Timeout)
	s.RetryCnt = int(info.Config.RetryCnt)
	s.RNRRetry = int(info.Config.RNRRetry)
	s.SRQ = SRQNone
	if srq {
		s.SRQ = SRQAll
	}
	return s
}

// AuditRecords runs every passive monitor over recs under settings and
// returns their findings and tallies (text gives a clause's words for
// the findings; it may be nil).
func AuditRecords(recs []*trace.Record, settings Settings, text func(id string) string) *Sink {
	sink := NewSink("")
	sink.Text = text
	AuditInto(sink, recs, settings)
	return sink
}

// AuditInto runs every passive monitor over recs under settings into
// sink (one whose Undecided hook the caller set, say).
func AuditInto(sink *Sink, recs []*trace.Record, settings Settings) {
	au := NewAuditor(settings, sink)
	for _, r := range recs {
		au.Observe(r)
	}
	au.End()
}
