package capture

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
)

const benchFrames = 100_000

// benchPackets are RoCEv2-like frames: ACK-sized and MTU-1024-sized
// frames in turn.
var benchPackets = sync.OnceValue(func() []pkt {
	small := etherFrame(EtherTypeIPv4, ipv4Packet(20))
	large := etherFrame(EtherTypeIPv4, ipv4Packet(1024+16))
	pkts := make([]pkt, benchFrames)
	for i := range pkts {
		pkts[i] = pkt{ts: t0.Add(time.Duration(i) * 3 * time.Microsecond), data: small}
		if i%2 == 0 {
			pkts[i].data = large
		}
	}
	return pkts
})

var (
	benchPcap = sync.OnceValue(func() []byte { return buildPcap(le, false, LinkTypeEthernet, benchPackets()) })
	benchNg   = sync.OnceValue(func() []byte {
		w := &ngWriter{b: make([]byte, 0, len(benchPcap())+benchFrames*16)}
		w.shb(le).idb(LinkTypeEthernet, 0, ngOpt{9, u8(9)})
		for _, p := range benchPackets() {
			w.epb(0, uint64(p.ts.UnixNano()), p.data, 0)
		}
		return w.b
	})
	benchGzip = sync.OnceValue(func() []byte { return gzipped(benchPcap()) })
)

func benchRead(b *testing.B, file []byte) {
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(file), "bench")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			f, err := r.Next()
			if err != nil {
				break
			}
			if _, _, err := f.Network(); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != benchFrames {
			b.Fatalf("%d frames", n)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	frames := float64(b.N) * benchFrames
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames, "ns/frame")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/frames, "allocs/frame")
}

// BenchmarkReadPcap reads an in-memory pcap of 100k frames and locates the
// network header of each.
func BenchmarkReadPcap(b *testing.B) { benchRead(b, benchPcap()) }

func BenchmarkReadPcapng(b *testing.B) { benchRead(b, benchNg()) }

func BenchmarkReadPcapGzip(b *testing.B) { benchRead(b, benchGzip()) }

// BenchmarkScanCounters reads the in-memory pcapng of BenchmarkReadPcapng
// for its counters only (ScanCounters' pass before an audit).
func BenchmarkScanCounters(b *testing.B) {
	file := benchNg()
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(file), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.scanCounters(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*benchFrames), "ns/frame")
}
