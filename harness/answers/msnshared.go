package answers

import (
	"slices"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file holds the MSN model (msn.go) shared by C9-148 and C9-149.

// SharedMSN is the MSNModel of one connection that C9-148 and C9-149
// share: both feed it every request (Request) and every response they do
// not judge as a NAK (Model), and the first call for a packet updates the
// model while the other gets the same judgement. NAK judges on it without
// changing it, except where a model of its own would have taken its MSN
// reference from the NAK (NAKForks): a monitor then goes on with a copy
// of its own (Fork).
type SharedMSN struct {
	m       MSNModel
	memoRec *trace.Record
	memoN   int
	memoJ   Judgement
}

type sharedMSNKey struct{}

// SharedMSNModel returns the shared MSNModel of connection c.
func SharedMSNModel(c *harness.Conn) *SharedMSN {
	return c.Shared(sharedMSNKey{}, func() any { return &SharedMSN{} }).(*SharedMSN)
}

func (s *SharedMSN) memo(c *harness.Conn, r *trace.Record) bool {
	if s.memoRec == r && s.memoN == c.Packets {
		return true
	}
	s.memoRec, s.memoN = r, c.Packets
	return false
}

// MissedAfter is MSNModel.MissedAfter.
func (s *SharedMSN) MissedAfter(p wire.PSN) bool { return s.m.MissedAfter(p) }

// Request is MSNModel.Request, once per packet.
func (s *SharedMSN) Request(c *harness.Conn, r *trace.Record, mtu int) {
	if !s.memo(c, r) {
		s.m.Request(c, r, mtu)
	}
}

// Model is MSNModel.Model, once per packet.
func (s *SharedMSN) Model(c *harness.Conn, r *trace.Record, ev *Event) Judgement {
	if !s.memo(c, r) {
		s.memoJ = s.m.Model(c, r, ev)
	}
	return s.memoJ
}

// NAKForks reports whether MSNModel.NAK would take the model's MSN
// reference from r (no AETH has fixed it yet): the model of a monitor
// that judges r would then differ from the shared one.
func (s *SharedMSN) NAKForks(c *harness.Conn, r *trace.Record) bool {
	p := r.Packet
	return p.Opcode == wire.Acknowledge && NAKKind(p) && !s.m.haveRef && (s.m.started || c.Complete())
}

// NAK is MSNModel.NAK on the shared model; call it only when NAKForks is
// false (it then changes nothing that Request and Model would not have).
func (s *SharedMSN) NAK(c *harness.Conn, r *trace.Record) Judgement {
	return s.m.NAK(c, r)
}

// Fork returns a copy of the shared model, for a monitor to go on with a
// model of its own.
func (s *SharedMSN) Fork() *MSNModel {
	m := s.m
	m.ends = slices.Clone(s.m.ends)
	m.alts = slices.Clone(s.m.alts)
	return &m
}
