package retries

import (
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file reads the requester's packets: new requests, resends, the
// go-back-N sweeps and the retry episode each belongs to.

// Request reads a request packet and updates the model. The event is
// the Tracker's, good until its next Request or Response: a monitor that
// keeps it copies it. (Handed out by pointer: the monitors of a
// connection each read the shared tracker's event of every request, and
// copying its 150 bytes for each cost more than reading it.)
func (t *Tracker) Request(r *trace.Record) *ReqEvent {
	if !t.memo(r) {
		t.request(r, &t.memoReq)
		t.remember(r)
		if !r.Copy {
			t.coverAck = nil
		}
	}
	return &t.memoReq
}

// request fills ev with the reading of request packet r.
func (t *Tracker) request(r *trace.Record, ev *ReqEvent) {
	p := r.Packet
	*ev = ReqEvent{Rec: r}
	ev.Base, ev.HaveBase = t.Base()
	if r.Copy {
		// A copy the network made or a frame the capture recorded
		// twice (the connection's copy detector marked it), also when a
		// newer transmission of the PSN came in between.
		ev.Kind = KindNetDup
		return
	}
	first := !t.have
	if first {
		t.start(r)
	}
	// New or resent is the reconstruction's call: a PSN at or after every
	// PSN a request used (READ spans learnt since included) is new.
	if next, ok := t.Next(); !ok || p.PSN.AtOrAfter(next) {
		ev.Kind = KindNew
		if t.prev != nil && p.PSN == t.prevEnd.Next() {
			for i := len(t.trig) - 1; i >= 0; i-- {
				if t.trig[i].Cause == CauseRNR {
					g := t.trig[i]
					ev.RNRWait, ev.Prev = &g, t.prev
					break
				}
			}
		}
		t.absorbNew(r)
		if !first {
			t.fillEpisode(ev)
		}
		return
	}
	ev.Kind = KindResend
	orig := t.Lookup(p.PSN)
	if orig != nil && orig.PSN != p.PSN && !orig.EndOK {
		// A request at a PSN only maybe the READ's: its end is open (the
		// MTU unknown) and p lies past the part it surely reserved (for
		// example, a SEND right after a READ, resent).
		if sp := t.c.ReadSpanAt(p.PSN); sp == nil || (!sp.Known() && p.PSN.After(sp.LastMin)) {
			orig = nil
		}
	}
	if orig != nil {
		cp := *orig
		ev.Orig = &cp
		if orig.PSN == p.PSN {
			ev.PrevSend, ev.PrevSeq = orig.Last, orig.LastSeq
		}
		ev.Answered = orig.Done || (orig.Op == wire.ReadRequest && p.PSN.Before(orig.ReadNext))
		if ev.PrevSend != nil && t.lastResp != nil && t.lastResp.Time > ev.PrevSend.Time {
			ev.RespSince = true
		}
	} else if p.PSN.Diff(t.origin) < 0 {
		// Before everything remembered: long acknowledged.
		ev.Answered = true
	}
	// A resend gets a new IPv4 Identification (copies were told above):
	// one repeating the previous transmission's ID, or a repeat with no
	// ID to tell, may be either.
	if ev.PrevSend != nil && r.HasIPID && ev.PrevSend.HasIPID && r.IPID == ev.PrevSend.IPID {
		ev.Ambiguous = true
	} else if ev.PrevSend != nil && (!r.HasIPID || !ev.PrevSend.HasIPID) && repeatsHeaders(ev.PrevSend.Packet, p) {
		ev.Ambiguous = true
	}
	// A resend late enough for the transport timer to have prompted it
	// measures no reaction: the NAK may never have reached the requester.
	nakd, rnrd := t.nak != nil && p.PSN == t.nak.Packet.PSN, t.haveRNR && p.PSN == t.rnr.Packet.PSN
	timer := (nakd || rnrd) && t.timerMayHaveFired(r, ev.PrevSend)
	if n := t.nak; nakd {
		// The requester's first resend of the PSN a sequence NAK named
		// since: the NAK reached it and changed what it sent within
		// this interval. (Where the timer's interval is unknown, a
		// resend the timer prompted may show another interval, shorter
		// or longer: the longest is kept, which errs toward a response
		// still on its way.)
		if !timer {
			t.react, t.haveReact = max(t.react, r.Time-n.Time), true
		}
		t.nak = nil
	}
	if n := t.rnr; rnrd {
		// The RNR delay waited out: what the resend took beyond it is
		// at least the time the NAK took to reach the requester.
		if d := r.Time - n.Time - wire.RNRDelay(n.Packet.AETH.Value()); d >= 0 && !timer {
			t.rnrReact, t.haveRNRReact = max(t.rnrReact, d), true
		}
		t.haveRNR = false
	}
	cont, gap, maybe := t.continues(r)
	ev.Start, ev.SweepGap, ev.MaybeStart = !cont, gap, maybe
	if cont {
		ev.SweepPause = r.Time - t.prev.Time
		if !gap && !maybe {
			t.pace, t.havePace = max(t.pace, ev.SweepPause), true
		}
		if skipped := p.PSN.Diff(t.prevEnd.Next()); gap && t.havePace && !(r.HasIPID && t.c.NumbersByOne(trace.ToResponder)) {
			ev.GapUnshown = ev.SweepPause > time.Duration(skipped+1)*t.pace
		}
	}
	if react, ok := t.Reaction(); cont && ok && t.coverAck != nil && !t.coverAck.Packet.PSN.Before(p.PSN) && r.Time-t.coverAck.Time > react {
		ev.AckedBefore = t.coverAck
	}
	switch {
	case gap:
		ev.GapFrom = t.prevEnd.Next()
		t.swept(ev.GapFrom, p.PSN.Diff(ev.GapFrom), r)
	case !cont && t.prevKind == KindResend && r.HasIPID && t.prev.HasIPID:
		// The requester's IDs say it sent packets after the previous
		// resend that the trace lacks: the sweep going on, where
		// requests were outstanding past it.
		if d := r.IPID - t.prev.IPID; d > 1 && d < 1<<15 {
			t.swept(t.prevEnd.Next(), int(d)-1, r)
		}
	}
	// A go-back-N begins at the requester's oldest unacknowledged request:
	// one past the PSN resent was not the oldest it knew of (the
	// acknowledgments the trace shows up to it did not reach it, or it
	// went back behind them), unless the trace shows no earlier
	// transmission of that PSN (a READ asked again from inside its range).
	if oldest := t.OldestOutstanding(); oldest != nil && oldest.Last != nil && (ev.PrevSend == nil || !oldest.PSN.After(p.PSN)) {
		ev.OldestLast, ev.OldestLastSeq = oldest.Last, oldest.LastSeq
		if oldest.Swept != nil {
			ev.OldestSwept, ev.OldestSweptSeq, ev.OldestSweptNext, ev.OldestSweptSkipped = oldest.Swept, oldest.SweptSeq, oldest.SweptNext, oldest.SweptSkipped
		}
	}
	if ev.Start {
		ev.Cause, ev.Trigger = t.cause(r)
		if ev.Cause == CauseImplied && orig != nil && orig.PSN == p.PSN && orig.Done && orig.AckedBy != nil && t.ackedFirst(orig, p.PSN) {
			ev.AckedFirst = orig.AckedBy
		}
		t.count(ev)
		t.trig = t.trig[:0]
	} else if ev.MaybeStart {
		// Taken as the sweep going on, but it may have been a timeout's
		// retry: the transport counter may have paid for it.
		t.ep.transportUnsure++
	}
	t.absorbResend(r, orig)
	t.fillEpisode(ev)
}

// timerMayHaveFired reports whether resend r, of a PSN last sent at prev
// (nil: not shown), came late enough after prev, or after the latest
// transmission of the oldest request outstanding, for the transport
// timer to have prompted it, the local ACK timeout known (and the timer
// not disabled).
func (t *Tracker) timerMayHaveFired(r, prev *trace.Record) bool {
	d, zero, known := AckTimeout(t.c)
	if !known || zero {
		return false
	}
	if o := t.OldestOutstanding(); o != nil && o.Last != nil && (prev == nil || o.Last.Time < prev.Time) {
		prev = o.Last
	}
	return prev != nil && r.Time-prev.Time >= TimerFloor(t.c, d)
}

// Reaction returns the longest interval the trace showed from a sequence
// NAK to the requester's first resend of the PSN it named, or, where it
// showed none, from an RNR NAK to that resend less the delay it asked for,
// leaving out resends the transport timer may have prompted
// (timerMayHaveFired; ok false: none yet): a bound, from the capture's own evidence, on
// how long a response takes from the capture point to the requester and
// on to a change in what the requester sends.
func (t *Tracker) Reaction() (d time.Duration, ok bool) {
	if t.haveReact {
		return t.react, true
	}
	return t.rnrReact, t.haveRNRReact
}

// swept notes, on the requests outstanding at the n PSNs from PSN from,
// which a sweep passed after the previous resend without the trace
// showing them before request r, that it went by after their latest
// transmission (Sent.Swept).
func (t *Tracker) swept(from wire.PSN, n int, r *trace.Record) {
	for q := from; q != from.Add(n); q = q.Next() {
		if e := t.Lookup(q); e != nil && !e.Done && e.PSN == q {
			e.Swept, e.SweptSeq, e.SweptNext, e.SweptSkipped = t.prev, t.prevSeq, r, n
		}
	}
}

// repeatsHeaders reports whether request b repeats a's headers and
// payload length: with no IPv4 Identification to tell them apart, a
// network's copy of a as well as its resend.
func repeatsHeaders(a, b *wire.Packet) bool {
	return a.Opcode == b.Opcode && a.PSN == b.PSN && a.AckReq == b.AckReq && len(a.Payload) == len(b.Payload) &&
		a.RETH == b.RETH && a.Atomic == b.Atomic
}

// continues reports whether a resend carries on the go-back-N sweep of
// the previous request: a later PSN than the previous resend's, with no
// new trigger naming this PSN in between and no pause as long as a
// transport timer. gap reports PSNs skipped since the previous resend:
// packets lost before the capture point in a capture, but in a complete
// trace a sweep that left PSNs out. maybe reports a continuation that
// could also be a new start (ReqEvent.MaybeStart).
func (t *Tracker) continues(r *trace.Record) (cont, gap, maybe bool) {
	if t.prev == nil || t.prevKind != KindResend {
		return false, false, false
	}
	d := r.Packet.PSN.Diff(t.prevEnd)
	if d < 1 {
		return false, false, false
	}
	if d > 1 && !t.c.Complete() && t.c.SentAllSince(trace.ToResponder, t.prevSeq) {
		// In a capture, the PSNs skipped are a sweep's packets lost
		// before the capture point only if the requester sent them:
		// its IDs show it sent nothing in between.
		return false, false, false
	}
	for _, tr := range t.trig {
		if tr.Rec.Time > t.prev.Time && tr.Cause != CauseNone && tr.PSN == r.Packet.PSN {
			return false, false, false
		}
	}
	// A timer may have fired in between only if the pause reaches the
	// interval less the timing slack. When the slack swallows the whole
	// interval (a live device whose adapter measured a tolerance above
	// it), the pause cannot tell a new start from the sweep going on, and
	// the sweep going on in order is the legal reading. On a real clock
	// the timer surely fired only when the pause exceeds the interval
	// plus the tolerance; short of that the sweep may be going on.
	if iv, _, known := AckTimeout(t.c); known && iv > 0 {
		pause := r.Time - t.prev.Time
		floor := TimerFloor(t.c, iv)
		switch {
		case floor <= 0, pause < floor:
		case t.c.Settings.Active && t.c.Settings.Tolerance > 0 && pause < iv+t.c.Settings.Tolerance:
			return true, d > 1, true
		default:
			return false, false, false
		}
	}
	return true, d > 1, false
}

// cause explains a retry start at r by the latest trigger since the last
// retry start, or by the latest naming r's own PSN where there is one: a
// retry begins at the PSN its trigger names, so one naming another PSN
// (an implied NAK of an older READ or ATOMIC that the same RNR NAK passed)
// did not start it. A trigger naming a PSN before r's whose requests up
// to r's were all acknowledged or answered before r asks for nothing any
// more (for example, an implied NAK of an ATOMIC answered since, and a
// resend past it that only the timer explains).
func (t *Tracker) cause(r *trace.Record) (Cause, *Trigger) {
	var latest *Trigger
	for i := len(t.trig) - 1; i >= 0; i-- {
		g := &t.trig[i]
		switch g.Cause {
		case CauseSeqNAK, CauseRNR, CauseImplied, CauseFatal:
		default:
			continue
		}
		if g.PSN.Before(r.Packet.PSN) && t.settled(g.PSN, r.Packet.PSN) {
			continue
		}
		if g.PSN == r.Packet.PSN {
			latest = g
			break
		}
		if latest == nil {
			latest = g
		}
	}
	if latest == nil {
		return CauseTimeout, nil
	}
	cp := *latest
	return latest.Cause, &cp
}

// ackedFirst reports whether every response since the last retry start
// that cause may take for a retry start at PSN p (those it does not set
// aside) names a PSN past p and came with or after the in-sequence
// response that acknowledged s, p's entry (an ACK covering p implies a
// NAK of an ATOMIC or READ past it that it passes): an implied NAK asks
// for its READ or ATOMIC again (§9.7.5.1.2), a sequence or RNR NAK for
// the PSN it names, so none of them asked for p, which the requester held
// acknowledged when they arrived, had it received that response.
func (t *Tracker) ackedFirst(s *Sent, p wire.PSN) bool {
	for i := range t.trig {
		g := &t.trig[i]
		switch g.Cause {
		case CauseSeqNAK, CauseRNR, CauseImplied, CauseFatal:
		default:
			continue
		}
		if g.PSN.Before(p) && t.settled(g.PSN, p) {
			continue
		}
		if !g.PSN.After(p) || g.Seq < s.AckedSeq {
			return false
		}
	}
	return true
}

// settled reports whether every request from PSN from up to (not at) PSN
// to is known acknowledged or answered.
func (t *Tracker) settled(from, to wire.PSN) bool {
	for q, i := from, 0; q != to; q, i = q.Next(), i+1 {
		if e := t.Lookup(q); e == nil || !e.Done || i > maxSettledScan {
			return false
		}
	}
	return true
}

// maxSettledScan bounds the PSNs settled walks.
const maxSettledScan = 4096

// count charges a retry start to the episode's counters.
func (t *Tracker) count(ev *ReqEvent) {
	unsure := ev.Ambiguous
	switch ev.Cause {
	case CauseTimeout, CauseSeqNAK:
		// A NAK lost after the capture point leaves a timeout: the same
		// counter either way. A "timeout" start sooner after the PSN's
		// previous transmission than any transport timer could expire is
		// no timeout the requester may count: it breaks C9-140, which
		// judges it; whether it spent a transport retry cannot be told.
		if ev.Cause == CauseTimeout && ev.PrevSend != nil {
			if d, zero, known := AckTimeout(t.c); known && !zero && ev.Rec.Time-ev.PrevSend.Time < TimerFloor(t.c, d) {
				unsure = true
			}
		}
		if unsure {
			t.ep.transportUnsure++
		} else {
			t.ep.transport++
			if ev.Cause == CauseTimeout {
				t.ep.timeouts++
			}
		}
	case CauseRNR:
		// An RNR NAK lost after the capture point would leave a
		// timeout instead, charged to the other counter.
		if !Delivered(t.c) {
			if d, zero, known := AckTimeout(t.c); !known || (!zero && ev.PrevSend != nil && ev.Rec.Time-ev.PrevSend.Time >= TimerFloor(t.c, d)) {
				unsure = true
			}
		}
		if unsure {
			t.ep.rnrUnsure++
		} else {
			t.ep.rnr++
		}
	}
}

func (t *Tracker) fillEpisode(ev *ReqEvent) {
	ev.Transport, ev.TransportUnsure = t.ep.transport, t.ep.transportUnsure
	ev.RNR, ev.RNRUnsure = t.ep.rnr, t.ep.rnrUnsure
	ev.Timeouts = t.ep.timeouts
}

func (t *Tracker) resetEpisode() {
	t.ep.transport, t.ep.transportUnsure, t.ep.rnr, t.ep.rnrUnsure, t.ep.timeouts = 0, 0, 0, 0, 0
}

func (t *Tracker) start(r *trace.Record) {
	t.have = true
	t.origin = r.Packet.PSN
	clear(t.ents) // no stale Sent (and its records) kept alive behind len
	t.ents = t.ents[:0]
	t.starts = t.starts[:0]
	t.base = 0
}
