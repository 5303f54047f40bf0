package requester

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// These tests show the "started over" refinement of ExpectPSN and ExpectRound
// able to fail both ways. A device that, while resending a go-back-N round,
// goes back to where that round began, or to where an answer of the harness
// left its oldest unacknowledged PSN (rxe's stale retransmit timer sent PSN
// 1000 twice, 80 µs apart, where the step expected 1001) starts a second
// go-back-N: legal for go-back-n if its transport timer fired, which is
// C9-140's to judge on the trace, so the step blames no clause and leaves the
// scenario indeterminate. Anything else in the expected PSN's place (a skip,
// a later PSN sent again, a PSN never sent, acknowledged or before the round,
// a go-back to the middle of the round, silence with the work request
// completed) is still a finding: of go-back-n (docs/interpretations.md,
// "Go-back-N": a go-back-N resends from the oldest unacknowledged PSN, in
// order, with the same PSNs) or, for silence, of the scenario's own clause.

// scripted is a device requester that sends a fixed list of packets,
// each at its time on a virtual clock, and takes in the harness's
// answers without acting on them: a device whose go-back-N a test shapes
// exactly. A packet joins the trace when the clock reaches its time,
// before the harness receives it (as the reference's and the live
// adapter's traces do).
type scripted struct {
	now   time.Duration
	out   []*trace.Record // still to send, in time order
	inbox []*trace.Record // sent, not yet received by the harness
	recs  []*trace.Record // the trace, both directions
	state dut.QPState
	comps []dut.Completion
}

// newScripted returns a device that sends reqs (request packets and the
// times they leave).
func newScripted(reqs ...*trace.Record) *scripted {
	for i, r := range reqs {
		r.Frame, r.Dir = i+1, trace.ToResponder
	}
	return &scripted{out: reqs, state: dut.StateRTS}
}

// advance moves the clock to t, sending what is due by then.
func (s *scripted) advance(t time.Duration) {
	if t > s.now {
		s.now = t
	}
	for len(s.out) > 0 && s.out[0].Time <= s.now {
		s.recs = append(s.recs, s.out[0])
		s.inbox = append(s.inbox, s.out[0])
		s.out = s.out[1:]
	}
}

func (s *scripted) Info() dut.ConnInfo {
	return dut.ConnInfo{DeviceQPN: 0x11, PeerQPN: 0x22, MTU: 1024, DevicePSN: 1000, ExpectedPSN: 1,
		Config: dut.ConnConfig{MTU: 1024, Timeout: 10, RetryCnt: 7, RNRRetry: 7}}
}

func (s *scripted) Send(p *wire.Packet) error {
	s.recs = append(s.recs, &trace.Record{Frame: len(s.recs) + 1, Time: s.now, Dir: trace.ToRequester, Packet: p, ICRC: wire.ICRCOK})
	return nil
}

func (s *scripted) SendRaw(p *wire.Packet) error { return s.Send(p) }

func (s *scripted) Recv(timeout time.Duration) (*trace.Record, bool) {
	if len(s.inbox) == 0 && len(s.out) > 0 && s.out[0].Time <= s.now+timeout {
		s.advance(s.out[0].Time)
	}
	if len(s.inbox) == 0 {
		s.advance(s.now + timeout)
		return nil, false
	}
	r := s.inbox[0]
	s.inbox = s.inbox[1:]
	return r, true
}

func (s *scripted) Wait(d time.Duration)                { s.advance(s.now + d) }
func (s *scripted) Now() time.Duration                  { return s.now }
func (s *scripted) PostRecv(int, int) error             { return nil }
func (s *scripted) PostSend(dut.WR) error               { return nil }
func (s *scripted) State() (dut.QPState, error)         { return s.state, nil }
func (s *scripted) ReadMemory(int, int) ([]byte, error) { return nil, dut.ErrUnsupported }
func (s *scripted) WriteMemory(int, []byte) error       { return dut.ErrUnsupported }
func (s *scripted) InvalidateRKey() error               { return dut.ErrUnsupported }
func (s *scripted) Trace() []*trace.Record              { return append([]*trace.Record(nil), s.recs...) }
func (s *scripted) Close() error                        { return nil }

func (s *scripted) Completions() ([]dut.Completion, error) {
	c := s.comps
	s.comps = nil
	return c, nil
}

// send returns a single-packet SEND request with PSN psn leaving at
// at µs.
func send(psn wire.PSN, at int) *trace.Record {
	return &trace.Record{Time: time.Duration(at) * time.Microsecond, ICRC: wire.ICRCOK,
		Packet: &wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: psn, AckReq: true, PKey: 0xFFFF, DestQP: 0x22},
			Payload: Pattern(int(psn), 16)}}
}

// sends returns single-packet SENDs with PSNs psns, one a microsecond
// from at µs on.
func sends(at int, psns ...wire.PSN) []*trace.Record {
	var out []*trace.Record
	for i, p := range psns {
		out = append(out, send(p, at+i))
	}
	return out
}

// outcome is how a scenario body ended: what the harness.Peer reported.
type outcome struct {
	passed bool
	// blamed is the clause the failure was reported under ("" for none).
	blamed string
	// verdict is the scenario's own clause's: "fail" when its spec failed,
	// else the Undecided verdict ("" when it passed).
	verdict reports.Verdict
	reason  string
}

func (o outcome) String() string {
	if o.passed {
		return "passed"
	}
	return fmt.Sprintf("blamed %q, scenario verdict %q (%s)", o.blamed, o.verdict, o.reason)
}

// run drives body as a scenario of clause against dev, the harness
// playing the responder, and returns how it ended. Peer.Fail ends a
// step with ginkgo.Fail or ginkgo.Skip, which panic outside a running
// spec; run recovers them and reads what the peer recorded.
func run(t *testing.T, clause string, dev dut.Conn, body func(rs *Responder)) (o outcome) {
	t.Helper()
	p := harness.NewPeer(dev, clause, "the clause under test")
	rs := NewResponder(p)
	defer func() {
		if recover() == nil {
			o.passed = true
			return
		}
		if p.Failure != nil {
			o.blamed = p.Failure.ID
		}
		switch {
		case p.Undecided != nil:
			o.verdict, o.reason = p.Undecided.Verdict, p.Undecided.Reason
		case p.Failure != nil && p.Failure.ID == clause:
			o.verdict, o.reason = reports.Fail, p.Failure.Message
		default:
			t.Fatalf("the scenario ended with neither a failure nor an undecided verdict")
		}
	}()
	body(rs)
	return outcome{passed: true}
}

// startedOverText is what the unblamed step's reason says.
const startedOverText = "without starting over"

// wantUnblamed fails unless o is the step's failure blaming no clause,
// the scenario indeterminate because the device started over at psn.
func wantUnblamed(t *testing.T, name string, o outcome, psn wire.PSN) {
	t.Helper()
	if o.passed || o.blamed != "" || o.verdict != reports.Indeterminate ||
		!strings.Contains(o.reason, startedOverText) || !strings.Contains(o.reason, fmt.Sprintf("went back to PSN %d again", psn)) {
		t.Errorf("%s: want no clause blamed and the scenario indeterminate (the device started over at PSN %d); got %v", name, psn, o)
	}
}

// wantBlamed fails unless o blames clause: the scenario's own (its spec
// failed) or another (the scenario indeterminate, its reason naming that
// clause), never with the started-over reason.
func wantBlamed(t *testing.T, name, scenario string, o outcome, clause string) {
	t.Helper()
	ok := !o.passed && o.blamed == clause && !strings.Contains(o.reason, startedOverText)
	if clause == scenario {
		ok = ok && o.verdict == reports.Fail
	} else {
		ok = ok && o.verdict == reports.Indeterminate && strings.Contains(o.reason, "("+clause+")")
	}
	if !ok {
		t.Errorf("%s: want %s blamed; got %v", name, clause, o)
	}
}

// wantOutcome fails unless o is what a step over a go-back-N should make
// of the device's packet: a pass (clean), no clause blamed because the
// device started over at started (non-zero), or else go-back-n blamed.
func wantOutcome(t *testing.T, name, scenario string, o outcome, clean bool, started wire.PSN) {
	t.Helper()
	switch {
	case clean:
		if !o.passed {
			t.Errorf("%s: want the step passed; got %v", name, o)
		}
	case started != 0:
		wantUnblamed(t, name, o, started)
	default:
		wantBlamed(t, name, scenario, o, "go-back-n")
	}
}

// The scenario clauses the steps run under: go-back-n's own, and others
// whose steps expect a go-back-N (go-back-n then gets the finding).
var scenarioClauses = []string{"go-back-n", "C9-140"}

// expectPSNs runs ExpectPSN for each of psns in turn, within the
// liveness bound.
func expectPSNs(rs *Responder, what string, psns ...wire.PSN) {
	for _, p := range psns {
		rs.ExpectPSN(what, Liveness, p)
	}
}

// TestExpectPSNStartedOver: the first transmission 1000..1003, then
// (the harness making the round fail) the device goes back to 1000; the
// step under test expects 1001 next, as the real-time scenarios' rounds
// (realtime.Run.Again) and C9-140's go-back-N loop do.
func TestExpectPSNStartedOver(t *testing.T) {
	first := func() []*trace.Record { return sends(1, 1000, 1001, 1002, 1003) }
	cases := []struct {
		name string
		// then is what the device sends after the first transmission.
		then []*trace.Record
		// nak: the harness NAKs (sequence error) PSN nak after the first
		// transmission (0: it stays silent, as for a timeout).
		nak wire.PSN
		// resent: the PSNs the step expects, and gets, before the one
		// under test.
		resent []wire.PSN
		// ack, nakMid: the harness acknowledges PSN ack, or NAKs PSN
		// nakMid as a sequence error, after the first resent packet (0:
		// it does not).
		ack, nakMid wire.PSN
		want        wire.PSN // the PSN the step under test expects
		// started: the device started over at this PSN (no clause
		// blamed); 0: the step blames go-back-n (or passes, with clean).
		started wire.PSN
		clean   bool
	}{
		{name: "clean: the round resent in order",
			then: sends(4300, 1000, 1001), resent: []wire.PSN{1000}, want: 1001, clean: true},
		{name: "clean: after a NAK for 1002, resent from it",
			then: sends(50, 1002, 1003), nak: 1002, resent: []wire.PSN{1002}, want: 1003, clean: true},
		{name: "rxe's stale timer: 1000 again, 80 µs later, where 1001 is expected",
			then: []*trace.Record{send(1000, 4300), send(1000, 4380)}, resent: []wire.PSN{1000}, want: 1001, started: 1000},
		{name: "started over after three packets of the round",
			then: sends(4300, 1000, 1001, 1002, 1000), resent: []wire.PSN{1000, 1001, 1002}, want: 1003, started: 1000},
		{name: "the round and its restart in one burst (both already in the trace when the step looks)",
			then: []*trace.Record{send(1000, 4300), send(1000, 4300)}, resent: []wire.PSN{1000}, want: 1001, started: 1000},
		{name: "a NAK for 1002: the round from 1002 started over",
			then: sends(50, 1002, 1002), nak: 1002, resent: []wire.PSN{1002}, want: 1003, started: 1002},
		{name: "a NAK for 1002 crossing the device's timer: 1000 where 1002 is expected",
			then: sends(50, 1000), nak: 1002, want: 1002, started: 1000},
		{name: "1000 acknowledged during the round, then the timer: started over at 1001, the oldest unacknowledged",
			then: sends(4300, 1000, 1001, 1002, 1001), ack: 1000, resent: []wire.PSN{1000, 1001, 1002}, want: 1003, started: 1001},
		{name: "a NAK for 1001 during the round: started over at 1001",
			then: sends(4300, 1000, 1001, 1002, 1001), nakMid: 1001, resent: []wire.PSN{1000, 1001, 1002}, want: 1003, started: 1001},
		{name: "1001 acknowledged during the round: back to 1001 (acknowledged) where 1003 is expected",
			then: sends(4300, 1000, 1001, 1002, 1001), ack: 1001, resent: []wire.PSN{1000, 1001, 1002}, want: 1003},
		{name: "skip: 1002 where 1001 is expected",
			then: sends(4300, 1000, 1002), resent: []wire.PSN{1000}, want: 1001},
		{name: "a PSN never sent: 998 where 1001 is expected",
			then: sends(4300, 1000, 998), resent: []wire.PSN{1000}, want: 1001},
		{name: "a PSN never sent, in one burst with the round's 1000 (both already in the trace when the step looks)",
			then: []*trace.Record{send(1000, 4300), send(998, 4300)}, resent: []wire.PSN{1000}, want: 1001},
		{name: "back to the middle of the round, nothing acknowledged: 1001 where 1003 is expected",
			then: sends(4300, 1000, 1001, 1002, 1001), resent: []wire.PSN{1000, 1001, 1002}, want: 1003},
		{name: "a NAK for 1002: the round from 1002, then 1000 (acknowledged by the NAK) where 1003 is expected",
			then: sends(50, 1002, 1000), nak: 1002, resent: []wire.PSN{1002}, want: 1003},
		{name: "a later PSN sent again: 1003 where 1001 is expected",
			then: sends(4300, 1000, 1003), resent: []wire.PSN{1000}, want: 1001},
		{name: "a new PSN beyond the round where 1001 is expected",
			then: sends(4300, 1000, 1004), resent: []wire.PSN{1000}, want: 1001},
	}
	for _, tc := range cases {
		for _, clause := range scenarioClauses {
			name := fmt.Sprintf("%s (a scenario of %s)", tc.name, clause)
			dev := newScripted(append(first(), tc.then...)...)
			o := run(t, clause, dev, func(rs *Responder) {
				expectPSNs(rs, "the first transmission", 1000, 1001, 1002, 1003)
				if tc.nak != 0 {
					rs.NAK(tc.nak, wire.NAKPSNSequence)
				}
				for i, p := range tc.resent {
					rs.ExpectPSN("the go-back-N, in order", Liveness, p)
					if i == 0 && tc.ack != 0 {
						rs.ACK(tc.ack)
					}
					if i == 0 && tc.nakMid != 0 {
						rs.NAK(tc.nakMid, wire.NAKPSNSequence)
					}
				}
				rs.ExpectPSN("the go-back-N, in order", Upper(wire.AckTimeout(10)), tc.want)
			})
			wantOutcome(t, name, clause, o, tc.clean, tc.started)
		}
	}
}

// TestExpectPSNSilence: no resend at all is never put down to starting
// over. With the work request completed (or the QP in ERROR) the silence
// is the scenario's own finding; with the QP in RTS and nothing completed
// it cannot be told from a go-back-N past the only outstanding request
// (NoResend), and no clause is blamed, for that reason and not for a
// restart.
func TestExpectPSNSilence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state dut.QPState
		comp  bool
	}{
		{"the QP in ERROR", dut.StateError, false},
		{"the work request completed", dut.StateRTS, true},
		{"the QP in RTS, nothing completed", dut.StateRTS, false},
	} {
		for _, clause := range scenarioClauses {
			name := fmt.Sprintf("silence after resending 1000, %s (a scenario of %s)", tc.name, clause)
			dev := newScripted(append(sends(1, 1000, 1001), send(1000, 4300))...)
			dev.state = tc.state
			if tc.comp {
				dev.comps = []dut.Completion{{ID: 1, Status: dut.StatusSuccess}}
			}
			o := run(t, clause, dev, func(rs *Responder) {
				expectPSNs(rs, "the first transmission", 1000, 1001, 1000)
				rs.ExpectPSN("the go-back-N, in order", Liveness, 1001)
			})
			if tc.state == dut.StateRTS && !tc.comp {
				if o.passed || o.blamed != "" || o.verdict != reports.Indeterminate || strings.Contains(o.reason, startedOverText) {
					t.Errorf("%s: want no clause blamed, not for starting over; got %v", name, o)
				}
				continue
			}
			wantBlamed(t, name, clause, o, clause)
		}
	}
}

// TestExpectRoundStartedOver: ExpectRound's steps (go-back-n's
// scenarios, rnr-retry's and the retry episodes) over the round
// 1000..1003 the harness made fail.
func TestExpectRoundStartedOver(t *testing.T) {
	round := []wire.PSN{1000, 1001, 1002, 1003}
	cases := []struct {
		name    string
		then    []*trace.Record // the device's resend
		started wire.PSN        // as in TestExpectPSNStartedOver
		clean   bool
	}{
		{name: "clean: the round resent in order", then: sends(4300, 1000, 1001, 1002, 1003), clean: true},
		{name: "1000 again where 1001 is expected", then: sends(4300, 1000, 1000), started: 1000},
		{name: "1000 again where 1003 is expected", then: sends(4300, 1000, 1001, 1002, 1000), started: 1000},
		{name: "the round and its restart in one burst", then: []*trace.Record{send(1000, 4300), send(1001, 4300), send(1000, 4300)}, started: 1000},
		{name: "skip: 1002 where 1001 is expected", then: sends(4300, 1000, 1002)},
		{name: "a later PSN sent again: 1003 where 1002 is expected", then: sends(4300, 1000, 1001, 1003)},
		{name: "a PSN before the round (acknowledged): 999 where 1001 is expected", then: sends(4300, 1000, 999)},
		{name: "back to the middle of the round: 1001 where 1003 is expected", then: sends(4300, 1000, 1001, 1002, 1001)},
		{name: "the round's own last PSN repeated: 1002 twice", then: sends(4300, 1000, 1001, 1002, 1002)},
	}
	for _, tc := range cases {
		for _, clause := range scenarioClauses {
			name := fmt.Sprintf("%s (a scenario of %s)", tc.name, clause)
			// 999 went first and was acknowledged: the round is 1000..1003.
			dev := newScripted(append(sends(1, 999, 1000, 1001, 1002, 1003), tc.then...)...)
			o := run(t, clause, dev, func(rs *Responder) {
				var recs []*trace.Record
				expectPSNs(rs, "the first transmission", 999)
				rs.ACK(999)
				for _, p := range round {
					recs = append(recs, rs.ExpectPSN("the first transmission", Liveness, p))
				}
				rs.ExpectRound(recs, Upper(wire.AckTimeout(10)), "the go-back-N after a timeout")
			})
			wantOutcome(t, name, clause, o, tc.clean, tc.started)
		}
	}
}

// TestStartedOverReference drives the reference transport as the device
// into rxe's lab case (ci/rxe/FINDINGS.md, item 24 (b)): with the
// rnr-stale-timer defect the transport timer armed by the first
// transmission of 1000 and 1001 (100 µs apart) survives an RNR NAK, so
// it fires right after the RNR-timer resend of 1000 and the device sends
// 1000 again where the step expects 1001. Both ways a scenario receives
// the resend (ExpectRound, and ExpectPSN per packet as the real-time
// rounds do) leave that unblamed for starting over; the clean reference
// resends the round and passes; gbn-skip-one (the go-back-N skips a
// packet) is still go-back-n's finding.
func TestStartedOverReference(t *testing.T) {
	for _, tc := range []struct {
		defect  string
		started bool   // the step ends unblamed: started over at 1000
		blamed  string // else: the clause blamed ("" for a pass)
	}{
		{"", false, ""},
		{"rnr-stale-timer", true, ""},
		{"gbn-skip-one", false, "go-back-n"},
	} {
		for _, perPacket := range []bool{false, true} {
			name := fmt.Sprintf("reference, defect %q, the resend received by ExpectRound", tc.defect)
			if perPacket {
				name = fmt.Sprintf("reference, defect %q, the resend received by ExpectPSN", tc.defect)
			}
			d, err := refdut.New(dut.Options{Defect: tc.defect, Seed: 1, Settings: map[string]string{refdut.SetPacketGap: "100us"}})
			if err != nil {
				t.Fatalf("%s: starting the reference: %v", name, err)
			}
			// Local ACK timeout 8: the transport timer fires 1.05 ms after
			// the first transmission of 1000.
			c, err := d.NewConn(dut.ConnConfig{MTU: 1024, DevicePSN: 1000, SetPSNs: true, Timeout: 8, RetryCnt: 7, RNRRetry: 7})
			if err != nil {
				t.Fatalf("%s: opening a connection: %v", name, err)
			}
			o := run(t, "rnr-retry", c, func(rs *Responder) {
				round := rs.PostAndReceive(1000, SendWR(1, 16), SendWR(2, 16))
				// An RNR NAK (0.64 ms) timed so that its resend of 1000
				// leaves 30 µs before the transport timer fires.
				c.Wait(377*time.Microsecond - c.Now())
				rs.RNR(1000, 12)
				wait := Upper(wire.RNRDelay(12))
				if perPacket {
					rs.ExpectPSN("the resend after the RNR NAK", wait, 1000)
					rs.ExpectPSN("the resend after the RNR NAK", Liveness, 1001)
				} else {
					rs.ExpectRound(round, wait, "the resend after the RNR NAK")
				}
			})
			switch {
			case tc.started:
				wantUnblamed(t, name, o, 1000)
			case tc.blamed != "":
				if o.passed || o.blamed != tc.blamed || strings.Contains(o.reason, startedOverText) {
					t.Errorf("%s: want %s blamed; got %v\n%s", name, tc.blamed, o, harness.Ladder(c.Trace(), nil, false))
				}
			case !o.passed:
				t.Errorf("%s: want the step passed; got %v\n%s", name, o, harness.Ladder(c.Trace(), nil, false))
			}
		}
	}
}

// read returns an RDMA READ request of length bytes with PSN psn leaving
// at at µs (at MTU 1024, the scripted device's, one response PSN per KiB).
func read(psn wire.PSN, length uint32, at int) *trace.Record {
	r := send(psn, at)
	r.Packet.Opcode, r.Packet.Payload = wire.ReadRequest, nil
	r.Packet.RETH = wire.RETH{VA: 0x10000 + uint64(psn.Diff(1000))*1024, RKey: 0x77, Length: length}
	return r
}

// TestExpectPSNStartedOverRead: a 4 KiB READ at 1000 (responses 1000 .. 1003)
// and a SEND at 1004; the harness returns the first two responses and stays
// silent; the device re-requests the READ's missing part from 1002 (a partial
// retry, docs/interpretations.md "Go-back-N"). Going back, where the resend
// of 1004 is expected next, to the partial re-request at 1002 or to the whole
// READ at 1000 (which a go-back-N may re-request whole) starts over; a READ
// at 1000 that does not reach the round's start, or a PSN inside the READ's
// answered part, does not.
func TestExpectPSNStartedOverRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		k       *trace.Record // the device's packet where the resend of 1004 is expected
		started wire.PSN      // 0: go-back-n blamed
	}{
		{"the partial re-request at 1002 again", read(1002, 2048, 4400), 1002},
		{"the whole READ at 1000 again", read(1000, 4096, 4400), 1000},
		{"a READ at 1000 for its answered part only (it does not reach 1002)", read(1000, 2048, 4400), 0},
		{"a SEND at 1001, inside the READ's answered part", send(1001, 4400), 0},
	} {
		for _, clause := range scenarioClauses {
			name := fmt.Sprintf("%s (a scenario of %s)", tc.name, clause)
			dev := newScripted(read(1000, 4096, 1), send(1004, 2), read(1002, 2048, 4300), tc.k)
			o := run(t, clause, dev, func(rs *Responder) {
				req := rs.ExpectPSN("the READ", Liveness, 1000)
				rs.ExpectPSN("the SEND", Liveness, 1004)
				rs.SendAll(rs.ReadResponses(req.Packet, 1000, 2)...)
				rs.ExpectPSN("the READ's missing part re-requested", Upper(wire.AckTimeout(10)), 1002)
				rs.ExpectPSN("the go-back-N, in order", Liveness, 1004)
			})
			wantOutcome(t, name, clause, o, false, tc.started)
		}
	}
}
