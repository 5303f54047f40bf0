package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// Peer is the harness's side of a connection to the device: it builds
// requests with the right PSNs, sends them, and waits for the device's
// answers on the device's clock. Its expectation helpers fail the running
// spec themselves, with the clause, every acceptable outcome, what was
// seen, and a ladder of the exchange.
type Peer struct {
	Conn dut.Conn
	Info dut.ConnInfo
	// Clause and ClauseText name the rule being checked, for failure messages.
	Clause     string
	ClauseText string
	// PSN is the next PSN the peer's requests will use.
	PSN wire.PSN
	// seen holds the device's packets received by expectations, in order.
	seen []*trace.Record
	// Failure is the structured form of the last failure this peer
	// reported (the suite turns it into a finding with a ladder). Its ID
	// is the clause that governs the failed expectation: the scenario's
	// own clause, or the clause of a setup step or trigger.
	Failure *reports.Finding
	// Undecided is set when a setup step or a trigger failed: the verdict
	// the scenario's own clause gets ("indeterminate" or "not-exercised")
	// and why. The failure itself, if a clause governs it, is in Failure.
	Undecided *Undecided
	// TextOf returns the text of another clause (for findings that a
	// setup step reports under the clause governing it); may be nil.
	TextOf func(id string) string
	// Notes is the scenario's own account, for the trace the suite saves
	// (--traces): each setup step and trigger as it begins, each
	// expectation and what answered it.
	Notes []Note
	steps []step
}

// Note is a line of a scenario's account (see Peer.Notes), and the
// packet of its trace it goes with.
type Note struct {
	Text string
	// Frame is the frame of the trace it goes with (from 1): the packet
	// that answered an expectation, the first packet after a step began,
	// the last before an expectation went unanswered. 0 when the adapter
	// cannot say how long its trace is (see TraceCounter): At places it.
	Frame int
	// At is when it was made, on the device's clock.
	At time.Duration
}

// TraceCounter is implemented by a connection that can tell how many
// packets its trace holds without waiting for the wire to settle (as
// Trace may): the peer's notes name their packets by it.
type TraceCounter interface {
	TraceLen() int
}

// note adds a note going with the packet at, or, when at is nil, with
// the trace's next packet (next) or its latest.
func (p *Peer) note(text string, at *trace.Record, next bool) {
	n := Note{Text: text, At: p.Conn.Now()}
	switch tc, ok := p.Conn.(TraceCounter); {
	case at != nil:
		n.Frame = at.Frame
	case ok:
		n.Frame = max(1, tc.TraceLen())
		if next {
			n.Frame = tc.TraceLen() + 1
		}
	}
	p.Notes = append(p.Notes, n)
}

// Note adds text to the scenario's account, going with the next packet
// of its trace (a scenario script's line).
func (p *Peer) Note(text string) { p.note(text, nil, true) }

// PlaceNotes returns notes by the frame of recs (a trace) each goes
// with, and those that go with none (the trace is empty). A note whose
// frame is past the trace's end goes with its last packet; one without
// a frame with the first packet at or after its time, else the last.
func PlaceNotes(recs []*trace.Record, notes []Note) (byFrame map[int][]string, none []string) {
	byFrame = map[int][]string{}
	for _, n := range notes {
		if len(recs) == 0 {
			none = append(none, n.Text)
			continue
		}
		at := recs[len(recs)-1].Frame
		switch {
		case n.Frame > 0:
			at = min(n.Frame, at)
		default:
			for _, r := range recs {
				if r.Time >= n.At {
					at = r.Frame
					break
				}
			}
		}
		byFrame[at] = append(byFrame[at], n.Text)
	}
	return byFrame, none
}

// governs names the clause governing a step, for its notes.
func governs(clause string) string {
	if clause == "" {
		return "no rule of this suite governs it"
	}
	return clause + " governs it"
}

// Undecided says why a scenario could not decide its own clause.
type Undecided struct {
	// Verdict is "indeterminate" (a setup step failed: precondition not
	// met) or "not-exercised" (the device did not take the trigger).
	Verdict reports.Verdict
	Reason  string
}

// step is an expectation's governing clause while a setup step or a
// trigger runs.
type step struct {
	clause, what string
	trigger      bool
	// explicit: declared by the scenario (Setup, Trigger, Own), which
	// overrides the defaults helpers declare with Step.
	explicit bool
}

// NewPeer wraps a connection.
func NewPeer(c dut.Conn, clause, text string) *Peer {
	info := c.Info()
	return &Peer{Conn: c, Info: info, Clause: clause, ClauseText: text, PSN: info.ExpectedPSN}
}

// MTU returns the connection's path MTU.
func (p *Peer) MTU() int { return p.Info.MTU }

// Setup runs fn as a setup step of the scenario: behaviour the scenario
// needs but that clause governs (what says it in words, e.g. "the device
// ACKs the SENDs"). An expectation failing inside fn is a finding of
// clause, and the scenario's own clause is indeterminate ("precondition
// not met"), never failed: one root cause, one clause.
func (p *Peer) Setup(clause, what string, fn func()) {
	ginkgo.GinkgoHelper()
	p.note(fmt.Sprintf("setup step (%s): %s", governs(clause), what), nil, true)
	p.with(step{clause: clause, what: what, explicit: true}, fn)
}

// Trigger runs fn as the scenario's trigger: the device behaviour the
// scenario assumes in order to reach its clause at all (e.g. "the device
// NAKs the READ beyond its resources"). If the device does otherwise the
// scenario's clause is not exercised, with what the device did; clause
// names the rule that behaviour breaks ("" when no rule of ours requires
// it), which gets the finding.
func (p *Peer) Trigger(clause, what string, fn func()) {
	ginkgo.GinkgoHelper()
	p.note(fmt.Sprintf("trigger (%s): %s", governs(clause), what), nil, true)
	p.with(step{clause: clause, what: what, trigger: true, explicit: true}, fn)
}

// Own runs fn as the scenario's own check, overriding the governing
// clause helpers inside fn declare with Step.
func (p *Peer) Own(fn func()) {
	ginkgo.GinkgoHelper()
	p.with(step{clause: p.Clause, explicit: true}, fn)
}

// Step is Setup as a helper declares it: the default governing clause of
// the helper's expectations, which applies unless the scenario declared
// one (Setup, Trigger, Own) around the call.
func (p *Peer) Step(clause, what string, fn func()) {
	ginkgo.GinkgoHelper()
	if p.explicit() {
		fn()
		return
	}
	p.note(fmt.Sprintf("step (%s): %s", governs(clause), what), nil, true)
	p.with(step{clause: clause, what: what}, fn)
}

// Refine runs fn with the failures of the running setup step or trigger
// attributed to clause instead ("" for none): a helper that can tell from
// the device's answer which rule it breaks (no answer at all to an AckReq
// is C9-116's, whatever the step assumed). In the scenario's own check it
// changes nothing.
func (p *Peer) Refine(clause string, fn func()) {
	ginkgo.GinkgoHelper()
	s := p.current()
	if !p.InStep() {
		fn()
		return
	}
	s.clause = clause
	p.with(s, fn)
}

// InStep reports whether an expectation now would be a setup step or a
// trigger of another clause rather than the scenario's own check.
func (p *Peer) InStep() bool {
	s := p.current()
	return s.clause != p.Clause || s.trigger
}

func (p *Peer) with(s step, fn func()) {
	p.steps = append(p.steps, s)
	defer func() { p.steps = p.steps[:len(p.steps)-1] }()
	fn()
}

func (p *Peer) explicit() bool {
	for _, s := range p.steps {
		if s.explicit {
			return true
		}
	}
	return false
}

// current returns the innermost step (the scenario's own clause when
// none runs).
func (p *Peer) current() step {
	if len(p.steps) == 0 {
		return step{clause: p.Clause}
	}
	return p.steps[len(p.steps)-1]
}

// Fail fails the expectation now running with the acceptable outcomes,
// what was seen, and the ladder of the exchange, highlighting hi. In the
// scenario's own check it fails the spec under the scenario's clause; in
// a setup step or a trigger see FailUnder.
func (p *Peer) Fail(expected []string, seen string, hi *trace.Record) {
	ginkgo.GinkgoHelper()
	p.FailUnder(p.current().clause, expected, seen, hi)
}

// FailUnder is Fail with the finding attributed to clause (a helper that
// can tell which rule the device's answer breaks, e.g. a reserved
// syndrome bit under §9.7.5.2). Attributed to the scenario's own clause
// outside a step, it fails the spec. Otherwise the finding goes to clause
// (none when clause is "") and the spec is skipped: indeterminate
// ("precondition not met: …") after a setup step, not exercised ("the
// device did not …") after a trigger.
func (p *Peer) FailUnder(clause string, expected []string, seen string, hi *trace.Record) {
	ginkgo.GinkgoHelper()
	p.failUnder(clause, expected, seen, hi, false)
}

// FailSeen is Fail for an expectation that the packet seen (hi) breaks by
// itself, whatever else the device sent (a transmission that must not
// come): packets the adapter lost cannot explain it, so it is judged even
// when the adapter lost some (an unlimited retrier always has one more in
// flight when a connection's counters are read).
func (p *Peer) FailSeen(expected []string, seen string, hi *trace.Record) {
	ginkgo.GinkgoHelper()
	p.failUnder(p.current().clause, expected, seen, hi, true)
}

func (p *Peer) failUnder(clause string, expected []string, seen string, hi *trace.Record, proved bool) {
	ginkgo.GinkgoHelper()
	if n, where := dut.ReceiveLoss(p.Conn); n > 0 && !proved {
		// The adapter lost some of the device's packets: what the
		// expectation missed may be among them. No clause can be blamed.
		p.Undecided = &Undecided{Verdict: reports.Indeterminate,
			Reason: fmt.Sprintf("the trace lacks packets the device sent (%s): the expectation (%s) cannot be judged; seen %s", where, strings.Join(expected, " | "), seen)}
		ginkgo.Skip("indeterminate: " + p.Undecided.Reason)
	}
	if hi != nil && ReservedSyndrome(hi.Packet) && clause != SyndromeRule && p.Clause != SyndromeRule {
		// The device's answer cannot be read: the clause of this
		// expectation cannot be judged from it, §9.7.5.2 can.
		p.with(step{clause: SyndromeRule, what: "the device's AETH syndromes readable (no reserved bit, kind or NAK code)", explicit: true},
			func() { p.FailUnder(SyndromeRule, expected, seen, hi) })
		return
	}
	s := p.current()
	p.note(fmt.Sprintf("expectation not met (%s): %s; seen %s", governs(clause), strings.Join(expected, " | "), seen), hi, false)
	if clause == p.Clause && !s.trigger {
		p.Failure = p.finding(clause, p.ClauseText, expected, seen, hi)
		ginkgo.Fail(p.FailureText(expected, seen, hi))
	}
	if clause != "" && clause != p.Clause {
		text := ""
		if p.TextOf != nil {
			text = p.TextOf(clause)
		}
		p.Failure = p.finding(clause, text, expected, seen, hi)
		p.Failure.Message = fmt.Sprintf("%s violated (seen in a scenario of %s, in its step: %s): seen %s", clause, p.Clause, s.what, seen)
	}
	where := ""
	if clause != "" && clause != p.Clause {
		where = " (" + clause + ")"
	}
	if s.trigger {
		why := fmt.Sprintf("the device did not %s: seen %s", s.what, seen)
		switch {
		case clause == "":
			why += "; no rule of this suite requires it"
		case clause != p.Clause:
			why += "; that breaks " + clause + ", reported under " + clause
		}
		p.Undecided = &Undecided{Verdict: reports.NotExercised, Reason: why}
		ginkgo.Skip("not exercised: " + why)
	}
	p.Undecided = &Undecided{Verdict: reports.Indeterminate,
		Reason: fmt.Sprintf("precondition not met: %s%s; seen %s", s.what, where, seen)}
	ginkgo.Skip("indeterminate: " + p.Undecided.Reason)
}

func (p *Peer) finding(clause, text string, expected []string, seen string, hi *trace.Record) *reports.Finding {
	recs := p.Conn.Trace()
	f := &reports.Finding{ID: clause, Clause: text, Expected: expected, Seen: seen,
		Message: clause + " violated: seen " + seen, Ladder: Rungs(window(recs, hi, 48), hi, false)}
	if hi != nil {
		f.Frame, f.PSN, f.QP = hi.Frame, uint32(hi.Packet.PSN), hi.Packet.DestQP
	}
	return f
}

// window returns at most n records of recs ending a few after hi (or the
// last n when hi is nil or absent).
func window(recs []*trace.Record, hi *trace.Record, n int) []*trace.Record {
	end := len(recs)
	for i, r := range recs {
		if r == hi {
			end = min(len(recs), i+4)
			break
		}
	}
	start := max(0, end-n)
	return recs[start:end]
}

// FailureText formats a failure message.
func (p *Peer) FailureText(expected []string, seen string, hi *trace.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s violated: %s\n", p.Clause, p.ClauseText)
	b.WriteString("acceptable outcomes:\n")
	for _, e := range expected {
		fmt.Fprintf(&b, "  - %s\n", e)
	}
	fmt.Fprintf(&b, "seen: %s\n", seen)
	b.WriteString("exchange:\n")
	b.WriteString(Ladder(p.Conn.Trace(), hi, false))
	return b.String()
}

func (p *Peer) pkt(op wire.Opcode, psn wire.PSN) *wire.Packet {
	return &wire.Packet{BTH: wire.BTH{Opcode: op, PKey: 0xFFFF, DestQP: p.Info.DeviceQPN, PSN: psn}}
}

// Packet returns a bare request packet with the connection's defaults.
func (p *Peer) Packet(op wire.Opcode, psn wire.PSN) *wire.Packet { return p.pkt(op, psn) }

// Send sends packets to the device, failing the spec on an adapter error.
func (p *Peer) Send(pkts ...*wire.Packet) {
	ginkgo.GinkgoHelper()
	for _, k := range pkts {
		if err := p.Conn.Send(k); err != nil {
			ginkgo.Fail(fmt.Sprintf("sending %s to the device: %v", k, err))
		}
	}
}

// Message builds the packets of a SEND (op = wire.SendOnly) or RDMA WRITE
// (op = wire.WriteOnly) message of length bytes at the path MTU, with
// PSNs from p.PSN onwards (advancing it), the WRITE aimed at offset off of
// the device's memory region, and AckReq on the last packet when ackReq.
func (p *Peer) Message(op wire.Opcode, length, off int, ackReq bool) []*wire.Packet {
	mtu := p.MTU()
	n := wire.ReadResponsePackets(uint32(length), mtu)
	write := op.Class() == wire.ClassWrite
	var out []*wire.Packet
	for i := 0; i < n; i++ {
		var o wire.Opcode
		switch {
		case n == 1 && write:
			o = wire.WriteOnly
		case n == 1:
			o = wire.SendOnly
		case i == 0 && write:
			o = wire.WriteFirst
		case i == 0:
			o = wire.SendFirst
		case i == n-1 && write:
			o = wire.WriteLast
		case i == n-1:
			o = wire.SendLast
		case write:
			o = wire.WriteMiddle
		default:
			o = wire.SendMiddle
		}
		k := p.pkt(o, p.PSN)
		p.PSN = p.PSN.Next()
		lo, hi := i*mtu, (i+1)*mtu
		if hi > length {
			hi = length
		}
		k.Payload = pattern(lo, hi-lo)
		if i == 0 && write {
			k.RETH = wire.RETH{VA: p.Info.VA + uint64(off), RKey: p.Info.RKey, Length: uint32(length)}
		}
		k.AckReq = ackReq && i == n-1
		out = append(out, k)
	}
	return out
}

// Read builds an RDMA READ request of length bytes at offset off of the
// device's memory region and advances p.PSN past the PSNs it reserves.
func (p *Peer) Read(length, off int) *wire.Packet {
	k := p.pkt(wire.ReadRequest, p.PSN)
	k.RETH = wire.RETH{VA: p.Info.VA + uint64(off), RKey: p.Info.RKey, Length: uint32(length)}
	k.AckReq = true
	p.PSN = p.PSN.Add(wire.ReadResponsePackets(uint32(length), p.MTU()))
	return k
}

// Atomic builds a CmpSwap or FetchAdd at offset off and advances p.PSN.
func (p *Peer) Atomic(op wire.Opcode, off int, swapAdd, compare uint64) *wire.Packet {
	k := p.pkt(op, p.PSN)
	k.Atomic = wire.AtomicETH{VA: p.Info.VA + uint64(off), RKey: p.Info.RKey, SwapAdd: swapAdd, Compare: compare}
	k.AckReq = true
	p.PSN = p.PSN.Next()
	return k
}

func pattern(start, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(start + i)
	}
	return b
}

// Collect returns everything the device sends within d.
func (p *Peer) Collect(d time.Duration) []*trace.Record {
	var out []*trace.Record
	start := p.Conn.Now()
	for {
		left := d - (p.Conn.Now() - start)
		if left < 0 {
			left = 0
		}
		r, ok := p.Conn.Recv(left)
		if !ok {
			break
		}
		out = append(out, r)
		p.seen = append(p.seen, r)
	}
	return out
}

// CollectQuiet returns everything the device sends until it has been
// silent for quiet: unlike Collect's fixed window it takes in a long answer
// whole, however long the device takes to stream it.
func (p *Peer) CollectQuiet(quiet time.Duration) []*trace.Record {
	var out []*trace.Record
	for {
		r, ok := p.Conn.Recv(quiet)
		if !ok {
			return out
		}
		out = append(out, r)
		p.seen = append(p.seen, r)
	}
}

// Expect waits up to within for a device packet matching match and
// returns it; packets before it are kept in skipped. It fails the spec,
// listing every near miss, when none comes.
func (p *Peer) Expect(what string, within time.Duration, match func(*wire.Packet) bool) (got *trace.Record, skipped []*trace.Record) {
	ginkgo.GinkgoHelper()
	start := p.Conn.Now()
	for {
		left := within - (p.Conn.Now() - start)
		if left < 0 {
			left = 0
		}
		r, ok := p.Conn.Recv(left)
		if !ok {
			break
		}
		p.seen = append(p.seen, r)
		if match(r.Packet) {
			p.note(fmt.Sprintf("awaited (%s): %s within %v; this packet came", governs(p.current().clause), what, within), r, false)
			return r, skipped
		}
		skipped = append(skipped, r)
	}
	var hi *trace.Record
	for _, r := range skipped {
		if ReservedSyndrome(r.Packet) {
			hi = r
			break
		}
	}
	p.Fail([]string{what + fmt.Sprintf(" within %v", within)}, SeenText(skipped), hi)
	return nil, skipped
}

// repeatsSeqNAK reports whether k, the device packet just received (the
// last of p.seen), is a PSN sequence error NAK naming the PSN of the
// previous sequence NAK the device sent: a repeat answers nothing the
// harness sent since (on a slow link it may have left before the harness's
// latest requests arrived), and whether the device may send it at all is
// the NAK latch's rule (C9-114/C9-122) and §9.7.7.2's, which judge it in
// the trace. An expectation waiting for an ACK passes over it.
func (p *Peer) repeatsSeqNAK(k *wire.Packet) bool {
	if !k.AETH.IsNAK(wire.NAKPSNSequence) || len(p.seen) < 2 {
		return false
	}
	for i := len(p.seen) - 2; i >= 0; i-- {
		if q := p.seen[i].Packet; p.seen[i].Dir == trace.ToRequester && q.Opcode == wire.Acknowledge && q.AETH.IsNAK(wire.NAKPSNSequence) {
			return q.PSN == k.PSN
		}
	}
	return false
}

// SeenText renders the device's packets an expectation saw ("nothing"
// when none).
func SeenText(recs []*trace.Record) string {
	if len(recs) == 0 {
		return "nothing"
	}
	var s []string
	for _, r := range recs {
		s = append(s, r.Packet.String())
	}
	return "only " + strings.Join(s, "; ")
}

// SyndromeRule is the rule keyed by section that governs the AETH's
// format: reserved syndrome bits and codes (§9.7.5.2).
const SyndromeRule = "§9.7.5.2"

// ReservedSyndrome reports whether k carries an AETH whose syndrome sets
// the reserved bit 7, uses the reserved kind 10, or a reserved NAK code
// (4–31): the answer cannot be read as an ACK, RNR NAK or NAK.
func ReservedSyndrome(k *wire.Packet) bool {
	if !k.Opcode.Has(wire.HdrAETH) {
		return false
	}
	a := k.AETH
	return a.ReservedBit() || a.Kind() == 2 || a.Kind() == 3 && a.Value() > 3
}

// ExpectAck waits up to within for a positive ACK whose PSN is psn,
// failing on a NAK or on a positive ACK naming a later PSN (nothing later
// was sent), and when none comes. Earlier ACKs (coalescing) are skipped.
//
// Unless the scenario declares otherwise, this is a setup step: an ACK
// naming another PSN is a finding of C9-95 (the PSN an ACK carries); no
// answer at or after psn to the request's AckReq one of C9-116; a NAK for
// a request the scenario holds valid leaves the scenario's clause
// indeterminate with no finding (which rule it breaks depends on why the
// device refused it, and that clause's own scenarios decide it).
func (p *Peer) ExpectAck(psn wire.PSN, what string, within time.Duration) *trace.Record {
	ginkgo.GinkgoHelper()
	var rec *trace.Record
	want := fmt.Sprintf("a positive ACK with PSN %d (%s)", psn, what)
	p.Step("C9-95", fmt.Sprintf("the device ACKs with PSN %d (%s)", psn, what), func() {
		var skipped []*trace.Record
		p.Refine("C9-116", func() {
			rec, skipped = p.Expect(want, within, func(k *wire.Packet) bool {
				if k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
					return !p.repeatsSeqNAK(k)
				}
				return IsAck(k) && k.PSN.AtOrAfter(psn)
			})
		})
		k := rec.Packet
		switch {
		case IsAck(k) && k.PSN == psn:
		case IsAck(k):
			p.Fail([]string{want}, k.String(), rec)
		default:
			p.Refine("", func() { p.Fail([]string{want}, SeenText(append(skipped, rec)), rec) })
		}
	})
	return rec
}

// ExpectAtomicAck waits up to within for the ATOMIC Acknowledge with PSN
// psn. Unless the scenario declares otherwise this is a setup step: an
// ATOMIC Acknowledge with another PSN in its place is a finding of o9-58
// (the PSN an ATOMIC Acknowledge carries), no answer at all one of C9-116.
func (p *Peer) ExpectAtomicAck(psn wire.PSN, what string, within time.Duration) *trace.Record {
	ginkgo.GinkgoHelper()
	var rec *trace.Record
	p.Step("o9-58", fmt.Sprintf("the device answers %s with an ATOMIC Acknowledge at PSN %d", what, psn), func() {
		var skipped []*trace.Record
		want := fmt.Sprintf("the ATOMIC acknowledgment of %s, PSN %d", what, psn)
		start := p.Conn.Now()
		for {
			left := max(0, within-(p.Conn.Now()-start))
			r, ok := p.Conn.Recv(left)
			if !ok {
				break
			}
			p.seen = append(p.seen, r)
			if k := r.Packet; k.Opcode == wire.AtomicAcknowledge && k.PSN == psn {
				p.note(fmt.Sprintf("awaited (%s): %s within %v; this packet came", governs(p.current().clause), want, within), r, false)
				rec = r
				return
			}
			skipped = append(skipped, r)
		}
		clause, answered := "C9-116", false
		var hi *trace.Record
		for _, r := range skipped {
			if k := r.Packet; k.Opcode == wire.AtomicAcknowledge {
				clause, hi = "o9-58", r
				break
			}
			answered = answered || r.Packet.Opcode.IsResponse() && r.Packet.PSN.AtOrAfter(psn)
		}
		if hi == nil && answered {
			clause = ""
		}
		p.Refine(clause, func() { p.Fail([]string{want + fmt.Sprintf(" within %v", within)}, SeenText(skipped), hi) })
	})
	return rec
}

// IsAck matches a positive Acknowledge.
func IsAck(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && k.AETH.IsACK() }

// IsNAK matches an Acknowledge carrying NAK code code.
func IsNAK(code uint8) func(*wire.Packet) bool {
	return func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && k.AETH.IsNAK(code) }
}

// IsRNR matches an RNR NAK.
func IsRNR(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && k.AETH.IsRNR() }

// ExpectNothing fails the spec if the device sends anything matching
// match within d (match nil: anything at all).
func (p *Peer) ExpectNothing(what string, d time.Duration, match func(*wire.Packet) bool) {
	ginkgo.GinkgoHelper()
	for _, r := range p.Collect(d) {
		if match == nil || match(r.Packet) {
			p.Fail([]string{"no " + what + fmt.Sprintf(" within %v", d)}, r.Packet.String(), r)
		}
	}
	p.note(fmt.Sprintf("awaited (%s): no %s within %v; none came", governs(p.current().clause), what, d), nil, false)
}

// Wait lets d pass on the device's clock.
func (p *Peer) Wait(d time.Duration) { p.Conn.Wait(d) }
