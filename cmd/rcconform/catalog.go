package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/rules/catalog"
)

// ruleJSON is one entry of `rules --format json` (contract: id, section,
// side, level, status, summary).
type ruleJSON struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Side    string `json:"side"`
	Level   string `json:"level"`
	Status  string `json:"status"`
	Summary string `json:"summary"`
}

func runRules(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("rules", "[--format text|json]", stderr)
	format := fs.String("format", "text", "output format: text or json")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) > 0 {
		return usageErr(stderr, "rules", fmt.Errorf("unexpected argument %q", pos[0]))
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return usageErr(stderr, "rules", err)
	}
	entries := catalog.All()
	if *format == "json" {
		out := make([]ruleJSON, 0, len(entries))
		for _, e := range entries {
			out = append(out, ruleJSON{ID: e.ID, Section: e.Section, Side: string(e.Side), Level: string(e.Level),
				Status: string(e.Status), Summary: e.Summary})
		}
		return writeJSON(stdout, stderr, "rules", out)
	}
	tw := newTable(stdout, 0)
	fmt.Fprintln(tw, "ID\tSECTION\tSIDE\tLEVEL\tSTATUS\tSUMMARY")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Section, e.Side, e.Level, e.Status, e.Summary)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "rcconform rules: writing: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// defectJSON is one entry of `defects --format json` (contract: name,
// clauses; the description is extra).
type defectJSON struct {
	Name        string   `json:"name"`
	Clauses     []string `json:"clauses"`
	Description string   `json:"description,omitempty"`
	// Also: clauses the defect breaks besides its own target, with why.
	Also map[string]string `json:"also,omitempty"`
}

func runDefects(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("defects", "[--format text|json]", stderr)
	format := fs.String("format", "text", "output format: text or json")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagStatus(err)
	}
	if len(pos) > 0 {
		return usageErr(stderr, "defects", fmt.Errorf("unexpected argument %q", pos[0]))
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return usageErr(stderr, "defects", err)
	}
	defects := reference.Defects()
	if *format == "json" {
		out := make([]defectJSON, 0, len(defects))
		for _, d := range defects {
			cl := d.Clauses
			if cl == nil {
				cl = []string{}
			}
			out = append(out, defectJSON{Name: d.Name, Clauses: cl, Description: d.Description, Also: d.Also})
		}
		return writeJSON(stdout, stderr, "defects", out)
	}
	tw := newTable(stdout, 0)
	fmt.Fprintln(tw, "DEFECT\tBREAKS\tWHAT IT DOES")
	for _, d := range defects {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Name, strings.Join(d.Clauses, ", "), oneLine(d.Description))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "rcconform defects: writing: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// writeJSON writes v as indented JSON.
func writeJSON(stdout, stderr io.Writer, cmd string, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		_, err = stdout.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "rcconform %s: writing JSON: %v\n", cmd, err)
		return exitUsage
	}
	return exitOK
}

// oneLine folds line breaks and runs of blanks into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
