package responses

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Liveness bounds how long a scenario waits for the device's answers. The
// clauses set no deadline; this is the harness's own bound on the
// device's clock (virtual for the reference, so waiting is cheap).
const Liveness = 100 * time.Millisecond

// MTUs lists every IB path MTU.
var MTUs = []int{256, 512, 1024, 2048, 4096}

// Fill writes a recognisable pattern into n bytes of the device's memory
// at off, so READ data can be compared; it returns the pattern.
func Fill(p *harness.Peer, off, n int) []byte {
	ginkgo.GinkgoHelper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + off + 3)
	}
	if n > 0 {
		if err := p.Conn.WriteMemory(off, b); err != nil {
			ginkgo.Fail(fmt.Sprintf("writing the device's memory: %v", err))
		}
	}
	return b
}

// Responses keeps the device's response packets of recs (READ responses,
// Acknowledges, ATOMIC Acknowledges), in order.
func Responses(recs []*trace.Record) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		if r.Packet.Opcode.IsResponse() {
			out = append(out, r)
		}
	}
	return out
}

// ReadResponses keeps the READ response packets of recs, in order.
func ReadResponses(recs []*trace.Record) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		if r.Packet.Opcode.Class() == wire.ClassReadResponse {
			out = append(out, r)
		}
	}
	return out
}

// Acks keeps the Acknowledge packets of recs (ACKs and NAKs), in order.
func Acks(recs []*trace.Record) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		if r.Packet.Opcode == wire.Acknowledge {
			out = append(out, r)
		}
	}
	return out
}

// Summary renders packets on one line for "seen" texts.
func Summary(recs []*trace.Record) string {
	if len(recs) == 0 {
		return "nothing"
	}
	var s []string
	for _, r := range recs {
		k := r.Packet
		t := fmt.Sprintf("%s PSN %d", k.Opcode.ShortName(), k.PSN)
		if k.Opcode.Has(wire.HdrAETH) {
			t += fmt.Sprintf(" [%s MSN %d]", k.AETH, k.AETH.MSN)
		}
		s = append(s, t)
	}
	return strings.Join(s, ", ")
}

// ReadPlan describes a READ a scenario sent: its request and the memory
// it reads.
type ReadPlan struct {
	Req  *wire.Packet
	Data []byte
}

// Packets returns how many response packets the READ takes at mtu.
func (rp ReadPlan) Packets(mtu int) int { return wire.ReadResponsePackets(rp.Req.RETH.Length, mtu) }

// SplitStreams assigns the READ response packets of recs to the READs of
// plans in order, each taking as many packets as its range holds; the
// last one takes whatever is left.
func SplitStreams(recs []*trace.Record, plans []ReadPlan, mtu int) [][]*trace.Record {
	rs := ReadResponses(recs)
	out := make([][]*trace.Record, len(plans))
	for i, rp := range plans {
		n := rp.Packets(mtu)
		if i == len(plans)-1 || n > len(rs) {
			n = len(rs)
		}
		out[i], rs = rs[:n], rs[n:]
	}
	return out
}

// CheckNumbering fails the spec unless stream, the response packets of
// the READ rp, holds exactly ceil(length/MTU) packets (at least one) with
// PSNs rp.Req.PSN, +1, … (modulo 2^24), each carrying its share of the
// data: a full MTU for all but the last, the rest for the last (C9-96).
func CheckNumbering(p *harness.Peer, rp ReadPlan, stream []*trace.Record) {
	ginkgo.GinkgoHelper()
	mtu := p.MTU()
	q := rp.Req
	n := rp.Packets(mtu)
	last := q.PSN.Add(n - 1)
	want := fmt.Sprintf("%d READ response packets with PSNs %d..%d, the READ's own PSN first, one more per packet", n, q.PSN, last)
	for i, r := range stream {
		if i >= n {
			p.Fail([]string{want}, fmt.Sprintf("a packet more: %s", Summary(stream)), r)
		}
		k := r.Packet
		if w := q.PSN.Add(i); k.PSN != w {
			p.Fail([]string{want}, fmt.Sprintf("packet %d of the response carries PSN %d, not %d (%s)", i+1, k.PSN, w, Summary(stream)), r)
		}
		size := mtu
		if i == n-1 {
			size = int(q.RETH.Length) - (n-1)*mtu
		}
		if answers.NAKKind(k) {
			continue
		}
		if len(k.Payload) != size {
			p.Fail([]string{want + fmt.Sprintf(", packet %d carrying %d bytes", i+1, size)},
				fmt.Sprintf("packet %d (PSN %d) carries %d bytes", i+1, k.PSN, len(k.Payload)), r)
		}
		if rp.Data != nil && !bytes.Equal(k.Payload, rp.Data[i*mtu:i*mtu+size]) {
			p.Fail([]string{want + ", carrying the READ's data in order"},
				fmt.Sprintf("packet %d (PSN %d) carries other bytes than memory holds at offset %d", i+1, k.PSN, i*mtu), r)
		}
	}
	if len(stream) < n {
		p.Fail([]string{want}, fmt.Sprintf("%d packets: %s", len(stream), Summary(stream)), nil)
	}
}

// IsACK matches an Acknowledge whose syndrome is of the ACK kind, whatever
// its reserved bit 7 holds (that bit is §9.7.5.2's concern, so other
// clauses' scenarios still recognise the ACK).
func IsACK(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge && k.AETH.Kind() == wire.KindACK }

// Baseline sends a SEND with AckReq and returns the MSN of the ACK, the
// count of messages completed so far: a setup step (Peer.ExpectAck says
// which clause a missing or misnumbered ACK is a finding of).
func Baseline(p *harness.Peer) uint32 {
	ginkgo.GinkgoHelper()
	pk := p.Message(wire.SendOnly, 8, 0, true)
	p.Send(pk...)
	got := p.ExpectAck(pk[0].PSN, "a SEND establishing the MSN", Liveness)
	p.Collect(time.Millisecond)
	return got.Packet.AETH.MSN
}
