package answers

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file holds the MSN model (msn.go) shared by C9-148 and C9-149.

// SharedMSN is the MSNModel of one connection that C9-148 and C9-149
// share: both feed it every request (Request) and every response (C9-149
// its NAKs through NAK, the rest through Model), and the first call for a
// packet updates the model while the other gets the same judgement.
type SharedMSN struct {
	m       MSNModel
	memoRec *trace.Record
	memoN   int
	memoJ   Judgement // Model's
	memoNAK Judgement // NAK's
	// wrong holds the latest responses whose count Model judged a
	// violation, or one unless something unseen happened (JudgedWrong);
	// nWrong how many there were.
	wrong  [maxWrong]*trace.Record
	nWrong int
}

// maxWrong bounds the responses SharedMSN.wrong remembers.
const maxWrong = 16

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

// Model is MSNModel.Model, once per packet (for a NAK, the model takes
// it once whichever of Model and NAK comes first).
func (s *SharedMSN) Model(c *harness.Conn, r *trace.Record, ev *Event) Judgement {
	if !s.memo(c, r) {
		if isNAK(r.Packet) {
			s.memoJ, s.memoNAK = Judgement{Skip: true}, s.m.NAK(c, r)
		} else {
			s.memoJ, s.memoNAK = s.m.Model(c, r, ev), Judgement{Skip: true}
			if s.memoJ.Violation || s.memoJ.Open {
				s.wrong[s.nWrong%maxWrong] = r
				s.nWrong++
			}
		}
	}
	return s.memoJ
}

// JudgedWrong reports whether Model judged the count response r carries a
// violation, or one unless something unseen happened (among the latest
// maxWrong such responses): C9-148 decides it at the connection's end, or
// leaves it open, and a judgement resting on that count waits for its
// verdict (one root cause, one finding).
func (s *SharedMSN) JudgedWrong(r *trace.Record) bool {
	for i := range min(s.nWrong, maxWrong) {
		if s.wrong[i] == r {
			return true
		}
	}
	return false
}

// AwaitCount calls judge for an instance judged at record r that rests
// on the count response base carries: at once (held false), or, where
// the shared model judged that count wrong (JudgedWrong), at the
// connection's end (held true), once C9-148 has said whether it blamed
// the count, so that a fault found only because a later packet
// disagrees with that count is not a second finding of the same root
// cause.
func AwaitCount(c *harness.Conn, r, base *trace.Record, judge func(c *harness.Conn, held bool)) {
	if base == nil || !SharedMSNModel(c).JudgedWrong(base) {
		judge(c, false)
		return
	}
	at := c.Judging(r)
	c.Await(func(c *harness.Conn, next *trace.Record) bool {
		if next != nil {
			return false
		}
		defer c.JudgedAt(at)()
		judge(c, true)
		return true
	})
}

// isNAK reports whether p is a packet NAK judges: an Acknowledge with a
// NAK or RNR syndrome.
func isNAK(p *wire.Packet) bool { return p.Opcode == wire.Acknowledge && NAKKind(p) }

// NAK is MSNModel.NAK on the shared model, once per packet.
func (s *SharedMSN) NAK(c *harness.Conn, r *trace.Record) Judgement {
	if !isNAK(r.Packet) {
		return Judgement{Skip: true}
	}
	if !s.memo(c, r) {
		s.memoJ, s.memoNAK = Judgement{Skip: true}, s.m.NAK(c, r)
	}
	return s.memoNAK
}
