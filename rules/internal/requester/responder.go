package requester

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// Liveness bounds how long the harness waits for the device to act when
// no timer of the device is involved. The rules set no such deadline;
// this is the harness's own bound, on the device's clock.
const Liveness = 100 * time.Millisecond

// Upper returns how long the harness waits for something a timer of
// interval d makes happen: the rules give only a lower bound, so the
// harness allows twice the interval and the liveness bound on top.
func Upper(d time.Duration) time.Duration { return 2*d + Liveness }

// Responder is the harness playing the responder toward a device
// requester: it posts work requests on the device, receives the device's
// request packets, answers them with ACKs, NAKs, RNR NAKs, READ responses
// and ATOMIC acknowledgments it builds itself (or stays silent), and reads
// the device's completions and QP state. Its expectations fail the spec
// with the clause, the acceptable outcomes, what was seen and the ladder.
type Responder struct {
	P    *harness.Peer
	Conn dut.Conn
	Info dut.ConnInfo
	// MSN is the harness responder's message sequence number.
	MSN uint32
	// Mem stands for the harness's memory region (Info.PeerVA onwards):
	// READ responses carry its bytes.
	Mem   []byte
	comps []dut.Completion
	fail  func(expected []string, seen string, hi *trace.Record)
}

// NewResponder wraps a peer whose connection has the device as requester.
func NewResponder(p *harness.Peer) *Responder {
	r := &Responder{P: p, Conn: p.Conn, Info: p.Info}
	r.init()
	linkTooSlow(p.Conn, p.Info.Config.Timeout)
	r.fail = func(expected []string, seen string, hi *trace.Record) {
		ginkgo.GinkgoHelper()
		p.Fail(expected, seen, hi)
	}
	return r
}

// linkTooSlow ends the scenario as indeterminate when, on a virtual clock,
// the link's round trip (the adapter's stated tolerance) is half the
// device's transport timer interval or more: the harness's NAKs and
// acknowledgments can then reach the device only after its timer fired,
// so no retry the scenario counts can be put down to the failure the
// harness meant (a device with a 1 ms timer across a 1 ms link times out
// every round, legally). On a real clock the real-time scenarios judge
// their own answer lag against the tolerance.
func linkTooSlow(c dut.Conn, timeout uint8) {
	tc, ok := c.(interface{ Tolerance() time.Duration })
	if !ok || timeout == 0 {
		return
	}
	if d := rulekit.DUT(); d == nil || !d.Capabilities().VirtualTime {
		return
	}
	if rtt, interval := tc.Tolerance(), wire.AckTimeout(timeout); rtt >= interval/2 {
		rulekit.Indeterminate(fmt.Sprintf("the link's round trip (%v) is half the device's transport timer interval (%v, local ACK timeout %d) or more: the harness's answers may reach the device only after its timer fired, so the retries cannot be attributed to the failures the scenario makes",
			rtt, interval, timeout))
	}
}

// NewResponderFunc wraps a bare connection (for plain go tests); fail is
// called on a failed expectation and must not return.
func NewResponderFunc(c dut.Conn, fail func(expected []string, seen string, hi *trace.Record)) *Responder {
	r := &Responder{Conn: c, Info: c.Info(), fail: fail}
	r.init()
	return r
}

func (r *Responder) init() {
	n := r.Info.PeerLen
	if n <= 0 || n > 1<<20 {
		n = 1 << 20
	}
	r.Mem = make([]byte, n)
	for i := range r.Mem {
		r.Mem[i] = byte(i*7 + 3)
	}
}

// Fail fails the spec.
func (r *Responder) Fail(expected []string, seen string, hi *trace.Record) {
	ginkgo.GinkgoHelper()
	r.fail(expected, seen, hi)
}

// FailSeen fails the spec on a packet that breaks the expectation by
// itself (harness.Peer.FailSeen): one that must not have been sent.
func (r *Responder) FailSeen(expected []string, seen string, hi *trace.Record) {
	ginkgo.GinkgoHelper()
	if r.P != nil {
		r.P.FailSeen(expected, seen, hi)
		return
	}
	r.fail(expected, seen, hi)
}

// Unblamed runs fn as a setup step no clause governs (harness.Peer.Setup
// with no clause): a failure in it leaves the scenario indeterminate and
// blames nobody, whatever step or check runs around it. Without a peer
// it just runs fn.
func (r *Responder) Unblamed(what string, fn func()) {
	ginkgo.GinkgoHelper()
	if r.P == nil {
		fn()
		return
	}
	r.P.Setup("", what, fn)
}

// startedOver runs fail unblamed (Unblamed): the device sent request k,
// at a PSN before the one expected, while resending: it started over, a
// second go-back-N, legal for go-back-n if its transport timer fired,
// which is C9-140's to judge on the trace (the passive monitors do). The
// callers decide that k starts over (startsOver, ExpectRound): anything
// else in the expected packet's place stays a finding.
func (r *Responder) startedOver(what string, k *wire.Packet, fail func()) {
	ginkgo.GinkgoHelper()
	r.Unblamed(fmt.Sprintf("%s without starting over (it went back to PSN %d again: a second go-back-N, whose cause C9-140's monitor judges on the trace)", what, k.PSN), fail)
}

// Step runs fn as a setup step governed by clause (harness.Peer.Step);
// without a peer (plain go tests) it just runs fn.
func (r *Responder) Step(clause, what string, fn func()) {
	ginkgo.GinkgoHelper()
	if r.P == nil {
		fn()
		return
	}
	r.P.Step(clause, what, fn)
}

// Post posts work requests on the device's send queue.
func (r *Responder) Post(wrs ...dut.WR) {
	ginkgo.GinkgoHelper()
	for _, wr := range wrs {
		if err := r.Conn.PostSend(wr); err != nil {
			if errors.Is(err, dut.ErrUnsupported) {
				ginkgo.Skip("unsupported: posting " + wr.Op.String() + ": " + err.Error())
			}
			r.Fail([]string{"the device accepts the work request"}, fmt.Sprintf("posting %v (WR %d): %v", wr.Op, wr.ID, err), nil)
		}
	}
}

// SendWR returns a SEND work request of n bytes.
func SendWR(id uint64, n int) dut.WR {
	return dut.WR{ID: id, Op: dut.OpSend, Data: Pattern(int(id), n)}
}

// WriteWR returns an RDMA WRITE of n bytes to offset off of the harness's memory.
func (r *Responder) WriteWR(id uint64, n, off int) dut.WR {
	return dut.WR{ID: id, Op: dut.OpWrite, Data: Pattern(int(id), n), RemoteVA: r.Info.PeerVA + uint64(off), RKey: r.Info.PeerRKey}
}

// ReadWR returns an RDMA READ of n bytes at offset off of the harness's memory.
func (r *Responder) ReadWR(id uint64, n, off int) dut.WR {
	return dut.WR{ID: id, Op: dut.OpRead, Length: n, RemoteVA: r.Info.PeerVA + uint64(off), RKey: r.Info.PeerRKey}
}

// FetchAddWR returns a FetchAdd at offset off (8-byte aligned) of the harness's memory.
func (r *Responder) FetchAddWR(id uint64, off int, add uint64) dut.WR {
	return dut.WR{ID: id, Op: dut.OpFetchAdd, RemoteVA: r.Info.PeerVA + uint64(off), RKey: r.Info.PeerRKey, CompareAdd: add}
}

// Pattern returns n bytes of a pattern seeded by seed.
func Pattern(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i)
	}
	return b
}

// Next returns the next packet the device sends within d, or nil.
func (r *Responder) Next(d time.Duration) *trace.Record {
	rec, ok := r.Conn.Recv(d)
	if !ok {
		return nil
	}
	return rec
}

// Expect waits up to within for the device's next packet and fails
// unless it matches: the device must send nothing else first.
func (r *Responder) Expect(what string, within time.Duration, match func(*wire.Packet) bool) *trace.Record {
	ginkgo.GinkgoHelper()
	rec := r.Next(within)
	if rec == nil {
		r.Fail([]string{fmt.Sprintf("%s within %v", what, within)}, "nothing; "+r.Status(), nil)
		return nil
	}
	if !match(rec.Packet) {
		r.Fail([]string{fmt.Sprintf("%s within %v, before anything else", what, within)}, rec.Packet.String(), rec)
	}
	return rec
}

// ExpectPSN expects the device's next packet to be a request with PSN psn.
// When the device sent psn before, this is a resend: something else
// arriving in its place is a finding of go-back-n (which governs what a
// requester resends) unless the scenario is go-back-n's own; nothing
// arriving stays the scenario's own matter (its timer or counters).
func (r *Responder) ExpectPSN(what string, within time.Duration, psn wire.PSN) *trace.Record {
	ginkgo.GinkgoHelper()
	before := r.traceNow()
	rec := r.Next(within)
	if rec != nil {
		// What the device sent before rec: the trace may already hold rec
		// and what followed it.
		for i, b := range before {
			if b == rec {
				before = before[:i]
				break
			}
		}
	}
	sentBefore := false
	for _, b := range before {
		if k := b.Packet; k.Opcode.IsRequest() && k.PSN == psn { // the harness sends no requests here
			sentBefore = true
		}
	}
	if rec == nil {
		if sentBefore {
			r.NoResend(psn, fmt.Sprintf("%s within %v", what, within))
		}
		r.Fail([]string{fmt.Sprintf("%s within %v", what, within)}, "nothing; "+r.Status(), nil)
		return nil
	}
	if k := rec.Packet; !k.Opcode.IsRequest() || k.PSN != psn {
		fail := func() {
			r.Fail([]string{fmt.Sprintf("%s within %v, before anything else", what, within)}, k.String(), rec)
		}
		if sentBefore && r.startsOver(before, k, psn) {
			r.startedOver(fmt.Sprintf("the device resends PSN %d", psn), k, fail)
		}
		if sentBefore {
			r.Step("go-back-n", fmt.Sprintf("the device resends PSN %d", psn), fail)
		}
		fail()
	}
	return rec
}

// startsOver reports whether request k, sent where a resend of psn was
// expected, after the trace before, goes back to where a second go-back-N may
// legally start: the oldest PSN the device has not seen acknowledged
// (docs/interpretations.md, "Go-back-N"; C9-140's timer firing again is the
// legal cause). That is the PSN its current round began at (its latest going
// back: a request whose PSN does not follow on from the one before; without
// one, its first request), or the whole READ that round began inside (a
// partial re-request's READ may be re-requested whole). Later in the round,
// only a PSN an answer of the harness moved the oldest unacknowledged one to
// (restartAfter), an acknowledgment (even one that crossed the device's
// timer) moving it on. Anything else is no legal restart: a PSN before the
// round (acknowledged), never sent, or in the round's middle with nothing
// acknowledged there is a wrong resend, go-back-n's finding.
func (r *Responder) startsOver(before []*trace.Record, k *wire.Packet, psn wire.PSN) bool {
	if !k.Opcode.IsRequest() || !k.PSN.Before(psn) {
		return false
	}
	var start, prev *wire.Packet
	for _, b := range before {
		if q := b.Packet; q.Opcode.IsRequest() {
			if prev == nil || !q.PSN.After(prev.PSN) {
				start = q
			}
			prev = q
		}
	}
	switch {
	case start == nil:
		return false
	case k.PSN == start.PSN:
		return true
	case k.Opcode == wire.ReadRequest && k.PSN.Before(start.PSN):
		return start.PSN.Before(k.PSN.Add(wire.ReadResponsePackets(k.RETH.Length, r.Info.MTU)))
	case k.PSN.Before(start.PSN):
		return false
	}
	for _, b := range before {
		if q := b.Packet; !q.Opcode.IsRequest() && k.PSN == restartAfter(q) {
			return true
		}
	}
	return false
}

// restartAfter returns the oldest PSN a requester may still hold
// unacknowledged after the harness's answer q: the PSN a sequence-error or
// RNR NAK names (the NAK acknowledges only what precedes it), the one after a
// positive acknowledgment's, a READ response's or an ATOMIC acknowledgment's
// PSN (§9.7.5.1.2; docs/interpretations.md, "What a response acknowledges").
// A NAK of the other kinds leaves nothing to resend (§9.9.2.2): no PSN (the
// invalid 2^24).
func restartAfter(q *wire.Packet) wire.PSN {
	switch {
	case q.Opcode != wire.Acknowledge:
		return q.PSN.Next()
	case q.AETH.IsNAK(wire.NAKPSNSequence) || q.AETH.IsRNR():
		return q.PSN
	case q.AETH.IsACK():
		return q.PSN.Next()
	}
	return wire.PSNMask + 1
}

// traceNow returns the connection's trace so far. A live adapter's Trace
// first waits for the wire to settle (up to its settle time, 100 ms in the
// soft-RoCE lab), which a scenario racing the device's timers cannot
// afford; TraceNow does not wait.
func (r *Responder) traceNow() []*trace.Record {
	if n, ok := r.Conn.(interface{ TraceNow() []*trace.Record }); ok {
		return n.TraceNow()
	}
	return r.Conn.Trace()
}

// NoResend fails an expectation of a resend of psn that met silence.
// While the QP is still in RTS with no completion to show for it, the
// silence has two explanations no observation here tells apart: the
// device's timer did not expire (C9-140, rnr-retry) or it went back past
// its only outstanding request (go-back-n). The scenario's clause is then
// indeterminate, with no finding; a scenario with several outstanding
// requests shows a wrong go-back-N directly. A completion or an ERROR
// state leaves the silence the scenario's own matter (its counters).
func (r *Responder) NoResend(psn wire.PSN, want string) {
	ginkgo.GinkgoHelper()
	if r.P == nil || r.State() != dut.StateRTS {
		return
	}
	r.poll()
	for _, c := range r.comps {
		if !c.Recv {
			return
		}
	}
	r.P.Setup("", fmt.Sprintf("the device resends PSN %d (its timer expiring, then going back to its oldest unacknowledged request)", psn), func() {
		r.Fail([]string{want}, "nothing; "+r.Status(), nil)
	})
}

// Quiet fails if the device sends anything within d.
func (r *Responder) Quiet(what string, d time.Duration) {
	ginkgo.GinkgoHelper()
	if rec := r.Next(d); rec != nil {
		r.FailSeen([]string{fmt.Sprintf("no %s within %v", what, d)}, rec.Packet.String(), rec)
	}
}

// Collect returns every packet the device sends within d.
func (r *Responder) Collect(d time.Duration) []*trace.Record {
	var out []*trace.Record
	start := r.Conn.Now()
	for {
		left := d - (r.Conn.Now() - start)
		if left < 0 {
			left = 0
		}
		rec := r.Next(left)
		if rec == nil {
			return out
		}
		out = append(out, rec)
	}
}

func (r *Responder) send(k *wire.Packet) time.Duration {
	ginkgo.GinkgoHelper()
	if k.DestQP == 0 {
		k.DestQP = r.Info.DeviceQPN
	}
	if k.PKey == 0 {
		k.PKey = 0xFFFF
	}
	at := r.Conn.Now()
	if err := r.Conn.Send(k); err != nil {
		r.Fail([]string{"the adapter sends the harness's response"}, fmt.Sprintf("sending %s: %v", k, err), nil)
	}
	return at
}

func (r *Responder) ack(psn wire.PSN, syn uint8) time.Duration {
	ginkgo.GinkgoHelper()
	k := &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: psn}, AETH: wire.AETH{Syndrome: syn, MSN: r.MSN & 0xFFFFFF}}
	return r.send(k)
}

// ACK sends a positive acknowledgment with PSN psn (credits not valid)
// and returns when it left.
func (r *Responder) ACK(psn wire.PSN) time.Duration {
	ginkgo.GinkgoHelper()
	return r.ack(psn, wire.SynACK(wire.CreditInvalid))
}

// NAK sends a NAK with code code and PSN psn.
func (r *Responder) NAK(psn wire.PSN, code uint8) time.Duration {
	ginkgo.GinkgoHelper()
	return r.ack(psn, wire.SynNAK(code))
}

// RNR sends an RNR NAK with timer code timer and PSN psn.
func (r *Responder) RNR(psn wire.PSN, timer uint8) time.Duration {
	ginkgo.GinkgoHelper()
	return r.ack(psn, wire.SynRNR(timer))
}

// CountMessage advances the MSN for a message the harness completed.
func (r *Responder) CountMessage() { r.MSN = (r.MSN + 1) & 0xFFFFFF }

// ReadResponses builds the READ response packets that answer the READ
// request req, from response PSN from (req.PSN for all of them) for at
// most count packets (count < 0: to the end).
func (r *Responder) ReadResponses(req *wire.Packet, from wire.PSN, count int) []*wire.Packet {
	mtu := r.Info.MTU
	length := int(req.RETH.Length)
	n := wire.ReadResponsePackets(req.RETH.Length, mtu)
	base := int(req.RETH.VA - r.Info.PeerVA)
	var out []*wire.Packet
	for i := from.Diff(req.PSN); i < n && (count < 0 || len(out) < count); i++ {
		op := wire.ReadResponseOp(i, n)
		lo, hi := i*mtu, min((i+1)*mtu, length)
		k := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: req.PSN.Add(i)}}
		if base >= 0 && base+hi <= len(r.Mem) {
			k.Payload = append([]byte(nil), r.Mem[base+lo:base+hi]...)
		} else {
			k.Payload = make([]byte, hi-lo)
		}
		if op.Has(wire.HdrAETH) {
			k.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: r.MSN}
		}
		out = append(out, k)
	}
	return out
}

// SendAll sends packets to the device.
func (r *Responder) SendAll(pkts ...*wire.Packet) {
	ginkgo.GinkgoHelper()
	for _, k := range pkts {
		r.send(k)
	}
}

// Answer gives a request the answer a correct responder would: an ACK
// for the packet ending a SEND/WRITE message or carrying AckReq, every
// READ response for a READ, an ATOMIC acknowledgment for an ATOMIC.
func (r *Responder) Answer(rec *trace.Record) {
	ginkgo.GinkgoHelper()
	k := rec.Packet
	switch k.Opcode.Class() {
	case wire.ClassSend, wire.ClassWrite:
		if k.Opcode.EndsMessage() {
			r.CountMessage()
		}
		if k.Opcode.EndsMessage() || k.AckReq {
			r.ACK(k.PSN)
		}
	case wire.ClassReadRequest:
		r.CountMessage()
		r.SendAll(r.ReadResponses(k, k.PSN, -1)...)
	case wire.ClassAtomic:
		r.CountMessage()
		a := &wire.Packet{BTH: wire.BTH{Opcode: wire.AtomicAcknowledge, PSN: k.PSN},
			AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: r.MSN}, AtomicAck: 0x1122334455667788}
		r.send(a)
	}
}

// Completion waits up to within for the device's completion of work
// request id and returns it.
func (r *Responder) Completion(id uint64, within time.Duration) dut.Completion {
	ginkgo.GinkgoHelper()
	c, ok := r.TryCompletion(id, within)
	if !ok {
		r.Fail([]string{fmt.Sprintf("a completion of work request %d within %v", id, within)},
			"no completion; "+r.Status(), nil)
	}
	return c
}

// TryCompletion is Completion without failing.
func (r *Responder) TryCompletion(id uint64, within time.Duration) (dut.Completion, bool) {
	ginkgo.GinkgoHelper()
	start := r.Conn.Now()
	step := within / 200
	if step < time.Microsecond {
		step = time.Microsecond
	}
	for {
		r.poll()
		for i, c := range r.comps {
			if c.ID == id && !c.Recv {
				r.comps = append(r.comps[:i], r.comps[i+1:]...)
				return c, true
			}
		}
		if r.Conn.Now()-start >= within {
			return dut.Completion{}, false
		}
		r.Conn.Wait(step)
	}
}

// NoCompletion fails if work request id has completed.
func (r *Responder) NoCompletion(id uint64, why string) {
	ginkgo.GinkgoHelper()
	r.poll()
	for _, c := range r.comps {
		if c.ID == id && !c.Recv {
			r.Fail([]string{"no completion of work request " + fmt.Sprint(id) + " yet: " + why},
				fmt.Sprintf("completion %d: %v at %v", c.ID, c.Status, c.Time), nil)
		}
	}
}

func (r *Responder) poll() {
	ginkgo.GinkgoHelper()
	cs, err := r.Conn.Completions()
	if err != nil {
		if errors.Is(err, dut.ErrUnsupported) {
			ginkgo.Skip("unsupported: reading completions: " + err.Error())
		}
		r.Fail([]string{"the adapter returns the device's completions"}, err.Error(), nil)
	}
	r.comps = append(r.comps, cs...)
}

// Status describes the device's completions so far and its QP state, for
// failure messages.
func (r *Responder) Status() string {
	r.poll()
	st := "unknown"
	if s, err := r.Conn.State(); err == nil {
		st = s.String()
	}
	return fmt.Sprintf("QP state %s; completions: %s", st, r.compSummary())
}

func (r *Responder) compSummary() string {
	var s []string
	for _, c := range r.comps {
		if !c.Recv {
			s = append(s, fmt.Sprintf("WR %d: %v", c.ID, c.Status))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// ExpectStatus waits for work request id's completion and fails unless
// its status is want.
func (r *Responder) ExpectStatus(id uint64, want dut.Status, within time.Duration, why string) dut.Completion {
	ginkgo.GinkgoHelper()
	c := r.Completion(id, within)
	if c.Status != want {
		r.Fail([]string{fmt.Sprintf("work request %d completes with status %q (%s)", id, want, why)},
			fmt.Sprintf("status %q at %v", c.Status, c.Time), nil)
	}
	return c
}

// State returns the device QP's state.
func (r *Responder) State() dut.QPState {
	ginkgo.GinkgoHelper()
	s, err := r.Conn.State()
	if err != nil {
		if errors.Is(err, dut.ErrUnsupported) {
			ginkgo.Skip("unsupported: reading the QP state: " + err.Error())
		}
		r.Fail([]string{"the adapter returns the device's QP state"}, err.Error(), nil)
	}
	return s
}

// ExpectState fails unless the device QP is in state want.
func (r *Responder) ExpectState(want dut.QPState, why string) {
	ginkgo.GinkgoHelper()
	if s := r.State(); s != want {
		r.Fail([]string{fmt.Sprintf("the device QP in state %v (%s)", want, why)}, fmt.Sprintf("state %v", s), nil)
	}
}

// Same reports whether a resent packet repeats the original: the same
// opcode, PSN, headers and payload. It returns what differs.
func Same(orig, again *wire.Packet) (bool, string) {
	switch {
	case orig.Opcode != again.Opcode:
		return false, fmt.Sprintf("opcode %s instead of %s", again.Opcode.ShortName(), orig.Opcode.ShortName())
	case orig.PSN != again.PSN:
		return false, fmt.Sprintf("PSN %d instead of %d", again.PSN, orig.PSN)
	case orig.Opcode.Has(wire.HdrRETH) && orig.RETH != again.RETH:
		return false, fmt.Sprintf("RETH va=0x%x rkey=0x%x len=%d instead of va=0x%x rkey=0x%x len=%d",
			again.RETH.VA, again.RETH.RKey, again.RETH.Length, orig.RETH.VA, orig.RETH.RKey, orig.RETH.Length)
	case orig.Opcode.Has(wire.HdrAtomicETH) && orig.Atomic != again.Atomic:
		return false, "a different AtomicETH"
	case string(orig.Payload) != string(again.Payload):
		return false, fmt.Sprintf("a different payload (%d bytes instead of %d)", len(again.Payload), len(orig.Payload))
	}
	return true, ""
}
