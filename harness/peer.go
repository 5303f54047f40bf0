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
	// reported (the suite turns it into a finding with a ladder).
	Failure *reports.Finding
}

// NewPeer wraps a connection.
func NewPeer(c dut.Conn, clause, text string) *Peer {
	info := c.Info()
	return &Peer{Conn: c, Info: info, Clause: clause, ClauseText: text, PSN: info.ExpectedPSN}
}

// MTU returns the connection's path MTU.
func (p *Peer) MTU() int { return p.Info.MTU }

// Fail fails the spec with the clause, the acceptable outcomes, what was
// seen, and the ladder of the exchange, highlighting hi.
func (p *Peer) Fail(expected []string, seen string, hi *trace.Record) {
	ginkgo.GinkgoHelper()
	recs := p.Conn.Trace()
	f := &reports.Finding{ID: p.Clause, Clause: p.ClauseText, Expected: expected, Seen: seen,
		Message: p.Clause + " violated: seen " + seen, Ladder: Rungs(window(recs, hi, 48), hi, false)}
	if hi != nil {
		f.PSN, f.QP = uint32(hi.Packet.PSN), hi.Packet.DestQP
	}
	p.Failure = f
	ginkgo.Fail(p.FailureText(expected, seen, hi))
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
			return r, skipped
		}
		skipped = append(skipped, r)
	}
	seen := "nothing"
	if len(skipped) > 0 {
		var s []string
		for _, r := range skipped {
			s = append(s, r.Packet.String())
		}
		seen = "only " + strings.Join(s, "; ")
	}
	p.Fail([]string{what + fmt.Sprintf(" within %v", within)}, seen, nil)
	return nil, skipped
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
}

// Wait lets d pass on the device's clock.
func (p *Peer) Wait(d time.Duration) { p.Conn.Wait(d) }
