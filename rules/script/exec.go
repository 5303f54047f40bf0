package script

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// Progress is how far a run of a script came.
type Progress struct {
	// Line is the line running, or the one that stopped the run.
	Line int
	// Done counts, per clause, the script's own checks that passed.
	Done map[string]int
	// Unsupported says why the device could not do a line (the adapter
	// returned dut.ErrUnsupported).
	Unsupported string
	// Err is an adapter error that stopped the run.
	Err error
}

// pollStep is how often a completion or QP state is polled while a
// line waits for it.
const pollStep = 50 * time.Microsecond

// runner runs one script on a peer.
type runner struct {
	p    *harness.Peer
	s    *Script
	pr   *Progress
	info dut.ConnInfo
	next wire.PSN      // the peer's next request PSN
	ref  time.Duration // the previous line's event
	cqes []dut.Completion
	tol  time.Duration
}

// Needs returns what the script needs of the adapter beyond injecting
// packets, and the connection configuration that serves it.
func (s *Script) Needs() (rulekit.Needs, dut.ConnConfig) {
	var n rulekit.Needs
	cfg := s.Config
	for _, st := range s.Steps {
		switch st.Kind {
		case Post, PostRecv:
			n.PostWR = true
			if st.Kind == Post && (st.WR.Op == dut.OpCmpSwap || st.WR.Op == dut.OpFetchAdd) {
				n.Atomics = true
			}
		case Completion, State:
			n.Completions = true
		case MemWrite, MemExpect, Invalidate:
			n.Memory = true
		case Inject:
			if st.Ops[0].Class() == wire.ClassAtomic {
				n.Atomics = true
			}
		}
	}
	// ATOMICs sent to a device that grants no atomic access need no
	// atomics of it: it refuses them.
	n.Atomics = (n.Atomics || cfg.Atomics) && !s.NoAtomics
	cfg.Atomics = n.Atomics
	n.SRQ = cfg.SRQ
	return n, cfg
}

// Scenario returns the script as a rulekit scenario.
func (s *Script) Scenario() rulekit.Scenario {
	n, cfg := s.Needs()
	return rulekit.Scenario{Config: cfg, Needs: n, DeviceIsRequester: s.DeviceIsRequester}
}

// Exec runs the script's steps on p, a fresh connection set up with the
// script's Scenario. A failing check fails (through p, as the Go
// scenarios' expectations do) under its clause; a failing setup or
// trigger line is a finding of the clause governing it and skips the
// rest, as Peer.Setup and Peer.Trigger do. pr records how far it came.
func (s *Script) Exec(p *harness.Peer, pr *Progress) {
	ginkgo.GinkgoHelper()
	r := &runner{p: p, s: s, pr: pr, info: p.Info, next: p.Info.ExpectedPSN, ref: p.Conn.Now()}
	if tc, ok := p.Conn.(interface{ Tolerance() time.Duration }); ok {
		r.tol = tc.Tolerance()
	}
	if pr.Done == nil {
		pr.Done = map[string]int{}
	}
	for _, st := range s.Steps {
		r.step(st)
	}
}

func (r *runner) step(st *Step) {
	ginkgo.GinkgoHelper()
	p := r.p
	r.pr.Line = st.Line
	if st.At.Set {
		if d := st.At.at(r.ref) - p.Conn.Now(); d > 0 {
			p.Wait(d)
		}
		r.ref = p.Conn.Now()
	}
	fn := func() { r.do(st) }
	// The peer's own clause is the line's: a check's failure fails it; a
	// setup or trigger line's goes to the clause governing it, never to
	// the script's name.
	p.Clause, p.ClauseText = "script "+r.s.File, ""
	switch st.Role {
	case Setup:
		p.Setup(st.Clause, st.String(), fn)
	case Trigger:
		p.Trigger(st.Clause, st.String(), fn)
	default:
		if st.Kind.Checks() {
			p.Clause, p.ClauseText = st.Clause, rulekit.ClauseText(st.Clause)
		}
		p.Note(st.String())
		p.Own(fn)
	}
	if st.Role == Check && st.Kind.Checks() {
		r.pr.Done[st.Clause]++
	}
}

// adapter stops the run on an adapter error: unsupported when the
// adapter cannot do what the line asks; otherwise the clauses not yet
// decided are indeterminate (no clause is to blame for a broken
// adapter), and pr.Err says what failed.
func (r *runner) adapter(st *Step, what string, err error) {
	ginkgo.GinkgoHelper()
	if err == nil {
		return
	}
	if errors.Is(err, dut.ErrUnsupported) {
		r.pr.Unsupported = fmt.Sprintf("%s: the device cannot %s: %v", st, what, err)
		ginkgo.Skip("unsupported: " + r.pr.Unsupported)
	}
	r.pr.Err = fmt.Errorf("%s: %s: %w", st, what, err)
	r.p.Undecided = &harness.Undecided{Verdict: reports.Indeterminate, Reason: "the adapter failed: " + r.pr.Err.Error()}
	ginkgo.Skip("indeterminate: " + r.p.Undecided.Reason)
}

// left returns how long until t, at least 0.
func (r *runner) left(t time.Duration) time.Duration { return max(0, t-r.p.Conn.Now()) }

func (r *runner) do(st *Step) {
	ginkgo.GinkgoHelper()
	p, c := r.p, r.p.Conn
	switch st.Kind {
	case Inject:
		k := r.build(st)
		r.adapter(st, "take the packet", c.Send(k))
		r.ref = c.Now()
	case Expect:
		within := r.left(st.Within.at(r.ref))
		want := r.describe(st)
		match := func(k *wire.Packet) bool { return r.match(st, k) }
		if st.Strict {
			match = func(*wire.Packet) bool { return true }
		}
		rec, _ := p.Expect(want, within, match)
		if !r.match(st, rec.Packet) {
			p.Fail([]string{want + " (the device's next packet)"}, rec.Packet.String(), rec)
		}
		if nb := st.NotBefore.at(r.ref); st.NotBefore.Set && rec.Time < nb {
			if rec.Time+r.tol < nb {
				p.Fail([]string{fmt.Sprintf("%s, not before %v", want, nb)}, fmt.Sprintf("%s at %v", rec.Packet, rec.Time), rec)
			}
			// Early by the harness's clock, but by less than the adapter's
			// timing tolerance (a real clock): it cannot tell.
			p.Undecided = &harness.Undecided{Verdict: reports.Indeterminate,
				Reason: fmt.Sprintf("%s came at %v, %v before its bound %v, within the adapter's timing tolerance %v: the bound cannot be judged", rec.Packet, rec.Time, nb-rec.Time, nb, r.tol)}
			ginkgo.Skip("indeterminate: " + p.Undecided.Reason)
		}
		r.ref = rec.Time
	case Nothing:
		var match func(*wire.Packet) bool
		what := "packet from the device"
		if len(st.Ops) > 0 || len(st.Fields) > 0 {
			match, what = func(k *wire.Packet) bool { return r.match(st, k) }, r.describe(st)
		}
		p.ExpectNothing(what, r.left(st.Within.at(r.ref)), match)
		r.ref = c.Now()
	case Post:
		wr := st.WR
		wr.RemoteVA = r.info.PeerVA + uint64(st.Off)
		if wr.RKey == 0 && wr.Op != dut.OpSendInv {
			wr.RKey = r.info.PeerRKey
		}
		r.adapter(st, "post "+wr.Op.String(), c.PostSend(wr))
		r.ref = c.Now()
	case PostRecv:
		r.adapter(st, "post receive WQEs", c.PostRecv(st.N, st.Size))
		r.ref = c.Now()
	case Invalidate:
		r.adapter(st, "invalidate its memory region's R_Key", c.InvalidateRKey())
		r.ref = c.Now()
	case MemWrite:
		r.adapter(st, "write its memory", c.WriteMemory(int(st.Off), st.Data))
		r.ref = c.Now()
	case MemExpect:
		got, err := c.ReadMemory(int(st.Off), len(st.Data))
		r.adapter(st, "read its memory", err)
		if !bytes.Equal(got, st.Data) {
			p.Fail([]string{fmt.Sprintf("bytes %x at offset %d of the device's memory region", st.Data, st.Off)}, fmt.Sprintf("%x", got), nil)
		}
		r.ref = c.Now()
	case Completion:
		r.completion(st)
	case State:
		r.state(st)
	case Wait:
		p.Wait(st.Wait)
		r.ref = c.Now()
	}
}

// build makes the packet an injected line describes.
func (r *runner) build(st *Step) *wire.Packet {
	k := r.p.Packet(st.Ops[0], r.next)
	r.fill(k, st)
	if o := k.Opcode; o.IsRequest() {
		span := 1
		if o == wire.ReadRequest {
			span = wire.ReadResponsePackets(k.RETH.Length, r.info.MTU)
		}
		r.next = k.PSN.Add(span)
		r.p.PSN = r.next
	}
	return k
}

// fill sets the headers of k, a bare packet of the line's opcode, from
// the defaults and the line's fields.
func (r *runner) fill(k *wire.Packet, st *Step) {
	o := k.Opcode
	e := &env{epsn: r.info.ExpectedPSN, dpsn: r.info.DevicePSN, next: r.next, base: r.info.VA, rkey: r.info.RKey}
	if o.Has(wire.HdrRETH) {
		k.RETH = wire.RETH{VA: r.info.VA, RKey: r.info.RKey}
	}
	if o.Has(wire.HdrAtomicETH) {
		k.Atomic = wire.AtomicETH{VA: r.info.VA, RKey: r.info.RKey}
	}
	if o.Has(wire.HdrAETH) {
		k.AETH.Syndrome = wire.SynACK(wire.CreditInvalid)
	}
	has := map[string]bool{}
	// The syndrome first: credit= then sets its low five bits.
	for _, first := range []bool{true, false} {
		for _, f := range st.Fields {
			if (f.Name == "syndrome") != first {
				continue
			}
			has[f.Name] = true
			if f.Data != nil {
				k.Payload = f.Data
				continue
			}
			fieldDefs[f.Name].set(k, e, e.eval(f.Pat.Lo))
		}
	}
	info, _ := o.Info()
	if o.Has(wire.HdrRETH) && !has["dmalen"] {
		k.RETH.Length = uint32(len(k.Payload))
	}
	if !info.Payload {
		k.Payload = nil
	}
}

// match reports whether the device's packet k is what st expects.
func (r *runner) match(st *Step, k *wire.Packet) bool {
	if len(st.Ops) > 0 {
		ok := false
		for _, o := range st.Ops {
			ok = ok || k.Opcode == o
		}
		if !ok {
			return false
		}
	}
	e := &env{epsn: r.info.ExpectedPSN, dpsn: r.info.DevicePSN, base: r.info.PeerVA}
	for _, f := range st.Fields {
		if f.Data != nil {
			if !bytes.Equal(k.Payload, f.Data) {
				return false
			}
			continue
		}
		def := fieldDefs[f.Name]
		if def.hdr != 0 && !k.Opcode.Has(def.hdr) {
			return false
		}
		if f.Pat.Any {
			continue
		}
		v, lo := def.get(k, e), e.eval(f.Pat.Lo)
		switch {
		case !f.Pat.Range && v != lo:
			return false
		case f.Pat.Range && def.psn && !wire.PSN(v).InRange(wire.PSN(lo), wire.PSN(e.eval(f.Pat.Hi))):
			return false
		case f.Pat.Range && !def.psn && (v < lo || v > e.eval(f.Pat.Hi)):
			return false
		}
	}
	return true
}

// describe renders what an expectation line wants, with the connection's
// PSNs filled in.
func (r *runner) describe(st *Step) string {
	e := &env{epsn: r.info.ExpectedPSN, dpsn: r.info.DevicePSN}
	var b strings.Builder
	if len(st.Ops) == 0 {
		b.WriteString("any packet")
	}
	for i, o := range st.Ops {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString(o.String())
	}
	for _, f := range st.Fields {
		switch {
		case f.Data != nil:
			fmt.Fprintf(&b, " data=%x", f.Data)
		case f.Pat.Any:
		case !fieldDefs[f.Name].psn:
			fmt.Fprintf(&b, " %s=%s", f.Name, f.Raw)
		case f.Pat.Range:
			fmt.Fprintf(&b, " %s=%d..%d", f.Name, e.eval(f.Pat.Lo), e.eval(f.Pat.Hi))
		default:
			fmt.Fprintf(&b, " %s=%d", f.Name, e.eval(f.Pat.Lo))
		}
	}
	return fmt.Sprintf("%s (line %d)", b.String(), st.Line)
}

// completion waits for the completion st names and checks it.
func (r *runner) completion(st *Step) {
	ginkgo.GinkgoHelper()
	p, c := r.p, r.p.Conn
	deadline := st.Within.at(r.ref)
	what := fmt.Sprintf("the completion of work request %d", st.WR.ID)
	if st.Recv {
		what = "a receive completion"
	}
	want := what
	if st.HasStatus {
		want += ", status " + st.Status.String()
	}
	if st.HasOp {
		want += ", " + st.WR.Op.String()
	}
	if st.HasByte {
		want += fmt.Sprintf(", %d bytes", st.Bytes)
	}
	if st.HasImm {
		want += fmt.Sprintf(", immediate 0x%x", st.WR.Imm)
	}
	want += fmt.Sprintf(" (line %d)", st.Line)
	for {
		cs, err := c.Completions()
		r.adapter(st, "report its completions", err)
		r.cqes = append(r.cqes, cs...)
		for i, q := range r.cqes {
			if q.Recv != st.Recv || !st.Recv && q.ID != st.WR.ID {
				continue
			}
			r.cqes = append(r.cqes[:i:i], r.cqes[i+1:]...)
			if st.HasStatus && q.Status != st.Status || st.HasOp && q.Op != st.WR.Op ||
				st.HasByte && q.Bytes != st.Bytes || st.HasImm && q.Imm != st.WR.Imm {
				p.Fail([]string{want}, completionText(q), nil)
			}
			r.ref = c.Now()
			return
		}
		if c.Now() >= deadline {
			seen := "no such completion"
			if len(r.cqes) > 0 {
				var s []string
				for _, q := range r.cqes {
					s = append(s, completionText(q))
				}
				seen = "only " + strings.Join(s, "; ")
			}
			p.Fail([]string{want + " by " + deadline.String()}, seen, nil)
		}
		p.Wait(min(pollStep, r.left(deadline)))
	}
}

func completionText(q dut.Completion) string {
	kind := fmt.Sprintf("work request %d (%s)", q.ID, q.Op)
	if q.Recv {
		kind = "receive"
	}
	return fmt.Sprintf("completion of %s: %s, %d bytes, at %v", kind, q.Status, q.Bytes, q.Time)
}

// state waits for the device QP to reach the state st names.
func (r *runner) state(st *Step) {
	ginkgo.GinkgoHelper()
	p, c := r.p, r.p.Conn
	deadline := st.Within.at(r.ref)
	for {
		s, err := c.State()
		r.adapter(st, "report its QP state", err)
		if s == st.QPState {
			r.ref = c.Now()
			return
		}
		if c.Now() >= deadline {
			p.Fail([]string{fmt.Sprintf("the QP in state %s by %v (line %d)", st.QPState, deadline, st.Line)}, "state "+s.String(), nil)
		}
		p.Wait(min(pollStep, r.left(deadline)))
	}
}

// Outcomes gives each clause the script checks its outcome once Exec
// returned or stopped, given p's record of a failure and pr.
func (s *Script) Outcomes(p *harness.Peer, pr *Progress) []rulekit.Outcome {
	total := map[string]int{}
	for _, st := range s.Steps {
		if st.Kind.Checks() && st.Role == Check {
			total[st.Clause]++
		}
	}
	var out []rulekit.Outcome
	for _, c := range s.Clauses() {
		o := rulekit.Outcome{ID: c}
		stopped := fmt.Sprintf("the script stopped at line %d before all of %s's checks ran", pr.Line, c)
		switch {
		case p.Failure != nil && p.Undecided == nil && p.Failure.ID == c:
			o.Verdict = reports.Fail
		case pr.Done[c] == total[c]:
			o.Verdict = reports.Pass
		case pr.Unsupported != "":
			o.Verdict, o.Reason = reports.Unsupported, pr.Unsupported
		case p.Undecided != nil:
			o.Verdict, o.Reason = p.Undecided.Verdict, fmt.Sprintf("line %d: %s", pr.Line, p.Undecided.Reason)
		case p.Failure != nil:
			o.Verdict, o.Reason = reports.Indeterminate, fmt.Sprintf("%s: a check of %s failed there", stopped, p.Failure.ID)
		case pr.Err != nil:
			o.Verdict, o.Reason = reports.Indeterminate, fmt.Sprintf("%s: %v", stopped, pr.Err)
		default:
			o.Verdict, o.Reason = reports.Indeterminate, stopped
		}
		out = append(out, o)
	}
	return out
}
