// Package rtest helps the responses group test its passive monitors with
// plain `go test`: it builds traces by hand (a requester at 10.0.0.2
// talking to a responder at 10.0.0.1), runs the reference device to
// produce real ones, with or without a defect, and audits a trace with
// one clause's monitor.
package rtest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"

	_ "github.com/rcconform/rcconform/dut/refdut" // the reference device
)

// Addresses of hand-built traces.
var (
	RequesterIP = netip.MustParseAddr("10.0.0.2")
	ResponderIP = netip.MustParseAddr("10.0.0.1")
)

// QP numbers of hand-built traces.
const (
	ResponderQPN = 0x111
	RequesterQPN = 0x222
)

// Builder builds a trace by hand.
type Builder struct {
	Recs []*trace.Record
	// PerSender gives each side its own IPv4 Identification counter (a
	// sender numbering its packets one by one); otherwise a record's ID
	// is its frame number.
	PerSender bool
	now       time.Duration
	ids       [2]uint16
}

func (b *Builder) add(dir trace.Dir, p *wire.Packet, payload int) *trace.Record {
	b.now += time.Microsecond
	id := uint16(len(b.Recs) + 1)
	if b.PerSender {
		b.ids[dir&1]++
		id = b.ids[dir&1]
	}
	r := &trace.Record{Frame: len(b.Recs) + 1, Time: b.now, Dir: dir, Packet: p, ICRC: wire.ICRCOK, PayloadLen: payload,
		HasIPID: true, IPID: id}
	if dir == trace.ToResponder {
		r.Src, r.Dst = RequesterIP, ResponderIP
		p.DestQP = ResponderQPN
	} else {
		r.Src, r.Dst = ResponderIP, RequesterIP
		p.DestQP = RequesterQPN
	}
	p.PKey = 0xFFFF
	if payload > 0 && p.Payload == nil {
		p.Payload = make([]byte, payload)
	}
	b.Recs = append(b.Recs, r)
	return r
}

// Req adds a request packet with opcode op and PSN psn.
func (b *Builder) Req(op wire.Opcode, psn wire.PSN, ackReq bool, payload int) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn, AckReq: ackReq}}
	return b.add(trace.ToResponder, p, payload)
}

// Send adds a SEND Only of n bytes.
func (b *Builder) Send(psn wire.PSN, ackReq bool) *trace.Record {
	return b.Req(wire.SendOnly, psn, ackReq, 16)
}

// Read adds an RDMA READ request of length bytes.
func (b *Builder) Read(psn wire.PSN, length uint32) *trace.Record {
	r := b.Req(wire.ReadRequest, psn, true, 0)
	r.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 0x77, Length: length}
	return r
}

// Atomic adds a Fetch & Add.
func (b *Builder) Atomic(psn wire.PSN) *trace.Record {
	r := b.Req(wire.FetchAdd, psn, true, 0)
	r.Packet.Atomic = wire.AtomicETH{VA: 0x1000, RKey: 0x77, SwapAdd: 1}
	return r
}

// Resp adds a response packet (syn and msn are used when op has an AETH).
func (b *Builder) Resp(op wire.Opcode, psn wire.PSN, syn uint8, msn uint32, payload int) *trace.Record {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PSN: psn}}
	p.AETH = wire.AETH{Syndrome: syn, MSN: msn}
	return b.add(trace.ToRequester, p, payload)
}

// Ack adds a positive Acknowledge with credit code 4.
func (b *Builder) Ack(psn wire.PSN, msn uint32) *trace.Record {
	return b.Resp(wire.Acknowledge, psn, wire.SynACK(4), msn, 0)
}

// ReadAnswered adds a READ of one 256-byte packet at PSN psn and its
// answer, an Only with MSN msn (on a capture, shown before any other
// acknowledgment, an answer that may replay one given before the capture
// began).
func (b *Builder) ReadAnswered(psn wire.PSN, msn uint32) {
	b.Read(psn, 256)
	b.Resp(wire.ReadResponseOnly, psn, wire.SynACK(4), msn, 256)
}

// AckedSends adds a SEND Only with AckReq from PSN psn on, one per MSN in
// msns, each answered by an ACK carrying that MSN.
func (b *Builder) AckedSends(psn wire.PSN, msns ...uint32) {
	for i, msn := range msns {
		b.Send(psn.Add(i), true)
		b.Ack(psn.Add(i), msn)
	}
}

// NAK adds an Acknowledge with NAK code code.
func (b *Builder) NAK(psn wire.PSN, code uint8, msn uint32) *trace.Record {
	return b.Resp(wire.Acknowledge, psn, wire.SynNAK(code), msn, 0)
}

// ReadStream adds the response packets of a READ of length bytes at PSN
// psn and MTU mtu, all with MSN msn.
func (b *Builder) ReadStream(psn wire.PSN, length, mtu int, msn uint32) {
	for i, k := range harnesstest.ReadPackets(length, mtu) {
		b.Resp(k.Op, psn.Add(i), wire.SynACK(4), msn, k.Size)
	}
}

// Active returns the settings of an active run at mtu without SRQ.
func Active(mtu int) harness.Settings { return harnesstest.ActiveMTU(mtu) }

// Capture returns the settings of a capture audit: nothing known but mtu
// (0 unknown).
func Capture(mtu int) harness.Settings { return harnesstest.CaptureMTU(mtu) }

// Audit runs the monitor of clause (and only it) over recs.
func Audit(recs []*trace.Record, s harness.Settings, clause string) *harness.Sink {
	sink := harness.NewSink("")
	a := harness.NewAuditor(s, sink)
	a.Only = map[string]bool{clause: true}
	for _, r := range recs {
		a.Observe(r)
	}
	a.End()
	return sink
}

// Tally returns the clause's tally in sink, never nil.
func Tally(sink *harness.Sink, clause string) harness.Tally {
	if t := sink.Tally(clause); t != nil {
		return *t
	}
	return harness.Tally{}
}

// WantViolation fails t unless the clause's monitor reports a violation
// over recs whose message contains every fragment.
func WantViolation(t *testing.T, recs []*trace.Record, s harness.Settings, clause string, fragments ...string) {
	t.Helper()
	sink := Audit(recs, s, clause)
	tl := Tally(sink, clause)
	if tl.Violations == 0 {
		t.Fatalf("%s: no violation over the trace (checked %d, indeterminate %d %q)\n%s", clause, tl.Checked, tl.Indeterminate, tl.Reason, Dump(recs))
	}
	for _, f := range fragments {
		found := false
		for _, fd := range sink.Findings {
			if fd.ID == clause && strings.Contains(fd.Message, f) {
				found = true
			}
		}
		if !found {
			var msgs []string
			for _, fd := range sink.Findings {
				msgs = append(msgs, fd.Message)
			}
			t.Fatalf("%s: no finding mentions %q; findings:\n  %s", clause, f, strings.Join(msgs, "\n  "))
		}
	}
}

// WantPass fails t unless the clause's monitor checks something over recs
// and reports no violation.
func WantPass(t *testing.T, recs []*trace.Record, s harness.Settings, clause string) harness.Tally {
	t.Helper()
	sink := Audit(recs, s, clause)
	tl := Tally(sink, clause)
	if tl.Violations > 0 {
		t.Fatalf("%s: unexpected violation: %s\n%s", clause, sink.Findings[0].Message, Dump(recs))
	}
	if tl.Checked == 0 {
		t.Fatalf("%s: nothing checked over the trace (indeterminate %d %q)\n%s", clause, tl.Indeterminate, tl.Reason, Dump(recs))
	}
	return tl
}

// WantIndeterminate fails t unless the clause's monitor reports no
// violation and at least one undecided instance over recs.
func WantIndeterminate(t *testing.T, recs []*trace.Record, s harness.Settings, clause string) harness.Tally {
	t.Helper()
	sink := Audit(recs, s, clause)
	tl := Tally(sink, clause)
	if tl.Violations > 0 {
		t.Fatalf("%s: unexpected violation: %s\n%s", clause, sink.Findings[0].Message, Dump(recs))
	}
	if tl.Indeterminate == 0 {
		t.Fatalf("%s: nothing indeterminate over the trace (checked %d)\n%s", clause, tl.Checked, Dump(recs))
	}
	return tl
}

// WantOpen is WantIndeterminate that also fails t unless an instance was
// left open (suspect: a violation unless something the trace cannot show
// happened), not merely undecided; what says which instance.
func WantOpen(t *testing.T, recs []*trace.Record, s harness.Settings, clause, what string) harness.Tally {
	t.Helper()
	tl := WantIndeterminate(t, recs, s, clause)
	if tl.Open == 0 {
		t.Errorf("%s: %s: nothing left open (suspect), only undecided: %+v", clause, what, tl)
	}
	return tl
}

// Dump renders a trace for failure messages.
func Dump(recs []*trace.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	return b.String()
}

// Ref is a connection to the reference device for generating traces.
type Ref struct {
	T    testing.TB
	Conn dut.Conn
	Info dut.ConnInfo
	PSN  wire.PSN
}

// NewRef opens a connection to the reference device with the given
// defect ("" for none) and adapter settings.
func NewRef(t testing.TB, defect string, settings map[string]string, cfg dut.ConnConfig) *Ref {
	t.Helper()
	d, err := dut.New("reference", dut.Options{Defect: defect, Seed: 1, Settings: settings})
	if err != nil {
		t.Fatalf("starting the reference device: %v", err)
	}
	c, err := d.NewConn(cfg)
	if err != nil {
		t.Fatalf("opening a reference connection: %v", err)
	}
	info := c.Info()
	return &Ref{T: t, Conn: c, Info: info, PSN: info.ExpectedPSN}
}

// Pkt builds a request packet at the next PSN (advancing it by n PSNs).
func (r *Ref) Pkt(op wire.Opcode, n int) *wire.Packet {
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PKey: 0xFFFF, DestQP: r.Info.DeviceQPN, PSN: r.PSN}}
	r.PSN = r.PSN.Add(n)
	return p
}

// Send sends packets and lets d pass.
func (r *Ref) Send(d time.Duration, ps ...*wire.Packet) {
	r.T.Helper()
	for _, p := range ps {
		if err := r.Conn.Send(p); err != nil {
			r.T.Fatalf("sending to the reference: %v", err)
		}
	}
	r.Drain(d)
}

// Drain lets d pass, consuming what the device sends.
func (r *Ref) Drain(d time.Duration) []*trace.Record {
	var out []*trace.Record
	start := r.Conn.Now()
	for {
		left := d - (r.Conn.Now() - start)
		if left < 0 {
			left = 0
		}
		rec, ok := r.Conn.Recv(left)
		if !ok {
			return out
		}
		out = append(out, rec)
	}
}

// SendOnly builds a SEND Only of n bytes.
func (r *Ref) SendOnly(n int, ackReq bool) *wire.Packet {
	p := r.Pkt(wire.SendOnly, 1)
	p.Payload = make([]byte, n)
	p.AckReq = ackReq
	return p
}

// WriteOnly builds an RDMA WRITE Only of n bytes at offset off.
func (r *Ref) WriteOnly(n, off int, ackReq bool) *wire.Packet {
	p := r.Pkt(wire.WriteOnly, 1)
	p.Payload = make([]byte, n)
	p.RETH = wire.RETH{VA: r.Info.VA + uint64(off), RKey: r.Info.RKey, Length: uint32(n)}
	p.AckReq = ackReq
	return p
}

// Read builds an RDMA READ of n bytes at offset off.
func (r *Ref) Read(n, off int) *wire.Packet {
	p := r.Pkt(wire.ReadRequest, wire.ReadResponsePackets(uint32(n), r.Info.MTU))
	p.RETH = wire.RETH{VA: r.Info.VA + uint64(off), RKey: r.Info.RKey, Length: uint32(n)}
	p.AckReq = true
	return p
}

// Atomic builds a Fetch & Add at offset off.
func (r *Ref) Atomic(off int) *wire.Packet {
	p := r.Pkt(wire.FetchAdd, 1)
	p.Atomic = wire.AtomicETH{VA: r.Info.VA + uint64(off), RKey: r.Info.RKey, SwapAdd: 1}
	p.AckReq = true
	return p
}

// Settings returns the settings the suite audits this connection's trace
// with.
func (r *Ref) Settings() harness.Settings {
	s := Active(r.Info.MTU)
	if r.Info.Config.SRQ {
		s.SRQ = harness.SRQAll
	}
	return s
}

// Trace returns the connection's trace.
func (r *Ref) Trace() []*trace.Record { return r.Conn.Trace() }
