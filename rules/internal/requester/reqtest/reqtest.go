// Package reqtest helps the requester rules' plain go tests: it builds
// traces by hand (Script), records traces of the reference device driven
// by the harness as responder and audits them (AuditReference), and runs
// one clause's passive monitor over a trace (Audit) or a capture file
// (CaptureFile).
package reqtest

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// Result is what one monitor made of a trace.
type Result struct {
	Tally    harness.Tally
	Findings []string
}

func (r Result) String() string {
	return fmt.Sprintf("checked %d, violations %d, indeterminate %d (%s)\n%s", r.Tally.Checked, r.Tally.Violations,
		r.Tally.Indeterminate, r.Tally.Reason, strings.Join(r.Findings, "\n"))
}

// Audit runs the monitor of clause (and only it) over recs.
func Audit(clause string, s harness.Settings, recs []*trace.Record) Result {
	sink := harness.NewSink("test")
	a := harness.NewAuditor(s, sink)
	a.Only = map[string]bool{clause: true}
	for _, r := range recs {
		a.Observe(r)
	}
	a.End()
	var res Result
	if t := sink.Tally(clause); t != nil {
		res.Tally = *t
	}
	for _, f := range sink.Findings {
		res.Findings = append(res.Findings, f.Message)
	}
	return res
}

// Active returns the settings of an active run with the device as
// requester: MTU, ACK timeout and retry counts known, trace complete.
func Active(mtu, timeout, retry, rnr int) harness.Settings {
	s := harness.UnknownSettings()
	s.Active, s.DeviceIsRequester = true, true
	s.MTU, s.AckTimeout, s.RetryCnt, s.RNRRetry = mtu, timeout, retry, rnr
	s.SRQ = harness.SRQNone
	return s
}

// Capture returns the settings of a capture audit given the known values
// (-1: unknown; mtu 0: unknown).
func Capture(mtu, timeout, retry, rnr int, complete bool) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU, s.AckTimeout, s.RetryCnt, s.RNRRetry = mtu, timeout, retry, rnr
	s.Complete = complete
	return s
}

// Script builds a trace by hand: requests from 10.0.0.2 to 10.0.0.1 and
// responses back, each a step after the one before unless At or Wait
// moves the clock.
type Script struct {
	Recs   []*trace.Record
	Now    time.Duration
	Step   time.Duration
	ipid   uint16
	NoIPID bool // IPv6-like: no IPv4 Identification
	Const  bool // the requester's IPv4 Identification never changes
	// ReqSkip makes the requester's next IPv4 Identification skip a
	// number (a packet the capture missed).
	ReqSkip bool
	// RspCounts: the responder numbers its IPv4 Identifications one by
	// one (else each takes the packet's place in the trace); RspSkip
	// makes its next one skip a number (a packet the capture missed).
	RspCounts bool
	RspSkip   bool
	rspID     uint16
	MSN       uint32
}

// NewScript returns an empty script with a 1 µs step.
func NewScript() *Script { return &Script{Step: time.Microsecond} }

var (
	reqIP = netip.MustParseAddr("10.0.0.2")
	rspIP = netip.MustParseAddr("10.0.0.1")
)

// At sets the time of the next packet.
func (s *Script) At(t time.Duration) *Script { s.Now = t; return s }

// Wait moves the clock on by d.
func (s *Script) Wait(d time.Duration) *Script { s.Now += d; return s }

func (s *Script) add(p *wire.Packet, toResponder bool) *trace.Record {
	r := &trace.Record{Frame: len(s.Recs) + 1, Time: s.Now, Packet: p, ICRC: wire.ICRCOK, PayloadLen: len(p.Payload)}
	if toResponder {
		r.Dir, r.Src, r.Dst, p.DestQP = trace.ToResponder, reqIP, rspIP, 0x12
		if !s.NoIPID {
			if !s.Const {
				s.ipid++
			}
			if s.ReqSkip {
				s.ipid, s.ReqSkip = s.ipid+1, false
			}
			r.IPID, r.HasIPID = s.ipid, true
		}
	} else {
		r.Dir, r.Src, r.Dst, p.DestQP = trace.ToRequester, rspIP, reqIP, 0x11
		r.IPID, r.HasIPID = uint16(len(s.Recs)), !s.NoIPID
		if s.RspCounts {
			s.rspID++
			if s.RspSkip {
				s.rspID, s.RspSkip = s.rspID+1, false
			}
			r.IPID = s.rspID
		}
	}
	p.PKey = 0xFFFF
	s.Recs = append(s.Recs, r)
	s.Now += s.Step
	return r
}

// Req adds a request packet of op with PSN psn and n payload bytes
// (AckReq set when the opcode ends a message).
func (s *Script) Req(op wire.Opcode, psn wire.PSN, n int) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn, AckReq: op.EndsMessage()}, Payload: requester.Pattern(int(psn), n)}
	if op.Has(wire.HdrRETH) {
		p.RETH = wire.RETH{VA: 0x20000000, RKey: 0x77, Length: uint32(n)}
	}
	return s.add(p, true)
}

// Send adds n single-packet SENDs from psn on and returns them.
func (s *Script) Send(psn wire.PSN, n int) []*trace.Record {
	var out []*trace.Record
	for i := 0; i < n; i++ {
		out = append(out, s.Req(wire.SendOnly, psn.Add(i), 16))
	}
	return out
}

// Read adds an RDMA READ request.
func (s *Script) Read(psn wire.PSN, va uint64, length uint32) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: psn, AckReq: true}, RETH: wire.RETH{VA: va, RKey: 0x77, Length: length}}
	return s.add(p, true)
}

// Again adds a resend of r by the requester (a new IPv4 Identification).
func (s *Script) Again(r *trace.Record) *trace.Record {
	return s.add(r.Packet.Clone(), true)
}

// Resend adds resends of recs in order.
func (s *Script) Resend(recs ...*trace.Record) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		out = append(out, s.Again(r))
	}
	return out
}

// NetDup adds a copy of r made by the network (the same IPv4
// Identification).
func (s *Script) NetDup(r *trace.Record) *trace.Record {
	c := s.add(r.Packet.Clone(), true)
	if !s.Const {
		s.ipid--
	}
	c.IPID, c.HasIPID = r.IPID, r.HasIPID
	return c
}

func (s *Script) aeth(op wire.Opcode, psn wire.PSN, syn uint8) *trace.Record {
	return s.add(&wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn}, AETH: wire.AETH{Syndrome: syn, MSN: s.MSN}}, false)
}

// ACK adds a positive acknowledgment.
func (s *Script) ACK(psn wire.PSN) *trace.Record {
	return s.aeth(wire.Acknowledge, psn, wire.SynACK(wire.CreditInvalid))
}

// NAK adds a NAK with code code.
func (s *Script) NAK(psn wire.PSN, code uint8) *trace.Record {
	return s.aeth(wire.Acknowledge, psn, wire.SynNAK(code))
}

// RNR adds an RNR NAK with timer code code.
func (s *Script) RNR(psn wire.PSN, code uint8) *trace.Record {
	return s.aeth(wire.Acknowledge, psn, wire.SynRNR(code))
}

// ReadResp adds a READ response packet with n payload bytes.
func (s *Script) ReadResp(op wire.Opcode, psn wire.PSN, n int) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn}, Payload: make([]byte, n)}
	if op.Has(wire.HdrAETH) {
		p.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: s.MSN}
	}
	return s.add(p, false)
}

// AuditReference drives the reference device as requester with defect
// on (""), body playing the responder, and runs the clause's monitor over
// the connection twice: over its trace as the suite's active runs audit
// it, and over a pcapng capture of what crossed its link (both
// directions, as the suite's --trace-dir writes a scenario's) audited as
// a complete capture told the connection's settings, which takes the
// capture audit's path (reading, decoding, pairing) on the reference's
// own traffic.
func AuditReference(t *testing.T, clause, defect string, cfg dut.ConnConfig, body func(rs *requester.Responder)) (active, captured Result) {
	t.Helper()
	d, err := refdut.New(dut.Options{Defect: defect, Seed: 1})
	if err != nil {
		t.Fatalf("starting the reference: %v", err)
	}
	conn, err := d.NewConn(cfg)
	if err != nil {
		t.Fatalf("opening a connection: %v", err)
	}
	rs := requester.NewResponderFunc(conn, func(expected []string, seen string, hi *trace.Record) {
		t.Helper()
		t.Fatalf("expected %s; seen %s\n%s", strings.Join(expected, " | "), seen, harness.Ladder(conn.Trace(), hi, false))
	})
	body(rs)
	info := conn.Info()
	mtu, timeout, retry, rnr := info.MTU, int(info.Config.Timeout), int(info.Config.RetryCnt), int(info.Config.RNRRetry)
	active = Audit(clause, Active(mtu, timeout, retry, rnr), conn.Trace())
	w, ok := conn.(interface{ WritePcapng(io.Writer) error })
	if !ok {
		t.Fatalf("the reference's connection (%T) writes no capture", conn)
	}
	path := filepath.Join(t.TempDir(), "reference.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePcapng(f); err != nil {
		t.Fatalf("writing the reference's capture: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return active, CaptureFile(t, path, clause, Capture(mtu, timeout, retry, rnr, true))
}

// Verdict is what a test expects a monitor to make of a trace.
type Verdict int

// Expected verdicts.
const (
	Pass      Verdict = iota // checked at least once, no violation
	Fail                     // at least one violation
	Indet                    // indeterminate, nothing checked, no violation
	None                     // nothing judged at all
	NoFail                   // no violation (whatever else)
	Undecided                // no violation, at least one instance undecided (others may be checked)
	Suspect                  // no violation, at least one instance open: a violation unless something unseen happened
)

func (v Verdict) String() string {
	return [...]string{"pass", "fail", "indeterminate", "nothing judged", "no violation", "undecided somewhere", "open (suspect)"}[v]
}

// Expect fails the test unless res is the verdict want.
func Expect(t *testing.T, name string, res Result, want Verdict) {
	t.Helper()
	ok := false
	switch want {
	case Pass:
		ok = res.Tally.Violations == 0 && res.Tally.Checked > 0
	case Fail:
		ok = res.Tally.Violations > 0
	case Indet:
		ok = res.Tally.Violations == 0 && res.Tally.Indeterminate > 0 && res.Tally.Checked == 0
	case None:
		ok = res.Tally.Violations == 0 && res.Tally.Checked == 0 && res.Tally.Indeterminate == 0
	case NoFail:
		ok = res.Tally.Violations == 0
	case Undecided:
		ok = res.Tally.Violations == 0 && res.Tally.Indeterminate > 0
	case Suspect:
		ok = res.Tally.Violations == 0 && res.Tally.Open > 0
	}
	if !ok {
		t.Errorf("%s: want %v, got %s", name, want, res)
	} else {
		t.Logf("%s: %v as wanted: %s", name, want, res)
	}
}

// CaptureFile runs the monitor of clause over the capture at path with
// settings s; a capture that is not there (the shared ones, on a clone
// with nothing beside it) skips the test.
func CaptureFile(t *testing.T, path, clause string, s harness.Settings) Result {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Skipf("capture not available (%v); TestMonitorReference audits the reference's own captures", err)
	}
	defer r.Close()
	sink := harness.NewSink(path)
	a := harness.NewAuditor(s, sink)
	a.Only = map[string]bool{clause: true}
	if _, err := pcapdut.AuditReader(r, a, nil, 0); err != nil {
		t.Fatalf("auditing %s: %v", path, err)
	}
	var res Result
	if tl := sink.Tally(clause); tl != nil {
		res.Tally = *tl
	}
	for _, f := range sink.Findings {
		res.Findings = append(res.Findings, fmt.Sprintf("frame %d: %s", f.Frame, f.Message))
	}
	return res
}

// Captures is where the team's real captures sit when a checkout has them
// beside the module (they are not part of the repository; tests that read
// them skip when absent), relative to a rule package's directory.
const Captures = "../../../shared/captures"
