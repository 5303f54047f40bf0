package sim_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut/sim/refsim"
	"github.com/rcconform/rcconform/dut/sim/simproto"
)

// fakeEnv makes the test binary a simulator (TestMain): the reference
// (refsim), which from its second advance on breaks the protocol as its
// value says, or none ("clean").
const fakeEnv = "RCCONFORM_FAKE_SIM"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(fakeEnv); ok {
		os.Exit(runFake(mode))
	}
	os.Exit(m.Run())
}

// fakeSim returns the sim command that runs this test binary as a
// simulator breaking the protocol as mode says.
func fakeSim(t *testing.T, mode string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s=%s %q", fakeEnv, mode, exe)
}

// broken is the reference, misbehaving in Advance as mode says.
type broken struct {
	*refsim.Sim
	mode     string
	advances int
	last     []byte // flood: the frame emitted again and again
}

func runFake(mode string) int {
	s, err := refsim.New(refsim.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := simproto.Serve(os.Stdin, os.Stdout, &broken{Sim: s, mode: mode}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func (b *broken) Advance(until time.Duration) (time.Duration, []byte, error) {
	b.advances++
	if b.advances < 2 {
		return b.Sim.Advance(until)
	}
	switch b.mode {
	case "garbage":
		fmt.Fprintln(os.Stdout, "advancing the model, please wait")
	case "backwards":
		return b.Now() - time.Nanosecond, nil, nil
	case "past-until":
		return until + time.Nanosecond, nil, nil
	case "stuck":
		return b.Now(), nil, nil
	case "bad-frame":
		return until, []byte{0xde, 0xad, 0xbe, 0xef}, nil
	case "hang":
		fmt.Fprintf(os.Stderr, "model: waiting for a clock edge that never comes (pid %d)\n", os.Getpid())
		time.Sleep(time.Hour)
	case "exit":
		fmt.Fprintln(os.Stderr, "model: assertion failed in rx_fifo")
		os.Exit(3)
	case "flood":
		if b.last != nil {
			return b.Now(), b.last, nil
		}
		at, f, err := b.Sim.Advance(until)
		b.last = f
		return at, f, err
	case "clean":
	default:
		return 0, nil, errors.New("unknown fake mode " + b.mode)
	}
	return b.Sim.Advance(until)
}
