package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rcconform/rcconform/reports"
)

// run is one suite run of one configuration.
type labRun struct {
	config string
	path   string
	result *reports.Result
}

// Observed is every run the lab made, by configuration.
type Observed struct {
	runs  map[string][]labRun
	order []string
}

// readObserved reads CONFIG=result.json arguments (a configuration may
// repeat: runs of it must agree).
func readObserved(args []string) (*Observed, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no results given (CONFIG=result.json ...)")
	}
	o := &Observed{runs: map[string][]labRun{}}
	for _, a := range args {
		cfg, path, ok := strings.Cut(a, "=")
		if !ok || cfg == "" || path == "" {
			return nil, fmt.Errorf("argument %q: want CONFIG=result.json", a)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading the result of %s: %w", cfg, err)
		}
		r, err := reports.ReadJSON(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the result of %s (%s): %w", cfg, path, err)
		}
		if err := addScripts(r, path); err != nil {
			return nil, fmt.Errorf("reading the scripts' results of %s: %w", cfg, err)
		}
		if _, seen := o.runs[cfg]; !seen {
			o.order = append(o.order, cfg)
		}
		o.runs[cfg] = append(o.runs[cfg], labRun{config: cfg, path: path, result: r})
	}
	return o, nil
}

func (o *Observed) configList() string { return strings.Join(o.order, ", ") }

// observed is a run's verdict on an entry: its clause result, or, for a
// script's clause that only a passive monitor could fail (absent when the
// monitor found nothing) in a run that has the script's results, pass.
func observed(got map[string]reports.ClauseResult, id string) (reports.ClauseResult, bool) {
	if g, ok := got[id]; ok || !isScriptID(id) {
		return g, ok
	}
	file, _, _ := strings.Cut(id, " ")
	for other := range got {
		if strings.HasPrefix(other, file+" ") {
			return reports.ClauseResult{ID: id, Verdict: reports.Pass}, true
		}
	}
	return reports.ClauseResult{}, false
}

func verdictsOf(r *reports.Result) map[string]reports.ClauseResult {
	m := map[string]reports.ClauseResult{}
	for _, c := range r.Clauses {
		m[c.ID] = c
	}
	return m
}

// flaps lists every clause whose verdict differs between runs of one
// configuration.
func (o *Observed) flaps(exp *Expected) []string {
	var out []string
	expBy := map[string]Clause{}
	for _, c := range exp.all() {
		expBy[c.ID] = c
	}
	for _, cfg := range o.order {
		runs := o.runs[cfg]
		if len(runs) < 2 {
			continue
		}
		first := verdictsOf(runs[0].result)
		for _, r := range runs[1:] {
			other := verdictsOf(r.result)
			for _, id := range unionKeys(first, other) {
				a, _ := observed(first, id)
				b, _ := observed(other, id)
				if c, ok := expBy[id]; ok && c.accepts(cfg, a.Verdict) && c.accepts(cfg, b.Verdict) {
					continue // both accepted: a known race, not a flap
				}
				if a.Verdict != b.Verdict {
					out = append(out, fmt.Sprintf("%s %s: %s in %s, %s in %s (%s)", id, cfg,
						orNone(a.Verdict), runs[0].path, orNone(b.Verdict), r.path, firstNonEmpty(a.Reason, b.Reason)))
				}
			}
		}
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// compare lists every observed verdict that differs from the expected one
// (the first run of each configuration; flaps are reported apart), with the
// run's reason or first finding.
func compare(exp *Expected, obs *Observed) []string {
	var out []string
	expBy := map[string]Clause{}
	for _, c := range exp.all() {
		expBy[c.ID] = c
	}
	for _, cfg := range obs.order {
		known := false
		for _, n := range exp.configNames() {
			known = known || n == cfg
		}
		if !known {
			out = append(out, fmt.Sprintf("configuration %s is not in the expected verdicts (%v)", cfg, exp.configNames()))
			continue
		}
		r := obs.runs[cfg][0].result
		got := verdictsOf(r)
		for _, c := range exp.all() {
			g, ok := observed(got, c.ID)
			if !ok {
				out = append(out, fmt.Sprintf("%s %s: expected %s, the run has no verdict", c.ID, cfg, orNone(c.Verdicts[cfg])))
				continue
			}
			if !c.accepts(cfg, g.Verdict) {
				out = append(out, fmt.Sprintf("%s %s: expected %s, observed %s%s", c.ID, cfg, orNone(c.Verdicts[cfg]), g.Verdict, detail(r, g)))
			}
		}
		for _, g := range r.Clauses {
			if _, ok := expBy[g.ID]; !ok {
				out = append(out, fmt.Sprintf("%s %s: not in the expected verdicts, observed %s%s", g.ID, cfg, g.Verdict, detail(r, g)))
			}
		}
	}
	return out
}

// detail is the run's reason for a verdict, or its first finding.
func detail(r *reports.Result, c reports.ClauseResult) string {
	if c.Verdict == reports.Fail {
		for _, f := range r.Findings {
			if f.ID == c.ID {
				return " — " + oneLine(f.Message, 300)
			}
		}
	}
	if c.Reason != "" {
		return " — " + oneLine(c.Reason, 300)
	}
	return ""
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// candidate is expected.json as the runs observed it: the observed verdicts,
// the kept explanations and evidence of clauses whose verdicts did not move,
// the run's reasons for new non-pass verdicts, and a recomputed table of
// differences (its whys kept where the row did not change). problems() on it
// names what a person must still write (evidence for new fails).
func candidate(exp *Expected, obs *Observed) *Expected {
	c := &Expected{About: exp.About, Configs: exp.Configs}
	var names []string
	for _, cfg := range exp.Configs {
		names = append(names, cfg.Name)
	}
	for _, cfg := range obs.order {
		found := false
		for _, n := range names {
			found = found || n == cfg
		}
		if !found {
			c.Configs = append(c.Configs, configFromName(cfg))
			names = append(names, cfg)
		}
	}
	expBy := map[string]Clause{}
	for _, cl := range exp.all() {
		expBy[cl.ID] = cl
	}
	// clause order: the runs' (catalogue) order
	var ids []string
	seen := map[string]bool{}
	for _, cfg := range obs.order {
		for _, g := range obs.runs[cfg][0].result.Clauses {
			if !seen[g.ID] {
				seen[g.ID] = true
				ids = append(ids, g.ID)
			}
		}
	}
	for _, id := range ids {
		old := expBy[id]
		nc := Clause{ID: id, Verdicts: map[string]reports.Verdict{}}
		var reasons []string
		moved := false
		for _, cfg := range names {
			runs, ok := obs.runs[cfg]
			if !ok {
				nc.Verdicts[cfg] = old.Verdicts[cfg]
				continue
			}
			g, _ := observed(verdictsOf(runs[0].result), id)
			nc.Verdicts[cfg] = g.Verdict
			if old.accepts(cfg, g.Verdict) {
				nc.Verdicts[cfg] = old.Verdicts[cfg] // an accepted alternative: the baseline stands
			}
			if nc.Verdicts[cfg] != old.Verdicts[cfg] {
				moved = true
				if g.Verdict != reports.Pass {
					reasons = append(reasons, fmt.Sprintf("%s: %s%s", cfg, g.Verdict, detail(runs[0].result, g)))
				}
			}
		}
		nc.Why, nc.Evidence, nc.Also = old.Why, old.Evidence, old.Also
		if moved {
			nc.Why = strings.TrimSpace(old.Why + " [observed, to review: " + strings.Join(reasons, "; ") + "]")
			if len(reasons) == 0 {
				nc.Why = old.Why
			}
			// evidence stays only for configurations that still fail
			var kept []Evidence
			for _, ev := range old.Evidence {
				var cfgs []string
				for _, cfg := range ev.Configs {
					if nc.Verdicts[cfg] == reports.Fail {
						cfgs = append(cfgs, cfg)
					}
				}
				if len(cfgs) > 0 {
					ev.Configs = cfgs
					kept = append(kept, ev)
				}
			}
			nc.Evidence = kept
		}
		if isScriptID(id) {
			c.Scripts = append(c.Scripts, nc)
		} else {
			c.Clauses = append(c.Clauses, nc)
		}
	}
	oldDiff := map[string]Difference{}
	for _, d := range exp.Differences {
		oldDiff[d.ID] = d
	}
	ks := c.kernels()
	for _, cl := range c.all() {
		if len(ks) < 2 {
			break
		}
		row := Difference{ID: cl.ID, Kernels: map[string]string{}}
		differ := false
		for _, k := range ks {
			row.Kernels[k] = c.kernelVerdict(cl, k)
			differ = differ || row.Kernels[k] != row.Kernels[ks[0]]
		}
		if !differ {
			continue
		}
		if od, ok := oldDiff[cl.ID]; ok && sameMap(od.Kernels, row.Kernels) {
			row.Why = od.Why
		}
		c.Differences = append(c.Differences, row)
	}
	return c
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// configFromName makes a Config from "<kernel>-<mtu>".
func configFromName(name string) Config {
	k, m, _ := strings.Cut(name, "-")
	mtu, _ := strconv.Atoi(m)
	active := 0
	for _, a := range []int{4096, 2048, 1024, 512, 256} {
		// rxe's active MTU: the largest IB MTU that fits the netdev's
		// MTU less the RoCEv2 headers (IPv4 20 + UDP 8 + BTH 12 + ICRC 4
		// and room for extension headers).
		if mtu >= a+120 {
			active = a
			break
		}
	}
	return Config{Name: name, Kernel: k, NetdevMTU: mtu, ActiveMTU: active}
}
