package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/rcconform/rcconform/reports"
)

// Expected is ci/rxe/expected.json: the verdict the project stands behind for
// every clause in every lab configuration, and why.
type Expected struct {
	About string `json:"about"`
	// Configs are the lab's configurations, "<kernel>-<netdev MTU>".
	Configs []Config `json:"configs"`
	// Clauses, in catalogue order.
	Clauses []Clause `json:"clauses"`
	// Scripts are the scenario scripts' verdicts (rules/scripts and the
	// reproducers of ci/rxe/repro), one entry per script and clause, its
	// ID "<script file> <clause>" (scripts.go). Every verdict has a why
	// from rxe's source; a fail's evidence is its clause's.
	Scripts []Clause `json:"scripts,omitempty"`
	// Differences is the table of clauses whose verdicts differ between the
	// two kernels (in some MTU configuration), with the reason.
	Differences []Difference `json:"differences"`
}

// Config is one lab configuration.
type Config struct {
	Name      string `json:"name"`       // "6.1-1500"
	Kernel    string `json:"kernel"`     // "6.1"
	Package   string `json:"package"`    // the Debian package pattern
	NetdevMTU int    `json:"netdev_mtu"` // 1500
	ActiveMTU int    `json:"active_mtu"` // rxe's IB MTU on that netdev
}

// Clause is one clause's expected verdicts.
type Clause struct {
	ID string `json:"id"`
	// Verdicts maps a configuration name to the verdict.
	Verdicts map[string]reports.Verdict `json:"verdicts"`
	// Why explains a verdict other than pass (the run's reason, checked by a
	// person), or how the verdicts come about.
	Why string `json:"why,omitempty"`
	// Evidence backs every fail.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Also lists, per configuration, verdicts accepted besides the expected
	// one, for a scenario that races a real device (Why says which race).
	// Never fail: a fail is always a difference unless it is the expected
	// verdict.
	Also map[string][]reports.Verdict `json:"also,omitempty"`
}

// accepts reports whether v is the expected verdict of c in cfg or one of
// its accepted alternatives.
func (c Clause) accepts(cfg string, v reports.Verdict) bool {
	if c.Verdicts[cfg] == v {
		return true
	}
	for _, a := range c.Also[cfg] {
		if a == v {
			return true
		}
	}
	return false
}

// Evidence is what a kernel developer needs to accept a fail.
type Evidence struct {
	Configs []string `json:"configs"`  // where it fails
	RxeDoes string   `json:"rxe_does"` // what rxe does
	Clause  string   `json:"clause"`   // the clause, in our words (rules/catalog, docs/interpretations.md)
	Finding string   `json:"finding"`  // a finding from the run
	Source  string   `json:"source"`   // file and function in drivers/infiniband/sw/rxe
}

// Difference is one row of the table of differences between the kernels.
type Difference struct {
	ID string `json:"id"`
	// Verdicts per kernel: "fail" or, where the MTUs differ, "1500: pass, 4500: fail".
	Kernels map[string]string `json:"kernels"`
	Why     string            `json:"why"`
}

func readExpected(path string) (*Expected, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading expected verdicts: %w", err)
	}
	var e Expected
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("reading expected verdicts %s: %w", path, err)
	}
	for _, c := range e.all() {
		for cfg, v := range c.Verdicts {
			if !v.Valid() {
				return nil, fmt.Errorf("%s: %s in %s: unknown verdict %q", path, c.ID, cfg, v)
			}
		}
	}
	return &e, nil
}

func writeExpected(path string, e *Expected) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// all is every entry with verdicts: the clauses, then the scripts'.
func (e *Expected) all() []Clause {
	return append(append([]Clause{}, e.Clauses...), e.Scripts...)
}

func (e *Expected) configNames() []string {
	var n []string
	for _, c := range e.Configs {
		n = append(n, c.Name)
	}
	return n
}

func (e *Expected) kernels() []string {
	var ks []string
	seen := map[string]bool{}
	for _, c := range e.Configs {
		if !seen[c.Kernel] {
			seen[c.Kernel] = true
			ks = append(ks, c.Kernel)
		}
	}
	return ks
}

// kernelVerdict renders a clause's verdicts on one kernel: one verdict where
// every MTU agrees, else "1500: pass, 4500: fail".
func (e *Expected) kernelVerdict(c Clause, kernel string) string {
	var parts []string
	same := true
	var first reports.Verdict
	for i, cfg := range e.configsOf(kernel) {
		v := c.Verdicts[cfg.Name]
		if i == 0 {
			first = v
		} else if v != first {
			same = false
		}
		parts = append(parts, fmt.Sprintf("%d: %s", cfg.NetdevMTU, v))
	}
	if same {
		return string(first)
	}
	return strings.Join(parts, ", ")
}

func (e *Expected) configsOf(kernel string) []Config {
	var cs []Config
	for _, c := range e.Configs {
		if c.Kernel == kernel {
			cs = append(cs, c)
		}
	}
	return cs
}

// problems lists what keeps e from being a baseline the project stands
// behind: a configuration without a verdict, a fail without full evidence,
// a table of differences that does not match the verdicts.
func (e *Expected) problems() []string {
	var ps []string
	if len(e.Configs) == 0 {
		ps = append(ps, "no configurations")
	}
	want := map[string]map[string]string{} // clause -> kernel -> rendering, for clauses that differ
	for _, c := range e.all() {
		var failing []string
		script := isScriptID(c.ID)
		for _, cfg := range e.configNames() {
			v, ok := c.Verdicts[cfg]
			if !ok {
				ps = append(ps, fmt.Sprintf("%s: no verdict for %s", c.ID, cfg))
			}
			if v == reports.Fail && !script {
				failing = append(failing, cfg)
			}
			if script && ok && strings.TrimSpace(c.Why) == "" {
				ps = append(ps, fmt.Sprintf("%s: %s in %s without a why (what rxe does there, from its source)", c.ID, v, cfg))
			}
			if !script && v != reports.Pass && v != reports.Fail && ok && strings.TrimSpace(c.Why) == "" {
				ps = append(ps, fmt.Sprintf("%s: %s in %s without a why", c.ID, v, cfg))
			}
		}
		for cfg, vs := range c.Also {
			for _, v := range vs {
				if v == reports.Fail {
					ps = append(ps, fmt.Sprintf("%s: fail accepted as an alternative in %s: a fail must be the expected verdict, with evidence", c.ID, cfg))
				}
			}
			if len(vs) > 0 && strings.TrimSpace(c.Why) == "" {
				ps = append(ps, fmt.Sprintf("%s: alternative verdicts in %s without a why (which race)", c.ID, cfg))
			}
		}
		covered := map[string]bool{}
		for _, ev := range c.Evidence {
			for _, cfg := range ev.Configs {
				covered[cfg] = true
			}
			for name, s := range map[string]string{"rxe_does": ev.RxeDoes, "clause": ev.Clause, "finding": ev.Finding, "source": ev.Source} {
				if strings.TrimSpace(s) == "" {
					ps = append(ps, fmt.Sprintf("%s: evidence for %v lacks %s", c.ID, ev.Configs, name))
				}
			}
		}
		for _, cfg := range failing {
			if !covered[cfg] {
				ps = append(ps, fmt.Sprintf("%s: fails in %s without evidence (rxe_does, clause, finding, source)", c.ID, cfg))
			}
		}
		ks := e.kernels()
		if len(ks) > 1 {
			r := map[string]string{}
			differ := false
			for _, k := range ks {
				r[k] = e.kernelVerdict(c, k)
				if r[k] != r[ks[0]] {
					differ = true
				}
			}
			if differ {
				want[c.ID] = r
			}
		}
	}
	have := map[string]bool{}
	for _, d := range e.Differences {
		have[d.ID] = true
		w, ok := want[d.ID]
		if !ok {
			ps = append(ps, fmt.Sprintf("differences: %s is listed but its verdicts do not differ between kernels", d.ID))
			continue
		}
		for k, v := range w {
			if d.Kernels[k] != v {
				ps = append(ps, fmt.Sprintf("differences: %s on %s says %q, the verdicts say %q", d.ID, k, d.Kernels[k], v))
			}
		}
		if strings.TrimSpace(d.Why) == "" {
			ps = append(ps, fmt.Sprintf("differences: %s without a why", d.ID))
		}
	}
	var missing []string
	for id := range want {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	for _, id := range missing {
		ps = append(ps, fmt.Sprintf("differences: %s differs between kernels (%v) but is not in the table", id, want[id]))
	}
	return ps
}

// diffExpected lists the verdicts that differ between two expected files.
func diffExpected(a, b *Expected) []string {
	var out []string
	bc := map[string]Clause{}
	for _, c := range b.all() {
		bc[c.ID] = c
	}
	seen := map[string]bool{}
	for _, c := range a.all() {
		seen[c.ID] = true
		nc, ok := bc[c.ID]
		if !ok {
			out = append(out, fmt.Sprintf("%s: gone", c.ID))
			continue
		}
		for _, cfg := range unionKeys(c.Verdicts, nc.Verdicts) {
			if c.Verdicts[cfg] != nc.Verdicts[cfg] {
				out = append(out, fmt.Sprintf("%s %s: %s -> %s", c.ID, cfg, orNone(c.Verdicts[cfg]), orNone(nc.Verdicts[cfg])))
			}
		}
	}
	for _, c := range b.all() {
		if !seen[c.ID] {
			out = append(out, fmt.Sprintf("%s: new", c.ID))
		}
	}
	return out
}

// unionKeys lists the keys of both maps, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func orNone(v reports.Verdict) string {
	if v == "" {
		return "(none)"
	}
	return string(v)
}

// markdown renders the verdicts per kernel and the table of differences.
func (e *Expected) markdown() string {
	var b strings.Builder
	ks := e.kernels()
	tableHead(&b, ks)
	for _, c := range e.all() {
		fmt.Fprintf(&b, "| %s |", c.ID)
		for _, k := range ks {
			fmt.Fprintf(&b, " %s |", e.kernelVerdict(c, k))
		}
		why := c.Why
		for _, ev := range c.Evidence {
			why = strings.TrimSpace(why + " " + ev.RxeDoes + " (" + ev.Source + ")")
		}
		fmt.Fprintf(&b, " %s |\n", strings.ReplaceAll(why, "|", "\\|"))
	}
	if len(e.Differences) > 0 {
		b.WriteString("\nDifferences between the kernels:\n\n")
		tableHead(&b, ks)
		for _, d := range e.Differences {
			fmt.Fprintf(&b, "| %s |", d.ID)
			for _, k := range ks {
				fmt.Fprintf(&b, " %s |", d.Kernels[k])
			}
			fmt.Fprintf(&b, " %s |\n", strings.ReplaceAll(d.Why, "|", "\\|"))
		}
	}
	return b.String()
}

// tableHead writes the header of a Markdown table: clause, one column per
// kernel, why.
func tableHead(b *strings.Builder, kernels []string) {
	b.WriteString("| clause |")
	for _, k := range kernels {
		fmt.Fprintf(b, " %s |", k)
	}
	b.WriteString(" why |\n|---|")
	for range kernels {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
}
