package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// cmdPassive holds the capture audit to the live suite on a real device:
// the lab's capture of each configuration, audited as a capture
// (audit.json beside capture.pcapng), may blame the device only for
// clauses the live suite fails there (expected.json). A finding on a packet
// the device sent in a clause it passes is a false violation of the audit,
// or a deviation the live suite missed: either way one to examine. The
// harness's own packets break rules on purpose (its stimuli), so findings
// on them are counted, not judged.
//
//	labtool passive [--expected FILE] --device ADDR CONFIG=DIR ...
func cmdPassive(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("passive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	expPath := fs.String("expected", "ci/rxe/expected.json", "the verdicts the project stands behind")
	device := fs.String("device", "", "the device's address: findings on the packets it sent are judged")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dev, err := netip.ParseAddr(*device)
	if err != nil || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: labtool passive [--expected FILE] --device ADDR CONFIG=DIR ...")
		return 2
	}
	exp, err := readExpected(*expPath)
	if err != nil {
		fmt.Fprintf(stderr, "labtool: %v\n", err)
		return 2
	}
	code := 0
	for _, a := range fs.Args() {
		cfg, dir, ok := strings.Cut(a, "=")
		if !ok || cfg == "" || dir == "" {
			fmt.Fprintf(stderr, "labtool: argument %q: want CONFIG=DIR\n", a)
			return 2
		}
		p, err := judgePassive(exp, cfg, dir, dev)
		if err != nil {
			fmt.Fprintf(stderr, "labtool: %v\n", err)
			return 2
		}
		fmt.Fprint(stdout, p.report())
		if len(p.unexplained) > 0 {
			code = 1
		}
	}
	return code
}

// passiveCheck is what one configuration's capture audit blamed on whom.
type passiveCheck struct {
	config      string
	device      map[string]int // findings on the device's packets, by clause (each one the live suite fails)
	harness     map[string]int // findings on the harness's packets, by clause
	unexplained []string       // findings on the device's packets in a clause the live suite does not fail
	unplaced    []string       // findings naming no frame of the capture
}

// judgePassive reads dir/audit.json and dir/capture.pcapng and sorts the
// audit's findings by who sent the packet each one names.
func judgePassive(exp *Expected, cfg, dir string, dev netip.Addr) (*passiveCheck, error) {
	f, err := os.Open(filepath.Join(dir, "audit.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the capture audit of %s: %w", cfg, err)
	}
	res, err := reports.ReadJSON(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the capture audit of %s: %w", cfg, err)
	}
	want := map[int]bool{}
	for _, fd := range res.Findings {
		want[fd.Frame] = true
	}
	src, err := frameSources(filepath.Join(dir, "capture.pcapng"), want)
	if err != nil {
		return nil, fmt.Errorf("reading the capture of %s: %w", cfg, err)
	}
	clauses := map[string]Clause{}
	for _, c := range exp.Clauses {
		clauses[c.ID] = c
	}
	p := &passiveCheck{config: cfg, device: map[string]int{}, harness: map[string]int{}}
	for _, fd := range res.Findings {
		s, ok := src[fd.Frame]
		switch {
		case !ok:
			p.unplaced = append(p.unplaced, fmt.Sprintf("%s (frame %d): %s", fd.ID, fd.Frame, oneLine(fd.Message, 160)))
		case s != dev:
			p.harness[fd.ID]++
		case clauses[fd.ID].accepts(cfg, reports.Fail):
			p.device[fd.ID]++
		default:
			p.unexplained = append(p.unexplained, fmt.Sprintf("%s at frame %d, which the live suite gives %s: %s",
				fd.ID, fd.Frame, orNone(clauses[fd.ID].Verdicts[cfg]), oneLine(fd.Message, 200)))
		}
	}
	return p, nil
}

// frameSources returns the source address of each frame of want in the
// capture (frames that are no IP packet are left out).
func frameSources(path string, want map[int]bool) (map[int]netip.Addr, error) {
	r, err := capture.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[int]netip.Addr{}
	var wf wire.Frame
	for {
		cf, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if !want[cf.Num] {
			continue
		}
		proto, off, err := capture.Network(cf.LinkType, cf.Data)
		if err != nil {
			continue
		}
		wf.Src = netip.Addr{}
		_ = wf.DecodeNetwork(proto, cf.Data[off:]) // the source is known once the IP header is read
		if wf.Src.IsValid() {
			out[cf.Num] = wf.Src.Unmap()
		}
	}
}

// report says what the capture audit blamed on whom.
func (p *passiveCheck) report() string {
	var b strings.Builder
	count := func(m map[string]int) string {
		if len(m) == 0 {
			return "none"
		}
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s %d", id, m[id]))
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(&b, "rxe-lab passive %s: findings on rxe's packets, each in a clause the live suite fails: %s; on the harness's own packets (its stimuli): %s\n",
		p.config, count(p.device), count(p.harness))
	for _, u := range p.unplaced {
		fmt.Fprintf(&b, "  naming no frame of the capture (not judged): %s\n", u)
	}
	if len(p.unexplained) > 0 {
		fmt.Fprintf(&b, "rxe-lab passive %s: %d findings on rxe's packets in clauses the live suite does not fail (a false violation of the capture audit, or a deviation the suite missed):\n", p.config, len(p.unexplained))
		for _, u := range p.unexplained {
			fmt.Fprintf(&b, "  %s\n", u)
		}
	}
	return b.String()
}
