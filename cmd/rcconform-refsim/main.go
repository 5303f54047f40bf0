// Command rcconform-refsim wraps the reference RC transport as a
// simulator process for the sim adapter (dut/sim): it speaks the protocol
// of dut/sim/PROTOCOL.md on its standard input and output, with the
// reference's virtual clock as the simulated time (package dut/sim/refsim).
// It is the proof that the suite judges a device in simulated time as it
// judges the reference in-process, and an example of a wrapper:
//
//	go build -o refsim ./cmd/rcconform-refsim
//	go tool ginkgo run ./rules -- --dut=sim --sim="$PWD/refsim"
//	go tool ginkgo run ./rules -- --dut=sim --sim="$PWD/refsim --defect=ack-psn-ahead"
//
// --defect and --settings are the reference adapter's (the link latency
// excepted: the sim adapter's wire has it). --timer-early=D makes the
// transport and RNR timers fire D before their intervals, as a model's
// timer counter that stops a cycle short would: C9-140 fails on it.
// --caps declares fewer capabilities than the reference has, as a model
// lacking them would.
// Exit status: 0 at the end of its input, 1 when the protocol could not
// go on, 2 for bad usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/rcconform/rcconform/dut/live/serve"
	"github.com/rcconform/rcconform/dut/sim/refsim"
	"github.com/rcconform/rcconform/dut/sim/simproto"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcconform-refsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o refsim.Options
	fs.StringVar(&o.Defect, "defect", "", "switch this reference defect on (see `rcconform defects`)")
	settings := fs.String("settings", "", "the reference's open choices, key=value,… (as --dut=reference takes them, latency excepted)")
	fs.DurationVar(&o.TimerEarly, "timer-early", 0, "the transport and RNR timers fire this much before their intervals")
	addr := fs.String("addr", "10.0.0.1", "the device's IP address")
	caps := fs.String("caps", strings.Join(simproto.AllCaps, ","), "the capabilities hello declares (a model lacking some)")
	verbose := fs.Bool("v", false, "log the frames the device drops on standard error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rcconform-refsim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var err error
	if o.Addr, err = netip.ParseAddr(*addr); err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: --addr: %v\n", err)
		return 2
	}
	o.Settings = map[string]string{}
	for _, kv := range strings.Split(*settings, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			k, v, _ := strings.Cut(kv, "=")
			o.Settings[k] = v
		}
	}
	if *verbose {
		o.Log = stderr
	}
	o.Caps = []string{}
	for _, c := range strings.Split(*caps, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.Caps = append(o.Caps, c)
		}
	}
	s, err := refsim.New(o)
	if err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: %v\n", err)
		if errors.Is(err, serve.ErrUsage) {
			return 2
		}
		return 1
	}
	if err := simproto.Serve(stdin, stdout, s); err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: %v\n", err)
		return 1
	}
	return 0
}
