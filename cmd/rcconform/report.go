package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/rcconform/rcconform/reports"
)

// runReport renders a saved JSON result (from `audit --format json` or the
// suite's --json) as HTML, Markdown and JUnit, or as text on standard
// output when no output is asked for. Findings are grouped per clause by
// kind everywhere; the Markdown stays within a GitHub comment's 65,536
// characters and the HTML within about 2 MB, each saying what it left out
// (the JSON keeps everything). Its exit status says whether the
// rendering worked (0) or not (2), whatever the result's verdicts.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "--in RESULT.json [--html FILE] [--markdown FILE] [--junit FILE]\n       rcconform report --merge RESULT.json... [--out FILE] [--html FILE] [--markdown FILE] [--junit FILE]", stderr)
	in := fs.String("in", "", "the JSON result to render (required)")
	html := fs.String("html", "", "write the HTML report to this file (- for standard output)")
	md := fs.String("markdown", "", "write the Markdown report to this file (- for standard output)")
	junit := fs.String("junit", "", "write JUnit XML keyed to clause IDs to this file (- for standard output)")
	link := fs.String("result-link", "", "where readers find the whole result (a URL or path), named in the Markdown's closing line (default: the --in file)")
	merge := fs.Bool("merge", false, "combine the JSON results given as arguments (shards of one audit, or audits of different captures) into one; exit 1 if it fails")
	mergeOut := fs.String("out", "", "with --merge: write the combined JSON result to this file (- or nothing: standard output, when no other output is asked for)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	var merged *reports.Result
	if *merge {
		if *in != "" {
			return usageErr(stderr, "report", errors.New("--merge takes its results as arguments, not --in"))
		}
		if merged, err = mergeResults(pos, *mergeOut, *html == "" && *md == "" && *junit == "", stdout); err != nil {
			return usageErr(stderr, "report", err)
		}
		pos = nil
	} else if *mergeOut != "" {
		return usageErr(stderr, "report", errors.New("--out is for --merge (use --html, --markdown, --junit)"))
	}
	if len(pos) > 0 {
		return usageErr(stderr, "report", fmt.Errorf("unexpected argument %q", pos[0]))
	}
	res := merged
	if res == nil {
		if *in == "" {
			fs.Usage()
			return usageErr(stderr, "report", errors.New("--in is required"))
		}
		if res, err = readResult(*in); err != nil {
			return usageErr(stderr, "report", err)
		}
	}
	outputs := []struct {
		path  string
		write func(io.Writer) error
	}{
		{*html, func(w io.Writer) error { return reports.WriteHTML(w, res) }},
		{*md, func(w io.Writer) error {
			o := reports.MarkdownOptions{Whole: *link}
			if o.Whole == "" {
				o.Whole = *in
			}
			if *html != "" && *html != "-" {
				o.HTML = *html
			}
			return reports.WriteMarkdownOptions(w, res, o)
		}},
		{*junit, func(w io.Writer) error { return reports.WriteJUnit(w, res, "rcconform") }},
	}
	wrote := false
	for _, o := range outputs {
		if o.path == "" {
			continue
		}
		wrote = true
		var buf bytes.Buffer
		err := o.write(&buf)
		if err == nil {
			err = writeOut(o.path, stdout, buf.Bytes())
		}
		if err != nil {
			return usageErr(stderr, "report", err)
		}
	}
	if merged != nil {
		if merged.Failed() {
			return exitViolation
		}
		return exitOK
	}
	if !wrote {
		var buf bytes.Buffer
		err := writeText(&buf, res)
		if err == nil {
			err = writeOut("", stdout, buf.Bytes())
		}
		if err != nil {
			return usageErr(stderr, "report", err)
		}
	}
	return exitOK
}
