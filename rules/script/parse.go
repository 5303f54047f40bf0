package script

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/catalog"
	"github.com/rcconform/rcconform/wire"
)

// Error is a script that cannot be read: the file, the line and column
// (1-based, in bytes) and what is wrong there.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// DefaultWithin bounds a check with no `within` (the Go scenarios'
// liveness wait: the clauses set no deadline, the harness does).
const DefaultWithin = 100 * time.Millisecond

// maxLen bounds payloads and lengths a script may ask for.
const maxLen = 1 << 20

// ParseFile reads and parses the script in file.
func ParseFile(file string) (*Script, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading script: %w", err)
	}
	return Parse(file, string(b))
}

// token is a word of a line and its 1-based column.
type token struct {
	s   string
	col int
}

// parser holds the state of one script's parse.
type parser struct {
	s       *Script
	line    int
	clause  string // the `clause` line in force
	haveQP  bool
	started bool // a step was read: `qp` and `side` may no longer come
	nextID  uint64
}

// Parse parses a script's text; file names it in errors.
func Parse(file, text string) (*Script, error) {
	p := &parser{s: &Script{File: file}}
	for i, raw := range strings.Split(text, "\n") {
		p.line = i + 1
		line := strings.TrimRight(raw, "\r")
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		toks := tokens(line)
		if len(toks) == 0 {
			continue
		}
		if err := p.parseLine(strings.TrimSpace(line), toks); err != nil {
			return nil, err
		}
	}
	if len(p.s.Steps) == 0 {
		return nil, &Error{file, 1, 1, "the script has no steps"}
	}
	if len(p.s.Clauses()) == 0 {
		return nil, &Error{file, 1, 1, "the script checks nothing: no expectation stands for a clause of its own (only setup or trigger lines)"}
	}
	return p.s, nil
}

func tokens(line string) []token {
	var out []token
	start := -1
	for i := 0; i <= len(line); i++ {
		space := i == len(line) || line[i] == ' ' || line[i] == '\t'
		switch {
		case space && start >= 0:
			out = append(out, token{line[start:i], start + 1})
			start = -1
		case !space && start < 0:
			start = i
		}
	}
	return out
}

func (p *parser) errf(col int, format string, a ...any) error {
	return &Error{p.s.File, p.line, col, fmt.Sprintf(format, a...)}
}

func (p *parser) parseLine(text string, toks []token) error {
	switch toks[0].s {
	case "side":
		return p.side(toks)
	case "qp":
		return p.qp(toks)
	case "clause":
		if len(toks) != 2 {
			return p.errf(toks[0].col, "clause takes one clause ID (clause C9-95)")
		}
		if err := p.checkClause(toks[1]); err != nil {
			return err
		}
		p.clause = toks[1].s
		return nil
	}
	st := &Step{Line: p.line, Col: toks[0].col, Text: text}
	toks, err := p.tag(st, toks)
	if err != nil {
		return err
	}
	if t := toks[0].s; len(t) > 1 && (t[0] == '@' || t[0] == '+') {
		d, err := p.duration(token{t[1:], toks[0].col + 1})
		if err != nil {
			return err
		}
		st.At = Time{Set: true, Abs: t[0] == '@', D: d}
		toks = toks[1:]
		if len(toks) == 0 {
			return p.errf(st.Col, "a time with no command after it")
		}
	}
	if err := p.command(st, toks); err != nil {
		return err
	}
	if st.Kind.Checks() && st.Role == Check && st.Clause == "" {
		st.Clause = p.clause
	}
	if st.Kind.Checks() || st.Role != Check {
		if st.Clause == "" && st.Role == Check {
			return p.errf(st.Col, "this check stands for no clause: end it with [ID] or put a `clause ID` line before it")
		}
	} else if st.Clause != "" {
		return p.errf(st.Col, "only checks stand for a clause; a %s line may be tagged [setup ID] or [trigger ID] when a clause governs it", toks[0].s)
	}
	p.started = true
	p.s.Steps = append(p.s.Steps, st)
	return nil
}

// tag reads the trailing [ID], [setup ID], [trigger ID], [setup] or
// [trigger] of a line, sets st's clause and role, and returns the
// tokens before it. (A check without a tag takes the `clause` in force.)
func (p *parser) tag(st *Step, toks []token) ([]token, error) {
	i := len(toks)
	for j, t := range toks {
		if strings.HasPrefix(t.s, "[") {
			i = j
			break
		}
	}
	if i == len(toks) {
		return toks, nil
	}
	if i == 0 {
		return nil, p.errf(toks[0].col, "a line cannot start with its clause tag")
	}
	col := toks[i].col
	var words []string
	for _, t := range toks[i:] {
		words = append(words, t.s)
	}
	in := strings.Join(words, " ")
	if !strings.HasSuffix(in, "]") || strings.Count(in, "[") != 1 || strings.Count(in, "]") != 1 {
		return nil, p.errf(col, "a clause tag is [ID], [setup ID], [trigger ID], [setup] or [trigger], last on its line: %q", in)
	}
	f := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(in, "["), "]"))
	st.Clause = ""
	switch {
	case len(f) == 0:
		return nil, p.errf(col, "an empty clause tag")
	case f[0] == "setup" || f[0] == "trigger":
		st.Role = Setup
		if f[0] == "trigger" {
			st.Role = Trigger
		}
		if len(f) > 2 {
			return nil, p.errf(col, "a %s tag names at most one clause: %q", f[0], in)
		}
		if len(f) == 2 {
			if err := p.checkClause(token{f[1], col}); err != nil {
				return nil, err
			}
			st.Clause = f[1]
		}
	case len(f) == 1:
		if err := p.checkClause(token{f[0], col}); err != nil {
			return nil, err
		}
		st.Clause = f[0]
	default:
		return nil, p.errf(col, "a clause tag names one clause: %q", in)
	}
	return toks[:i], nil
}

func (p *parser) checkClause(t token) error {
	e, ok := catalog.Lookup(t.s)
	if !ok {
		return p.errf(t.col, "no clause %q in the catalogue (`rcconform rules` lists them)", t.s)
	}
	if e.Status == catalog.TextUnavailable {
		return p.errf(t.col, "the text of %s is not public: nothing may be checked under it", t.s)
	}
	return nil
}

func (p *parser) side(toks []token) error {
	if p.started {
		return p.errf(toks[0].col, "side must come before the first step")
	}
	if len(toks) != 2 || toks[1].s != "requester" && toks[1].s != "responder" {
		return p.errf(toks[0].col, "side takes requester or responder (the device's side)")
	}
	p.s.DeviceIsRequester = toks[1].s == "requester"
	return nil
}

// qp reads the connection's settings.
func (p *parser) qp(toks []token) error {
	if p.started || p.haveQP {
		return p.errf(toks[0].col, "one qp line, before the first step")
	}
	p.haveQP = true
	c := &p.s.Config
	var retry, psns bool
	for _, t := range toks[1:] {
		k, v, ok := strings.Cut(t.s, "=")
		if !ok {
			return p.errf(t.col, "qp settings are key=value: %q", t.s)
		}
		vt := token{v, t.col + len(k) + 1}
		var err error
		small := func(dst *uint8, max uint64) {
			var n uint64
			if n, err = p.uint(vt, max); err == nil {
				*dst = uint8(n)
			}
		}
		switch k {
		case "mtu":
			var n uint64
			if n, err = p.uint(vt, 4096); err == nil && !wire.ValidMTU(int(n)) {
				err = p.errf(vt.col, "MTU %d is not a path MTU (256, 512, 1024, 2048 or 4096)", n)
			}
			c.MTU = int(n)
		case "epsn", "dpsn":
			var n uint64
			if n, err = p.psnLit(vt); err == nil {
				psns = true
				if k == "epsn" {
					c.ExpectedPSN = wire.PSN(n)
				} else {
					c.DevicePSN = wire.PSN(n)
				}
			}
		case "timeout":
			small(&c.Timeout, 31)
			retry = true
		case "retry":
			small(&c.RetryCnt, 7)
			retry = true
		case "rnr-retry":
			small(&c.RNRRetry, 7)
			retry = true
		case "min-rnr-timer":
			small(&c.MinRNRTimer, 31)
			retry = true
		case "rd-atomic", "init-rd-atomic":
			var n uint64
			if n, err = p.uint(vt, 255); err == nil && n == 0 {
				err = p.errf(vt.col, "%s must be at least 1", k)
			}
			if k == "rd-atomic" {
				c.MaxDestRdAtomic = int(n)
			} else {
				c.MaxRdAtomic = int(n)
			}
		case "srq", "atomics":
			var b bool
			if b, err = p.bool(vt); err == nil {
				if k == "srq" {
					c.SRQ = b
				} else {
					c.Atomics, p.s.NoAtomics = b, !b
				}
			}
		case "recv":
			if v == "none" {
				c.RecvWQEs = -1
				break
			}
			var n uint64
			if n, err = p.uint(vt, 1<<16); err == nil {
				c.RecvWQEs = int(n)
				if n == 0 {
					c.RecvWQEs = -1
				}
			}
		case "mem":
			var n uint64
			if n, err = p.uint(vt, 1<<30); err == nil && n == 0 {
				err = p.errf(vt.col, "mem must be at least 1 byte")
			}
			c.MemorySize = int(n)
		default:
			return p.errf(t.col, "unknown qp setting %q (mtu, epsn, dpsn, timeout, retry, rnr-retry, min-rnr-timer, rd-atomic, init-rd-atomic, srq, atomics, recv, mem)", k)
		}
		if err != nil {
			return err
		}
	}
	if retry {
		// The four go together (dut.ConnConfig.SetRetry): the ones not
		// given take the usual defaults, not zero.
		set := map[string]bool{}
		for _, t := range toks[1:] {
			k, _, _ := strings.Cut(t.s, "=")
			set[k] = true
		}
		def := func(k string, dst *uint8, v uint8) {
			if !set[k] {
				*dst = v
			}
		}
		def("timeout", &c.Timeout, 14)
		def("retry", &c.RetryCnt, 7)
		def("rnr-retry", &c.RNRRetry, 7)
		def("min-rnr-timer", &c.MinRNRTimer, 12)
		c.SetRetry = true
	}
	c.SetPSNs = psns
	return nil
}

func (p *parser) uint(t token, max uint64) (uint64, error) {
	mult := uint64(1)
	s := t.s
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, p.errf(t.col, "not a number: %q", t.s)
	}
	if n > max/mult {
		return 0, p.errf(t.col, "%s is out of range (at most %d)", t.s, max)
	}
	return n * mult, nil
}

func (p *parser) psnLit(t token) (uint64, error) {
	n, err := strconv.ParseUint(t.s, 0, 64)
	if err != nil {
		return 0, p.errf(t.col, "not a PSN: %q", t.s)
	}
	if n > uint64(wire.PSNMask) {
		return 0, p.errf(t.col, "impossible PSN %s: PSNs have 24 bits (0 to %d)", t.s, wire.PSNMask)
	}
	return n, nil
}

func (p *parser) bool(t token) (bool, error) {
	switch t.s {
	case "yes", "true", "1":
		return true, nil
	case "no", "false", "0":
		return false, nil
	}
	return false, p.errf(t.col, "not yes or no: %q", t.s)
}

func (p *parser) duration(t token) (time.Duration, error) {
	d, err := time.ParseDuration(t.s)
	if err != nil {
		return 0, p.errf(t.col, "not a duration (like 100ms, 4.2ms, 50us): %q", t.s)
	}
	if d < 0 {
		return 0, p.errf(t.col, "a negative duration: %q", t.s)
	}
	return d, nil
}

func (p *parser) timeArg(t token) (Time, error) {
	abs := strings.HasPrefix(t.s, "@")
	d, err := p.duration(token{strings.TrimPrefix(t.s, "@"), t.col})
	return Time{Set: true, Abs: abs, D: d}, err
}

// command reads the step's command and its arguments.
func (p *parser) command(st *Step, toks []token) error {
	cmd, args := toks[0], toks[1:]
	switch cmd.s {
	case "<":
		st.Kind = Inject
		return p.packet(st, args)
	case ">", ">>":
		st.Kind, st.Strict = Expect, cmd.s == ">"
		if len(args) > 0 && args[0].s == "nothing" {
			st.Kind = Nothing
			if !st.Strict {
				return p.errf(cmd.col, "`> nothing` takes a single >")
			}
			args = args[1:]
		}
		args, err := p.bounds(st, args)
		if err != nil {
			return err
		}
		if st.Kind == Nothing {
			if st.NotBefore.Set {
				return p.errf(cmd.col, "`> nothing` takes only a within bound")
			}
			if len(args) == 0 {
				return nil
			}
		}
		return p.packet(st, args)
	case "post":
		st.Kind = Post
		return p.post(st, args)
	case "post-recv":
		st.Kind, st.N, st.Size = PostRecv, 1, 1024
		return p.keys(args, map[string]func(token) error{
			"n":    func(t token) error { n, err := p.uint(t, 1<<16); st.N = int(n); return err },
			"size": func(t token) error { n, err := p.uint(t, maxLen); st.Size = int(n); return err },
		})
	case "invalidate-rkey":
		st.Kind = Invalidate
		return p.keys(args, nil)
	case "mem-write", "mem-expect":
		st.Kind = MemWrite
		if cmd.s == "mem-expect" {
			st.Kind = MemExpect
		}
		if err := p.keys(args, map[string]func(token) error{
			"off":  func(t token) error { n, err := p.uint(t, maxLen); st.Off = int64(n); return err },
			"data": func(t token) error { b, err := p.hex(t); st.Data = b; return err },
		}); err != nil {
			return err
		}
		if len(st.Data) == 0 {
			return p.errf(cmd.col, "%s needs data=HEX", cmd.s)
		}
		return nil
	case "completion":
		st.Kind = Completion
		return p.completion(st, args)
	case "state":
		st.Kind = State
		if len(args) == 0 {
			return p.errf(cmd.col, "state needs the expected state (RESET, INIT, RTR, RTS, SQD, SQE, ERROR)")
		}
		found := false
		for s := dut.StateReset; s <= dut.StateError; s++ {
			if strings.EqualFold(s.String(), args[0].s) {
				st.QPState, found = s, true
			}
		}
		if !found {
			return p.errf(args[0].col, "unknown QP state %q (RESET, INIT, RTR, RTS, SQD, SQE, ERROR)", args[0].s)
		}
		rest, err := p.bounds(st, args[1:])
		if err == nil && len(rest) > 0 {
			err = p.errf(rest[0].col, "unexpected %q after the state", rest[0].s)
		}
		return err
	case "wait":
		st.Kind = Wait
		if len(args) != 1 {
			return p.errf(cmd.col, "wait takes one duration")
		}
		d, err := p.duration(args[0])
		st.Wait = d
		return err
	}
	return p.errf(cmd.col, "unknown command %q (<, >, >>, post, post-recv, invalidate-rkey, mem-write, mem-expect, completion, state, wait, or side, qp, clause)", cmd.s)
}

// keys reads key=value arguments with the readers in want.
func (p *parser) keys(args []token, want map[string]func(token) error) error {
	seen := map[string]bool{}
	for _, t := range args {
		k, v, ok := strings.Cut(t.s, "=")
		f := want[k]
		if !ok || f == nil {
			var names []string
			for n := range want {
				names = append(names, n)
			}
			if len(names) == 0 {
				return p.errf(t.col, "unexpected %q: this command takes no arguments", t.s)
			}
			return p.errf(t.col, "unknown argument %q (takes %s)", t.s, strings.Join(sorted(names), ", "))
		}
		if seen[k] {
			return p.errf(t.col, "%s given twice", k)
		}
		seen[k] = true
		if err := f(token{v, t.col + len(k) + 1}); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) hex(t token) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(t.s, "0x"))
	if err != nil {
		return nil, p.errf(t.col, "not hex bytes: %q", t.s)
	}
	if len(b) > maxLen {
		return nil, p.errf(t.col, "more than %d bytes", maxLen)
	}
	return b, nil
}

// bounds reads a check's trailing `within T` and `not-before T`, and
// checks that they can hold together.
func (p *parser) bounds(st *Step, args []token) ([]token, error) {
	st.Within = Time{Set: true, D: DefaultWithin}
	explicit := false
	for i := 0; i < len(args); i++ {
		w := args[i].s
		if w != "within" && w != "not-before" {
			continue
		}
		if i+1 >= len(args) {
			return nil, p.errf(args[i].col, "%s needs a time (like 5ms or @5ms)", w)
		}
		t, err := p.timeArg(args[i+1])
		if err != nil {
			return nil, err
		}
		if w == "within" {
			if explicit {
				return nil, p.errf(args[i].col, "within given twice")
			}
			st.Within, explicit = t, true
		} else {
			if st.NotBefore.Set {
				return nil, p.errf(args[i].col, "not-before given twice")
			}
			st.NotBefore = t
		}
		if i+2 < len(args) && args[i+2].s != "within" && args[i+2].s != "not-before" {
			return nil, p.errf(args[i+2].col, "the bounds come last on a line: unexpected %q", args[i+2].s)
		}
		rest := append([]token{}, args[:i]...)
		rest = append(rest, args[i+2:]...)
		args = rest
		i--
	}
	nb, w := st.NotBefore, st.Within
	if nb.Set && nb.Abs == w.Abs && nb.D > w.D {
		return nil, p.errf(st.Col, "a time bound that cannot hold: not before %v but within %v", nb, w)
	}
	if st.At.Set && st.At.Abs && w.Abs && w.D < st.At.D {
		return nil, p.errf(st.Col, "a time bound that cannot hold: the line starts at %v but must be done by %v", st.At, w)
	}
	if st.At.Set && st.At.Abs && nb.Set && nb.Abs && nb.D < st.At.D {
		// Harmless, but says nothing: not before a time already passed.
		return nil, p.errf(st.Col, "a bound that says nothing: the line starts at %v, after not-before %v", st.At, nb)
	}
	return args, nil
}

// sorted returns s sorted.
func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// errNotNum says a token is no number expression.
var errNotNum = errors.New("not a number")

// num reads a number: a literal (decimal or 0x hex), or epsn, dpsn or
// next with an optional +N or -N.
func num(s string) (Num, error) {
	for _, b := range []struct {
		name string
		base Base
	}{{"epsn", EPSN}, {"dpsn", DPSN}, {"next", Next}} {
		if rest, ok := strings.CutPrefix(s, b.name); ok {
			if rest == "" {
				return Num{Base: b.base}, nil
			}
			if rest[0] != '+' && rest[0] != '-' {
				return Num{}, errNotNum
			}
			n, err := strconv.ParseInt(rest, 10, 32)
			if err != nil {
				return Num{}, errNotNum
			}
			return Num{Base: b.base, Off: n}, nil
		}
	}
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return Num{}, errNotNum
	}
	return Num{Base: Lit, Off: int64(n)}, nil
}
