package pcapdut_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/dut/pcapdut/synth"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire/capture"
)

// shardSettings are the settings each capture is audited with: unknown
// ones (many clauses indeterminate, with reasons), and claims that make
// clauses fail on many connections (no SRQ on rxe, which sends credit
// 0x1F; a wrong MTU and short timers on the synthetic traffic).
func shardSettings() map[string]harness.Settings {
	u := harness.UnknownSettings()
	claim := u
	claim.SRQ, claim.MTU, claim.AckTimeout, claim.RetryCnt, claim.RNRRetry, claim.Complete = harness.SRQNone, 512, 1, 0, 0, true
	return map[string]harness.Settings{"unknown": u, "claims": claim}
}

// auditWith audits a capture held in memory with a single Auditor
// (workers 0) or a ShardedAuditor of the given workers, and returns its
// sink and connections. perConn, when not nil, gives each connection its
// settings (Auditor.ConnSetup, ShardedAuditor.ConnSetup).
func auditWith(t *testing.T, name string, file []byte, s harness.Settings, maxFindings, workers int, perConn func(*harness.Conn) harness.Settings) (*harness.Sink, []*harness.Conn) {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(file), name)
	if err != nil {
		t.Fatal(err)
	}
	sink := harness.NewSink(name)
	sink.MaxFindings = maxFindings
	sink.Text = func(c string) string { return "text of " + c }
	var obs pcapdut.Observer
	var conns func() []*harness.Conn
	if workers == 0 {
		a := harness.NewAuditor(s, sink)
		if perConn != nil {
			a.ConnSetup = func(c *harness.Conn) { c.Settings = perConn(c) }
		}
		obs, conns = a, a.Conns
	} else {
		a := harness.NewShardedAuditor(s, sink, workers)
		if perConn != nil {
			a.ConnSetup = func(c *harness.Conn) { c.Settings = perConn(c) }
		}
		obs, conns = a, a.Conns
	}
	if _, err := pcapdut.AuditReader(rd, obs, nil, 0); err != nil && !strings.Contains(err.Error(), "frames before it were audited") {
		t.Fatal(err)
	}
	return sink, conns()
}

// connsText describes connections by ID, addresses and QPs.
func connsText(cs []*harness.Conn) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d %v>%v qp %#x/%#x packets %d\n", c.ID, c.Requester, c.Responder, c.RequesterQP, c.ResponderQP, c.Packets)
	}
	return b.String()
}

// TestShardedSameAsSingle holds the sharded auditor, on 1, 2, 3 and 7
// workers, to the single auditor's findings (byte for byte, in order),
// tallies, reasons and connections, on every shared capture and on
// synthetic captures of many connections sharing one address pair, with
// settings that make clauses pass, fail (past the findings cap) and stay
// indeterminate.
func TestShardedSameAsSingle(t *testing.T) {
	type capFile struct {
		name string
		data []byte
	}
	var files []capFile
	paths, _ := filepath.Glob(filepath.Join(capturesDir, "*", "*.pcap*"))
	if len(paths) == 0 {
		t.Logf("no shared captures in %s: synthetic ones only", capturesDir)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, capFile{p, b})
	}
	for _, o := range []synth.Options{{Frames: 6000, QPs: 16, Seed: 5}, {Frames: 3000, QPs: 9, MTU: 256, Seed: 11}} {
		var buf bytes.Buffer
		if _, err := synth.Write(&buf, o); err != nil {
			t.Fatal(err)
		}
		files = append(files, capFile{fmt.Sprintf("synthetic-%d-qps.pcap", o.QPs), buf.Bytes()})
	}
	violations, indeterminate := 0, 0
	for _, f := range files {
		for sname, s := range shardSettings() {
			for _, maxF := range []int{3, 0} {
				want, wantConns := auditWith(t, f.name, f.data, s, maxF, 0, nil)
				for _, tl := range want.Tallies {
					violations += tl.Violations
					indeterminate += tl.Indeterminate
				}
				for _, w := range []int{1, 2, 3, 7} {
					got, gotConns := auditWith(t, f.name, f.data, s, maxF, w, nil)
					if d := harness.DiffSinks(want, got); d != "" {
						t.Errorf("%s, settings %s, max findings %d, %d workers: %s", f.name, sname, maxF, w, d)
					}
					if a, b := connsText(wantConns), connsText(gotConns); a != b {
						t.Errorf("%s, %d workers: connections\n%s\nwant\n%s", f.name, w, b, a)
					}
				}
			}
		}
	}
	// The comparison means something only if there was something to
	// compare.
	if violations == 0 || indeterminate == 0 {
		t.Errorf("%d violations and %d indeterminate instances in all: the captures exercise too little", violations, indeterminate)
	}
}

// TestShardedConnSettings: settings given per connection as it is made
// (the seam for settings learnt from the capture) reach the auditor that
// judges it: the sharded auditor judges as a single one given them alike.
// Half the connections are claimed to run at an MTU of 256 that their
// traffic (at 1024) contradicts, the others at the true 1024.
func TestShardedConnSettings(t *testing.T) {
	var buf bytes.Buffer
	if _, err := synth.Write(&buf, synth.Options{Frames: 4000, QPs: 10, MTU: 1024, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	perConn := func(c *harness.Conn) harness.Settings {
		s := harness.UnknownSettings()
		s.MTU = 1024
		if c.ID%2 == 0 {
			s.MTU = 256
		}
		return s
	}
	want, _ := auditWith(t, "mtu.pcap", buf.Bytes(), harness.UnknownSettings(), 0, 0, perConn)
	clean, _ := auditWith(t, "mtu.pcap", buf.Bytes(), harness.UnknownSettings(), 0, 0, nil)
	if len(want.Findings) == 0 || harness.DiffSinks(clean, want) == "" {
		t.Fatalf("the per-connection settings changed nothing (%d findings)", len(want.Findings))
	}
	for _, w := range []int{1, 3} {
		got, _ := auditWith(t, "mtu.pcap", buf.Bytes(), harness.UnknownSettings(), 0, w, perConn)
		if d := harness.DiffSinks(want, got); d != "" {
			t.Errorf("%d workers: %s", w, d)
		}
	}
}

// BenchmarkAuditSharded is BenchmarkAudit through a ShardedAuditor with
// one worker per core (-cpu sets them).
func BenchmarkAuditSharded(b *testing.B) {
	benchAudit(b, func() pcapdut.Observer {
		return harness.NewShardedAuditor(harness.UnknownSettings(), harness.NewSink("bench.pcap"), runtime.GOMAXPROCS(0))
	})
}

// benchAudit audits an in-memory synthetic capture of 100k frames (8
// QPs) with the auditors newAuditor makes, and reports frames/s, the CPU
// time per frame and the allocations per frame.
func benchAudit(b *testing.B, newAuditor func() pcapdut.Observer) {
	const frames = 100_000
	var buf bytes.Buffer
	if _, err := synth.Write(&buf, synth.Options{Frames: frames, QPs: 8, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	file := buf.Bytes()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		rd, err := capture.NewReader(bytes.NewReader(file), "bench.pcap")
		if err != nil {
			b.Fatal(err)
		}
		info, err := pcapdut.AuditReader(rd, newAuditor(), nil, 0)
		if err != nil || info.RoCEFrames != frames {
			b.Fatalf("%+v %v", info, err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	n := float64(b.N) * frames
	b.ReportMetric(n/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/n, "cpu-ns/frame")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/frame")
}

// cpuTime returns the process's CPU time (user and system) in ns: on a
// shared machine a steadier measure than the wall clock.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// panicky panics on the record of frame panicFrame, or as it ends when
// panicFrame is 0, on captures named panic.pcap only.
type panicky struct{}

const panicFrame = 7

func (panicky) Observe(c *harness.Conn, r *trace.Record) {
	if c.Capture == "panic.pcap" && r.Frame == panicFrame {
		panic("monitor bug")
	}
}

func (panicky) End(c *harness.Conn) {
	if c.Capture == "panic-end.pcap" {
		panic("monitor bug at the end")
	}
}

func init() {
	harness.RegisterMonitor(harness.Monitor{Clause: "test-panicky", New: func(*harness.Conn) harness.Checker { return panicky{} }})
}

// TestShardedPanic: a monitor that panics on a worker is reported as an
// error naming the capture and the frame it was judging (0: the end), with
// its stack, on one worker and on several.
func TestShardedPanic(t *testing.T) {
	var buf bytes.Buffer
	if _, err := synth.Write(&buf, synth.Options{Frames: 3000, QPs: 6, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		frame int
		msg   string
	}{{"panic.pcap", panicFrame, "monitor bug"}, {"panic-end.pcap", 0, "monitor bug at the end"}} {
		for _, w := range []int{1, 3} {
			rd, err := capture.NewReader(bytes.NewReader(buf.Bytes()), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			a := harness.NewShardedAuditor(harness.UnknownSettings(), harness.NewSink(tc.name), w)
			a.Only = map[string]bool{"test-panicky": true, "C9-95": true}
			_, err = pcapdut.AuditReader(rd, a, nil, 0)
			var pe *pcapdut.PanicError
			if !errors.As(err, &pe) || pe.Frame != tc.frame || pe.File != tc.name || fmt.Sprint(pe.Value) != tc.msg || len(pe.Stack) == 0 {
				t.Errorf("%s, %d workers: error %v (%+v)", tc.name, w, err, pe)
			}
		}
	}
}
