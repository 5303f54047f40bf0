package script

import (
	"errors"
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
}

// postedWR is a message the device was told to post.
type postedWR struct {
	id          int
	first, last wire.PSN
}

// fromRequester writes the script for a device in the recorded
// requester's place (see FromCapture).
func fromRequester(recs []*trace.Record, o FromOptions, notes []string) (string, []string, error) {
	g := &reqGen{dpsn: recs[0].Packet.PSN}
	g.mtu = o.MTU
	g.settings(recs)
	g.mtu = inferMTU(recs, g.mtu, o.MTU != 0 || g.firstMid > 0)
	g.nextNew = g.dpsn
	var b strings.Builder
	for i, r := range recs {
		if r.Packet == nil {
			continue
		}
		if r.Dir == trace.ToResponder {
			g.request(&b, recs, i)
		} else {
			g.answer(&b, r)
		}
		g.last = r.Time
		if g.stop != "" {
			notes = append(notes, g.stop)
			fmt.Fprintf(&b, "# %s\n", g.stop)
			break
		}
	}
	if g.checks == 0 {
		return "", notes, errors.New("the device's side of the connection shows nothing the rules fix beyond its first transmissions (no resend, no refused request)")
	}
	for _, n := range notes {
		b.WriteString("# note: " + n + "\n")
	}
	var h strings.Builder
	fmt.Fprintf(&h, "# Made by `rcconform script --from` from %s.\n", o.Source)
	h.WriteString("# The script plays the recorded responder; the device takes the recorded requester's place.\n")
	fmt.Fprintf(&h, "side requester\nqp mtu=%d dpsn=%d mem=%d", g.mtu, g.dpsn, g.mem)
	if t, ok := timerOf(recs); ok {
		fmt.Fprintf(&h, " timeout=%d", t)
	}
	h.WriteString("\n\n")
	return h.String() + b.String(), notes, nil
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
// transmission is posted, then expected; a resend is expected where the
// rules send it back.
func (g *reqGen) request(b *strings.Builder, recs []*trace.Record, i int) {
	r := recs[i]
	k := r.Packet
	n := r.PayloadLen
	if n == 0 {
		n = len(k.Payload)
	}
	info, _ := k.Opcode.Info()
	lenField := ""
	if info.Payload {
		lenField = fmt.Sprintf(" len=%d", n)
	}
	switch {
	case k.PSN == g.nextNew:
		if k.Opcode.StartsMessage() {
			g.post(b, recs, i)
		}
		fmt.Fprintf(b, ">> %s psn=%s%s [trigger]    # frame %d\n", OpcodeName(k.Opcode), g.relD(k.PSN), lenField, r.Frame)
		g.nextNew = k.PSN.Next()
		if k.Opcode == wire.ReadRequest {
			g.nextNew = k.PSN.Add(wire.ReadResponsePackets(k.RETH.Length, g.mtu))
		}
		g.cause = nil
	case k.PSN.Before(g.nextNew):
		clause, bound := "go-back-n", ""
		if c := g.cause; c != nil && c.AETH.IsRNR() {
			// Not before the delay the RNR NAK asked for.
			clause, bound = "rnr-retry", fmt.Sprintf(" not-before %v", wire.RNRDelay(c.AETH.Value()))
		}
		within := max(DefaultWithin, 2*(r.Time-g.last)+10*time.Millisecond)
		fmt.Fprintf(b, ">> %s psn=%s%s%s within %v [%s]    # frame %d: sent again\n", OpcodeName(k.Opcode), g.relD(k.PSN), lenField, bound, within, clause, r.Frame)
		g.checks++
		g.cause = nil
	default:
		g.stop = fmt.Sprintf("the capture lost the device's packets before frame %d (its PSN %d is past the next, %d): the script ends there", r.Frame, k.PSN, g.nextNew)
	}
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
	length, end, last := 0, k.PSN, k.Opcode
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
			break
		}
		end = end.Next()
	}
	var op string
	extra := ""
	switch k.Opcode.Class() {
	case wire.ClassSend:
		op = "send"
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
		extra += fmt.Sprintf(" off=%d", g.off(k.RETH.RKey, k.RETH.VA))
	case wire.ClassReadRequest:
		op, length = "read", int(k.RETH.Length)
		extra = fmt.Sprintf(" off=%d", g.off(k.RETH.RKey, k.RETH.VA))
	case wire.ClassAtomic:
		op, extra = "fetchadd", fmt.Sprintf(" off=%d add=%d", g.off(k.Atomic.RKey, k.Atomic.VA), k.Atomic.SwapAdd)
		if k.Opcode == wire.CompareSwap {
			op, extra = "cmpswap", fmt.Sprintf(" off=%d compare=%d swap=%d", g.off(k.Atomic.RKey, k.Atomic.VA), k.Atomic.Compare, k.Atomic.SwapAdd)
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
	g.wrs = append(g.wrs, postedWR{id: id, first: k.PSN, last: lastPSN})
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
func (g *reqGen) answer(b *strings.Builder, r *trace.Record) {
	k := r.Packet
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
	if k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
		c := *k
		g.cause = &c
	}
	status, ok := fatal[k.AETH.Value()]
	if k.Opcode != wire.Acknowledge || k.AETH.Kind() != wire.KindNAK || !ok {
		return
	}
	for _, w := range g.wrs {
		if k.PSN.InRange(w.first, w.last) {
			fmt.Fprintf(b, "completion id=%d status=%s within 10ms [§9.9.2.2]\n", w.id, status)
			b.WriteString("state ERROR [§9.9.2.2]\n")
			g.checks++
			g.stop = fmt.Sprintf("frame %d: a NAK that ends the work request: the device sends nothing more", r.Frame)
			return
		}
	}
}
