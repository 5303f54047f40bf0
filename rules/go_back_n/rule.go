// Package go_back_n checks go-back-N retransmission (no public clause
// number; keyed "go-back-n"): after a transport timeout the requester
// resends from its oldest unacknowledged PSN, and after a
// sequence-error NAK from the PSN the NAK names, in order, giving every
// packet the PSN it had originally. An RDMA READ may be re-requested for
// just its missing part, starting at the first missing response PSN with
// the RETH address and length adjusted to match, so that the retry is an
// exact subset of the original.
package go_back_n

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "go-back-n"

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: ID, New: func(c *harness.Conn) harness.Checker {
		return &monitor{t: retries.Shared(c)}
	}})
}

// monitor checks:
//
//   - every resent PSN repeats what it carried the first time: the same
//     opcode, payload length and payload, RETH and AtomicETH; a PSN inside
//     an RDMA READ's reserved range may only be resent as a READ request
//     for the rest of that READ (VA advanced and length reduced by whole
//     MTUs, same R_Key);
//
//   - a go-back-N that the transport timer starts resumes no later than
//     the oldest unacknowledged PSN (skipping it loses data);
//
//   - after a sequence-error NAK with PSN e, the requester's next request
//     (once packets already in flight have passed) is the resend of e, or
//     of an RDMA READ before e that the NAK left incomplete; after an RNR
//     NAK with PSN x, the next request is a resend at or before x.
//
//   - in a complete trace, a go-back-N sweep leaves no PSN out.
//
// A NAK is judged only when it answers the latest transmission of its PSN
// (a NAK that may predate a resend already under way can be ignored). In
// a capture that is not known to be complete, requests may have been lost
// before the capture point (so a resend may be missing) and a NAK after
// it (so the requester may never have seen it): where the check of a
// go-back-N's start depends on that, the verdict is indeterminate; the
// content of every resend is judged in any trace.
type monitor struct {
	t     *retries.Tracker
	await *await
}

type await struct {
	nak    *trace.Record
	cause  retries.Cause
	lo, hi wire.PSN // a resend starting in [lo, hi] answers the NAK
	reads  []*retries.Sent
}

func (m *monitor) Observe(c *harness.Conn, r *trace.Record) {
	if !c.JudgesRequester() {
		return
	}
	if !opc.IsRequest(r.Packet.Opcode) {
		m.response(c, r)
		return
	}
	ev := m.t.Request(r)
	if ev.Kind == retries.KindNetDup {
		return
	}
	if ev.Kind == retries.KindResend {
		m.content(c, r, ev)
		if ev.Start && ev.Cause == retries.CauseTimeout && ev.HaveBase {
			m.timeoutStart(c, r, ev)
		}
		if ev.MaybeStart && ev.HaveBase && r.Packet.PSN.After(ev.Base) {
			// Read as the sweep going on it is legal; read as a new
			// start after the transport timer it resumes beyond the
			// oldest unacknowledged PSN. The timestamps cannot say which.
			c.Indeterminate(ID, fmt.Sprintf("a resend of PSN %d went on from the previous one after a pause within the live adapter's timing tolerance (%v) of the transport timer's interval: if the timer fired in between, the go-back-N should have started again from PSN %d; the harness's timestamps cannot tell", r.Packet.PSN, c.Settings.Tolerance, ev.Base))
		}
		if ev.SweepGap && c.Complete() && !ev.Ambiguous {
			c.Violation(ID, r, fmt.Sprintf("the go-back-N sweep went from PSN %d to PSN %d, leaving out PSN %d..%d, which were sent before and never acknowledged", ev.GapFrom.Add(-1), r.Packet.PSN, ev.GapFrom, r.Packet.PSN.Add(-1)),
				[]string{fmt.Sprintf("the resend of PSN %d next, in order", ev.GapFrom)}, r.Packet.String())
		}
	}
	if m.await != nil {
		m.awaited(c, r, ev)
	}
}

func (m *monitor) response(c *harness.Conn, r *trace.Record) {
	ev := m.t.Response(r)
	base, haveBase := ev.BaseBefore, ev.HaveBaseBefore
	outstanding := ev.OutstandingBefore
	next := ev.NextBefore
	p := r.Packet
	switch ev.NAK {
	case retries.CauseSeqNAK, retries.CauseRNR:
		// A PSN before the requester's oldest unacknowledged one that the
		// reconstruction shows no response acknowledged yet is a request
		// lost before the capture point: the NAK asks for it.
		e := c.Expected()
		acked := p.PSN.Before(base) && (!e.HaveLo || p.PSN.Before(e.Lo))
		if !haveBase || p.PSN.After(next) || acked {
			// A NAK for a PSN never sent, or already acknowledged: no
			// resend it can ask for.
			m.await = nil
			return
		}
		if s := m.t.Lookup(p.PSN); s != nil && !retries.Fresh(c, s, r.Time) {
			m.await = nil
			return
		}
		a := &await{nak: r, cause: ev.NAK, lo: p.PSN, hi: p.PSN}
		if ev.NAK == retries.CauseRNR {
			a.lo = base
		}
		for _, s := range outstanding {
			if s.Op == wire.ReadRequest && s.PSN.Before(p.PSN) {
				a.reads = append(a.reads, s)
			}
		}
		m.await = a
	case retries.CauseFatal:
		m.await = nil
	default:
		if ev.Positive && m.await != nil && p.PSN.AtOrAfter(m.await.hi) {
			// The responder moved past the NAKed PSN: it got it after all.
			m.await = nil
		}
	}
}

// content checks that a resent PSN carries what it carried before.
func (m *monitor) content(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	o := ev.Orig
	if o == nil {
		return
	}
	p := r.Packet
	bad := func(what string) {
		orig := fmt.Sprintf("first sent as %s (frame %d)", o.Op.ShortName(), o.First.Frame)
		if o.PSN != p.PSN {
			orig = fmt.Sprintf("it belongs to the response range of the RDMA READ at PSN %d (frame %d)", o.PSN, o.First.Frame)
		}
		c.Violation(ID, r, fmt.Sprintf("PSN %d was resent %s; %s", p.PSN, what, orig),
			[]string{fmt.Sprintf("the resend of PSN %d repeats the original %s", p.PSN, o.Op.ShortName()), "for a PSN inside an RDMA READ's range: a READ request for the rest of that READ"},
			p.String())
	}
	if o.PSN != p.PSN {
		// Inside a READ's reserved range (o is the READ).
		if o.Op != wire.ReadRequest {
			return
		}
		if p.Opcode != wire.ReadRequest {
			bad("as " + p.Opcode.ShortName())
			return
		}
		mtu := c.MTU()
		if mtu == 0 {
			c.Indeterminate(ID, "a partial READ retry was seen but the path MTU is unknown; --mtu=N would decide whether it is an exact subset")
			return
		}
		k := p.PSN.Diff(o.PSN)
		off := uint64(k) * uint64(mtu)
		ro := o.First.Packet.RETH
		if uint64(ro.Length) <= off {
			bad(fmt.Sprintf("as a READ %d response packets into the original READ, which has fewer", k))
			return
		}
		want := wire.RETH{VA: ro.VA + off, RKey: ro.RKey, Length: ro.Length - uint32(off)}
		if p.RETH != want {
			bad(fmt.Sprintf("as a READ with va=0x%x rkey=0x%x len=%d, not the exact rest of the original READ (va=0x%x rkey=0x%x len=%d)",
				p.RETH.VA, p.RETH.RKey, p.RETH.Length, want.VA, want.RKey, want.Length))
			return
		}
		c.Checked(ID)
		return
	}
	first := o.First // what the original carried
	switch {
	case p.Opcode != o.Op:
		bad("as " + p.Opcode.ShortName())
	case opc.Has(p.Opcode, wire.HdrRETH) && p.RETH != first.Packet.RETH:
		ro := first.Packet.RETH
		bad(fmt.Sprintf("with RETH va=0x%x rkey=0x%x len=%d instead of va=0x%x rkey=0x%x len=%d", p.RETH.VA, p.RETH.RKey, p.RETH.Length, ro.VA, ro.RKey, ro.Length))
	case opc.Has(p.Opcode, wire.HdrAtomicETH) && p.Atomic != first.Packet.Atomic:
		bad("with a different AtomicETH")
	case !r.Truncated && !first.Truncated && r.PayloadLen != first.PayloadLen:
		bad(fmt.Sprintf("with %d payload bytes instead of %d", r.PayloadLen, first.PayloadLen))
	default:
		if sum, ok := retries.PayloadSum(r); ok && o.HasSum && sum != o.Sum {
			bad("with a different payload")
			return
		}
		c.Checked(ID)
	}
}

// timeoutStart checks where a timer-driven go-back-N resumes.
func (m *monitor) timeoutStart(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	p := r.Packet
	if p.PSN.AtOrBefore(ev.Base) {
		c.Checked(ID)
		return
	}
	if ev.Ambiguous {
		c.Unresolved(ID, "a go-back-N seemed to resume beyond the oldest unacknowledged PSN with a repeat, and "+retries.CopyDoubt)
		return
	}
	if !c.Complete() {
		c.Unresolved(ID, "a go-back-N seemed to resume beyond the oldest unacknowledged PSN: a violation unless its first packets were lost before the capture point; --complete would decide")
		return
	}
	c.Violation(ID, r, fmt.Sprintf("after a silence (the transport timer) the requester went back to PSN %d, beyond the oldest unacknowledged PSN %d: the PSNs in between were never acknowledged and are skipped", p.PSN, ev.Base),
		[]string{fmt.Sprintf("a go-back-N from the oldest unacknowledged PSN %d (or earlier), in order", ev.Base)},
		fmt.Sprintf("resend starting at PSN %d", p.PSN))
}

func (m *monitor) awaited(c *harness.Conn, r *trace.Record, ev *retries.ReqEvent) {
	a := m.await
	p := r.Packet
	ok := false
	if ev.Kind == retries.KindResend {
		if p.PSN.InRange(a.lo, a.hi) {
			ok = true
		}
		for _, rd := range a.reads {
			if p.Opcode == wire.ReadRequest && p.PSN.InRange(rd.PSN, rd.ReadNext) {
				ok = true
			}
		}
	}
	if ok {
		c.Checked(ID)
		m.await = nil
		return
	}
	since := r.Time - a.nak.Time
	if since <= retries.Reaction(c) {
		return // sent before the NAK could be processed
	}
	m.await = nil
	what := "a new request"
	if ev.Kind == retries.KindResend {
		what = "a resend"
	}
	want := fmt.Sprintf("the resend of PSN %d", a.hi)
	if a.cause == retries.CauseRNR {
		want = fmt.Sprintf("a resend from PSN %d (the refused packet, or an earlier unacknowledged one), after the RNR delay", a.hi)
	}
	if !retries.Delivered(c) {
		// The NAK may have been lost on its way: a timeout then goes back
		// to the oldest unacknowledged PSN (never beyond the NAK's), and
		// new requests are legal.
		c.Unresolved(ID, "after a NAK the requester did not go back to its PSN, but the NAK may not have reached the requester, or the resend may have been lost before the capture point; a capture taken at the requester (--complete) would decide")
		return
	}
	c.Violation(ID, r, fmt.Sprintf("after the %s with PSN %d (frame %d) the requester sent %s with PSN %d, %v later, instead of going back to PSN %d", a.cause, a.hi, a.nak.Frame, what, p.PSN, since.Round(time.Nanosecond), a.hi),
		[]string{want, "nothing, if no retry is left (the QP goes to ERROR)"}, p.String())
}

func (m *monitor) End(*harness.Conn) {}
