// Command rcconform-refsim wraps the reference RC transport as a
// simulator process for the sim adapter (dut/sim): it speaks the protocol
// of dut/sim/PROTOCOL.md on its standard input and output, with the
// reference's virtual clock as the simulated time. It is the proof that
// the suite judges a device in simulated time as it judges the reference
// in-process, and an example of a wrapper:
//
//	go tool ginkgo run ./rules -- --dut=sim --sim='go run ./cmd/rcconform-refsim'
//	go tool ginkgo run ./rules -- --dut=sim --sim='go run ./cmd/rcconform-refsim --defect=ack-psn-ahead'
//
// --defect and --settings are the reference adapter's (the link latency
// excepted: the sim adapter's wire has it). --timer-early=D makes the
// transport and RNR timers fire D before their intervals, as a model's
// timer counter that stops a cycle short would: C9-140 fails on it.
// Exit status: 0 at the end of its
// input, 1 when the protocol could not go on, 2 for bad usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/live/serve"
	"github.com/rcconform/rcconform/dut/sim/simproto"
	"github.com/rcconform/rcconform/reference"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcconform-refsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defect := fs.String("defect", "", "switch this reference defect on (see `rcconform defects`)")
	settings := fs.String("settings", "", "the reference's open choices, key=value,… (as --dut=reference takes them, latency excepted)")
	early := fs.Duration("timer-early", 0, "the transport and RNR timers fire this much before their intervals")
	addr := fs.String("addr", "10.0.0.1", "the device's IP address")
	verbose := fs.Bool("v", false, "log frames the device drops on standard error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *early < 0 {
		fmt.Fprintf(stderr, "rcconform-refsim: unexpected arguments %q (or a negative --timer-early)\n", fs.Args())
		return 2
	}
	a, err := netip.ParseAddr(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: --addr: %v\n", err)
		return 2
	}
	m := map[string]string{}
	for _, kv := range strings.Split(*settings, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
	}
	s := &refSim{clock: reference.NewClock()}
	if *verbose {
		s.log = stderr
	}
	s.v, err = serve.NewVirtual(s.clock, a, *defect, m, func(frame []byte) { s.out = append(s.out, append([]byte(nil), frame...)) })
	if err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: %v\n", err)
		return 2
	}
	s.v.SetBase(func(c *reference.Config) { c.TimerEarly = *early })
	s.sess, err = s.v.Device().NewSession()
	if err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: %v\n", err)
		return 1
	}
	if err := simproto.Serve(stdin, stdout, s); err != nil {
		fmt.Fprintf(stderr, "rcconform-refsim: %v\n", err)
		return 1
	}
	return 0
}

// refSim is the reference on its virtual clock as a simproto.Simulator.
type refSim struct {
	clock *reference.Clock
	v     *serve.Virtual
	sess  agentproto.Session
	out   [][]byte // frames sent and not yet reported
	log   io.Writer
}

func (s *refSim) Info() agentproto.DeviceInfo { return s.v.Device().Info() }
func (s *refSim) Caps() []string              { return simproto.AllCaps }
func (s *refSim) Session() agentproto.Session { return s.sess }
func (s *refSim) Now() time.Duration          { return s.clock.Now() }

func (s *refSim) PollCQ(qp uint32) ([]simproto.Completion, error) {
	cs, err := s.v.PollCQ(s.sess, qp)
	out := make([]simproto.Completion, 0, len(cs))
	for _, c := range cs {
		out = append(out, simproto.Completion{Completion: agentproto.FromDUTCompletion(c), Time: int64(c.Time)})
	}
	return out, err
}

// Frame hands the frame to its QP now; a frame the device drops is
// logged with -v, not refused.
func (s *refSim) Frame(frame []byte) error {
	err := s.v.Receive(frame)
	if err != nil && s.log != nil {
		fmt.Fprintf(s.log, "rcconform-refsim: at %v: dropped: %v\n", s.clock.Now(), err)
	}
	return nil
}

// Advance runs the clock's events one at a time up to until, stopping
// after the first that sent a frame.
func (s *refSim) Advance(until time.Duration) (time.Duration, []byte, error) {
	for {
		if len(s.out) > 0 {
			f := s.out[0]
			s.out = s.out[1:]
			return s.clock.Now(), f, nil
		}
		if t, ok := s.clock.NextEvent(); !ok || t > until {
			s.clock.RunUntil(until)
			return until, nil, nil
		}
		s.clock.Step()
	}
}
