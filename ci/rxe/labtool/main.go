// Command labtool is the soft-RoCE lab's bookkeeping (ci/rxe-lab.sh): it
// compares the verdicts of the lab's runs with ci/rxe/expected.json, writes a
// candidate expected.json from what was observed, checks that expected.json
// is complete (every fail carries its evidence, the table of differences
// between the kernels matches the verdicts), prints that table, converts
// the lab's tcpdump capture to pcapng, and holds the audit of that capture
// to the live verdicts (passive: the audit may blame rxe only where the
// suite fails it).
//
//	labtool compare [--expected FILE] [--candidate OUT] CONFIG=result.json ...
//	labtool passive [--expected FILE] --device ADDR CONFIG=DIR ...
//	labtool check [FILE]
//	labtool diff OLD NEW
//	labtool table [FILE]
//	labtool pcapng IN.pcap OUT.pcapng
//
// Exit codes: 0 as expected (or done), 1 verdicts differ, flap between runs,
// expected.json is incomplete, or the capture audit blames rxe where the
// suite does not, 2 bad usage or unreadable input.
//
// compare also reads the scenario scripts' results the lab writes next to
// each result.json (scripts/*.json, `rcconform script --format json`):
// their verdicts are expected.json's "scripts" (scripts.go).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: labtool compare|check|diff|table|pcapng|passive ... (see the package doc)")
		return 2
	}
	switch args[0] {
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "diff":
		return cmdDiff(args[1:], stdout, stderr)
	case "table":
		return cmdTable(args[1:], stdout, stderr)
	case "passive":
		return cmdPassive(args[1:], stdout, stderr)
	case "pcapng":
		if len(args) != 3 {
			fmt.Fprintln(stderr, "usage: labtool pcapng IN.pcap OUT.pcapng")
			return 2
		}
		if err := toPcapng(args[1], args[2]); err != nil {
			fmt.Fprintf(stderr, "labtool: %v\n", err)
			return 2
		}
		return 0
	}
	fmt.Fprintf(stderr, "labtool: unknown command %q\n", args[0])
	return 2
}

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	expPath := fs.String("expected", "ci/rxe/expected.json", "the verdicts the project stands behind")
	candPath := fs.String("candidate", "", "write the observed verdicts here, in expected.json's shape")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	exp, err := readExpected(*expPath)
	if err != nil {
		fmt.Fprintf(stderr, "labtool: %v\n", err)
		return 2
	}
	obs, err := readObserved(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "labtool: %v\n", err)
		return 2
	}
	code := 0
	if flaps := obs.flaps(exp); len(flaps) > 0 {
		fmt.Fprintf(stdout, "rxe-lab: %d verdicts FLAP between runs of one configuration:\n", len(flaps))
		for _, f := range flaps {
			fmt.Fprintln(stdout, "  "+f)
		}
		code = 1
	}
	diffs := compare(exp, obs)
	if len(diffs) > 0 {
		fmt.Fprintf(stdout, "rxe-lab: %d verdicts differ from %s:\n", len(diffs), *expPath)
		for _, d := range diffs {
			fmt.Fprintln(stdout, "  "+d)
		}
		fmt.Fprintln(stdout, "rxe-lab: if the change is intended: bash ci/rxe-lab.sh --candidate FILE, review with `go run ./ci/rxe/labtool diff "+*expPath+" FILE`, adopt, and give every new fail its evidence (ci/rxe/README.md)")
		code = 1
	} else {
		fmt.Fprintf(stdout, "rxe-lab: every verdict of %s matches %s\n", obs.configList(), *expPath)
	}
	if *candPath != "" {
		cand := candidate(exp, obs)
		if err := writeExpected(*candPath, cand); err != nil {
			fmt.Fprintf(stderr, "labtool: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "rxe-lab: observed verdicts written to %s\n", *candPath)
		for _, p := range cand.problems() {
			fmt.Fprintln(stdout, "  to do before adopting: "+p)
		}
	}
	return code
}

// expectedArg reads the expected verdicts named by args (default
// ci/rxe/expected.json), saying why on stderr when it cannot.
func expectedArg(args []string, stderr io.Writer) (string, *Expected, bool) {
	path := "ci/rxe/expected.json"
	if len(args) > 0 {
		path = args[0]
	}
	exp, err := readExpected(path)
	if err != nil {
		fmt.Fprintf(stderr, "labtool: %v\n", err)
		return path, nil, false
	}
	return path, exp, true
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	path, exp, ok := expectedArg(args, stderr)
	if !ok {
		return 2
	}
	if ps := exp.problems(); len(ps) > 0 {
		for _, p := range ps {
			fmt.Fprintf(stdout, "%s: %s\n", path, p)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: complete (%d clauses, %d script verdicts, %d configurations, %d differences between kernels)\n",
		path, len(exp.Clauses), len(exp.Scripts), len(exp.Configs), len(exp.Differences))
	return 0
}

func cmdDiff(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: labtool diff OLD NEW")
		return 2
	}
	a, err := readExpected(args[0])
	if err == nil {
		var b *Expected
		b, err = readExpected(args[1])
		if err == nil {
			ds := diffExpected(a, b)
			for _, d := range ds {
				fmt.Fprintln(stdout, d)
			}
			if len(ds) == 0 {
				fmt.Fprintln(stdout, "no verdict differs")
				return 0
			}
			return 1
		}
	}
	fmt.Fprintf(stderr, "labtool: %v\n", err)
	return 2
}

func cmdTable(args []string, stdout, stderr io.Writer) int {
	_, exp, ok := expectedArg(args, stderr)
	if !ok {
		return 2
	}
	fmt.Fprint(stdout, exp.markdown())
	return 0
}
