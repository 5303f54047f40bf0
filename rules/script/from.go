package script

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// FromOptions say how a script is made from a recorded connection.
type FromOptions struct {
	// Source names the capture and connection, for the script's header.
	Source string
	// MTU is the connection's path MTU; 0: the largest payload of a First
	// or Middle packet, or the smallest MTU that holds every payload.
	MTU int
	// DeviceIsRequester: the device takes the recorded requester's place
	// and the script plays the recorded responder.
	DeviceIsRequester bool
}

// FromCapture writes a script that plays the requester of a recorded
// connection against a device taking the responder's place, and expects
// what the recorded responder sent: exactly where the rules fix it (the
// PSN of each READ response packet and of each ATOMIC acknowledgment,
// the PSN a NAK carries), with the freedom they leave elsewhere: an ACK
// is expected only where a request asked for one (AckReq), at that
// request's PSN or any later one sent by then (coalescing), and answers
// the recorded responder sent unasked are passed over; no timing is
// imposed beyond the suite's liveness wait. recs are the connection's
// records in capture order. What the capture does not show (the start of
// a message it begins in, requests it lost) cannot be played: the script
// starts after the one and ends before the other, and notes say so.
//
// With o.DeviceIsRequester the script plays the recorded responder
// instead, against a device taking the requester's place (fromRequester).
func FromCapture(recs []*trace.Record, o FromOptions) (text string, notes []string, err error) {
	// The script starts at the first request that begins a message: one
	// the capture shows from its middle cannot be played.
	first := -1
	for i, r := range recs {
		if k := r.Packet; k != nil && r.Dir == trace.ToResponder && k.Opcode.StartsMessage() {
			first = i
			break
		}
	}
	if first < 0 {
		return "", nil, errors.New("the connection holds no request that begins a message: nothing to play")
	}
	if first > 0 {
		notes = append(notes, fmt.Sprintf("the capture shows the connection from the middle of a message: frames before %d are left out", recs[first].Frame))
	}
	recs = recs[first:]
	if o.DeviceIsRequester {
		return fromRequester(recs, o, notes)
	}
	g := &gen{epsn: recs[0].Packet.PSN, mtu: o.MTU}
	// The responder's first expected PSN: the first request's, unless the
	// responder's first answer is a sequence NAK: then the first request
	// was ahead of it, and the NAK names it where it lies before that
	// request (a NAK naming the request's own PSN or a later one breaks
	// C9-121: the PSN just before it is taken, the deviation kept).
	for _, r := range recs {
		if r.Packet != nil && r.Dir == trace.ToRequester {
			if k := r.Packet; k.Opcode == wire.Acknowledge && k.AETH.IsNAK(wire.NAKPSNSequence) {
				g.epsn = g.epsn.Add(-1)
				if k.PSN.Before(recs[0].Packet.PSN) {
					g.epsn = k.PSN
				}
			}
			break
		}
	}
	g.expected = g.epsn
	g.settings(recs)
	g.mtu = inferMTU(recs, g.mtu, o.MTU != 0 || g.firstMid > 0)
	var b strings.Builder
	for _, r := range recs {
		k := r.Packet
		if k == nil {
			continue
		}
		if r.Dir == trace.ToResponder && g.started && k.PSN.After(g.newest) {
			// A requester sends its PSNs in order: the capture lost what
			// lies between, which a script cannot play.
			n := fmt.Sprintf("the capture lost requests before frame %d (its PSN %d is past the next, %d): the script ends there", r.Frame, k.PSN, g.newest)
			notes = append(notes, n)
			fmt.Fprintf(&b, "# %s\n", n)
			break
		}
		if r.Dir == trace.ToResponder {
			g.request(&b, r)
		} else {
			g.response(&b, r)
		}
		if g.stopped(&b, &notes) {
			break
		}
	}
	if g.checks == 0 {
		return "", notes, errors.New("the connection's responses fix nothing a script could check (no AckReq answered, no READ, ATOMIC or NAK)")
	}
	qp := fmt.Sprintf("qp mtu=%d epsn=%d recv=%d mem=%d", g.mtu, g.epsn, g.recv, g.mem)
	if g.mostOwed > 0 {
		// As many READs and ATOMICs in flight as the recording had: the
		// device's responder resources must hold them (Table-58).
		qp += fmt.Sprintf(" rd-atomic=%d", min(g.mostOwed, 255))
	}
	return made(o, "requester", "responder", qp, &b, notes), notes, nil
}

// stopped reports whether the script being made ends here (g.stop says
// why), adding the reason to notes and to the script as a comment.
func (g *gen) stopped(b *strings.Builder, notes *[]string) bool {
	if g.stop == "" {
		return false
	}
	*notes = append(*notes, g.stop)
	fmt.Fprintf(b, "# %s\n", g.stop)
	return true
}

// made assembles a script made from a capture: the header (its source,
// the side it plays, the settings line qp), its body, and the notes at
// its end.
func made(o FromOptions, plays, device, qp string, body *strings.Builder, notes []string) string {
	var h strings.Builder
	fmt.Fprintf(&h, "# Made by `rcconform script --from` from %s.\n", o.Source)
	fmt.Fprintf(&h, "# The script plays the recorded %s; the device takes the recorded %s's place.\n", plays, device)
	h.WriteString(qp + "\n\n")
	h.WriteString(body.String())
	for _, n := range notes {
		h.WriteString("# note: " + n + "\n")
	}
	return h.String()
}

// gen is the state of one script being made.
type gen struct {
	epsn      wire.PSN
	mtu       int
	recv, mem int
	regions   map[uint32]region
	// newest is one past the newest request PSN played (a READ counts
	// its responses' PSNs); pending are the AckReq PSNs not yet answered.
	newest  wire.PSN
	started bool
	pending []wire.PSN
	checks  int
	// expected is the responder's expected PSN as the rules fix it, for a
	// responder that takes every request in sequence; reads and atomics
	// are the READs and ATOMICs (new or duplicate) it owes an answer, in
	// order; streaming: a captured READ answer is being passed over.
	expected  wire.PSN
	reads     []*wire.Packet
	atomics   []wire.PSN
	streaming bool
	// mostOwed is the most READs and ATOMICs owed an answer at once.
	mostOwed int
	// firstMid is the largest First or Middle payload (0: none).
	firstMid int
	// badKey holds the PSNs the recorded responder NAKed for a remote
	// access error; refused those of the requests played with an R_Key
	// the device never gave, so that it has the same cause to refuse them.
	badKey, refused map[wire.PSN]bool
	// stop says why the script ends where it does (a refusal whose cause
	// a script cannot give the device).
	stop string
}

// settings works out the MTU, the receive WQEs and the memory the device
// needs to answer as the recorded responder did.
func (g *gen) settings(recs []*trace.Record) {
	firstMid, most := 0, 0
	g.badKey, g.refused = map[wire.PSN]bool{}, map[wire.PSN]bool{}
	type span struct{ lo, hi uint64 }
	spans := map[uint32]*span{}
	var keys []uint32
	sends := 0
	for _, r := range recs {
		k := r.Packet
		if k == nil {
			continue
		}
		n := r.PayloadLen
		if n == 0 {
			n = len(k.Payload)
		}
		most = max(most, n)
		if p := k.Opcode.Position(); p == wire.PosFirst || p == wire.PosMiddle {
			firstMid = max(firstMid, n)
		}
		if r.Dir != trace.ToResponder {
			if k.Opcode == wire.Acknowledge && k.AETH.IsNAK(wire.NAKRemoteAccess) {
				g.badKey[k.PSN] = true
			}
			continue
		}
		if k.Opcode.ConsumesRWQE() {
			sends++
		}
		var key uint32
		var lo, hi uint64
		switch {
		case k.Opcode.Has(wire.HdrRETH):
			key, lo, hi = k.RETH.RKey, k.RETH.VA, k.RETH.VA+uint64(k.RETH.Length)
		case k.Opcode.Has(wire.HdrAtomicETH):
			key, lo, hi = k.Atomic.RKey, k.Atomic.VA, k.Atomic.VA+8
		default:
			continue
		}
		sp := spans[key]
		if sp == nil {
			sp = &span{lo, hi}
			spans[key] = sp
			keys = append(keys, key)
		}
		sp.lo, sp.hi = min(sp.lo, lo), max(sp.hi, hi)
	}
	g.firstMid = firstMid
	if g.mtu == 0 {
		g.mtu = firstMid
		for _, m := range []int{256, 512, 1024, 2048, 4096} {
			if g.mtu == 0 && most <= m {
				g.mtu = m
			}
		}
		if g.mtu == 0 {
			g.mtu = 4096
		}
	}
	// Every SEND gets a receive WQE: a capture does not show the recorded
	// responder's receive queue.
	g.recv = sends + 16
	// The device has one memory region: the regions the requests address
	// (one per R_Key) are laid out in it one after another, page-aligned,
	// each at the offset of its lowest address's page.
	g.regions = map[uint32]region{}
	next := uint64(0)
	for _, key := range keys {
		sp := spans[key]
		page := sp.lo &^ 0xFFF
		g.regions[key] = region{va: page, off: next}
		next += (sp.hi - page + 0xFFF) &^ 0xFFF
	}
	g.mem = int(max(next, 4096))
}

// inferMTU returns, when no First or Middle payload told the path MTU,
// one that numbers the first READ's answer as the requester's next new
// request shows it did (the smallest such), or mtu as it was.
func inferMTU(recs []*trace.Record, mtu int, told bool) int {
	if told {
		return mtu
	}
	for i, r := range recs {
		k := r.Packet
		if k == nil || r.Dir != trace.ToResponder || k.Opcode != wire.ReadRequest {
			continue
		}
		for _, q := range recs[i+1:] {
			if q.Packet == nil || q.Dir != trace.ToResponder || !q.Packet.PSN.After(k.PSN) {
				continue
			}
			span := q.Packet.PSN.Diff(k.PSN)
			for _, m := range []int{256, 512, 1024, 2048, 4096} {
				if wire.ReadResponsePackets(k.RETH.Length, m) == span {
					return max(mtu, m)
				}
			}
			break
		}
	}
	return mtu
}

// region places one of the recorded responder's memory regions (by its
// R_Key) in the device's: its page at va lies at offset off.
type region struct{ va, off uint64 }

// off returns where address va of the region rkey lies in the device's.
func (g *gen) off(rkey uint32, va uint64) uint64 {
	r := g.regions[rkey]
	return va - r.va + r.off
}

func (g *gen) rel(p wire.PSN) string {
	d := p.Diff(g.epsn)
	switch {
	case d == 0:
		return "epsn"
	case d > 0:
		return fmt.Sprintf("epsn+%d", d)
	}
	return fmt.Sprintf("epsn%d", d)
}

func (g *gen) request(b *strings.Builder, r *trace.Record) {
	k := r.Packet
	o := k.Opcode
	if o.Has(wire.HdrIETH) {
		// The R_Key it invalidates is one of the recorded responder's
		// regions; the device's one region must stay valid for the
		// requests that follow: the SEND is played without it.
		fmt.Fprintf(b, "# frame %d invalidates R_Key 0x%x: played as a SEND without invalidation\n", r.Frame, k.IETH)
		o = map[wire.Opcode]wire.Opcode{wire.SendOnlyInvalidate: wire.SendOnly, wire.SendLastInvalidate: wire.SendLast}[o]
	}
	fmt.Fprintf(b, "< %s psn=%s", OpcodeName(o), g.rel(k.PSN))
	n := r.PayloadLen
	if n == 0 {
		n = len(k.Payload)
	}
	info, _ := o.Info()
	if info.Payload {
		fmt.Fprintf(b, " len=%d", n)
	}
	if k.AckReq {
		b.WriteString(" ackreq")
	}
	switch {
	case o.Has(wire.HdrRETH):
		fmt.Fprintf(b, " off=%d dmalen=%d", g.off(k.RETH.RKey, k.RETH.VA), k.RETH.Length)
	case o.Has(wire.HdrAtomicETH):
		fmt.Fprintf(b, " off=%d", g.off(k.Atomic.RKey, k.Atomic.VA))
		if o == wire.FetchAdd {
			fmt.Fprintf(b, " add=%d", k.Atomic.SwapAdd)
		} else {
			fmt.Fprintf(b, " swap=%d compare=%d", k.Atomic.SwapAdd, k.Atomic.Compare)
		}
	}
	if o.Has(wire.HdrImmDt) {
		fmt.Fprintf(b, " imm=%d", k.Imm)
	}
	if g.badKey[k.PSN] && (o.Has(wire.HdrRETH) || o.Has(wire.HdrAtomicETH)) {
		// Refused for a remote access error: with an R_Key the device
		// never gave, it has the same cause.
		b.WriteString(" rkey=invalid")
		g.refused[k.PSN] = true
	}
	fmt.Fprintf(b, "    # frame %d\n", r.Frame)
	end := k.PSN.Next()
	if o == wire.ReadRequest {
		end = k.PSN.Add(wire.ReadResponsePackets(k.RETH.Length, g.mtu))
	}
	if !g.started || end.After(g.newest) {
		g.newest, g.started = end, true
	}
	if k.AckReq && (o.Class() == wire.ClassSend || o.Class() == wire.ClassWrite) {
		g.pending = append(g.pending, k.PSN)
	}
	if k.PSN.After(g.expected) {
		return // ahead: the responder drops it (a sequence NAK)
	}
	if k.PSN == g.expected {
		g.expected = end
	}
	switch o.Class() {
	case wire.ClassReadRequest:
		g.reads = append(g.reads, k)
	case wire.ClassAtomic:
		g.atomics = append(g.atomics, k.PSN)
	}
	g.mostOwed = max(g.mostOwed, len(g.reads)+len(g.atomics))
}

// answered drops the pending AckReq PSNs at or before p and returns the
// newest of them.
func (g *gen) answered(p wire.PSN) (newest wire.PSN, any bool) {
	keep := g.pending[:0]
	for _, q := range g.pending {
		if q.AtOrBefore(p) {
			newest, any = q, true
			continue
		}
		keep = append(keep, q)
	}
	g.pending = keep
	return newest, any
}

// nakClause names the clause that fixes a NAK's PSN.
var nakClause = map[uint8]string{
	wire.NAKPSNSequence:    "C9-121",
	wire.NAKInvalidRequest: "C9-125",
	wire.NAKRemoteAccess:   "C9-124",
	wire.NAKRemoteOp:       "C9-113.a1",
}

var nakName = map[uint8]string{
	wire.NAKPSNSequence: "nak-seq", wire.NAKInvalidRequest: "nak-inv", wire.NAKRemoteAccess: "nak-access", wire.NAKRemoteOp: "nak-op",
}

func (g *gen) response(b *strings.Builder, r *trace.Record) {
	k := r.Packet
	o := k.Opcode
	last := g.newest.Add(-1)
	switch {
	case o == wire.Acknowledge && k.AETH.IsACK():
		// Expected only where an AckReq asked for it: at that request's
		// PSN or any later one sent by then.
		if x, ok := g.answered(k.PSN); ok {
			fmt.Fprintf(b, ">> ACK syndrome=ack psn=%s..%s [C9-116]    # frame %d: ACK %d\n", g.rel(x), g.rel(last), r.Frame, k.PSN)
			g.checks++
		} else {
			fmt.Fprintf(b, "# frame %d: ACK %d, asked for by no AckReq: the device may send it or not\n", r.Frame, k.PSN)
		}
	case o == wire.Acknowledge && k.AETH.IsRNR():
		fmt.Fprintf(b, "# frame %d: RNR NAK %d: not reproduced (a capture does not show the responder's receive queue)\n", r.Frame, k.PSN)
	case o == wire.Acknowledge && k.AETH.Kind() == wire.KindNAK && nakClause[k.AETH.Value()] != "":
		code := k.AETH.Value()
		psn, why := k.PSN, "the PSN it names"
		if code == wire.NAKPSNSequence || code == wire.NAKInvalidRequest {
			psn, why = g.expected, "the responder's expected PSN"
		}
		atomic := len(g.atomics) > 0 && g.atomics[len(g.atomics)-1] == k.PSN
		if code == wire.NAKRemoteOp || code == wire.NAKRemoteAccess && !g.refused[k.PSN] || code == wire.NAKInvalidRequest && atomic {
			// Its cause (a receive buffer too small, an address past the
			// region, no atomic access) is the recorded responder's
			// state, which a script cannot give the device.
			g.stop = fmt.Sprintf("frame %d: the recorded responder refused the request at PSN %d (%s), for a cause a script cannot give the device: the script ends there", r.Frame, k.PSN, k.AETH)
			return
		}
		g.answered(psn.Add(-1))
		fmt.Fprintf(b, ">> ACK syndrome=%s psn=%s [%s]    # frame %d: NAK %d; expected: %s\n", nakName[code], g.rel(psn), nakClause[code], r.Frame, k.PSN, why)
		g.checks++
	case o.Class() == wire.ClassReadResponse:
		// The answer the rules fix for the oldest READ owed (C9-96: from
		// its PSN, one per packet, at the path MTU), whatever the
		// recorded responder sent; the rest of its captured answer is
		// passed over.
		if g.streaming {
			g.streaming = !o.EndsMessage()
			return
		}
		if len(g.reads) == 0 {
			fmt.Fprintf(b, "# frame %d: %v answers no READ the script sent\n", r.Frame, k)
			return
		}
		rd := g.reads[0]
		g.reads = g.reads[1:]
		g.streaming = !o.EndsMessage()
		g.readAnswer(b, rd, r.Frame)
	case o == wire.AtomicAcknowledge:
		if len(g.atomics) == 0 {
			fmt.Fprintf(b, "# frame %d: %v answers no ATOMIC the script sent\n", r.Frame, k)
			return
		}
		psn := g.atomics[0]
		g.atomics = g.atomics[1:]
		g.answered(psn)
		fmt.Fprintf(b, ">> ATOMIC_ACK psn=%s syndrome=ack [o9-58]    # frame %d: ATOMIC ACK %d\n", g.rel(psn), r.Frame, k.PSN)
		g.checks++
	default:
		fmt.Fprintf(b, "# frame %d: %v: not reproduced\n", r.Frame, k)
	}
}

// readAnswer writes the answer the rules fix for the READ rd: its
// response packets from its PSN, one per MTU of its length, the first
// and last carrying an AETH.
func (g *gen) readAnswer(b *strings.Builder, rd *wire.Packet, frame int) {
	n := wire.ReadResponsePackets(rd.RETH.Length, g.mtu)
	left := int(rd.RETH.Length)
	for i := 0; i < n; i++ {
		o := wire.ReadResponseOp(i, n)
		size := min(left, g.mtu)
		left -= size
		psn := rd.PSN.Add(i)
		fmt.Fprintf(b, ">> %s psn=%s len=%d", OpcodeName(o), g.rel(psn), size)
		if o.Has(wire.HdrAETH) {
			b.WriteString(" syndrome=ack")
			g.answered(psn)
		}
		b.WriteString(" [C9-96]")
		if i == 0 {
			fmt.Fprintf(b, "    # frame %d on: the answer to the READ at %d", frame, rd.PSN)
		}
		b.WriteString("\n")
	}
	g.checks++
}
