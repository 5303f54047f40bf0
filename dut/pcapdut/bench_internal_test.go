package pcapdut

import (
	"bytes"
	"runtime"
	"sync"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut/synth"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire/capture"
)

// benchFile is a synthetic capture of 100k frames.
var benchFile = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if _, err := synth.Write(&buf, synth.Options{Frames: benchFrames, QPs: 8, Seed: 1}); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

const benchFrames = 100_000

// discard observes nothing.
type discard struct{ n int }

func (d *discard) Observe(*trace.Record) { d.n++ }
func (d *discard) End()                  {}

// BenchmarkDecode is the adapter's own cost: read, decode, ICRC, record,
// with an observer that does nothing.
func BenchmarkDecode(b *testing.B) { withDecoders(0, func() { benchDecode(b) }) }

// BenchmarkDecodeParallel is BenchmarkDecode with GOMAXPROCS/2 (at least
// one) goroutines decoding besides the reading one, as an audit on 4 or
// more cores runs: run it with -cpu 1,2,4 to see the reading side scale.
func BenchmarkDecodeParallel(b *testing.B) {
	withDecoders(max(runtime.GOMAXPROCS(0)/2, 1), func() { benchDecode(b) })
}

func benchDecode(b *testing.B) {
	file := benchFile()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		rd, err := capture.NewReader(bytes.NewReader(file), "bench.pcap")
		if err != nil {
			b.Fatal(err)
		}
		d := &discard{}
		if _, err := auditReader(rd, d, nil, 0); err != nil || d.n != benchFrames {
			b.Fatal(err, d.n)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	n := float64(b.N) * benchFrames
	b.ReportMetric(n/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/frame")
}
