// Package refsim is the reference RC transport as a simproto.Simulator:
// its QPs on one virtual clock, which is the simulated time. It is the
// device of cmd/rcconform-refsim, which serves it on standard input and
// output for the sim adapter (dut/sim).
package refsim

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/live/serve"
	"github.com/rcconform/rcconform/dut/sim/simproto"
	"github.com/rcconform/rcconform/reference"
)

// Options configure the wrapped reference.
type Options struct {
	Addr     netip.Addr        // the device's address (default 10.0.0.1)
	Defect   string            // a reference defect for every QP
	Settings map[string]string // the reference adapter's open choices, latency excepted
	// TimerEarly makes the transport and RNR timers fire this much
	// before their intervals (reference.Config.TimerEarly).
	TimerEarly time.Duration
	// Log, when set, receives a line for every frame the device drops.
	Log io.Writer
	// Caps, when not nil, are the capabilities hello declares instead of
	// all of them: a model that lacks some, for seeing what the suite
	// then leaves unsupported.
	Caps []string
}

// Sim is the reference on its virtual clock.
type Sim struct {
	clock *reference.Clock
	v     *serve.Virtual
	sess  agentproto.Session
	out   [][]byte // frames sent and not yet reported
	log   io.Writer
	caps  []string
}

var _ simproto.Simulator = (*Sim)(nil)

// New returns the wrapped reference at time zero.
func New(o Options) (*Sim, error) {
	if !o.Addr.IsValid() {
		o.Addr = netip.MustParseAddr("10.0.0.1")
	}
	if o.TimerEarly < 0 {
		return nil, fmt.Errorf("timer-early %v: must not be negative: %w", o.TimerEarly, serve.ErrUsage)
	}
	s := &Sim{clock: reference.NewClock(), log: o.Log, caps: simproto.AllCaps}
	if o.Caps != nil {
		for _, c := range o.Caps {
			if !slices.Contains(simproto.AllCaps, c) {
				return nil, fmt.Errorf("capability %q: want some of %v: %w", c, simproto.AllCaps, serve.ErrUsage)
			}
		}
		s.caps = o.Caps
	}
	var err error
	s.v, err = serve.NewVirtual(s.clock, o.Addr, o.Defect, o.Settings, func(frame []byte) { s.out = append(s.out, append([]byte(nil), frame...)) })
	if err != nil {
		return nil, err
	}
	s.v.SetBase(func(c *reference.Config) { c.TimerEarly = o.TimerEarly })
	if s.sess, err = s.v.Device().NewSession(); err != nil {
		return nil, fmt.Errorf("starting a session on the reference: %w", err)
	}
	return s, nil
}

// Info describes the device.
func (s *Sim) Info() agentproto.DeviceInfo { return s.v.Device().Info() }

// Caps are the capabilities declared: all of them unless Options.Caps.
func (s *Sim) Caps() []string { return s.caps }

// Session serves the verbs.
func (s *Sim) Session() agentproto.Session { return s.sess }

// Now is the clock's time.
func (s *Sim) Now() time.Duration { return s.clock.Now() }

// PollCQ returns the QP's completions with the clock's time of each.
func (s *Sim) PollCQ(qp uint32) ([]simproto.Completion, error) {
	cs, err := s.v.PollCQ(s.sess, qp)
	out := make([]simproto.Completion, 0, len(cs))
	for _, c := range cs {
		out = append(out, simproto.Completion{Completion: agentproto.FromDUTCompletion(c), Time: int64(c.Time)})
	}
	return out, err
}

// Frame hands the frame to its QP now; a frame the device drops is
// logged (Options.Log), not refused.
func (s *Sim) Frame(frame []byte) error {
	err := s.v.Receive(frame)
	if err != nil && s.log != nil {
		fmt.Fprintf(s.log, "refsim: at %v: dropped: %v\n", s.clock.Now(), err)
	}
	return nil
}

// Advance runs the clock's events one at a time up to until, stopping
// after the first that sent a frame.
func (s *Sim) Advance(until time.Duration) (time.Duration, []byte, error) {
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
