package harness

import (
	"fmt"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file is the part of the connection's reconstruction that follows
// the responder's expected PSN step by step on a complete trace (every
// request the responder received is in it): the expected-PSN window, the
// expected PSNs the responder passed through since the latest point a
// response proved, with the requests it met on the way and how it
// classified each (the PSN check of §9.7.4). The window is what a
// response is judged against: the responder may have built it at any
// point of the window. Its current end is the reconstruction's expected
// PSN (Conn.Expected) wherever the window holds; the dupnak monitors read
// it through Conn.Window and keep no copy of their own.

// Bounds on what the window remembers; past them it gives up exactness
// (monitors then leave their instances undecided) rather than guess.
const maxWindowReqs = 4096 // requests since the latest proven point

// String names a request class as the specification's Response Generation
// text does.
func (k ReqClass) String() string {
	return [...]string{"unknown", "new", "ahead", "duplicate"}[k&3]
}

// ExpStep is one point of the expected-PSN window: the expected PSN after
// a request was accepted in sequence (or the window's base).
type ExpStep struct {
	E     wire.PSN // expected PSN after the step
	By    wire.PSN // PSN of the request this step accepted
	HasBy bool
	seq   int // sequence number of that request (-1 for a base without one)
}

// WinReq is a request packet the window absorbed, with its class against
// the expected PSN E it met.
type WinReq struct {
	Seq   int
	Rec   *trace.Record
	N     int // PSNs the request occupies (a READ: its response packets); 0 unknown
	Class ReqClass
	E     wire.PSN
}

// Window is the expected-PSN window of a complete trace. Read it through
// Conn.Window; Conn.StepWindow applies a record to it.
type Window struct {
	inited bool
	on     bool // the trace is complete: the window is kept
	hyp    bool // a hypothesis is held (steps is meaningful)
	synced bool // a positive response confirmed the hypothesis
	steps  []ExpStep
	reqs   []WinReq // requests absorbed since the base (all of them while not synced)
	seq    int      // requests seen so far
	lost   string   // why the window was given up ("" while it holds)
	dead   bool     // the responder ended the connection with a NAK (codes 1–3)

	applied *trace.Record // the record last applied
	last    WinStep
}

// WinStep is what applying one record did to the window.
type WinStep struct {
	// Class and E: a request's class against the expected PSN E it met
	// (ReqUnknown unless the window is exact after it).
	Class ReqClass
	E     wire.PSN
	// Seq is a request's sequence number (1 for the first request).
	Seq int
}

// Window returns the connection's expected-PSN window, as far as records
// were applied to it (StepWindow).
func (c *Conn) Window() *Window { return &c.win }

// Exact reports whether the window makes exact judgments: the trace is
// complete, the window holds, and a response confirmed it.
func (w *Window) Exact() bool { return w.on && w.synced && w.lost == "" }

// Holds reports whether the window holds (it may not yet be confirmed).
func (w *Window) Holds() bool { return w.on && w.hyp && w.lost == "" }

// On reports whether the window is kept (the trace is complete).
func (w *Window) On() bool { return w.on }

// Synced reports whether a positive response confirmed the window.
func (w *Window) Synced() bool { return w.synced }

// Dead reports whether the responder ended the connection with a NAK.
func (w *Window) Dead() bool { return w.dead }

// Seq returns how many requests the window has seen.
func (w *Window) Seq() int { return w.seq }

// Why returns why the window is not exact (for indeterminate reasons).
func (w *Window) Why() string {
	switch {
	case !w.on:
		return "the capture may miss packets on either side of the capture point or begin mid-connection, so the responder's expected PSN is known only from below (audit with --complete if it holds the whole connection)"
	case w.lost != "":
		return w.lost
	case !w.synced:
		return "no positive response has yet shown where the responder's expected PSN stood"
	}
	return ""
}

// Steps returns the window's points, base first (valid until the next
// record is applied).
func (w *Window) Steps() []ExpStep {
	if !w.hyp {
		return nil
	}
	return w.steps
}

// Reqs returns the requests absorbed since the window's base (valid until
// the next record is applied).
func (w *Window) Reqs() []WinReq { return w.reqs }

// Cur returns the window's current expected PSN.
func (w *Window) Cur() wire.PSN { return w.steps[len(w.steps)-1].E }

// StepBy returns the index of the window step that accepted PSN p (0 for
// the base when the base was reached by accepting p and fromBase), or -1.
func (w *Window) StepBy(p wire.PSN, fromBase bool) int {
	for i, s := range w.Steps() {
		if i == 0 && !fromBase {
			continue
		}
		if s.HasBy && s.By == p {
			return i
		}
	}
	return -1
}

// FirstE returns the index of the first window point whose expected PSN
// is x, or -1.
func (w *Window) FirstE(x wire.PSN) int {
	for i, s := range w.Steps() {
		if s.E == x {
			return i
		}
	}
	return -1
}

// reqPSNs returns how many PSNs request p occupies at the connection's
// MTU, or 0 when unknown (a READ longer than the smallest MTU on a
// connection whose MTU is not known).
func reqPSNs(c *Conn, p *wire.Packet) int {
	if p.Opcode != wire.ReadRequest {
		return 1
	}
	if p.RETH.Length <= minMTU {
		return 1
	}
	if m := c.MTU(); m != 0 {
		return wire.ReadResponsePackets(p.RETH.Length, m)
	}
	return 0
}

// StepWindow applies r to the window (once: a second call for the same
// record returns the first call's result). The Auditor applies every
// record after the monitors saw it; a monitor that needs the window both
// before and after a record (the dupnak tracker) reads it, then applies
// the record itself.
func (c *Conn) StepWindow(r *trace.Record) WinStep {
	w := &c.win
	if w.applied == r {
		return w.last
	}
	if !w.inited {
		w.inited, w.on = true, c.Complete()
	}
	w.applied = r
	w.last = WinStep{}
	p := r.Packet
	op := p.Opcode
	switch {
	case opc.IsRequest(op):
		w.request(c, r)
	case opc.IsResponse(op) && !w.dead:
		// Copies the network or the capture made never reach it: the
		// connection's copy detector (copies.go) leaves them out.
		w.response(c, r)
	}
	return w.last
}

// giveUp abandons the window (it restarts from the next sequence NAK, RNR
// NAK or positive response naming the newest request, tentatively).
func (w *Window) giveUp(why string) {
	w.lost, w.hyp, w.synced = why, false, false
	w.steps, w.reqs = w.steps[:0], w.reqs[:0]
}

func (w *Window) request(c *Conn, r *trace.Record) {
	p := r.Packet
	w.seq++
	w.last.Seq = w.seq
	if !w.on || w.dead {
		return
	}
	if !w.hyp && w.lost == "" {
		// The first request: hypothesise it carries the expected PSN,
		// unless the run knows where the responder started.
		w.hyp = true
		e := p.PSN
		if c.Settings.StartKnown && w.seq == 1 {
			e, w.synced = c.Settings.StartPSN, true
		}
		w.steps = append(w.steps[:0], ExpStep{E: e, seq: -1})
	}
	if !w.hyp {
		return
	}
	w.reqs = append(w.reqs, WinReq{Seq: w.seq, Rec: r, N: reqPSNs(c, p)})
	k := len(w.reqs) - 1
	e := w.Cur()
	w.classify(k)
	if w.lost == "" && w.synced {
		w.last.Class, w.last.E = w.reqs[k].Class, e
	}
	if len(w.reqs) > maxWindowReqs {
		w.giveUp(fmt.Sprintf("more than %d requests without a response that pins the responder's progress", maxWindowReqs))
	}
}

// classify runs the PSN check on reqs[k] against the window's current
// expected PSN and extends the window when it is accepted.
func (w *Window) classify(k int) {
	q := &w.reqs[k]
	p := q.Rec.Packet
	e := w.Cur()
	q.E = e
	switch d := p.PSN.Diff(e); {
	case d == 0:
		if q.N == 0 {
			w.giveUp("a multi-packet READ on a connection whose path MTU is unknown: how many PSNs it reserves cannot be told (give --mtu)")
			return
		}
		q.Class = ReqInSeq
		w.steps = append(w.steps, ExpStep{E: p.PSN.Add(q.N), By: p.PSN, HasBy: true, seq: q.Seq})
	case d > 0:
		q.Class = ReqAhead
	default:
		q.Class = ReqBehind
	}
}

// pinAt makes window point i the base: the responder is proven to have
// reached it when it built the current response.
func (w *Window) pinAt(i int) {
	if i <= 0 {
		return
	}
	seq := w.steps[i].seq
	w.steps = append(w.steps[:0], w.steps[i:]...)
	if w.synced {
		w.dropReqsUpTo(seq)
	}
}

// dropReqsUpTo forgets the requests up to sequence number seq.
func (w *Window) dropReqsUpTo(seq int) {
	k := 0
	for k < len(w.reqs) && w.reqs[k].Seq <= seq {
		k++
	}
	w.reqs = append(w.reqs[:0], w.reqs[k:]...)
}

// rehypothesise restarts the window with expected PSN x and reruns the PSN
// check on every request kept (the hypothesis that the first request was
// in sequence was wrong, or the window was lost).
func (w *Window) rehypothesise(x wire.PSN) {
	w.steps = append(w.steps[:0], ExpStep{E: x, seq: -1})
	w.hyp, w.lost = true, ""
	for k := range w.reqs {
		w.classify(k)
		if w.lost != "" {
			return
		}
	}
}

// rollback undoes the acceptance at window step i: the responder refused
// that request (RNR NAK), so its expected PSN stayed at the request's
// PSN, and the requests after it are classified again from there.
func (w *Window) rollback(i int) {
	seq := w.steps[i].seq
	w.steps = w.steps[:i]
	k := 0
	for k < len(w.reqs) && w.reqs[k].Seq <= seq {
		k++
	}
	if k > 0 {
		w.reqs[k-1].Class = ReqUnknown
	}
	for j := k; j < len(w.reqs); j++ {
		w.classify(j)
		if w.lost != "" {
			return
		}
	}
}

func (w *Window) response(c *Conn, r *trace.Record) {
	p := r.Packet
	switch op := p.Opcode; {
	case op == wire.Acknowledge && p.AETH.IsACK():
		// A response whose PSN no legal responder gives proves nothing
		// of where the responder stood (one root cause, one clause).
		if c.AckPSNFault(r) == "" {
			w.positive(c, p.PSN, p.PSN)
		}
	case op == wire.Acknowledge && p.AETH.IsNAK(wire.NAKPSNSequence):
		w.seqNAK(c, p.PSN)
	case op == wire.Acknowledge && p.AETH.IsRNR():
		w.refusal(p.PSN)
	case op == wire.Acknowledge:
		// NAK codes 1–3 (and reserved ones): the responder ends the
		// connection once it is sent.
		w.dead = true
	case opc.Class(op) == wire.ClassReadResponse:
		if rd := c.ReadCovering(p.PSN); rd != nil {
			w.positive(c, rd.First, rd.LastMin)
		}
	case op == wire.AtomicAcknowledge:
		if c.atomicAckPSNFault(r) == "" {
			w.positive(c, p.PSN, p.PSN)
		}
	}
}

// positive handles a response proving the request at psn was executed (a
// positive ACK, a READ response, an ATOMIC acknowledgment): last is the
// last PSN that request reserved.
func (w *Window) positive(c *Conn, psn, last wire.PSN) {
	if !w.on {
		return
	}
	if !w.hyp {
		// A lost window restarts from a positive response naming the
		// newest request seen: on a complete trace nothing beyond it
		// reached the responder, so its expected PSN is just past it.
		if w.lost != "" && c.HaveReq && last == c.NextReq.Add(-1) {
			w.rehypothesise(last.Next())
			w.synced = w.lost == ""
		}
		return
	}
	if i := w.StepBy(psn, true); i >= 0 {
		w.pinAt(i)
		if !w.synced {
			w.synced = true
			// Keep only what follows the base from now on.
			w.dropReqsUpTo(w.steps[0].seq)
		}
	}
}

// seqNAK handles a PSN sequence error NAK naming x.
func (w *Window) seqNAK(c *Conn, x wire.PSN) {
	if !w.on {
		return
	}
	if w.TookBeyondMTU(c, x) {
		// The window took in sequence a request no responder can
		// execute, and the responder still expects its PSN: it dropped
		// the request (without the NAK invalid request it owes it,
		// §9.7.5.1.5), so its expected PSN stayed there, as after a
		// refusal.
		w.refusal(x)
		return
	}
	if w.hyp {
		if i := w.FirstE(x); i >= 0 {
			w.pinAt(i)
		} else if !w.synced {
			w.rehypothesise(x)
		}
	} else if w.lost != "" {
		// Restart the window from the responder's own word, tentatively.
		w.rehypothesise(x)
		w.synced = false
	}
}

// TookBeyondMTU reports whether the window took in sequence, at PSN x, a
// request no responder can execute for its length (Conn.BeyondMTU): a
// sequence NAK naming x then shows the responder dropped it.
func (w *Window) TookBeyondMTU(c *Conn, x wire.PSN) bool {
	i := w.StepBy(x, false)
	if i < 0 {
		return false
	}
	seq := w.steps[i].seq
	for _, q := range w.reqs {
		if q.Seq == seq {
			return c.BeyondMTU(q.Rec) != ""
		}
	}
	return false
}

// refusal handles an RNR NAK naming psn: the request was refused and the
// responder's expected PSN stayed there.
func (w *Window) refusal(psn wire.PSN) {
	if !w.on {
		return
	}
	if !w.hyp {
		if w.lost != "" {
			w.rehypothesise(psn)
			w.synced = false
		}
		return
	}
	if i := w.StepBy(psn, false); i >= 0 {
		w.rollback(i)
		if w.lost == "" {
			if j := w.FirstE(psn); j >= 0 {
				w.pinAt(j)
			}
		}
		return
	}
	if !w.synced {
		w.rehypothesise(psn)
		return
	}
	if len(w.steps) > 0 && psn.Before(w.steps[0].E) {
		// Behind the expected PSN the responder's own word fixed: the
		// NAK's PSN is wrong (C9-113), and which request it refused,
		// if any, the trace does not tell.
		w.giveUp(fmt.Sprintf("an RNR NAK named PSN %d, which the responder had already passed (its expected PSN was %d): which request it refused the trace does not tell", psn, w.steps[0].E))
	}
}
