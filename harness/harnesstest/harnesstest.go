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
	extra   time.Duration // added to the times of the records to come (Wait)
}

// Wait lets d pass before the next record.
func (t *Trace) Wait(d time.Duration) { t.extra += d }

func (t *Trace) add(dir trace.Dir, p *wire.Packet) *trace.Record {
	step := t.Step
	if step == 0 {
		step = time.Microsecond
	}
	n := len(t.Records) + 1
	r := &trace.Record{Frame: n, Time: time.Duration(n)*step + t.extra, Dir: dir, ICRC: wire.ICRCOK, Packet: p, PayloadLen: len(p.Payload)}
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

// Fresh returns settings for a complete trace of a fresh QP whose
// responder expects start first (an active run knows it).
func Fresh(start wire.PSN) harness.Settings {
	s := Complete()
	s.StartKnown, s.StartPSN = true, start
	return s
}

// Capture returns settings for an ordinary capture (nothing known).
func Capture() harness.Settings { return harness.UnknownSettings() }

// CaptureMTU returns settings for an ordinary capture whose path MTU is
// mtu (0: unknown), nothing else known.
func CaptureMTU(mtu int) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU = mtu
	return s
}

// ActiveMTU returns settings for an active run at path MTU mtu without
// SRQ.
func ActiveMTU(mtu int) harness.Settings {
	s := harness.UnknownSettings()
	s.Active, s.MTU, s.SRQ = true, mtu, harness.SRQNone
	return s
}

// NAK adds an Acknowledge carrying NAK code (wire.NAKPSNSequence, …).
func (t *Trace) NAK(psn wire.PSN, code uint8, msn uint32) *trace.Record {
	return t.Resp(wire.Acknowledge, psn, wire.SynNAK(code), msn)
}

// RNR adds an RNR NAK with the given RNR timer code.
func (t *Trace) RNR(psn wire.PSN, timer uint8, msn uint32) *trace.Record {
	return t.Resp(wire.Acknowledge, psn, wire.SynRNR(timer), msn)
}

// ReadResp adds a READ response packet (First, Middle, Last or Only)
// carrying n payload bytes; First, Last and Only carry an ACK AETH with
// MSN msn.
func (t *Trace) ReadResp(op wire.Opcode, psn wire.PSN, msn uint32, n int) *trace.Record {
	r := t.Resp(op, psn, wire.SynACK(wire.CreditInvalid), msn)
	if op == wire.ReadResponseMiddle {
		r.Packet.AETH = wire.AETH{}
	}
	r.Packet.Payload = make([]byte, n)
	r.PayloadLen = n
	return r
}

// ReadPacket is one packet of a READ's response: its opcode and payload
// size.
type ReadPacket struct {
	Op   wire.Opcode
	Size int
}

// ReadPackets returns the response packets of a READ of length bytes at
// path MTU mtu: Only, or First, Middles and Last.
func ReadPackets(length, mtu int) []ReadPacket {
	n := wire.ReadResponsePackets(uint32(length), mtu)
	out := make([]ReadPacket, n)
	for i := range out {
		op, size := wire.ReadResponseMiddle, mtu
		switch {
		case n == 1:
			op, size = wire.ReadResponseOnly, length
		case i == 0:
			op = wire.ReadResponseFirst
		case i == n-1:
			op, size = wire.ReadResponseLast, length-(n-1)*mtu
		}
		out[i] = ReadPacket{op, size}
	}
	return out
}

// ReadStream adds every response packet of a READ of length bytes at PSN
// psn and path MTU mtu, each AETH carrying MSN msn.
func (t *Trace) ReadStream(psn wire.PSN, length, mtu int, msn uint32) []*trace.Record {
	var out []*trace.Record
	for i, k := range ReadPackets(length, mtu) {
		out = append(out, t.ReadResp(k.Op, psn.Add(i), msn, k.Size))
	}
	return out
}

// IPIDs numbers the IPv4 Identification of every record so far the way a
// sender that counts it up does (Linux soft-RoCE): each side's packets in
// trace order get consecutive IDs from its base.
func (t *Trace) IPIDs(reqBase, rspBase uint16) {
	for _, r := range t.Records {
		r.HasIPID = true
		if r.Dir == trace.ToResponder {
			r.IPID = reqBase
			reqBase++
		} else {
			r.IPID = rspBase
			rspBase++
		}
	}
}

// Swap exchanges records i and j (0-based) and renumbers frames and
// times, so that the trace shows them in the other order: the network
// reordered them after the sender (their IPv4 IDs, set before, stay).
func (t *Trace) Swap(i, j int) {
	t.Records[i], t.Records[j] = t.Records[j], t.Records[i]
	t.Records[i].Frame, t.Records[j].Frame = t.Records[j].Frame, t.Records[i].Frame
	t.Records[i].Time, t.Records[j].Time = t.Records[j].Time, t.Records[i].Time
}

// Recopy appends a copy of record i (0-based), IPv4 ID and packet
// included, one step after the last record: the same transmission
// recorded twice, or copied by the network.
func (t *Trace) Recopy(i int) *trace.Record {
	c := *t.Records[i]
	c.Packet = t.Records[i].Packet.Clone()
	last := t.Records[len(t.Records)-1]
	c.Frame, c.Time = last.Frame+1, last.Time+time.Microsecond
	t.Records = append(t.Records, &c)
	return &c
}

// Remove deletes record i (0-based): it was lost before the capture
// point. Frames and times of the others stay.
func (t *Trace) Remove(i int) {
	t.Records = append(t.Records[:i], t.Records[i+1:]...)
}

// AuditAll runs every registered monitor over the trace and returns the
// tallies by clause and the findings.
func AuditAll(t *Trace, settings harness.Settings) (map[string]*harness.Tally, []reports.Finding) {
	sink := harness.NewSink("test")
	a := harness.NewAuditor(settings, sink)
	for _, r := range t.Records {
		a.Observe(r)
	}
	a.End()
	return sink.Tallies, sink.Findings
}
