package reference

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
)

// BenchmarkThroughput runs two QPs back to back, SENDs of 4 KiB at MTU
// 1024, and reports the packets per second (wall clock) that go from the
// requester through the link to the responder and back: every frame is
// encoded with its ICRC, decoded and checked on arrival.
func BenchmarkThroughput(b *testing.B) {
	p := newPair(b, time.Microsecond, 1, func(a, bb *Config) {
		a.MTU, bb.MTU = 1024, 1024
		a.PacketGap, bb.PacketGap = 10*time.Nanosecond, 10*time.Nanosecond
	})
	p.link.SetCapture(false)
	data := make([]byte, 4096)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	const batch = 16
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		for j := 0; j < n; j++ {
			p.b.PostRecv(uint64(i+j), 4096)
			p.a.PostSend(dut.WR{ID: uint64(i + j), Op: dut.OpSend, Data: data})
		}
		for len(p.a.s.sq) > 0 {
			if !p.clock.Step() {
				b.Fatal("stalled")
			}
		}
		p.a.PollCQ()
		p.b.PollCQ()
		clear(p.b.recvData)
	}
	b.StopTimer()
	pkts := p.a.Stats().PacketsSent + p.b.Stats().PacketsSent
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "pkts/s")
	if s := p.a.Stats(); s.Retransmits != 0 {
		b.Errorf("retransmissions on a clean link: %+v", s)
	}
}
