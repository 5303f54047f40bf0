// Command rcconform audits RoCE captures against the IBTA Reliable
// Connection clauses, lists the rule catalogue and the reference
// transport's defects, and renders saved results.
//
//	rcconform rules   [--format text|json]
//	rcconform defects [--format text|json]
//	rcconform audit   [flags] CAPTURE...
//	rcconform report  --in result.json [--html FILE] [--markdown FILE] [--junit FILE]
//	rcconform script  [flags] SCRIPT|FOLDER...
//
// The audit runs every passive monitor of the suite (package rules) over
// each capture in one pass. Its exit status is 0 when no clause was
// violated, 1 when at least one was, and 2 when an input was unusable
// (a missing or damaged capture, a bad flag, an unknown rule ID); a
// capture damaged part-way is still audited up to the damage, and the
// report written, before the command exits with 2. An internal error (a
// monitor that panics) is reported with the frame it met, and exits 2 too.
// The script command exits 0 when every clause its scripts check passed,
// 1 when a clause failed, 2 on a script that does not parse (or an
// adapter error), and 3 when nothing failed but some clause was left
// indeterminate, not exercised or unsupported.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/rcconform/rcconform/dut/live/serve"
	"io"
	"os"
	"strings"
)

// Exit statuses (the command-line contract the README states).
const (
	exitOK        = 0 // no violation
	exitViolation = 1 // at least one clause failed
	exitUsage     = 2 // unusable input or usage
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `usage:
  rcconform rules   [--format text|json]      list the rule catalogue
  rcconform defects [--format text|json]      list the reference transport's defects
  rcconform audit   [flags] CAPTURE...        audit pcap/pcapng captures (gzip allowed)
  rcconform report  --in RESULT.json [--html FILE] [--markdown FILE] [--junit FILE]
  rcconform serve   [flags]                   the reference transport as a live RoCEv2 endpoint (loopback)
  rcconform sim-check --sim='COMMAND'         check a simulator's side of the sim adapter's protocol
  rcconform script  [flags] SCRIPT|FOLDER...  run scenario scripts (docs/scripts.md) against a device

Run "rcconform COMMAND --help" for a command's flags.
Exit status: 0 no violation, 1 at least one violation, 2 unusable input or usage;
script: 3 when no clause failed but one was left undecided (indeterminate, not exercised, unsupported).
`

// run is the whole command: it parses args (without the program name),
// writes results to stdout and diagnostics to stderr, and returns the exit
// status. It never panics on bad input.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "rules":
		return runRules(rest, stdout, stderr)
	case "defects":
		return runDefects(rest, stdout, stderr)
	case "audit":
		return runAudit(rest, stdout, stderr)
	case "report":
		return runReport(rest, stdout, stderr)
	case "script":
		return runScript(rest, stdout, stderr)
	case "serve":
		return serve.ServeMain(rest, stdout, stderr)
	case "sim-check":
		return runSimCheck(rest, stdout, stderr)
	case "gen-bench-capture": // hidden: for ci/bench-audit.sh
		return runGenBench(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "rcconform: unknown command %q\n%s", cmd, usageText)
	return exitUsage
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rcconform "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rcconform %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, allowing flags after the positional arguments
// ("audit a.pcap --format json"), and returns the positional arguments.
// "--" ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagStatus turns a flag-parsing error into an exit status: asking for
// help is not an error.
func flagStatus(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// checkFormat validates a --format value against the allowed ones.
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("unknown --format %q (want %s)", format, strings.Join(allowed, ", "))
}

// usageErr prints a usage error for command cmd and returns exitUsage.
func usageErr(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "rcconform %s: %v\n", cmd, err)
	return exitUsage
}
