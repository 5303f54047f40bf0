package retries

import (
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file reads the responses: what they acknowledge and which of them
// may trigger a retry (NAKs, implied NAKs).

// Response reads a response packet and updates the model. The event is
// the Tracker's, good until its next Request or Response (as Request's).
func (t *Tracker) Response(r *trace.Record) *RespEvent {
	if !t.memo(r) {
		t.response(r, &t.memoResp)
		t.remember(r)
	}
	return &t.memoResp
}

// response fills ev with the reading of response packet r.
func (t *Tracker) response(r *trace.Record, ev *RespEvent) {
	p := r.Packet
	*ev = RespEvent{Rec: r}
	op := p.Opcode
	t.acked = t.acked[:0]
	ev.BaseBefore, ev.HaveBaseBefore = t.Base()
	ev.NextBefore, _ = t.Next()
	if !t.have {
		return
	}
	switch opc.Class(op) {
	case wire.ClassAck:
		a := p.AETH
		switch {
		case a.IsACK():
			ev.Positive = true
			ev.Implied, _ = t.cover(p.PSN, true, nil)
			if t.coverAck == nil || p.PSN.After(t.coverAck.Packet.PSN) {
				t.coverAck = r
			}
		case a.IsRNR():
			ev.OutstandingBefore = t.Outstanding()
			ev.NAK, ev.Code = CauseRNR, a.Value()
			ev.Implied, ev.Progress = t.cover(p.PSN, false, nil)
			t.trig = append(t.trig, Trigger{Cause: CauseRNR, Rec: r, PSN: p.PSN, Code: a.Value(), Seq: t.c.Seq()})
			t.nak, t.rnr, t.haveRNR = nil, r, true
		case a.Kind() == wire.KindNAK && a.Value() == wire.NAKPSNSequence:
			ev.OutstandingBefore = t.Outstanding()
			ev.NAK = CauseSeqNAK
			ev.Implied, ev.Progress = t.cover(p.PSN, false, nil)
			if !t.haveRNR {
				t.nak = r
			}
			t.trig = append(t.trig, Trigger{Cause: CauseSeqNAK, Rec: r, PSN: p.PSN, Seq: t.c.Seq()})
		case a.Kind() == wire.KindNAK && a.Value() <= wire.NAKRemoteOp:
			ev.NAK, ev.Code = CauseFatal, a.Value()
			ev.Implied, ev.Progress = t.cover(p.PSN, false, nil)
			t.trig = append(t.trig, Trigger{Cause: CauseFatal, Rec: r, PSN: p.PSN, Code: a.Value(), Seq: t.c.Seq()})
		default:
			// Reserved syndromes and NAK codes: what a requester does with
			// them is not settled here.
			return
		}
	case wire.ClassReadResponse:
		ev.Positive = true
		rd := t.Lookup(p.PSN)
		if rd == nil || rd.Op != wire.ReadRequest {
			break
		}
		// The AETH of a READ response acknowledges what came before the
		// READ (C9-97), and passes any older READ still incomplete.
		ev.Implied, _ = t.cover(rd.PSN, false, rd)
		switch d := p.PSN.Diff(rd.ReadNext); {
		case d == 0:
			rd.ReadNext = p.PSN.Next()
			if rd.EndOK && p.PSN == rd.End || (!rd.EndOK && opc.EndsMessage(op)) {
				rd.Done = true
				t.acked = append(t.acked, rd)
			}
		case d > 0:
			ev.Gap = rd
		}
		t.lastResp = r
	case wire.ClassAtomicAck:
		ev.Positive = true
		at := t.Lookup(p.PSN)
		if at == nil || opc.Class(at.Op) != wire.ClassAtomic {
			break
		}
		ev.Implied, _ = t.cover(at.PSN, false, at)
		if !at.Done {
			at.Done = true
			t.acked = append(t.acked, at)
		}
		t.lastResp = r
	}
	seq := t.c.Seq()
	// A response passing READs or ATOMICs whose answers are incomplete
	// acknowledges, as the requester reads it, what comes before the
	// first of them, which it asks for again: the go-back-N starts there.
	// A READ answer out of sequence (Gap) the requester may set aside
	// whole, and what it acknowledged with it.
	if ev.Gap == nil {
		for _, s := range t.acked {
			if len(ev.Implied) == 0 || s.PSN.Before(ev.Implied[0].PSN) {
				s.AckedBy, s.AckedSeq = r, seq
			}
		}
	}
	for _, s := range ev.Implied {
		t.trig = append(t.trig, Trigger{Cause: CauseImplied, Rec: r, PSN: s.PSN, Target: s, Seq: seq})
	}
	if ev.Gap != nil {
		t.trig = append(t.trig, Trigger{Cause: CauseImplied, Rec: r, PSN: ev.Gap.PSN, Target: ev.Gap, Seq: seq})
	}
	if n := len(t.trig); n > maxTrig {
		t.trig = append(t.trig[:0], t.trig[n-maxTrig:]...)
	}
	if ev.Positive || ev.Progress {
		// Any positive response, and a NAK that acknowledges something,
		// may reload the retry counters (when the specification reloads
		// them is not settled: docs/interpretations.md, "When the retry
		// counters reload"), so an episode of
		// retries ends here.
		t.resetEpisode()
	}
}

// cover applies a response with PSN psn: SENDs and WRITEs before it (and
// at it, when inclusive) are acknowledged; READs and ATOMICs it passes
// whose answers are incomplete are returned as implicitly NAKed. self is
// the READ/ATOMIC the response belongs to, which it does not pass. A
// response beyond every PSN sent covers nothing. progress reports that
// something became acknowledged.
func (t *Tracker) cover(psn wire.PSN, inclusive bool, self *Sent) (implied []*Sent, progress bool) {
	if next, _ := t.Next(); psn.Diff(next) > 0 || (psn == next && inclusive) {
		return nil, false
	}
	t.advanceBase()
	// The walk visits the entry at base and then only the entries that
	// may begin a run of live entries: every other one is nil, Done or the
	// same as the entry before it, and would be passed over.
	for i := t.base; i < len(t.ents); i = t.nextStart(i + 1) {
		e := t.ents[i]
		var last *Sent // the entry before, as a walk over every entry would have it
		if i > t.base {
			last = t.ents[i-1]
		}
		if e == nil || e == last || e.Done || e == self {
			if i > t.base && (e == nil || e == last || e.Done) {
				t.clearStart(i)
			}
			continue
		}
		if !e.PSN.Before(psn) && !(inclusive && e.PSN == psn) {
			break
		}
		if e.IsReadOrAtomic() {
			t.learnSpan(e)
			if e.EndOK && e.End.Before(psn) {
				implied = append(implied, e)
			}
			continue
		}
		e.Done = true
		t.acked = append(t.acked, e)
		progress = true
	}
	return implied, progress
}
