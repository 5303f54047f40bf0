package rulekit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/reports/annotate"
	"github.com/rcconform/rcconform/wire/capture"
)

// traces holds what --traces wrote: the names taken (each file's name
// is unique in the run) and the first error, which fails the run once
// its reports are written. Guarded by mu.
var traces struct {
	taken map[string]bool
	err   error
}

// suite names the build in each file's comment (asked once: without a
// version control stamp it asks git).
var suite = sync.OnceValue(reports.CurrentSuite)

// checkTraces makes the --traces folder and proves it writable, so that
// a folder the suite cannot write stops it before any scenario runs.
func checkTraces(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--traces %q: cannot make the folder: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".rcconform-probe-*")
	if err != nil {
		return fmt.Errorf("--traces %q: cannot write in the folder: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// auditTrace runs every passive monitor over a scenario's trace (recs)
// and, with --traces, saves the trace as one pcapng file named after
// file (the clause's folder and the scenario, or the script), with the
// scenario's account (peer's notes) and the findings as packet comments.
func auditTrace(scenario, file string, conn dut.Conn, recs []*trace.Record, settings harness.Settings, peer *harness.Peer) *harness.Sink {
	sink := harness.NewSink("")
	sink.Text = ClauseText
	var u *annotate.Undecided
	if Cfg.Traces != "" {
		u = &annotate.Undecided{}
		sink.Undecided = u.Add
	}
	harness.AuditInto(sink, recs, settings)
	if Cfg.Traces != "" {
		if err := saveTrace(scenario, file, conn, recs, settings, peer, sink, u); err != nil {
			fmt.Fprintf(ginkgo.GinkgoWriter, "%s: %v\n", scenario, err)
			mu.Lock()
			if traces.err == nil {
				traces.err = err
			}
			mu.Unlock()
		}
	}
	return sink
}

// saveTrace writes the trace to DIR/<file>.pcapng. Each record is a
// frame (see trace.Record.AppendFrame), numbered as the trace numbers
// it, so that a finding's frame is the file's. Its comments: the
// scenario's account (its steps as they began, each expectation and
// what answered it or did not), then, as `audit --annotate` writes
// them, the findings (the scenario's own failure, the passive monitors')
// and the monitors' undecided instances.
func saveTrace(scenario, file string, conn dut.Conn, recs []*trace.Record, st harness.Settings, peer *harness.Peer, sink *harness.Sink, u *annotate.Undecided) error {
	virtual := env.caps.VirtualTime
	base := time.Now().Add(-conn.Now()) // a real clock: when the connection opened
	clock := "the time on the harness's host, from when the connection opened"
	if virtual {
		base = time.Unix(0, 0).UTC()
		clock = "the device's virtual clock, counted from 1970-01-01 00:00:00 UTC when the connection opened"
	}
	frames := make([]capture.Frame, 0, len(recs))
	for i, r := range recs {
		data := r.AppendFrame(nil)
		frames = append(frames, capture.Frame{Num: i + 1, Time: base.Add(r.Time), LinkType: capture.LinkTypeEthernet,
			Data: data, OrigLen: len(data)})
	}
	notes, none := harness.PlaceNotes(recs, peer.Notes)
	findings := append([]reports.Finding{}, sink.Findings...)
	if f := peer.Failure; f != nil {
		findings = append(findings, *f)
	}
	outcome := "passed"
	if rep := ginkgo.CurrentSpecReport(); rep.Failed() {
		outcome = "failed: " + firstLine(rep.FailureMessage())
	} else if rep.State.Is(types.SpecStateSkipped) {
		outcome = firstLine(rep.FailureMessage())
	}
	comment := fmt.Sprintf("rcconform %s --traces: %s; against %s (seed %d); %s; MTU %d, ACK timeout %d, retry count %d, RNR retry %d; timestamps: %s",
		suite(), scenario, env.dut.Name(), Cfg.Seed, outcome, st.MTU, st.AckTimeout, st.RetryCnt, st.RNRRetry, clock)
	if len(none) > 0 {
		comment += "; with no packet: " + strings.Join(none, "; ")
	}
	c := annotate.Capture{Path: scenario, Findings: findings, Undecided: u, Frames: frames, Notes: notes}
	return annotate.Write(filepath.Join(Cfg.Traces, takeName(file)+".pcapng"), comment, []annotate.Capture{c}, nil)
}

// takeName returns file, or file-2, file-3 … when the run took it
// already, and takes it.
func takeName(file string) string {
	mu.Lock()
	defer mu.Unlock()
	if traces.taken == nil {
		traces.taken = map[string]bool{}
	}
	name := file
	for n := 2; traces.taken[name]; n++ {
		name = fmt.Sprintf("%s-%d", file, n)
	}
	traces.taken[name] = true
	return name
}

// firstLine returns s up to its first line break.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// traceFile makes a file name (without its extension) from parts: lower
// case letters, digits, '.' and '_' kept, every other run of characters
// one '-', at most 100 bytes.
func traceFile(parts ...string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(strings.Join(parts, "-")) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	s := b.String()
	if len(s) > 100 {
		s = strings.TrimRight(s[:100], "-.")
	}
	if s == "" || s[0] == '.' {
		s = "trace" + s
	}
	return s
}
