// Package synth writes synthetic RoCEv2 captures of conformant RC
// traffic, for benchmarks and tests of the capture audit.
//
// The traffic is what a well-behaved pair of RoCEv2 devices exchanges on
// several QPs at once: SEND, SEND with immediate, RDMA WRITE (with and
// without immediate), RDMA READ and both ATOMICs, split at the path MTU
// into First/Middle/Last packets, answered by ACKs (some coalesced, with
// real credit counts, or the invalid-credit code of QPs with an SRQ),
// READ responses (AETH on First and Last, the MSN moved at validation)
// and ATOMIC acknowledgments. Several requests are in flight per QP; the
// QPs' packets are interleaved; some QPs start just before the PSN wrap.
// Every frame carries a valid ICRC and a fresh IPv4 Identification. An
// audit of such a capture must find no violation.
package synth

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// Options shape the capture. Zero values take the defaults.
type Options struct {
	Frames int    // number of frames to write (default 10,000)
	QPs    int    // RC connections (default 8); half run each way
	MTU    int    // path MTU (default 1024)
	Seed   uint64 // seeds PSNs, QPNs and the operation mix (default 1)
	// SRQ makes every responder QP take its receive WQEs from a shared
	// receive queue: its AETHs carry the invalid-credit code (0x1F), not
	// a count. The capture is otherwise the same as without.
	SRQ bool
	// Ops limits the operations to those whose first opcode it lists
	// (SendFirst, WriteFirst, ReadRequest, CompareSwap, FetchAdd), as a
	// benchmark of one operation sends them (default: all of them).
	Ops []wire.Opcode
	// Whole makes the capture hold each connection whole, as a program
	// that creates its QPs, runs and ends shows it: the responders' MSNs
	// count from zero, as a new QP's do, and after Frames frames no new
	// message begins, every request is answered and every SEND and WRITE
	// acknowledged (a few more frames). Default: a capture begun and ended
	// mid-connection, the MSNs from a random value.
	Whole bool
	// Start is the timestamp of the first frame (default 2026-01-01 UTC).
	Start time.Time
}

// Stats says what was written.
type Stats struct {
	Frames   int
	Bytes    int64 // frame bytes (without pcap headers)
	Requests int   // request packets
	Messages int   // request messages (operations) begun
}

// Write writes a classic pcap (nanosecond timestamps, Ethernet) to w.
func Write(w io.Writer, o Options) (Stats, error) {
	g := newGen(o)
	if g.mixTotal == 0 {
		return Stats{}, fmt.Errorf("writing synthetic capture: no operation begins with an opcode of %v", o.Ops)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	pw, err := capture.NewPcapWriter(bw, 65535, capture.LinkTypeEthernet)
	if err != nil {
		return Stats{}, fmt.Errorf("writing synthetic capture: %w", err)
	}
	var st Stats
	ts := g.opts.Start
	for st.Frames < g.opts.Frames || g.opts.Whole && g.pending() {
		g.ending = st.Frames >= g.opts.Frames
		frame, isReq := g.next()
		ts = ts.Add(time.Duration(300+g.rng.IntN(900)) * time.Nanosecond)
		if err := pw.WritePacket(ts, frame, 0); err != nil {
			return st, fmt.Errorf("writing synthetic capture: frame %d: %w", st.Frames+1, err)
		}
		st.Frames++
		st.Bytes += int64(len(frame))
		if isReq {
			st.Requests++
		}
	}
	st.Messages = g.messages
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("writing synthetic capture: %w", err)
	}
	return st, nil
}

// host is one end of the traffic.
type host struct {
	mac  [6]byte
	addr netip.Addr
	ipid uint16
}

// pkt is a packet waiting to be sent: who sends it and what it is.
type pkt struct {
	from, to *host
	p        wire.Packet // Payload is a length into gen.data, filled at send time
	payLen   int
	// endOfMsg marks the last packet of a request message: sending it
	// makes the responder process the message.
	endOfMsg bool
	msg      *message
}

// message is one request message and what the responder will answer.
type message struct {
	op       wire.Opcode // first opcode of the request
	firstPSN wire.PSN
	lastPSN  wire.PSN // last request PSN (READ: the request's own PSN)
	length   int
	ackReq   bool
}

// conn is one RC connection.
type conn struct {
	req, rsp     *host
	reqQP, rspQP uint32
	srcPort      uint16
	nextPSN      wire.PSN // requester's next PSN
	msn          uint32   // responder's MSN
	lastDone     wire.PSN // PSN of the newest completed SEND/WRITE
	unacked      bool     // lastDone's ACK coalesced into a later one
	reqQ, rspQ   []pkt
	atomicVal    uint64
}

type gen struct {
	opts     Options
	rng      *rand.Rand
	hosts    [2]host
	conns    []*conn
	data     []byte
	buf      []byte
	frame    wire.Frame
	messages int
	ending   bool     // Options.Whole, past Frames: no new message
	mix      []opKind // the operations of Options.Ops
	mixTotal int      // their weights' sum
}

func newGen(o Options) *gen {
	if o.Frames <= 0 {
		o.Frames = 10_000
	}
	if o.QPs <= 0 {
		o.QPs = 8
	}
	if !wire.ValidMTU(o.MTU) {
		o.MTU = 1024
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	g := &gen{opts: o, rng: rand.New(rand.NewPCG(o.Seed, 0x5eed)), data: make([]byte, 16<<10)}
	for _, k := range mix {
		if len(o.Ops) == 0 || slices.Contains(o.Ops, k.first) {
			g.mix = append(g.mix, k)
			g.mixTotal += k.weight
		}
	}
	for i := range g.data {
		g.data[i] = byte(i*7 + 3)
	}
	g.hosts[0] = host{mac: [6]byte{0x52, 0x54, 0, 0, 0, 1}, addr: netip.MustParseAddr("192.168.7.1"), ipid: 1}
	g.hosts[1] = host{mac: [6]byte{0x52, 0x54, 0, 0, 0, 2}, addr: netip.MustParseAddr("192.168.7.2"), ipid: 30000}
	for i := range o.QPs {
		c := &conn{req: &g.hosts[i%2], rsp: &g.hosts[1-i%2],
			reqQP: 0x100 + uint32(i)*3, rspQP: 0x200 + uint32(i)*5,
			srcPort: uint16(49152 + i*17), atomicVal: uint64(i) << 32}
		c.nextPSN = wire.PSN(g.rng.Uint32() & wire.PSNMask)
		if i%4 == 1 {
			// Wraps early on. QPs between the same two hosts must not
			// start at neighbouring PSNs: a capture audit pairs a QP's
			// first response with its requests by PSN proximity.
			c.nextPSN = wire.PSN(wire.PSNMask - uint32(g.rng.IntN(200)) - uint32(i/4)*40_000)
		}
		c.lastDone = c.nextPSN.Add(-1)
		c.msn = g.rng.Uint32() & 0xFFFFFF
		if o.Whole {
			c.msn = 0
		}
		g.conns = append(g.conns, c)
	}
	return g
}

// next returns the next frame (valid until the following call) and
// whether it is a request.
func (g *gen) next() ([]byte, bool) {
	c := g.conns[g.rng.IntN(len(g.conns))]
	for g.ending && len(c.reqQ)+len(c.rspQ) == 0 {
		c = g.conns[g.rng.IntN(len(g.conns))]
	}
	var q *[]pkt
	switch {
	case len(c.rspQ) > 0 && (len(c.reqQ) == 0 && (g.ending || len(c.rspQ) > 24) || g.rng.IntN(2) == 0):
		q = &c.rspQ
	default:
		if len(c.reqQ) == 0 {
			g.newMessage(c)
		}
		q = &c.reqQ
	}
	p := (*q)[0]
	*q = (*q)[1:]
	if len(*q) == 0 {
		*q = (*q)[:0:0] // let the backing array go
	}
	if p.endOfMsg {
		g.respond(c, p.msg)
	}
	return g.encode(c, &p), p.p.Opcode.IsRequest()
}

// opKind is one operation of the mix.
type opKind struct {
	first  wire.Opcode
	imm    bool // SEND or WRITE with immediate
	weight int
	min    int // payload length range (RDMA READ: the length read)
	max    int
}

var mix = []opKind{
	{wire.SendFirst, false, 30, 16, 4096},
	{wire.SendFirst, true, 5, 16, 2048},
	{wire.WriteFirst, false, 25, 64, 8192},
	{wire.WriteFirst, true, 5, 64, 2048},
	{wire.ReadRequest, false, 25, 8, 8192},
	{wire.CompareSwap, false, 5, 8, 8},
	{wire.FetchAdd, false, 5, 8, 8},
}

// newMessage queues the request packets of a new operation on c.
func (g *gen) newMessage(c *conn) {
	g.messages++
	x := g.rng.IntN(g.mixTotal)
	var k opKind
	for _, k = range g.mix {
		if x < k.weight {
			break
		}
		x -= k.weight
	}
	length := k.min + g.rng.IntN(k.max-k.min+1)
	if g.rng.IntN(4) == 0 {
		length = k.min // many small messages, as real traffic has
	}
	imm, first := k.imm, k.first
	m := &message{op: first, firstPSN: c.nextPSN, length: length, ackReq: g.rng.IntN(4) != 0}
	base := pkt{from: c.req, to: c.rsp}
	base.p.DestQP = c.rspQP
	base.p.PKey = 0xFFFF
	va := uint64(0x7f00_0000_0000) + uint64(g.rng.IntN(1<<20))*64
	switch first {
	case wire.ReadRequest:
		p := base
		p.p.Opcode = wire.ReadRequest
		p.p.PSN = c.nextPSN
		p.p.AckReq = true
		p.p.RETH = wire.RETH{VA: va, RKey: 0x1234, Length: uint32(length)}
		p.endOfMsg, p.msg = true, m
		m.lastPSN = c.nextPSN
		c.nextPSN = c.nextPSN.Add(wire.ReadResponsePackets(uint32(length), g.opts.MTU))
		c.reqQ = append(c.reqQ, p)
		return
	case wire.CompareSwap, wire.FetchAdd:
		p := base
		p.p.Opcode = first
		p.p.PSN = c.nextPSN
		p.p.AckReq = true
		p.p.Atomic = wire.AtomicETH{VA: va &^ 7, RKey: 0x1234, SwapAdd: uint64(g.rng.IntN(100)), Compare: c.atomicVal}
		p.endOfMsg, p.msg = true, m
		m.lastPSN = c.nextPSN
		c.nextPSN = c.nextPSN.Next()
		c.reqQ = append(c.reqQ, p)
		return
	}
	// SEND or WRITE, split at the MTU.
	mtu := g.opts.MTU
	n := (length + mtu - 1) / mtu
	if n == 0 {
		n = 1
	}
	for i := range n {
		p := base
		p.p.PSN = c.nextPSN
		c.nextPSN = c.nextPSN.Next()
		p.payLen = min(mtu, length-i*mtu)
		var op wire.Opcode
		switch {
		case n == 1:
			op = first + 4 // Only: SEND 0x04, WRITE 0x0A
		case i == 0:
			op = first
		case i < n-1:
			op = first + 1
		default:
			op = first + 2
		}
		if imm && i == n-1 {
			op++ // Last/Only with Immediate
			p.p.Imm = g.rng.Uint32()
		}
		p.p.Opcode = op
		if op.Has(wire.HdrRETH) {
			p.p.RETH = wire.RETH{VA: va, RKey: 0x5678, Length: uint32(length)}
		}
		if i == n-1 {
			p.p.AckReq = m.ackReq
			p.endOfMsg, p.msg = true, m
			m.lastPSN = p.p.PSN
		}
		c.reqQ = append(c.reqQ, p)
	}
}

// respond queues the responder's answer to m, processed now.
func (g *gen) respond(c *conn, m *message) {
	base := pkt{from: c.rsp, to: c.req}
	base.p.DestQP = c.reqQP
	base.p.PKey = 0xFFFF
	c.msn = (c.msn + 1) & 0xFFFFFF
	credit := g.credit()
	switch m.op {
	case wire.ReadRequest:
		c.unacked = false // the response acknowledges the SENDs and WRITEs before it
		n := wire.ReadResponsePackets(uint32(m.length), g.opts.MTU)
		for i := range n {
			p := base
			p.p.PSN = m.firstPSN.Add(i)
			p.payLen = min(g.opts.MTU, m.length-i*g.opts.MTU)
			switch {
			case n == 1:
				p.p.Opcode = wire.ReadResponseOnly
			case i == 0:
				p.p.Opcode = wire.ReadResponseFirst
			case i < n-1:
				p.p.Opcode = wire.ReadResponseMiddle
			default:
				p.p.Opcode = wire.ReadResponseLast
			}
			p.p.AETH = wire.AETH{Syndrome: wire.SynACK(credit), MSN: c.msn}
			c.rspQ = append(c.rspQ, p)
		}
		return
	case wire.CompareSwap, wire.FetchAdd:
		c.unacked = false
		p := base
		p.p.Opcode = wire.AtomicAcknowledge
		p.p.PSN = m.firstPSN
		p.p.AETH = wire.AETH{Syndrome: wire.SynACK(credit), MSN: c.msn}
		p.p.AtomicAck = c.atomicVal
		c.atomicVal++
		c.rspQ = append(c.rspQ, p)
		return
	}
	c.lastDone = m.lastPSN
	if !m.ackReq && g.rng.IntN(3) != 0 {
		c.unacked = true // coalesced into a later acknowledgment
		return
	}
	g.ack(c, credit)
}

// credit returns the credit code of a responder's next AETH.
func (g *gen) credit() uint8 {
	credit := uint8(8 + g.rng.IntN(8))
	if g.opts.SRQ {
		credit = wire.CreditInvalid
	}
	return credit
}

// ack queues c's acknowledgment of every SEND and WRITE done.
func (g *gen) ack(c *conn, credit uint8) {
	p := pkt{from: c.rsp, to: c.req}
	p.p.DestQP = c.reqQP
	p.p.PKey = 0xFFFF
	p.p.Opcode = wire.Acknowledge
	p.p.PSN = c.lastDone
	p.p.AETH = wire.AETH{Syndrome: wire.SynACK(credit), MSN: c.msn}
	c.rspQ = append(c.rspQ, p)
	c.unacked = false
}

// pending reports whether a connection has packets left to send once no
// new message begins; a connection that coalesced its last
// acknowledgments sends them now.
func (g *gen) pending() bool {
	left := false
	for _, c := range g.conns {
		if len(c.reqQ)+len(c.rspQ) == 0 && c.unacked {
			g.ack(c, g.credit())
		}
		left = left || len(c.reqQ)+len(c.rspQ) > 0
	}
	return left
}

// encode builds the frame of p on c into the reused buffer.
func (g *gen) encode(c *conn, p *pkt) []byte {
	f := &g.frame
	*f = wire.Frame{}
	f.SrcMAC, f.DstMAC = p.from.mac, p.to.mac
	f.Encap = wire.RoCEv2IPv4
	f.Src, f.Dst = p.from.addr, p.to.addr
	f.TTL = 64
	f.DF = true
	f.IPID = p.from.ipid
	p.from.ipid++
	f.SrcPort = c.srcPort
	f.DstPort = wire.UDPPort
	f.Packet = p.p
	if p.payLen > 0 {
		off := int(p.p.PSN) % 1024
		f.Payload = g.data[off : off+p.payLen]
	}
	g.buf = f.AppendEthernet(g.buf[:0])
	return g.buf
}
