// Package harnesstest builds hand-made traces for monitor tests: request
// and response records between two fixed hosts, and a one-call audit that
// returns a clause's tally and findings.
package harnesstest

import (
	"net/netip"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// The requester and responder hosts, and their QPs.
var (
	Requester = netip.MustParseAddr("10.0.0.2")
	Responder = netip.MustParseAddr("10.0.0.1")
)

// QP numbers: requests go to ResponderQP, responses to RequesterQP.
const (
	ResponderQP = 0x11
	RequesterQP = 0x22
)

// Trace accumulates records with increasing frame numbers and times.
type Trace struct {
	Records []*trace.Record
	Step    time.Duration // time between records (default 1 µs)
}

func (t *Trace) add(dir trace.Dir, p *wire.Packet) *trace.Record {
	step := t.Step
	if step == 0 {
		step = time.Microsecond
	}
	n := len(t.Records) + 1
	r := &trace.Record{Frame: n, Time: time.Duration(n) * step, Dir: dir, ICRC: wire.ICRCOK, Packet: p, PayloadLen: len(p.Payload)}
	if dir == trace.ToResponder {
		r.Src, r.Dst = Requester, Responder
		p.DestQP = ResponderQP
	} else {
		r.Src, r.Dst = Responder, Requester
		p.DestQP = RequesterQP
	}
	t.Records = append(t.Records, r)
	return r
}

// Req adds a request.
func (t *Trace) Req(op wire.Opcode, psn wire.PSN, ackReq bool) *trace.Record {
	return t.add(trace.ToResponder, &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn, AckReq: ackReq, PKey: 0xFFFF}})
}

// Read adds an RDMA READ request of length bytes.
func (t *Trace) Read(psn wire.PSN, length uint32) *trace.Record {
	r := t.Req(wire.ReadRequest, psn, true)
	r.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 0x42, Length: length}
	return r
}

// Atomic adds a CmpSwap or FetchAdd.
func (t *Trace) Atomic(op wire.Opcode, psn wire.PSN) *trace.Record {
	r := t.Req(op, psn, true)
	r.Packet.Atomic = wire.AtomicETH{VA: 0x1000, RKey: 0x42, SwapAdd: 1}
	return r
}

// Resp adds a response with an AETH (syndrome, MSN).
func (t *Trace) Resp(op wire.Opcode, psn wire.PSN, syn uint8, msn uint32) *trace.Record {
	return t.add(trace.ToRequester, &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn, PKey: 0xFFFF}, AETH: wire.AETH{Syndrome: syn, MSN: msn}})
}

// Ack adds a positive Acknowledge (credits not valid).
func (t *Trace) Ack(psn wire.PSN, msn uint32) *trace.Record {
	return t.Resp(wire.Acknowledge, psn, wire.SynACK(wire.CreditInvalid), msn)
}

// AtomicAck adds an ATOMIC Acknowledge returning orig.
func (t *Trace) AtomicAck(psn wire.PSN, msn uint32, orig uint64) *trace.Record {
	r := t.Resp(wire.AtomicAcknowledge, psn, wire.SynACK(wire.CreditInvalid), msn)
	r.Packet.AtomicAck = orig
	return r
}

// Audit runs the monitors of the given clause over the trace and returns
// its tally and findings.
func Audit(t *Trace, clause string, settings harness.Settings) (*harness.Tally, []reports.Finding) {
	sink := harness.NewSink("test")
	a := harness.NewAuditor(settings, sink)
	a.Only = map[string]bool{clause: true}
	for _, r := range t.Records {
		a.Observe(r)
	}
	a.End()
	var fs []reports.Finding
	for _, f := range sink.Findings {
		if f.ID == clause {
			fs = append(fs, f)
		}
	}
	return sink.Tally(clause), fs
}

// Complete returns settings for a trace known to be complete (--complete).
func Complete() harness.Settings {
	s := harness.UnknownSettings()
	s.Complete = true
	return s
}

// Capture returns settings for an ordinary capture (nothing known).
func Capture() harness.Settings { return harness.UnknownSettings() }
