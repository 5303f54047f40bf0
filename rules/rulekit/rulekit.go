// Package rulekit is the wrapper every rule's spec file registers
// through. It adds the rule's labels (rule:ID, side:…, level:…), checks
// before anything runs that the catalogue and the spec files match one to
// one, turns the adapter's capabilities into "unsupported" verdicts,
// audits every trace an active spec produces with every passive monitor,
// runs each monitor over a capture in capture mode, and collects the
// per-clause verdicts that the suite writes as JSON and as JUnit keyed to
// clause IDs.
package rulekit

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/catalog"
)

// Config is the suite's configuration, from the flags after `--`.
type Config struct {
	DUT      string
	Device   string // live DUT: the device's RoCEv2 address
	Agent    string // live DUT: the control agent, HOST:PORT
	Sim      string // sim DUT: the simulator's command
	Defect   string
	Capture  string
	Seed     int64
	JUnit    string
	JSON     string
	Settings string // comma-separated key=value adapter settings
	// Known connection settings for capture audits.
	SRQ        string
	MTU        int
	AckTimeout int
	RetryCnt   int
	RNRRetry   int
	Complete   bool
	// Partial lets the suite run while catalogue entries still lack spec
	// files (development of a rule group only).
	Partial bool
	// TraceDir, when set, receives a pcapng capture of every active
	// scenario's link (for adapters that can write one: the reference)
	// with its settings, which the defect matrix and the metamorphic
	// tests audit as captures.
	TraceDir string
	// Traces, when set, receives every scenario's trace as an annotated
	// pcapng file (its steps, expectations and findings as comments).
	Traces string
	// Scripts is the folder of scenario scripts the suite runs, each as
	// a spec (DefaultScripts: the project's examples, when present).
	Scripts string
}

// DefaultScripts is the suite's scripts folder unless --scripts names
// another: rules/scripts, relative to the suite's folder.
const DefaultScripts = "scripts"

// Cfg holds the parsed flags.
var Cfg = Config{DUT: "reference", Seed: 1, Scripts: DefaultScripts, AckTimeout: -1, RetryCnt: -1, RNRRetry: -1, SRQ: "unknown"}

// RegisterFlags adds the suite's flags to fs (the test binary's flags).
func RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&Cfg.DUT, "dut", Cfg.DUT, "device adapter: "+strings.Join(dut.Names(), ", "))
	fs.StringVar(&Cfg.Device, "device", "", "live DUT: the device's RoCEv2 address, IP or IP:port")
	fs.StringVar(&Cfg.Agent, "agent", "", "live DUT: the control agent on the device's host, HOST:PORT")
	fs.StringVar(&Cfg.Sim, "sim", "", "sim DUT: the simulator's command, run with sh -c (see dut/sim/PROTOCOL.md)")
	fs.StringVar(&Cfg.Defect, "defect", "", "reference DUT: the defect to switch on (see `rcconform defects`)")
	fs.StringVar(&Cfg.Capture, "capture", "", "pcap DUT: the capture file to audit")
	fs.Int64Var(&Cfg.Seed, "seed", Cfg.Seed, "seed for PSNs, QPNs and impairments; failures print it")
	fs.StringVar(&Cfg.JUnit, "junit", "", "write JUnit keyed to clause IDs to this file")
	fs.StringVar(&Cfg.JSON, "json", "", "write the JSON result to this file")
	fs.StringVar(&Cfg.Settings, "settings", "", "adapter settings, key=value,key=value")
	fs.StringVar(&Cfg.SRQ, "srq", Cfg.SRQ, "capture audit: none|all|unknown")
	fs.IntVar(&Cfg.MTU, "mtu", 0, "capture audit: path MTU (0 unknown)")
	fs.IntVar(&Cfg.AckTimeout, "ack-timeout", -1, "capture audit: local ACK timeout exponent (-1 unknown)")
	fs.IntVar(&Cfg.RetryCnt, "retry-cnt", -1, "capture audit: transport retry count (-1 unknown)")
	fs.IntVar(&Cfg.RNRRetry, "rnr-retry", -1, "capture audit: RNR retry count (-1 unknown)")
	fs.StringVar(&Cfg.TraceDir, "trace-dir", "", "development: write what crossed each reference scenario's link (no comments) and its settings into this folder, for the project's tests; see --traces")
	fs.StringVar(&Cfg.Traces, "traces", "", "save every scenario's trace into this folder as one pcapng file, its steps, expectations and findings as packet comments")
	fs.StringVar(&Cfg.Scripts, "scripts", Cfg.Scripts, "run every scenario script (*.rcs) under this folder as a spec (\"\": none)")
	fs.BoolVar(&Cfg.Partial, "partial", false, "development only: run even if some catalogue entries have no spec file yet")
	fs.BoolVar(&Cfg.Complete, "complete", false, "capture audit: the capture holds every connection from its first packet, taken where nothing is lost before the capture point")
}

// ParseSettings splits "a=b,c=d".
func ParseSettings(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// RunSettings are the settings c gives a run, for its certificate: the
// adapter and seed, the flags given, each adapter setting (a token's
// value left out), the capture audit's settings for a capture, and
// Ginkgo's label filter and focus when set.
func RunSettings(c Config) map[string]string {
	m := map[string]string{"dut": c.DUT, "seed": strconv.FormatInt(c.Seed, 10)}
	for k, v := range map[string]string{"defect": c.Defect, "device": c.Device, "agent": c.Agent, "capture": c.Capture} {
		if v != "" {
			m[k] = v
		}
	}
	for k, v := range ParseSettings(c.Settings) {
		if k == "token" {
			v = "(given, not recorded)"
		}
		m["setting."+k] = v
	}
	if c.Capture != "" {
		m["srq"], m["mtu"], m["complete"] = c.SRQ, strconv.Itoa(c.MTU), strconv.FormatBool(c.Complete)
		m["ack-timeout"], m["retry-cnt"], m["rnr-retry"] = strconv.Itoa(c.AckTimeout), strconv.Itoa(c.RetryCnt), strconv.Itoa(c.RNRRetry)
	}
	sc, _ := ginkgo.GinkgoConfiguration()
	if sc.LabelFilter != "" {
		m["label-filter"] = sc.LabelFilter
	}
	if len(sc.FocusStrings) > 0 {
		m["focus"] = strings.Join(sc.FocusStrings, " | ")
	}
	return m
}

// CaptureSettings turns the flags into audit settings.
func CaptureSettings(c Config) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU = c.MTU
	switch c.SRQ {
	case "none":
		s.SRQ = harness.SRQNone
	case "all":
		s.SRQ = harness.SRQAll
	}
	s.AckTimeout, s.RetryCnt, s.RNRRetry = c.AckTimeout, c.RetryCnt, c.RNRRetry
	s.Complete = c.Complete
	return s
}

// Auditable is implemented by capture adapters: Audit runs the auditor
// over every record of the capture in one pass.
type Auditable interface {
	Audit(a *harness.Auditor) (reports.CaptureInfo, error)
}

type registration struct {
	entry catalog.Entry
	file  string
}

type clauseAcc struct {
	checked, violations, indeterminate int
	unsupported, reasons               []string
	checks                             []string
	ran                                bool
	textUnavailable                    bool
	// captureNotExercised: the clause's monitor ran over the capture and
	// nothing in it applied.
	captureNotExercised bool
	// undecided counts the instances the passive monitors left
	// indeterminate over the active scenarios' traces.
	passiveUndecided int
	// kinds shows every undecided instance (active scenarios' and the
	// passive monitors'), grouped by the kind of its reason.
	kinds reports.ClauseResult
	// notExercised: scenarios whose trigger the device did not take, each
	// with what it did instead.
	notExercised []string
	// elsewhere: findings of this clause from other specs (passive
	// monitors over every trace, other scenarios' setup steps), reported
	// by the clause's "findings from every scenario's trace" spec.
	elsewhere []reports.Finding
	// pending counts the violations behind elsewhere (a monitor may
	// count more than it keeps findings of) until that spec reports them.
	pending int
}

var (
	mu       sync.Mutex
	regs     = map[string]registration{}
	regOrder []string
	regErrs  []string
	acc      = map[string]*clauseAcc{}
	findings []reports.Finding
	// activeRan: at least one active scenario ran (its trace audited).
	activeRan bool
	// broken: the adapter lost its device (dut.ErrBroken); the suite
	// stopped there.
	broken error

	env struct {
		dut      dut.DUT
		caps     dut.Capabilities
		err      error
		capSink  *harness.Sink
		capInfo  reports.CaptureInfo
		captured bool
	}
)

func accFor(id string) *clauseAcc {
	a := acc[id]
	if a == nil {
		a = &clauseAcc{}
		acc[id] = a
	}
	return a
}

// Rule registers the specs of clause id. Call it once per clause, from
// the clause's spec file in rules/<folder>/, as
//
//	var _ = rulekit.Rule("C9-95", func(r *rulekit.R) { r.Active(...) })
func Rule(id string, body func(r *R)) bool {
	e, ok := catalog.Lookup(id)
	_, file, _, _ := runtime.Caller(1)
	mu.Lock()
	if !ok {
		regErrs = append(regErrs, fmt.Sprintf("%s registers %q, which is not in the catalogue", file, id))
		mu.Unlock()
		return false
	}
	if prev, dup := regs[id]; dup {
		regErrs = append(regErrs, fmt.Sprintf("%q registered twice: %s and %s", id, prev.file, file))
	}
	want := catalog.Folder(id)
	if filepath.Base(filepath.Dir(file)) != want {
		regErrs = append(regErrs, fmt.Sprintf("%q is registered from %s; its spec file belongs in rules/%s/", id, file, want))
	}
	regs[id] = registration{entry: e, file: file}
	regOrder = append(regOrder, id)
	mu.Unlock()

	labels := ginkgo.Label(catalog.Label(id), "side:"+string(e.Side), "level:"+string(e.Level))
	ginkgo.Describe(id+" "+e.Summary, labels, func() {
		r := &R{Entry: e}
		if e.Status == catalog.TextUnavailable {
			ginkgo.It("is reported text-unavailable: its text is not public, so nothing is checked", func() {
				mu.Lock()
				a := accFor(id)
				a.ran, a.textUnavailable = true, true
				mu.Unlock()
				ginkgo.Skip("text-unavailable: the text of " + id + " is not public; rcconform checks nothing under it")
			})
			return
		}
		ginkgo.It("passive monitor over the capture", func() { r.auditCapture() })
		body(r)
	})
	if e.Status != catalog.TextUnavailable {
		// The clause's findings from every scenario's trace (its
		// monitor's, and other scenarios' setup steps it governs): a spec
		// in its own top-level container, so that its priority orders it
		// after every active spec, with or without --randomize-all
		// (Ginkgo shuffles top-level containers, or specs, then sorts
		// them stably by priority). Serial would keep it on process 1
		// after the others finished, but Setup refuses -p: the findings
		// live in the process that ran the scenario.
		ginkgo.Describe(id+" "+e.Summary, labels, ginkgo.SpecPriority(-1), ginkgo.Serial, func() {
			r := &R{Entry: e}
			ginkgo.It("findings from every scenario's trace", func() { r.reportElsewhere() })
		})
	}
	return true
}

// CheckRegistry returns an error unless every catalogue entry has exactly
// one spec registration and every registration a catalogue entry.
func CheckRegistry() error {
	mu.Lock()
	defer mu.Unlock()
	var problems []string
	problems = append(problems, regErrs...)
	for _, e := range catalog.All() {
		if _, ok := regs[e.ID]; !ok {
			problems = append(problems, fmt.Sprintf("catalogue entry %q has no spec file (rules/%s/)", e.ID, catalog.Folder(e.ID)))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("catalogue and spec files do not match:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// Setup builds the DUT from the flags; the suite calls it in BeforeSuite.
// Where it fails, the run's result still gets written (ReportAfterSuite),
// and every clause in it says the run stopped, and why.
//
// It refuses Ginkgo's -p: the clause-keyed verdicts, and each clause's
// spec reporting its monitor's findings over every scenario's trace, need
// every scenario's outcome in one process (the whole suite takes seconds
// against the reference). Under -p each process would hold only its share
// and the report written by process 1 would be incomplete.
func Setup() error {
	err := setup()
	if err != nil {
		mu.Lock()
		if broken == nil {
			broken = fmt.Errorf("setting up the run: %w", err)
		}
		mu.Unlock()
	}
	return err
}

func setup() error {
	if sc, _ := ginkgo.GinkgoConfiguration(); sc.ParallelTotal > 1 {
		return fmt.Errorf("the rule suite runs in one process: run it without -p (%d processes asked for); clause verdicts gather every scenario of the run", sc.ParallelTotal)
	}
	if err := CheckRegistry(); err != nil && !Cfg.Partial {
		return err
	}
	if Cfg.Traces != "" {
		if err := checkTraces(Cfg.Traces); err != nil {
			return err
		}
	}
	settings := ParseSettings(Cfg.Settings)
	if Cfg.Device != "" {
		settings["device"] = Cfg.Device
	}
	if Cfg.Agent != "" {
		settings["agent"] = Cfg.Agent
	}
	if Cfg.Sim != "" {
		settings["sim"] = Cfg.Sim
	}
	d, err := dut.New(Cfg.DUT, dut.Options{Defect: Cfg.Defect, Capture: Cfg.Capture, Seed: Cfg.Seed,
		Settings: settings})
	if err != nil {
		return err
	}
	env.dut, env.caps = d, d.Capabilities()
	if env.caps.Capture {
		au, ok := d.(Auditable)
		if !ok {
			return fmt.Errorf("adapter %q replays a capture but cannot audit it", Cfg.DUT)
		}
		sink := harness.NewSink(Cfg.Capture)
		sink.Text = ClauseText
		a := harness.NewAuditor(CaptureSettings(Cfg), sink)
		info, err := au.Audit(a)
		env.capSink, env.capInfo, env.captured = sink, info, true
		if err != nil {
			return fmt.Errorf("auditing %s: %w", Cfg.Capture, err)
		}
	}
	return nil
}

// ClauseText returns the clause in our words (for findings).
func ClauseText(id string) string {
	if e, ok := catalog.Lookup(id); ok {
		return e.Text
	}
	return ""
}

// DUT returns the adapter the suite runs against.
func DUT() dut.DUT { return env.dut }

// Result builds the run's result from every clause's outcome.
func Result() *reports.Result {
	mu.Lock()
	defer mu.Unlock()
	res := &reports.Result{Kind: reports.KindSuite, DUT: Cfg.DUT, Defect: Cfg.Defect, Seed: Cfg.Seed,
		Captures: []reports.CaptureInfo{}, Findings: append([]reports.Finding{}, findings...)}
	if env.captured {
		res.Captures = append(res.Captures, env.capInfo)
	}
	if e, ok := env.dut.(interface{ Environment() map[string]string }); ok {
		res.Environment = e.Environment()
	}
	var declared map[string]string
	if d, ok := env.dut.(interface{ Declared() map[string]string }); ok {
		declared = d.Declared()
	}
	res.Run = reports.NewRun(declared, RunSettings(Cfg))
	for _, e := range catalog.All() {
		a := acc[e.ID]
		c := reports.ClauseResult{ID: e.ID, Section: e.Section, Side: string(e.Side), Level: string(e.Level), Summary: e.Summary}
		switch {
		case e.Status == catalog.TextUnavailable:
			c.Verdict, c.Reason = reports.TextUnavailable, "the clause's text is not public; nothing is checked under it"
		case (a == nil || !a.ran) && broken != nil:
			c.Verdict, c.Reason = reports.NotExercised, "the run stopped before this clause: "+broken.Error()
		case a == nil || !a.ran:
			c.Verdict, c.Reason = reports.NotExercised, "no spec of this clause ran (filtered out, or none applies)"
		default:
			c.Checked, c.Violations, c.Checks = a.checked, a.violations, a.checks
			c.Undecided = a.indeterminate + a.passiveUndecided
			c.UndecidedKinds = a.kinds.UndecidedKinds
			switch {
			case a.violations > 0:
				c.Verdict = reports.Fail
			case a.checked > 0:
				c.Verdict = reports.Pass
				if u := uniq(append(append([]string{}, a.reasons...), a.notExercised...)); len(u) > 0 {
					c.Reason = fmt.Sprintf("undecided in %d scenario(s): %s", a.indeterminate+len(a.notExercised), strings.Join(u, "; "))
				}
			case a.indeterminate > 0:
				c.Verdict, c.Reason = reports.Indeterminate, strings.Join(uniq(a.reasons), "; ")
			case len(a.notExercised) > 0:
				c.Verdict, c.Reason = reports.NotExercised, strings.Join(uniq(a.notExercised), "; ")
			case a.captureNotExercised:
				c.Verdict, c.Reason = reports.NotExercised, strings.Join(uniq(a.reasons), "; ")
			case len(a.unsupported) > 0:
				c.Verdict, c.Reason = reports.Unsupported, strings.Join(uniq(a.unsupported), "; ")
			default:
				c.Verdict, c.Reason = reports.NotExercised, strings.Join(uniq(a.reasons), "; ")
			}
		}
		res.Clauses = append(res.Clauses, c)
	}
	return res
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// WriteReports writes the JSON and JUnit files the flags ask for, and
// then returns the first error in saving a scenario's trace (--traces).
func WriteReports() error {
	res := Result()
	if Cfg.JSON != "" {
		if err := writeFile(Cfg.JSON, func(f *os.File) error { return res.WriteJSON(f) }); err != nil {
			return err
		}
	}
	if Cfg.JUnit != "" {
		if err := writeFile(Cfg.JUnit, func(f *os.File) error { return reports.WriteJUnit(f, res, "rcconform") }); err != nil {
			return err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if traces.err != nil {
		return fmt.Errorf("saving the scenarios' traces (--traces): %w", traces.err)
	}
	return nil
}

func writeFile(name string, w func(*os.File) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := w(f); err != nil {
		f.Close()
		return fmt.Errorf("writing report %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing report %s: %w", name, err)
	}
	return nil
}
