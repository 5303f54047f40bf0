package script

import (
	"fmt"
	"strings"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// reqGen is the state of a script being made that plays the recorded
// responder against a device taking the recorded requester's place.
type reqGen struct {
	gen
	dpsn    wire.PSN
	nextNew wire.PSN // the next PSN the device sends for the first time
	wrs     []postedWR
	// last is the capture time of the previous record played; cause the
	// latest answer played since the device's last new packet: what
	// makes it go back.
	last  time.Duration
	cause *wire.Packet
	// answers are the recorded responder's packets played.
	answers []*wire.Packet
	// pending are the device's first transmissions not yet expected, in
	// PSN order; played, the records played ahead of their place.
	pending []pendingTx
	played  map[int]bool
	// folded: the recorded responder's regions did not fit (peerOff).
	folded bool
}

// postedWR is a message the device was told to post.
type postedWR struct {
	id          int
	first, last wire.PSN
	kind        wire.Class
	// status is the error it completes with, when a NAK refused it.
	status string
}

// fromRequester writes the script for a device in the recorded
// requester's place (see FromCapture). Besides the resends and refusals
// the rules fix, every work request the recorded responder's answers
// complete is expected to complete with success (§9.7.5.1.2: how the
// requester reads an acknowledgment, a READ's responses, an ATOMIC's
// acknowledgment), so that any connection whose requester was answered
// gives a script.
func fromRequester(recs []*trace.Record, o FromOptions, notes []string) (string, []string, error) {
	g := &reqGen{dpsn: recs[0].Packet.PSN, played: map[int]bool{}}
	g.mtu = o.MTU
	g.settings(recs)
	g.mtu = inferMTU(recs, g.mtu, o.MTU != 0 || g.firstMid > 0)
	g.nextNew = g.dpsn
	g.mem = 4096 // grown by each work request posted (post, peerOff)
	var b strings.Builder
	for i, r := range recs {
		if r.Packet == nil || g.played[i] {
			continue
		}
		if r.Dir == trace.ToResponder {
			g.request(&b, recs, i)
		} else {
			g.answer(&b, recs, i)
		}
		g.last = r.Time
		if g.stopped(&b, &notes) {
			break
		}
	}
	if g.stop == "" {
		g.flush(&b, g.nextNew.Add(-1))
	}
	g.completions(&b)
	if g.folded {
		notes = append(notes, fmt.Sprintf("the recorded responder's regions do not fit the %d bytes a script addresses: the device's requests address the harness's region from its start", maxLen))
	}
	if g.checks == 0 {
		why := "no answer of the recorded responder completes a request of the device's"
		if g.stop != "" {
			why = g.stop
		}
		return "", notes, fmt.Errorf("the device's side of the connection gives nothing the rules fix to check: %s", why)
	}
	qp := fmt.Sprintf("side requester\nqp mtu=%d dpsn=%d mem=%d", g.mtu, g.dpsn, g.mem)
	if t, ok := timerOf(recs); ok {
		qp += fmt.Sprintf(" timeout=%d", t)
	}
	return made(o, "responder", "requester", qp, &b, notes), notes, nil
}

// completions expects, in the order they were posted, the work requests
// the played answers complete, up to the first they leave open (a work
// request completes only after those before it): a SEND or WRITE by an
// acknowledgment at or past its last PSN (an ACK, a READ response with
// an AETH, an ATOMIC acknowledgment, or a sequence NAK past it), a READ
// by its last response packet, an ATOMIC by its acknowledgment.
func (g *reqGen) completions(b *strings.Builder) {
	for _, w := range g.wrs {
		if w.status != "" {
			continue // a refused one: its completion is expected already
		}
		done := false
		for _, k := range g.answers {
			switch w.kind {
			case wire.ClassReadRequest:
				done = k.Opcode.Class() == wire.ClassReadResponse && k.PSN == w.last && k.Opcode.EndsMessage()
			case wire.ClassAtomic:
				done = k.Opcode == wire.AtomicAcknowledge && k.PSN == w.first
			default:
				acks := k.Opcode == wire.Acknowledge && k.AETH.IsACK() || k.Opcode == wire.AtomicAcknowledge ||
					k.Opcode.Class() == wire.ClassReadResponse && k.Opcode.Has(wire.HdrAETH)
				done = acks && !k.PSN.Before(w.last) || k.Opcode == wire.Acknowledge && k.AETH.IsNAK(wire.NAKPSNSequence) && k.PSN.After(w.last)
			}
			if done {
				break
			}
		}
		if !done {
			return
		}
		fmt.Fprintf(b, "completion id=%d status=success [§9.7.5.1.2]\n", w.id)
		g.checks++
	}
}

// timerOf infers the recorded requester's ACK timeout exponent from the
// sweeps of resends it began with no NAK since the previous sweep (its
// timer's): the largest exponent whose interval is no longer than the
// shortest wait, since the resent PSN's previous transmission, that
// began such a sweep.
func timerOf(recs []*trace.Record) (uint8, bool) {
	sent := map[wire.PSN]time.Duration{}
	shortest := time.Duration(-1)
	nak := false
	var prev wire.PSN
	havePrev := false
	for _, r := range recs {
		k := r.Packet
		if k == nil {
			continue
		}
		if r.Dir == trace.ToRequester {
			nak = nak || k.Opcode == wire.Acknowledge && !k.AETH.IsACK()
			continue
		}
		t0, again := sent[k.PSN]
		if again && havePrev && !k.PSN.After(prev) {
			// A sweep begins: the timer's, unless a NAK came since the last.
			if !nak && (shortest < 0 || r.Time-t0 < shortest) {
				shortest = r.Time - t0
			}
			nak = false
		}
		sent[k.PSN], prev, havePrev = r.Time, k.PSN, true
	}
	if shortest < 0 {
		return 0, false
	}
	for t := uint8(31); t > 0; t-- {
		if wire.AckTimeout(t) <= shortest {
			return t, true
		}
	}
	return 1, true
}

// wait writes the time prefix that plays a record when the capture did,
// after the previous one.
func (g *reqGen) wait(b *strings.Builder, r *trace.Record) {
	if d := r.Time - g.last; d > 0 {
		fmt.Fprintf(b, "+%v ", d)
	}
}

// request plays the device's packet recs[i]: a message's first
// transmission is posted, then expected (first); a resend is expected
// where the rules send it back. A packet past the next PSN the device
// sends for the first time shows that the capture lost the device's
// packets before it (dropped before the capture point): each lost PSN is
// played from its later resend, which shows what it was, or the script
// ends there.
func (g *reqGen) request(b *strings.Builder, recs []*trace.Record, i int) {
	r := recs[i]
	k := r.Packet
	switch {
	case k.PSN == g.nextNew:
		g.first(b, recs, i, "")
	case k.PSN.Before(g.nextNew):
		// What the device sent before going back, the resent PSN
		// included; a first transmission after it is left to the resends
		// (a device whose window of unacknowledged PSNs is smaller than
		// the recorded requester's sends it first among them; one sent
		// before is passed over by the resend's line).
		g.flush(b, k.PSN)
		g.pending = nil
		clause, bound := "go-back-n", ""
		if c := g.cause; c != nil && c.AETH.IsRNR() {
			// Not before the delay the RNR NAK asked for.
			clause, bound = "rnr-retry", fmt.Sprintf(" not-before %v", wire.RNRDelay(c.AETH.Value()))
		}
		within := max(DefaultWithin, 2*(r.Time-g.last)+10*time.Millisecond)
		fmt.Fprintf(b, ">> %s psn=%s%s%s within %v [%s]    # frame %d: sent again\n", OpcodeName(k.Opcode), g.relD(k.PSN), lenOf(r), bound, within, clause, r.Frame)
		g.checks++
		g.cause = nil
	default:
		if g.lost(b, recs, i, k.PSN.Add(-1), fmt.Sprintf("the capture lost the device's packets before frame %d (its PSN %d is past the next, %d)", r.Frame, k.PSN, g.nextNew)) {
			g.first(b, recs, i, "")
		}
	}
}

// lost plays the first transmissions the capture lost before recs[i],
// from the next PSN the device sends for the first time up to upTo, each
// from its later resend; without one, the script ends there (why says
// what shows the loss).
func (g *reqGen) lost(b *strings.Builder, recs []*trace.Record, i int, upTo wire.PSN, why string) bool {
	for !g.nextNew.After(upTo) {
		j := later(recs, i, g.nextNew)
		if j < 0 {
			g.stop = fmt.Sprintf("%s and never shows PSN %d sent again: the script ends there", why, g.nextNew)
			return false
		}
		if acknowledged(recs[i:j], g.nextNew) {
			// The responder had it: the capture shows it late (out of
			// order), not sent again.
			g.played[j] = true
			g.first(b, recs, j, fmt.Sprintf(": the capture shows it after its acknowledgment, in frame %d", recs[j].Frame))
			continue
		}
		g.first(b, recs, j, fmt.Sprintf(": lost before the capture point, as its resend in frame %d shows", recs[j].Frame))
	}
	return true
}

// acknowledged reports whether the responder acknowledges PSN psn in recs
// (an ACK, ATOMIC acknowledgment or READ response at it or later).
func acknowledged(recs []*trace.Record, psn wire.PSN) bool {
	for _, r := range recs {
		k := r.Packet
		if k == nil || r.Dir != trace.ToRequester || k.PSN.Before(psn) {
			continue
		}
		if k.Opcode == wire.Acknowledge && k.AETH.IsACK() || k.Opcode == wire.AtomicAcknowledge || k.Opcode.Class() == wire.ClassReadResponse {
			return true
		}
	}
	return false
}

// first plays the first transmission of the device's packet recs[i]:
// the work request it begins is posted now, and the packet is expected
// (as the behaviour the script needs, [trigger]) when an answer or a
// resend needs it to have been sent (flush): a device may send later
// than the recorded requester (a smaller window of unacknowledged PSNs).
func (g *reqGen) first(b *strings.Builder, recs []*trace.Record, i int, note string) {
	r := recs[i]
	k := r.Packet
	if k.Opcode.StartsMessage() {
		if g.post(b, recs, i); g.stop != "" {
			return
		}
	}
	g.pending = append(g.pending, pendingTx{k.PSN,
		fmt.Sprintf(">> %s psn=%s%s [trigger]    # frame %d%s\n", OpcodeName(k.Opcode), g.relD(k.PSN), lenOf(r), r.Frame, note)})
	g.nextNew = k.PSN.Next()
	if k.Opcode == wire.ReadRequest {
		g.nextNew = k.PSN.Add(wire.ReadResponsePackets(k.RETH.Length, g.mtu))
	}
	g.cause = nil
}

// pendingTx is a first transmission of the device not yet expected.
type pendingTx struct {
	psn  wire.PSN
	line string
}

// flush expects the pending first transmissions up to PSN upTo.
func (g *reqGen) flush(b *strings.Builder, upTo wire.PSN) {
	n := 0
	for _, t := range g.pending {
		if t.psn.After(upTo) {
			break
		}
		b.WriteString(t.line)
		n++
	}
	g.pending = g.pending[n:]
}

// later returns the index of the first record after recs[i] in which the
// device sends PSN psn, or -1.
func later(recs []*trace.Record, i int, psn wire.PSN) int {
	for j := i + 1; j < len(recs); j++ {
		if r := recs[j]; r.Packet != nil && r.Dir == trace.ToResponder && r.Packet.PSN == psn {
			return j
		}
	}
	return -1
}

// lenOf is the len field of a packet with a payload.
func lenOf(r *trace.Record) string {
	info, _ := r.Packet.Opcode.Info()
	if !info.Payload {
		return ""
	}
	n := r.PayloadLen
	if n == 0 {
		n = len(r.Packet.Payload)
	}
	return fmt.Sprintf(" len=%d", n)
}

func (g *reqGen) relD(p wire.PSN) string {
	d := p.Diff(g.dpsn)
	switch {
	case d == 0:
		return "dpsn"
	case d > 0:
		return fmt.Sprintf("dpsn+%d", d)
	}
	return fmt.Sprintf("dpsn%d", d)
}

// post writes the work request whose first packet is recs[i]: its
// operation, length (the message's packets that follow with consecutive
// PSNs), address and operands.
func (g *reqGen) post(b *strings.Builder, recs []*trace.Record, i int) {
	k := recs[i].Packet
	id := len(g.wrs) + 1
	length, end, last, ended := 0, k.PSN, k.Opcode, false
	for _, r := range recs[i:] {
		q := r.Packet
		if q == nil || r.Dir != trace.ToResponder || q.PSN != end {
			continue
		}
		n := r.PayloadLen
		if n == 0 {
			n = len(q.Payload)
		}
		length += n
		last = q.Opcode
		if q.Opcode.EndsMessage() {
			ended = true
			break
		}
		end = end.Next()
	}
	if !ended {
		g.stop = fmt.Sprintf("the capture ends inside the message frame %d begins (its last packet is not shown, so neither is its length): the script ends there", recs[i].Frame)
		return
	}
	if length > maxLen {
		g.stop = fmt.Sprintf("frame %d begins a message of %d bytes, more than a script posts (%d): the script ends there", recs[i].Frame, length, maxLen)
		return
	}
	var op string
	extra := ""
	switch k.Opcode.Class() {
	case wire.ClassSend:
		op = "send"
		g.mem = max(g.mem, length)
		switch {
		case last.Has(wire.HdrImmDt):
			op, extra = "send-imm", fmt.Sprintf(" imm=%d", recsImm(recs[i:], last))
		case last.Has(wire.HdrIETH):
			op = "send-inv"
		}
	case wire.ClassWrite:
		op, length = "write", int(k.RETH.Length)
		if last.Has(wire.HdrImmDt) {
			op, extra = "write-imm", fmt.Sprintf(" imm=%d", recsImm(recs[i:], last))
		}
		extra += fmt.Sprintf(" off=%d", g.peerOff(k.RETH.RKey, k.RETH.VA, length))
	case wire.ClassReadRequest:
		op, length = "read", int(k.RETH.Length)
		extra = fmt.Sprintf(" off=%d", g.peerOff(k.RETH.RKey, k.RETH.VA, length))
	case wire.ClassAtomic:
		off := g.peerOff(k.Atomic.RKey, k.Atomic.VA, 8)
		op, extra = "fetchadd", fmt.Sprintf(" off=%d add=%d", off, k.Atomic.SwapAdd)
		if k.Opcode == wire.CompareSwap {
			op, extra = "cmpswap", fmt.Sprintf(" off=%d compare=%d swap=%d", off, k.Atomic.Compare, k.Atomic.SwapAdd)
		}
	default:
		return
	}
	lenArg := fmt.Sprintf(" len=%d", length)
	if k.Opcode.Class() == wire.ClassAtomic {
		lenArg = ""
	}
	fmt.Fprintf(b, "post %s id=%d%s%s\n", op, id, lenArg, extra)
	lastPSN := end
	if k.Opcode == wire.ReadRequest {
		lastPSN = k.PSN.Add(wire.ReadResponsePackets(k.RETH.Length, g.mtu) - 1)
	}
	g.wrs = append(g.wrs, postedWR{id: id, first: k.PSN, last: lastPSN, kind: k.Opcode.Class()})
}

// peerOff is where in the harness's region (the device's requests'
// target) a request's n bytes at va of the recorded responder's region
// rkey lie: the regions laid out as for the other side (gen.off), or the
// region's start when that layout does not fit a script's offsets (this
// side's script checks no address). It grows the memory the connection
// needs (mem: both regions are that long).
func (g *reqGen) peerOff(rkey uint32, va uint64, n int) uint64 {
	off := g.off(rkey, va)
	if off+uint64(n) > maxLen {
		off = 0
		g.folded = true
	}
	g.mem = max(g.mem, int(off)+n)
	return off
}

// recsImm returns the immediate data of the message's packet with
// opcode last.
func recsImm(recs []*trace.Record, last wire.Opcode) uint32 {
	for _, r := range recs {
		if r.Packet != nil && r.Packet.Opcode == last {
			return r.Packet.Imm
		}
	}
	return 0
}

// fatal maps the NAK codes that end a work request at once (§9.9.2.2)
// to the completion status they give.
var fatal = map[uint8]string{
	wire.NAKInvalidRequest: "remote-invalid-request",
	wire.NAKRemoteAccess:   "remote-access-error",
	wire.NAKRemoteOp:       "remote-operational-error",
}

// answer injects the recorded responder's packet r when the capture
// shows it; after a NAK that ends the work request at once, it expects
// that completion and the QP in ERROR (§9.9.2.2), and the script ends.
func (g *reqGen) answer(b *strings.Builder, recs []*trace.Record, i int) {
	r := recs[i]
	k := r.Packet
	if !k.PSN.Before(g.nextNew) && !g.lost(b, recs, i, k.PSN,
		fmt.Sprintf("frame %d: the recorded responder answers PSN %d, past the next the capture shows the device sending (%d): the capture lost the device's packets", r.Frame, k.PSN, g.nextNew)) {
		return
	}
	g.flush(b, k.PSN)
	g.wait(b, r)
	fmt.Fprintf(b, "< %s psn=%s", OpcodeName(k.Opcode), g.relD(k.PSN))
	info, _ := k.Opcode.Info()
	if info.Payload {
		n := r.PayloadLen
		if n == 0 {
			n = len(k.Payload)
		}
		fmt.Fprintf(b, " len=%d", n)
	}
	if k.Opcode.Has(wire.HdrAETH) {
		fmt.Fprintf(b, " syndrome=0x%02x msn=%d", k.AETH.Syndrome, k.AETH.MSN)
	}
	if k.Opcode == wire.AtomicAcknowledge {
		fmt.Fprintf(b, " orig=%d", k.AtomicAck)
	}
	fmt.Fprintf(b, "    # frame %d\n", r.Frame)
	g.answers = append(g.answers, k)
	if k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
		c := *k
		g.cause = &c
	}
	status, ok := fatal[k.AETH.Value()]
	if k.Opcode != wire.Acknowledge || k.AETH.Kind() != wire.KindNAK || !ok {
		return
	}
	for i, w := range g.wrs {
		if k.PSN.InRange(w.first, w.last) {
			g.wrs[i].status = status
			fmt.Fprintf(b, "completion id=%d status=%s within 10ms [§9.9.2.2]\n", w.id, status)
			b.WriteString("state ERROR [§9.9.2.2]\n")
			g.checks++
			g.stop = fmt.Sprintf("frame %d: a NAK that ends the work request: the device sends nothing more", r.Frame)
			return
		}
	}
}
