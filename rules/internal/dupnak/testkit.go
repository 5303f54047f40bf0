package dupnak

import (
	"net/netip"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// TraceBuilder builds hand-made traces of one RC connection for the
// monitors' plain Go tests: requests from 10.0.0.2 to the responder
// 10.0.0.1 (QP 0x11), responses back to QP 0x12, one microsecond apart,
// each with its own IPv4 identification.
type TraceBuilder struct {
	Recs []*trace.Record
	MTU  int
	// PerSender gives each side its own IPv4 Identification counter (a
	// sender numbering its packets one by one); otherwise the two sides
	// take turns on one counter.
	PerSender bool
	// SkipID leaves the next request's ID out, as if the capture missed
	// a packet the requester sent; SkipRspID the next response's.
	SkipID, SkipRspID bool
	now               time.Duration
	ipid              uint16
	rspID             uint16
}

// Addresses and QPs of built traces.
var (
	TBRequester = netip.MustParseAddr("10.0.0.2")
	TBResponder = netip.MustParseAddr("10.0.0.1")
)

// TB QP numbers.
const (
	TBResponderQP = 0x11
	TBRequesterQP = 0x12
)

// NewTraceBuilder returns a builder at path MTU mtu.
func NewTraceBuilder(mtu int) *TraceBuilder { return &TraceBuilder{MTU: mtu} }

func (b *TraceBuilder) add(p *wire.Packet, req bool) *trace.Record {
	b.now += time.Microsecond
	id := &b.ipid
	if b.PerSender && !req {
		id = &b.rspID
	}
	if b.SkipID && req || b.SkipRspID && !req {
		*id++
		if req {
			b.SkipID = false
		} else {
			b.SkipRspID = false
		}
	}
	*id++
	r := &trace.Record{Frame: len(b.Recs) + 1, Time: b.now, Packet: p, IPID: *id, HasIPID: true,
		ICRC: wire.ICRCOK, PayloadLen: len(p.Payload)}
	p.PKey = 0xFFFF
	if req {
		r.Dir, r.Src, r.Dst = trace.ToResponder, TBRequester, TBResponder
		p.DestQP = TBResponderQP
	} else {
		r.Dir, r.Src, r.Dst = trace.ToRequester, TBResponder, TBRequester
		p.DestQP = TBRequesterQP
	}
	b.Recs = append(b.Recs, r)
	return r
}

// Req adds a request packet with opcode op and PSN psn (a payload of the
// MTU for First/Middle packets, 8 bytes otherwise; RETH for READ and
// WRITE First/Only).
func (b *TraceBuilder) Req(op wire.Opcode, psn wire.PSN, ackReq bool) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn, AckReq: ackReq}}
	if info, _ := op.Info(); info.Payload {
		n := 8
		if pos := op.Position(); pos == wire.PosFirst || pos == wire.PosMiddle {
			n = b.MTU
		}
		p.Payload = make([]byte, n)
	}
	if op.Has(wire.HdrRETH) {
		p.RETH = wire.RETH{VA: 0x1000, RKey: 0x77, Length: uint32(len(p.Payload))}
	}
	if op.Has(wire.HdrAtomicETH) {
		p.Atomic = wire.AtomicETH{VA: 0x2000, RKey: 0x77, SwapAdd: 1}
	}
	return b.add(p, true)
}

// Copy adds a copy of r, its IPv4 Identification kept (the network or
// the capture recorded it twice).
func (b *TraceBuilder) Copy(r *trace.Record) *trace.Record {
	b.now += time.Microsecond
	c := *r
	c.Frame, c.Time = len(b.Recs)+1, b.now
	b.Recs = append(b.Recs, &c)
	return &c
}

// Wait moves the builder's clock on by d (each packet also takes 1 µs).
func (b *TraceBuilder) Wait(d time.Duration) { b.now += d }

// Send adds a SEND Only with AckReq.
func (b *TraceBuilder) Send(psn wire.PSN) *trace.Record { return b.Req(wire.SendOnly, psn, true) }

// CountedMSN is the MSN of the last acknowledgment CountedBefore adds.
const CountedMSN = 9

// CountedBefore adds CountedMSN SEND Only requests just before PSN psn,
// each acknowledged (MSNs 1 to CountedMSN): enough of the responder's
// packets for its IPv4 IDs to be seen to count up
// (harness.Conn.DatedByID), so that they order its responses after.
func (b *TraceBuilder) CountedBefore(psn wire.PSN) {
	for i := CountedMSN; i >= 1; i-- {
		b.Send(psn.Add(-i))
		b.Ack(psn.Add(-i), uint32(CountedMSN+1-i))
	}
}

// Read adds an RDMA READ request of length bytes.
func (b *TraceBuilder) Read(psn wire.PSN, length uint32) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: psn, AckReq: true},
		RETH: wire.RETH{VA: 0x1000, RKey: 0x77, Length: length}}
	return b.add(p, true)
}

// Ack adds a positive Acknowledge.
func (b *TraceBuilder) Ack(psn wire.PSN, msn uint32) *trace.Record {
	return b.add(&wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: psn},
		AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: msn}}, false)
}

// NAK adds a NAK with code code.
func (b *TraceBuilder) NAK(code uint8, psn wire.PSN, msn uint32) *trace.Record {
	return b.add(&wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: psn},
		AETH: wire.AETH{Syndrome: wire.SynNAK(code), MSN: msn}}, false)
}

// RNR adds an RNR NAK.
func (b *TraceBuilder) RNR(psn wire.PSN, msn uint32) *trace.Record {
	return b.add(&wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: psn},
		AETH: wire.AETH{Syndrome: wire.SynRNR(12), MSN: msn}}, false)
}

// ReadResp adds a READ response packet with opcode op carrying n bytes.
func (b *TraceBuilder) ReadResp(op wire.Opcode, psn wire.PSN, n int, msn uint32) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn}, Payload: make([]byte, n)}
	if op.Has(wire.HdrAETH) {
		p.AETH = wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: msn}
	}
	return b.add(p, false)
}

// ReadStream adds a complete response stream for a READ of length bytes
// from PSN psn, as a responder at the builder's MTU sends it.
func (b *TraceBuilder) ReadStream(psn wire.PSN, length int, msn uint32) {
	n := wire.ReadResponsePackets(uint32(length), b.MTU)
	for i := 0; i < n; i++ {
		size := b.MTU
		if i == n-1 {
			size = length - i*b.MTU
		}
		b.ReadResp(wire.ReadResponseOp(i, n), psn.Add(i), size, msn)
	}
}

// AtomicAck adds an ATOMIC Acknowledge.
func (b *TraceBuilder) AtomicAck(psn wire.PSN, orig uint64, msn uint32) *trace.Record {
	return b.add(&wire.Packet{BTH: wire.BTH{Opcode: wire.AtomicAcknowledge, PSN: psn},
		AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: msn}, AtomicAck: orig}, false)
}

// Audit runs the monitors of the clauses given over recs, as an active
// run's trace (complete) when complete is set, else as a capture, and
// returns the sink.
func Audit(recs []*trace.Record, complete bool, mtu int, clauses ...string) *harness.Sink {
	s := harness.UnknownSettings()
	s.MTU = mtu
	if complete {
		s.Active = true
	}
	sink := harness.NewSink("")
	a := harness.NewAuditor(s, sink)
	a.Only = map[string]bool{}
	for _, c := range clauses {
		a.Only[c] = true
	}
	for _, r := range recs {
		a.Observe(r)
	}
	a.End()
	return sink
}

// Tally returns the tally of clause in sink (zero when nothing happened).
func Tally(sink *harness.Sink, clause string) harness.Tally {
	if t := sink.Tally(clause); t != nil {
		return *t
	}
	return harness.Tally{}
}
