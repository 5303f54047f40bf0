package rulekit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/catalog"
)

// R is a clause's spec context inside its Describe.
type R struct {
	Entry catalog.Entry
}

// Needs lists capabilities an active scenario requires beyond injecting
// packets.
type Needs struct {
	PostWR, Completions, Memory, Atomics, SRQ, Credits, VirtualTime bool
}

// Missing lists what the adapter with capabilities c lacks for a
// scenario with these needs (none: it can run).
func (n Needs) Missing(c dut.Capabilities) []string {
	var m []string
	add := func(need, have bool, what string) {
		if need && !have {
			m = append(m, what)
		}
	}
	add(!c.Capture, c.Inject, "injecting packets")
	add(n.PostWR, c.PostWR, "posting work requests on the device")
	add(n.Completions, c.Completions, "reading the device's completions")
	add(n.Memory, c.Memory, "reading and writing the device's memory")
	add(n.Atomics, c.Atomics, "atomics")
	add(n.SRQ, c.SRQ, "a shared receive queue")
	add(n.Credits, c.Credits, "a known receive queue depth")
	add(n.VirtualTime, c.VirtualTime, "exact timing (a virtual clock)")
	return m
}

// Scenario is one active scenario of a clause.
type Scenario struct {
	Config dut.ConnConfig
	Needs  Needs
	// DeviceIsRequester: the device is the requester and the harness plays
	// the responder (requester rules).
	DeviceIsRequester bool
}

// Active registers an active scenario: an It that opens a fresh
// connection on the device, hands the body a Peer, and afterwards audits
// the connection's trace with every passive monitor. Capabilities the
// adapter lacks (and the optional feature the clause depends on) make the
// scenario unsupported, never failed.
func (r *R) Active(name string, sc Scenario, body func(p *harness.Peer)) {
	id := r.Entry.ID
	ginkgo.It(name, func() {
		defer stopIfBroken()
		d := env.dut
		caps := env.caps
		needs := sc.Needs
		for _, n := range r.Entry.Needs {
			switch n {
			case catalog.NeedAtomics:
				needs.Atomics = true
			case catalog.NeedSRQ:
				needs.SRQ = true
			}
		}
		if needs.Atomics {
			sc.Config.Atomics = true
		}
		mu.Lock()
		a := accFor(id)
		a.ran = true
		mu.Unlock()
		if caps.Capture {
			reason := "active scenario: a capture cannot be sent packets"
			mu.Lock()
			a.unsupported = append(a.unsupported, reason)
			mu.Unlock()
			ginkgo.Skip("unsupported: " + reason)
		}
		if m := needs.Missing(caps); len(m) > 0 {
			reason := fmt.Sprintf("the %s adapter lacks %s", d.Name(), strings.Join(m, ", "))
			mu.Lock()
			a.unsupported = append(a.unsupported, reason)
			mu.Unlock()
			ginkgo.Skip("unsupported: " + reason)
		}
		conn, err := d.NewConn(sc.Config)
		if errors.Is(err, dut.ErrUnsupported) {
			reason := fmt.Sprintf("the %s device cannot set up this connection: %v", d.Name(), err)
			mu.Lock()
			a.unsupported = append(a.unsupported, reason)
			mu.Unlock()
			ginkgo.Skip("unsupported: " + reason)
		}
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("opening a connection on the %s device: %v", d.Name(), err))
		}
		ginkgo.DeferCleanup(func() { _ = conn.Close() })
		peer := harness.NewPeer(conn, id, r.Entry.Text)
		peer.TextOf = ClauseText
		ginkgo.DeferCleanup(func() { r.afterActive(name, conn, sc, peer) })
		body(peer)
	})
}

// stopIfBroken, deferred, turns an adapter's panic with dut.ErrBroken
// (it lost its device: a simulator that broke its protocol) into the end
// of the suite, naming the adapter's error and blaming no clause. Other
// panics go on.
func stopIfBroken() {
	r := recover()
	if r == nil {
		return
	}
	if err, ok := r.(error); ok && errors.Is(err, dut.ErrBroken) {
		mu.Lock()
		if broken == nil {
			broken = err
		}
		mu.Unlock()
		ginkgo.AbortSuite(err.Error())
	}
	panic(r)
}

// brokenAdapter returns the error that broke the adapter, or nil.
func brokenAdapter() error {
	mu.Lock()
	defer mu.Unlock()
	return broken
}

// afterActive records the scenario's outcome under its clause, a failed
// setup step's or trigger's finding under the clause governing it, and
// audits the trace with every monitor. The monitors' findings are kept
// for each clause's "findings from every scenario's trace" spec: the
// scenario's spec fails only for its own clause.
func (r *R) afterActive(name string, conn dut.Conn, sc Scenario, peer *harness.Peer) {
	defer stopIfBroken()
	if brokenAdapter() != nil {
		return // nothing the device did can be judged
	}
	id := r.Entry.ID
	rep := ginkgo.CurrentSpecReport()
	settings := harness.ActiveSettings(conn, sc.DeviceIsRequester, sc.Config.SRQ)
	virtual := false
	if d := DUT(); d != nil {
		virtual = d.Capabilities().VirtualTime
	}
	Settle(peer, rep.Failed() || rep.State.Is(types.SpecStateSkipped), virtual, sc.DeviceIsRequester)
	if Cfg.TraceDir != "" {
		writeTrace(id, conn, settings)
	}
	recs := conn.Trace()
	// Packets the adapter lost on their way in are not in the trace: the
	// monitors judge it as a capture with loss before its capture point.
	if n, where := dut.ReceiveLoss(conn); n > 0 {
		settings.ReceiveLoss = true
		fmt.Fprintf(ginkgo.GinkgoWriter, "%s: %s: its trace is judged as one that may lack packets the device sent\n", name, where)
	}
	sink := auditTrace(id+": "+name, traceFile(catalog.Folder(id), name), conn, recs, settings, peer)

	mu.Lock()
	defer mu.Unlock()
	a := accFor(id)
	switch {
	case rep.State.Is(types.SpecStateSkipped):
		if u := peer.Undecided; u != nil {
			a.undecided(u.Verdict, name, u.Reason)
		} else {
			a.skipped(rep.Failure.Message, name)
		}
		if f := peer.Failure; f != nil && f.ID != id {
			f.Scenario = id + ": " + name
			a := accFor(f.ID)
			a.pending++
			a.elsewhere = append(a.elsewhere, *f)
		}
	case rep.Failed():
		a.violations++
		f := reports.Finding{ID: id, Message: rep.FailureMessage(), Scenario: name, Clause: r.Entry.Text}
		if peer.Failure != nil && peer.Failure.ID == id {
			f = *peer.Failure
			f.ID, f.Scenario = id, name
		}
		findings = append(findings, f)
	default:
		a.checked++
		a.checks = append(a.checks, name)
	}
	recordSink(id+": "+name, sink)
	activeRan = true
}

// recordSink keeps the passive monitors' findings over scenario's trace
// for each clause's "findings from every scenario's trace" spec, and
// their undecided instances. The caller holds mu.
func recordSink(scenario string, sink *harness.Sink) {
	for clause, t := range sink.Tallies {
		accFor(clause).passiveUndecided += t.Indeterminate
		for _, k := range t.Kinds {
			k.Scenario, k.At = scenario, 0
			accFor(clause).kinds.AddUndecided(k)
		}
		if t.Violations == 0 {
			continue
		}
		a := accFor(clause)
		a.pending += t.Violations
		for _, f := range sink.Findings {
			if f.ID == clause {
				f.Scenario = scenario
				a.elsewhere = append(a.elsewhere, f)
			}
		}
	}
}

// undecided records a scenario that could not decide its clause.
func (a *clauseAcc) undecided(v reports.Verdict, name, reason string) {
	switch v {
	case reports.Indeterminate:
		a.indeterminate++
		a.reasons = append(a.reasons, name+": "+reason)
		a.kinds.AddUndecided(reports.UndecidedKind{Reason: reason, Count: 1, Scenario: name})
	default:
		a.notExercised = append(a.notExercised, name+": "+reason)
	}
}

// skipped records a scenario body's own Skip by the verdict its message
// starts with ("not exercised: …", "indeterminate: …"); "unsupported: …"
// was recorded where it was decided.
func (a *clauseAcc) skipped(msg, name string) {
	switch {
	case strings.HasPrefix(msg, "indeterminate: "):
		a.undecided(reports.Indeterminate, name, strings.TrimPrefix(msg, "indeterminate: "))
	case strings.HasPrefix(msg, "unsupported: "):
	default:
		msg = strings.TrimPrefix(strings.TrimPrefix(msg, "not exercised: "), "not-exercised: ")
		a.undecided(reports.NotExercised, name, msg)
	}
}

// reportElsewhere is the spec "findings from every scenario's trace" of
// the clause: it fails with every finding of the clause that arose
// outside its own scenarios' checks: its passive monitor over every
// active scenario's trace, and the setup steps and triggers of other
// clauses' scenarios that this clause governs. It runs after every
// active spec (see Rule).
func (r *R) reportElsewhere() {
	id := r.Entry.ID
	if env.captured {
		ginkgo.Skip("capture mode: the clause's monitor over the capture is reported by its passive-monitor spec")
	}
	mu.Lock()
	a := accFor(id)
	fs := append([]reports.Finding{}, a.elsewhere...)
	ran := activeRan
	// Counted here, by the clause's own spec, so that a clause filtered
	// out of the run fails in neither Ginkgo's report nor the keyed one.
	findings = append(findings, fs...)
	a.violations += a.pending
	if ran {
		a.ran = true
	}
	a.elsewhere, a.pending = nil, 0
	mu.Unlock()
	if !ran {
		ginkgo.Skip("no active scenario ran, so no trace was audited")
	}
	if len(fs) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s violated %d times in the traces of the suite's scenarios: %s\n", id, len(fs), r.Entry.Text)
	for i, f := range fs {
		fmt.Fprintf(&b, "\n%d. in %s: %s\n", i+1, f.Scenario, f.Message)
		if len(f.Expected) > 0 {
			fmt.Fprintf(&b, "acceptable: %s\n", strings.Join(f.Expected, " | "))
		}
		if f.Seen != "" {
			fmt.Fprintf(&b, "seen: %s\n", f.Seen)
		}
		b.WriteString(reports.LadderText(f.Ladder))
		if i == 19 && len(fs) > 20 {
			fmt.Fprintf(&b, "\n… and %d more (all in the JSON result)\n", len(fs)-20)
			break
		}
	}
	ginkgo.Fail(b.String())
}

// auditCapture reports the clause's passive monitor over the capture (in
// capture mode); in active mode it is skipped, since every active trace
// is audited by every monitor anyway.
func (r *R) auditCapture() {
	id := r.Entry.ID
	if !env.captured {
		ginkgo.Skip("no capture: this DUT is audited through its active scenarios' traces")
	}
	mu.Lock()
	a := accFor(id)
	a.ran = true
	t := env.capSink.Tally(id)
	hasMon := false
	for _, m := range harness.Monitors() {
		if m.Clause == id {
			hasMon = true
		}
	}
	var fs []reports.Finding
	for _, f := range env.capSink.Findings {
		if f.ID == id {
			fs = append(fs, f)
		}
	}
	if t != nil {
		a.checked += t.Checked
		a.violations += t.Violations
		a.indeterminate += t.Indeterminate
		if t.Reason != "" {
			a.reasons = append(a.reasons, t.Reason)
		}
		for _, k := range t.Kinds {
			k.At = 0
			a.kinds.AddUndecided(k)
		}
	}
	findings = append(findings, fs...)
	mu.Unlock()
	switch v := t.Verdict(); v {
	case reports.Fail:
		var b strings.Builder
		fmt.Fprintf(&b, "%s violated in %s: %s\n", id, env.capSink.Capture, r.Entry.Text)
		for _, f := range fs {
			fmt.Fprintf(&b, "\nframe %d, QP 0x%06x, PSN %d: %s\nacceptable: %s\nseen: %s\n%s", f.Frame, f.QP, f.PSN,
				f.Message, strings.Join(f.Expected, " | "), f.Seen, reports.LadderText(f.Ladder))
		}
		ginkgo.Fail(b.String())
	case reports.Pass:
	case reports.Indeterminate:
		ginkgo.Skip("indeterminate: " + t.Reason)
	default:
		if !hasMon {
			mu.Lock()
			a.unsupported = append(a.unsupported, "no passive monitor: the clause is checked only by active scenarios")
			mu.Unlock()
			ginkgo.Skip("unsupported: " + id + " has no passive monitor")
		}
		mu.Lock()
		a.reasons = append(a.reasons, "nothing in the capture exercised it")
		a.captureNotExercised = true
		mu.Unlock()
		ginkgo.Skip("not-exercised: nothing in the capture exercised " + id)
	}
}

// pcapngWriter is implemented by connections that can write what crossed
// their link as a capture (the reference adapter).
type pcapngWriter interface {
	WritePcapng(w io.Writer) error
}

var traceSeq int

// TraceSettings is written beside each scenario's capture: the
// connection settings an audit of that capture may be told (the audit's
// --mtu, --srq, --ack-timeout, --retry-cnt and --rnr-retry).
type TraceSettings struct {
	Clause            string `json:"clause"`
	MTU               int    `json:"mtu"`
	SRQ               bool   `json:"srq"`
	AckTimeout        int    `json:"ack_timeout"`
	RetryCnt          int    `json:"retry_cnt"`
	RNRRetry          int    `json:"rnr_retry"`
	DeviceIsRequester bool   `json:"device_is_requester"`
}

// Settings returns audit settings for a complete capture of the scenario.
func (t TraceSettings) Settings() harness.Settings {
	s := harness.UnknownSettings()
	s.Complete = true
	s.MTU, s.AckTimeout, s.RetryCnt, s.RNRRetry = t.MTU, t.AckTimeout, t.RetryCnt, t.RNRRetry
	s.SRQ = harness.SRQNone
	if t.SRQ {
		s.SRQ = harness.SRQAll
	}
	return s
}

// ReadTraceSettings reads the settings written beside a scenario's
// capture (CAPTURE.pcapng's CAPTURE.json).
func ReadTraceSettings(capture string) (TraceSettings, error) {
	var ts TraceSettings
	b, err := os.ReadFile(strings.TrimSuffix(capture, ".pcapng") + ".json")
	if err == nil {
		err = json.Unmarshal(b, &ts)
	}
	if err != nil {
		return ts, fmt.Errorf("reading the settings of %s: %w", capture, err)
	}
	return ts, nil
}

// writeTrace saves the scenario's connection as DIR/<folder>-<n>.pcapng,
// with its settings in DIR/<folder>-<n>.json.
func writeTrace(id string, conn dut.Conn, st harness.Settings) {
	w, ok := conn.(pcapngWriter)
	if !ok {
		return
	}
	mu.Lock()
	traceSeq++
	n := traceSeq
	mu.Unlock()
	if err := os.MkdirAll(Cfg.TraceDir, 0o755); err != nil {
		ginkgo.Fail(fmt.Sprintf("creating the trace folder: %v", err))
	}
	name := filepath.Join(Cfg.TraceDir, fmt.Sprintf("%s-%03d.pcapng", catalog.Folder(id), n))
	f, err := os.Create(name)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("writing the scenario's capture: %v", err))
	}
	defer f.Close()
	if err := w.WritePcapng(f); err != nil {
		ginkgo.Fail(fmt.Sprintf("writing the scenario's capture %s: %v", name, err))
	}
	ts := TraceSettings{Clause: id, MTU: st.MTU, SRQ: st.SRQ == harness.SRQAll, AckTimeout: st.AckTimeout,
		RetryCnt: st.RetryCnt, RNRRetry: st.RNRRetry, DeviceIsRequester: st.DeviceIsRequester}
	b, _ := json.MarshalIndent(ts, "", "  ")
	if err := os.WriteFile(strings.TrimSuffix(name, ".pcapng")+".json", b, 0o644); err != nil {
		ginkgo.Fail(fmt.Sprintf("writing the scenario's settings: %v", err))
	}
}
