package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Verdict is the outcome of one clause in one run (or, for audits of several
// captures, in one capture).
type Verdict string

// The verdicts, in the order reports list them.
const (
	// Pass: the clause was exercised and nothing violated it.
	Pass Verdict = "pass"
	// Fail: at least one observed behaviour violates the clause.
	Fail Verdict = "fail"
	// NotExercised: nothing in the run gave the clause a chance to apply.
	NotExercised Verdict = "not-exercised"
	// Indeterminate: the clause applied, but what was seen cannot decide it
	// (the connection began before the capture, a setting is unknown, ...).
	Indeterminate Verdict = "indeterminate"
	// Unsupported: the DUT adapter lacks a capability the check needs (a
	// capture cannot be sent packets, a device without atomics, ...).
	Unsupported Verdict = "unsupported"
	// TextUnavailable: the clause is catalogued but its text could not be
	// checked against, so no check is made.
	TextUnavailable Verdict = "text-unavailable"
)

// Verdicts lists every verdict in the order reports show them.
var Verdicts = []Verdict{Pass, Fail, NotExercised, Indeterminate, Unsupported, TextUnavailable}

// Valid reports whether v is one of [Verdicts].
func (v Verdict) Valid() bool {
	for _, known := range Verdicts {
		if v == known {
			return true
		}
	}
	return false
}

// Result kinds.
const (
	KindSuite = "suite" // the rule suite run against a DUT
	KindAudit = "audit" // passive monitors run over captures
)

// Rung directions.
const (
	DirReqToRsp = "req>rsp" // requester to responder
	DirRspToReq = "rsp>req" // responder to requester
)

// Result is everything one run found. JSON is its source of truth.
type Result struct {
	Kind   string `json:"kind"`             // KindSuite or KindAudit
	DUT    string `json:"dut,omitempty"`    // "reference", "pcap", "live"
	Defect string `json:"defect,omitempty"` // the reference defect switched on, if any
	Seed   int64  `json:"seed,omitempty"`
	// Environment describes how the DUT was reached (for a live device:
	// which sockets sent and received).
	Environment map[string]string `json:"environment,omitempty"`
	// Captures is always present in the JSON (an empty list for suite runs).
	Captures []CaptureInfo  `json:"captures"`
	Clauses  []ClauseResult `json:"clauses"`
	Findings []Finding      `json:"findings"`
	// Connections lists the RC connections an audit found (omitted when
	// there are none, as in suite runs).
	Connections []Connection `json:"connections,omitempty"`
	// Shard is set on the result of an audit that judged only a share of
	// the connections (`audit --shard=I/N`); see Merge.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Run is the run's certificate: suite, date, what the DUT declared,
	// settings (results written before it existed have none).
	Run *Run `json:"run,omitempty"`
}

// CaptureInfo describes one capture an audit read.
type CaptureInfo struct {
	File string `json:"file"`
	// SHA256 is the SHA-256 of the file, in hex (what sha256sum prints):
	// which bytes were judged, for the run's certificate.
	SHA256     string   `json:"sha256,omitempty"`
	Format     string   `json:"format,omitempty"` // "pcap", "pcapng"
	Frames     int      `json:"frames"`
	RoCEFrames int      `json:"roce_frames"`
	Skipped    int      `json:"skipped"`
	BadICRC    int      `json:"bad_icrc"`
	Truncated  int      `json:"truncated"`
	Errors     []string `json:"errors,omitempty"`
	// Notes are remarks on the capture that are not errors: a flag that
	// contradicts the connection manager's handshake, CRCs the capture
	// does not hold.
	Notes []string `json:"notes,omitempty"`
	// Connections are the connections the audit found in this capture;
	// the command moves them into Result.Connections.
	Connections []Connection `json:"-"`
}

// ClauseResult is the verdict on one clause (for audits of several captures,
// one ClauseResult per clause per capture).
type ClauseResult struct {
	ID         string  `json:"id"`
	Section    string  `json:"section"`
	Side       string  `json:"side"`  // "requester", "responder", "both"
	Level      string  `json:"level"` // "mandatory", "optional"
	Summary    string  `json:"summary"`
	Verdict    Verdict `json:"verdict"`
	Checked    int     `json:"checked"`
	Violations int     `json:"violations"`
	// Undecided counts the instances the clause applied to that the run
	// could not decide (each left indeterminate with a reason), whatever
	// the verdict: a pass with doubt reads "pass, 12 undecided". Results
	// written before the field existed read as 0.
	Undecided int `json:"undecided"`
	// Open counts those undecided instances that keep the clause from
	// passing (a violation remains as possible as a legal explanation):
	// a clause with open instances and no violation is indeterminate
	// however many instances passed. report --merge needs it to decide
	// as a single run would.
	Open int `json:"open,omitempty"`
	// UndecidedKinds shows every undecided instance: grouped by the kind
	// of their reason (ReasonKind), each kind with its count and its
	// first instance, in order of first appearance. The counts add up
	// to Undecided (results written before the field existed have none).
	UndecidedKinds []UndecidedKind `json:"undecided_kinds,omitempty"`
	// Reason says why the clause was not exercised, unsupported,
	// indeterminate or its text unavailable.
	Reason  string `json:"reason,omitempty"`
	Capture string `json:"capture,omitempty"`
	// Checks names what was checked (scenario names).
	Checks []string `json:"checks,omitempty"`
	// ReasonAt, in a shard's result only, is where in the capture the
	// reason of an indeterminate verdict was first given (see
	// Finding.At), so that Merge keeps the reason a single run would.
	ReasonAt int64 `json:"reason_at,omitempty"`
	// Evidence is, for every verdict but pass, why in one line (see
	// Result.Evidence). It is derived: the JSON carries it, ReadJSON
	// leaves it out, and renderers compute it.
	Evidence string `json:"evidence,omitempty"`
}

// Finding is one violation of a clause.
type Finding struct {
	ID      string `json:"id"` // the clause ID
	Capture string `json:"capture,omitempty"`
	Frame   int    `json:"frame"` // 1-based, as Wireshark numbers frames; 0 when not from a capture
	QP      uint32 `json:"qp"`
	PSN     uint32 `json:"psn"`
	Message string `json:"message"`
	// Kind names what was expected against what was seen, for grouping
	// findings in reports (see [KindOf]). A monitor may set it when its
	// messages differ by more than numbers within one kind; when empty,
	// the message with its numbers left out is the kind.
	Kind string `json:"kind,omitempty"`
	// Clause is the clause in our words.
	Clause string `json:"clause_text,omitempty"`
	// Expected lists every acceptable outcome.
	Expected []string `json:"expected,omitempty"`
	Seen     string   `json:"seen,omitempty"`
	Scenario string   `json:"scenario,omitempty"`
	Ladder   []Rung   `json:"ladder,omitempty"`
	// Alternatives, when set, says that the trace breaks one of several
	// clauses and cannot tell which: every explanation the evidence
	// leaves open makes it illegal, each under a clause of its own. The
	// same finding is then listed under each of the clauses named, and
	// none of them passes.
	Alternatives []Alternative `json:"alternatives,omitempty"`
	// At, in a shard's result only, is where in the capture the finding
	// was made: the number of the record (from 1, counting RoCE RC
	// records), or a number above every record's for findings made as
	// the capture ended. Merge orders findings by it, as a single run
	// makes them.
	At int64 `json:"at,omitempty"`
}

// Alternative is one clause of a finding that names several: the clause
// broken if the explanation If (in our words) is what happened.
type Alternative struct {
	ID string `json:"id"`
	If string `json:"if"`
}

// Evidence returns, for each clause result in order, why its verdict was
// given, in one line, for every verdict but pass ("" for a pass): see
// EvidenceOf.
func (r *Result) Evidence() []string {
	of := r.EvidenceOf()
	out := make([]string, len(r.Clauses))
	for i, c := range r.Clauses {
		out[i] = of(c)
	}
	return out
}

// EvidenceOf returns a function giving, for a clause result of r, why its
// verdict was given, in one line, for every verdict but pass ("" for a
// pass): for a fail its first finding (where: frame or scenario; what was
// expected against what was seen) and how many violations there were,
// for the other verdicts their reason.
func (r *Result) EvidenceOf() func(ClauseResult) string {
	type key struct{ id, capture string }
	first := map[key]*Finding{}
	for i := range r.Findings {
		f := &r.Findings[i]
		for _, k := range []key{{f.ID, f.Capture}, {f.ID, ""}} {
			if g := first[k]; g == nil || f.before(g) {
				first[k] = f
			}
		}
	}
	return func(c ClauseResult) string {
		f := first[key{c.ID, c.Capture}]
		switch {
		case c.Verdict == Pass:
			return ""
		case c.Verdict == Fail && f != nil:
			var where string
			switch {
			case f.Frame > 0:
				where = fmt.Sprintf("frame %d: ", f.Frame)
			case f.Scenario != "":
				where = f.Scenario + ": "
			}
			ev := where + f.Evidence()
			if c.Violations > 1 {
				ev += fmt.Sprintf(" (the first of %d violations)", c.Violations)
			}
			return ev
		case c.Reason != "":
			return strings.Join(strings.Fields(c.Reason), " ")
		case c.Verdict == Fail:
			return fmt.Sprintf("%d violations, none kept as a finding", c.Violations)
		}
		return "no reason given"
	}
}

// before orders findings as their evidence is chosen, whatever the order
// a run added them in: by frame, scenario, message, what was seen.
func (f *Finding) before(g *Finding) bool {
	if f.Frame != g.Frame {
		return f.Frame < g.Frame
	}
	if f.Scenario != g.Scenario {
		return f.Scenario < g.Scenario
	}
	if f.Message != g.Message {
		return f.Message < g.Message
	}
	return f.Seen < g.Seen
}

// Evidence is the finding in one line: its message, and what was
// acceptable against what was seen when the finding says.
func (f Finding) Evidence() string {
	var b strings.Builder
	b.WriteString(f.Message)
	if len(f.Expected) > 0 {
		fmt.Fprintf(&b, "; expected %s", strings.Join(f.Expected, " or "))
	}
	if f.Seen != "" {
		fmt.Fprintf(&b, "; seen %s", f.Seen)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// Rung is one packet of the exchange around a finding.
type Rung struct {
	TimeNS    int64   `json:"time_ns"`
	Dir       string  `json:"dir"` // DirReqToRsp or DirRspToReq
	Opcode    string  `json:"opcode"`
	PSN       uint32  `json:"psn"`
	AckReq    bool    `json:"ackreq"`
	Syndrome  string  `json:"syndrome,omitempty"`
	MSN       *uint32 `json:"msn,omitempty"`
	Frame     int     `json:"frame,omitempty"`
	QP        uint32  `json:"qp"` // destination QP
	Highlight bool    `json:"highlight,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// MarshalJSON writes r with captures, clauses and findings always present, as
// the JSON contract requires, even when r holds nil slices.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without this method
	p := plain(r)
	ev := r.Evidence()
	p.Clauses = slices.Clone(p.Clauses)
	for i := range p.Clauses {
		p.Clauses[i].Evidence = ev[i]
	}
	if p.Captures == nil {
		p.Captures = []CaptureInfo{}
	}
	if p.Clauses == nil {
		p.Clauses = []ClauseResult{}
	}
	if p.Findings == nil {
		p.Findings = []Finding{}
	}
	return json.Marshal(p)
}

// WriteJSON writes r as indented JSON followed by a newline.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding result JSON: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing result JSON: %w", err)
	}
	return nil
}

// ReadJSON reads one result written by [Result.WriteJSON] and checks that
// its kind, verdicts and rung directions are known.
func ReadJSON(r io.Reader) (*Result, error) {
	dec := json.NewDecoder(r)
	var res Result
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("decoding result JSON: %w", err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return nil, fmt.Errorf("decoding result JSON: after the result: %w", err)
	}
	if err := res.validate(); err != nil {
		return nil, fmt.Errorf("decoding result JSON: %w", err)
	}
	if res.Captures == nil {
		res.Captures = []CaptureInfo{}
	}
	if res.Clauses == nil {
		res.Clauses = []ClauseResult{}
	}
	for i := range res.Clauses {
		res.Clauses[i].Evidence = "" // derived: Result.Evidence
	}
	if res.Findings == nil {
		res.Findings = []Finding{}
	}
	return &res, nil
}

func (r *Result) validate() error {
	switch r.Kind {
	case KindSuite, KindAudit:
	case "":
		return errors.New("missing kind")
	default:
		return fmt.Errorf("unknown kind %q (want %q or %q)", r.Kind, KindSuite, KindAudit)
	}
	for i, c := range r.Clauses {
		if c.ID == "" {
			return fmt.Errorf("clause %d: missing id", i+1)
		}
		if !c.Verdict.Valid() {
			return fmt.Errorf("clause %d (%s): unknown verdict %q", i+1, c.ID, c.Verdict)
		}
		if c.Checked < 0 || c.Violations < 0 || c.Undecided < 0 {
			return fmt.Errorf("clause %d (%s): negative count (checked %d, violations %d, undecided %d)",
				i+1, c.ID, c.Checked, c.Violations, c.Undecided)
		}
	}
	for i, f := range r.Findings {
		for j, g := range f.Ladder {
			if g.Dir != DirReqToRsp && g.Dir != DirRspToReq {
				return fmt.Errorf("finding %d (%s), rung %d: unknown direction %q (want %q or %q)",
					i+1, f.ID, j+1, g.Dir, DirReqToRsp, DirRspToReq)
			}
		}
	}
	return nil
}

// Failed reports whether any clause failed.
func (r *Result) Failed() bool {
	for _, c := range r.Clauses {
		if c.Verdict == Fail {
			return true
		}
	}
	return false
}

// Sort puts findings in order of capture, then frame; findings that tie keep
// the order they were added in. Clauses keep the order they were added in,
// which is the catalogue's order when the run adds them that way.
func (r *Result) Sort() {
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.Capture != b.Capture {
			return a.Capture < b.Capture
		}
		return a.Frame < b.Frame
	})
}

// Counts returns the number of clause results with each verdict. Every
// verdict of [Verdicts] has an entry, zero or not.
func (r *Result) Counts() map[Verdict]int {
	n := make(map[Verdict]int, len(Verdicts))
	for _, v := range Verdicts {
		n[v] = 0
	}
	for _, c := range r.Clauses {
		n[c.Verdict]++
	}
	return n
}

// FindingsFor returns the findings behind c: those with c's clause ID and,
// when c names a capture, found in that capture.
func (r *Result) FindingsFor(c ClauseResult) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.ID != c.ID {
			continue
		}
		if c.Capture != "" && f.Capture != c.Capture {
			continue
		}
		out = append(out, f)
	}
	return out
}

// VerdictText is the verdict as people read it: the verdict, followed by
// the count of undecided instances when there are any ("pass, 12
// undecided").
func VerdictText(c ClauseResult) string {
	if c.Undecided > 0 {
		return fmt.Sprintf("%s, %d undecided", c.Verdict, c.Undecided)
	}
	return string(c.Verdict)
}

// countLine is "2 pass, 1 fail, 0 not-exercised, ..." for every verdict.
func countLine(r *Result, sep string) string {
	n := r.Counts()
	var b bytes.Buffer
	for i, v := range Verdicts {
		if i > 0 {
			b.WriteString(sep)
		}
		fmt.Fprintf(&b, "%d %s", n[v], v)
	}
	return b.String()
}

// UndecidedKind is one kind of undecided instance of a clause: instances
// whose reasons differ only in their numbers.
type UndecidedKind struct {
	// Reason is the first instance's reason, in full.
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Open is set for instances that keep the clause from passing (a
	// violation remains as possible as the legal explanation).
	Open bool `json:"open,omitempty"`
	// Frame is the capture frame where the first instance was seen (an
	// audit's), Scenario the scenario that gave it (a suite run's).
	Frame    int    `json:"frame,omitempty"`
	Scenario string `json:"scenario,omitempty"`
	// At, in a shard's result only, orders first instances as in
	// Finding.At, so that Merge keeps the first a single run would.
	At int64 `json:"at,omitempty"`
}

// ReasonKind is the key under which an undecided instance is counted:
// its reason with every number left out (MessageTemplate), and whether
// it is open.
func ReasonKind(reason string, open bool) string {
	k := MessageTemplate(reason)
	if open {
		return "open:" + k
	}
	return k
}

// AddUndecided counts k.Count instances under their kind in c (keeping the
// first instance's reason, frame and scenario); it does not touch
// c.Undecided.
func (c *ClauseResult) AddUndecided(k UndecidedKind) {
	key := ReasonKind(k.Reason, k.Open)
	for i := range c.UndecidedKinds {
		d := &c.UndecidedKinds[i]
		if ReasonKind(d.Reason, d.Open) == key {
			n := d.Count + k.Count
			if k.At < d.At {
				*d = k
			}
			d.Count = n
			return
		}
	}
	c.UndecidedKinds = append(c.UndecidedKinds, k)
}
