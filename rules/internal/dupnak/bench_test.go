package dupnak

import (
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// busyTrace builds n rounds of traffic: SENDs acknowledged every 8, READs
// of four packets, and now and then a lost SEND with its sequence NAK and
// go-back-N resend.
func busyTrace(rounds int) []*trace.Record {
	b := NewTraceBuilder(256)
	psn := wire.PSN(0xFFF000)
	msn := uint32(0)
	for i := 0; i < rounds; i++ {
		start := psn
		for j := 0; j < 8; j++ {
			if i%50 == 7 && j == 3 {
				psn = psn.Next() // lost
				continue
			}
			b.Req(wire.SendOnly, psn, j == 7)
			psn = psn.Next()
		}
		if i%50 == 7 {
			b.NAK(wire.NAKPSNSequence, start.Add(3), msn)
			for j := 3; j < 8; j++ {
				b.Req(wire.SendOnly, start.Add(j), j == 7)
			}
		}
		msn += 8
		b.Ack(psn.Add(-1), msn)
		b.Read(psn, 1024)
		msn++
		b.ReadStream(psn, 1024, msn)
		psn = psn.Add(4)
	}
	return b.Recs
}

func BenchmarkSharedMonitors(b *testing.B) {
	recs := busyTrace(2000) // about 30,000 packets
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink := Audit(recs, true, 256, tNAKPSN, tNAKSeq, tLatch, tDupError, tOrder)
		if Tally(sink, tNAKSeq).Violations != 0 {
			b.Fatal(sink.Findings)
		}
	}
	b.ReportMetric(float64(len(recs)), "packets/op")
}

func TestBusyTraceClean(t *testing.T) {
	recs := busyTrace(300)
	for _, complete := range []bool{true, false} {
		sink := Audit(recs, complete, 256, tNAKPSN, tNAKSeq, tLatch, tDupError, tOrder)
		for _, c := range []string{tNAKPSN, tNAKSeq, tLatch, tDupError, tOrder} {
			if tl := Tally(sink, c); tl.Violations != 0 {
				t.Errorf("complete=%v %s: %+v %v", complete, c, tl, sink.Findings[0].Message)
			}
		}
		if complete && Tally(sink, tNAKSeq).Checked == 0 {
			t.Errorf("no sequence NAK checked")
		}
	}
	_ = harness.Monitors
}
