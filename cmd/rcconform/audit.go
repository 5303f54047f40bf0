package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rcconform/rcconform/cmd/rcconform/internal/gctune"
	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/reports/annotate"
	_ "github.com/rcconform/rcconform/rules" // registers every passive monitor
	"github.com/rcconform/rcconform/rules/catalog"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// Reasons given in clause results.
const (
	reasonNoMonitor       = "checked only by active scenarios"
	reasonTextUnavailable = "the clause's text is not public; nothing is checked under it"
	reasonNotExercised    = "nothing in the capture gave the clause a chance to apply"
)

const auditSynopsis = "[flags] CAPTURE..."

// auditOptions are the audit's flags.
type auditOptions struct {
	format, out, rules string
	cpuProfile         string
	memProfile         string
	cfg                rulekit.Config
	maxFindings        int
	jobs               int
	shardFlag          string
	shard, shards      int // --shard=I/N (shards 0: judge every connection)
	icrcFlag           string
	icrc               pcapdut.ICRCMode
	annotate           string // --annotate: the pcapng file to write
}

func runAudit(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit", auditSynopsis, stderr)
	var o auditOptions
	o.cfg = rulekit.Config{SRQ: "unknown"}
	fs.StringVar(&o.format, "format", "text", "output format: text, json or junit")
	fs.StringVar(&o.out, "out", "", "write the report to `FILE` instead of standard output")
	fs.StringVar(&o.rules, "rules", "", "audit only these clauses: comma-separated rule `IDs` (as \"rcconform rules\" lists them)")
	fs.StringVar(&o.cfg.SRQ, "srq", "unknown", "whether the responder QPs use a shared receive queue: none, all or unknown")
	fs.IntVar(&o.cfg.MTU, "mtu", 0, "path MTU of the connections: 256, 512, 1024, 2048 or 4096 (0: unknown)")
	fs.IntVar(&o.cfg.AckTimeout, "ack-timeout", -1, "requesters' local ACK timeout exponent, 0-31 (-1: unknown)")
	fs.IntVar(&o.cfg.RetryCnt, "retry-cnt", -1, "requesters' transport retry count, 0-7 (-1: unknown)")
	fs.IntVar(&o.cfg.RNRRetry, "rnr-retry", -1, "requesters' RNR retry count, 0-7 (-1: unknown)")
	fs.BoolVar(&o.cfg.Complete, "complete", false, "the capture holds every connection from its first packet, taken where nothing is lost before the capture point")
	fs.IntVar(&o.maxFindings, "max-findings", 50, "findings kept per clause and capture (0: all); violations beyond are still counted")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "captures audited at once; the cores are shared among them, each capture's connections judged on several cores")
	fs.StringVar(&o.shardFlag, "shard", "", "judge only the connections whose hash falls in shard `I/N` (0 <= I < N; every capture is still read whole); merge the N results with `rcconform report --merge`")
	fs.StringVar(&o.icrcFlag, "icrc", "auto", "frames whose ICRC does not match: check (left out, as their receivers dropped them), ignore (judged: the capture does not hold the wire's ICRCs, rewritten addresses say) or auto (check, unless no frame's ICRC is good while RC requests and responses went on)")
	fs.StringVar(&o.annotate, "annotate", "", "also write the captures to the pcapng `FILE`, with a comment on each frame that carries a finding or an undecided instance (up to --max-findings per clause) and on each connection's first frame")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the audit to `FILE` (read it with go tool pprof)")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile, taken at the end of the audit, to `FILE`")
	captures, err := parseFlags(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	only, err := o.check(captures)
	if err != nil {
		fs.Usage()
		return usageErr(stderr, "audit", err)
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return usageErr(stderr, "audit", err)
		}
		defer stop()
	}

	progress := newProgress(stderr)
	if o.jobs > 1 && len(captures) > 1 {
		progress = newProgress(io.Discard) // bars of captures read at once would mix
	}
	res := &reports.Result{Kind: reports.KindAudit, DUT: "pcap", Captures: []reports.CaptureInfo{},
		Clauses: []reports.ClauseResult{}, Findings: []reports.Finding{}, Run: reports.NewRun(nil, o.settings())}
	if o.shards > 0 {
		res.Shard = &reports.ShardInfo{Index: o.shard, Count: o.shards, MaxFindings: o.maxFindings}
	}
	status := exitOK
	gctune.Start() // fewer collections, memory bounded (see the package)
	audits := o.auditAll(captures, only, progress)
	if o.memProfile != "" {
		if err := writeHeapProfile(o.memProfile, audits); err != nil {
			fmt.Fprintf(stderr, "rcconform audit: %v\n", err)
		}
	}
	var annotated []annotate.Capture
	for i, path := range captures {
		au := audits[i]
		if o.annotate != "" && (au.err == nil || au.info.Frames > 0) {
			annotated = append(annotated, annotate.Capture{Path: path, Findings: au.sink.Findings,
				Connections: au.info.Connections, Undecided: au.undecided})
		}
		res.Connections = append(res.Connections, au.info.Connections...)
		au.info.Connections = nil
		res.Captures = append(res.Captures, au.info)
		if au.err != nil {
			fmt.Fprintf(stderr, "rcconform audit: %v\n", au.err)
			var pe *pcapdut.PanicError
			if errors.As(au.err, &pe) {
				fmt.Fprintf(stderr, "%s\n", pe.Stack)
			}
			status = exitUsage
			if au.info.Frames == 0 {
				continue // nothing was read: no verdicts for this capture
			}
		}
		res.Clauses = append(res.Clauses, clauseResults(path, au.sink, only, o.shards > 0)...)
		res.Findings = append(res.Findings, au.findings()...)
	}
	res.Sort()
	if status == exitOK && res.Failed() {
		status = exitViolation
	}

	var buf bytes.Buffer
	switch o.format {
	case "json":
		err = res.WriteJSON(&buf)
	case "junit":
		err = reports.WriteJUnit(&buf, res, "rcconform audit")
	default:
		err = writeText(&buf, res)
	}
	if err == nil {
		err = writeOut(o.out, stdout, buf.Bytes())
	}
	if err != nil {
		fmt.Fprintf(stderr, "rcconform audit: %v\n", err)
		return exitUsage
	}
	if o.annotate != "" {
		comment := fmt.Sprintf("rcconform audit (%s, %s) of %s: the frames of each capture follow those of the one before",
			res.Run.Suite, res.Run.Date, strings.Join(captures, ", "))
		if err := annotate.Write(o.annotate, comment, annotated, res.Clauses); err != nil {
			fmt.Fprintf(stderr, "rcconform audit: %v\n", err)
			return exitUsage
		}
	}
	return status
}

// settings are the settings the audit's result records: those that
// decide verdicts (not --jobs, nor --shard, which leave them as they are).
func (o *auditOptions) settings() map[string]string {
	m := map[string]string{"srq": o.cfg.SRQ, "mtu": strconv.Itoa(o.cfg.MTU), "ack-timeout": strconv.Itoa(o.cfg.AckTimeout),
		"retry-cnt": strconv.Itoa(o.cfg.RetryCnt), "rnr-retry": strconv.Itoa(o.cfg.RNRRetry),
		"complete": strconv.FormatBool(o.cfg.Complete), "icrc": o.icrcFlag, "max-findings": strconv.Itoa(o.maxFindings)}
	if o.rules != "" {
		m["rules"] = o.rules
	}
	return m
}

// check validates the options and returns the clauses --rules selects
// (nil: all).
func (o *auditOptions) check(captures []string) (map[string]bool, error) {
	if err := checkFormat(o.format, "text", "json", "junit"); err != nil {
		return nil, err
	}
	if len(captures) == 0 {
		return nil, errors.New("no capture given")
	}
	switch o.cfg.SRQ {
	case "none", "all", "unknown":
	default:
		return nil, fmt.Errorf("unknown --srq %q (want none, all or unknown)", o.cfg.SRQ)
	}
	if o.cfg.MTU != 0 && !wire.ValidMTU(o.cfg.MTU) {
		return nil, fmt.Errorf("--mtu %d is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)", o.cfg.MTU)
	}
	if o.cfg.AckTimeout < -1 || o.cfg.AckTimeout > 31 {
		return nil, fmt.Errorf("--ack-timeout %d is out of range (0-31, or -1 for unknown)", o.cfg.AckTimeout)
	}
	if o.cfg.RetryCnt < -1 || o.cfg.RetryCnt > 7 {
		return nil, fmt.Errorf("--retry-cnt %d is out of range (0-7, or -1 for unknown)", o.cfg.RetryCnt)
	}
	if o.cfg.RNRRetry < -1 || o.cfg.RNRRetry > 7 {
		return nil, fmt.Errorf("--rnr-retry %d is out of range (0-7, or -1 for unknown)", o.cfg.RNRRetry)
	}
	if o.jobs < 1 {
		return nil, fmt.Errorf("--jobs %d: at least one capture must be audited at a time", o.jobs)
	}
	mode, err := pcapdut.ParseICRCMode(o.icrcFlag)
	if err != nil {
		return nil, fmt.Errorf("--icrc: %w", err)
	}
	o.icrc = mode
	if o.shardFlag != "" {
		i, n, err := parseShard(o.shardFlag)
		if err != nil {
			return nil, err
		}
		o.shard, o.shards = i, n
	}
	if o.annotate != "" && o.shardFlag != "" {
		return nil, errors.New("--annotate needs the whole audit: it cannot be given with --shard")
	}
	if o.maxFindings < 0 {
		return nil, fmt.Errorf("--max-findings %d is negative (0 keeps every finding)", o.maxFindings)
	}
	if o.rules == "" {
		return nil, nil
	}
	only := map[string]bool{}
	for _, id := range strings.Split(o.rules, ",") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		if _, ok := catalog.Lookup(id); !ok {
			return nil, fmt.Errorf("unknown rule ID %q in --rules (run `rcconform rules` for the list)", id)
		}
		only[id] = true
	}
	if len(only) == 0 {
		return nil, errors.New("--rules names no rule")
	}
	return only, nil
}

// clauseResults turns one capture's tallies into a result per clause, in
// catalogue order: text-unavailable clauses as such, clauses without a
// passive monitor as unsupported, and the others from their tally.
//
// With shard set, an indeterminate clause also carries where its reason
// was given (ReasonAt), for report --merge.
func clauseResults(capture string, sink *harness.Sink, only map[string]bool, shard bool) []reports.ClauseResult {
	monitored := map[string]bool{}
	for _, m := range harness.Monitors() {
		monitored[m.Clause] = true
	}
	var out []reports.ClauseResult
	for _, e := range catalog.All() {
		if only != nil && !only[e.ID] {
			continue
		}
		c := reports.ClauseResult{ID: e.ID, Section: e.Section, Side: string(e.Side), Level: string(e.Level),
			Summary: e.Summary, Capture: capture}
		switch {
		case e.Status == catalog.TextUnavailable:
			c.Verdict, c.Reason = reports.TextUnavailable, reasonTextUnavailable
		case !monitored[e.ID]:
			c.Verdict, c.Reason = reports.Unsupported, reasonNoMonitor
		default:
			t := sink.Tally(e.ID)
			c.Verdict = t.Verdict()
			if t != nil {
				c.Checked, c.Violations, c.Undecided, c.Open = t.Checked, t.Violations, t.Indeterminate, t.Open
				c.UndecidedKinds = slices.Clone(t.Kinds)
				if !shard {
					for i := range c.UndecidedKinds {
						c.UndecidedKinds[i].At = 0
					}
				}
				if c.Verdict == reports.Indeterminate {
					c.Reason = t.Reason
					if shard {
						c.ReasonAt = t.ReasonAt
					}
				}
			}
			if c.Verdict == reports.NotExercised {
				c.Reason = reasonNotExercised
			}
		}
		out = append(out, c)
	}
	return out
}

// writeOut writes b to the file out, or to stdout when out is "" or "-".
func writeOut(out string, stdout io.Writer, b []byte) error {
	if out == "" || out == "-" {
		if _, err := stdout.Write(b); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// parseShard parses --shard's I/N.
func parseShard(v string) (i, n int, err error) {
	a, b, ok := strings.Cut(v, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 <= I < N (for example 0/4)", v)
	}
	return i, n, nil
}

// captureAudit is what auditing one capture gave.
type captureAudit struct {
	info reports.CaptureInfo
	err  error
	sink *harness.Sink
	at   []int64 // the position of each finding (sharded audits only)
	// undecided collects the undecided instances for --annotate.
	undecided *annotate.Undecided
	keep      any // the auditor, alive for --memprofile
}

// findings returns the capture's findings, with their positions in a
// shard's result.
func (c *captureAudit) findings() []reports.Finding {
	if c.at == nil {
		return c.sink.Findings
	}
	out := append([]reports.Finding(nil), c.sink.Findings...)
	for i := range out {
		out[i].At = c.at[i]
	}
	return out
}

// auditAll audits the captures, o.jobs at a time, and returns what each
// gave, in the order given: the report is the same whatever the jobs.
// The cores (GOMAXPROCS) are shared among the captures audited at once,
// each judging its connections on its share.
func (o *auditOptions) auditAll(captures []string, only map[string]bool, progress *progress) []*captureAudit {
	out := make([]*captureAudit, len(captures))
	jobs := min(o.jobs, len(captures))
	workers := max(1, runtime.GOMAXPROCS(0)/jobs)
	next := make(chan int)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = o.auditOne(captures[i], only, workers, progress)
			}
		}()
	}
	for i := range captures {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// auditOne audits one capture with workers goroutines judging its
// connections: a single Auditor when workers is 1 and every connection is
// judged, else a ShardedAuditor (whose results are the same).
func (o *auditOptions) auditOne(path string, only map[string]bool, workers int, progress *progress) *captureAudit {
	settings := rulekit.CaptureSettings(o.cfg)
	sink := harness.NewSink(path)
	sink.Text = rulekit.ClauseText
	sink.MaxFindings = o.maxFindings
	c := &captureAudit{sink: sink}
	if o.annotate != "" {
		c.undecided = &annotate.Undecided{Max: o.maxFindings}
		sink.Undecided = c.undecided.Add
	}
	var obs pcapdut.Observer
	var sharded *harness.ShardedAuditor
	if workers == 1 && o.shards == 0 {
		a := harness.NewAuditor(settings, sink)
		if only != nil {
			a.Only = only
		}
		obs = a
	} else {
		sharded = harness.NewShardedAuditor(settings, sink, workers)
		if only != nil {
			sharded.Only = only
		}
		sharded.Shard, sharded.Shards = o.shard, o.shards
		obs = sharded
	}
	c.info, c.err = pcapdut.AuditFileOptions(path, obs, progress.forCapture(path), pcapdut.Options{ICRC: o.icrc})
	progress.done()
	if sharded != nil && o.shards > 0 {
		c.at = sharded.FindingsAt()
	}
	c.keep = obs
	return c
}
