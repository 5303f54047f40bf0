package main

import (
	"fmt"
	"io"

	"github.com/rcconform/rcconform/dut/sim"
	"github.com/rcconform/rcconform/dut/sim/simproto"
)

// runSimCheck is `rcconform sim-check --sim=COMMAND`: the sim adapter's
// protocol checks against a simulator (dut/sim.Check). Exit status 0
// when every step passed, 1 when one failed, 2 for usage.
func runSimCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim-check", "--sim='COMMAND' [--timeout=D]", stderr)
	command := fs.String("sim", "", "the simulator's command, run with sh -c (dut/sim/PROTOCOL.md)")
	timeout := fs.Duration("timeout", simproto.DefaultTimeout, "wall-clock bound on each of the simulator's answers")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) > 0 || *command == "" || *timeout <= 0 {
		fmt.Fprintln(stderr, "rcconform sim-check: want --sim='COMMAND' (and a positive --timeout), no arguments")
		fs.Usage()
		return exitUsage
	}
	if sim.Check(*command, *timeout, stdout) > 0 {
		return exitViolation
	}
	return exitOK
}
