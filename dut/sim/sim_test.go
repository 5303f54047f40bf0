package sim_test

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/sim"
	"github.com/rcconform/rcconform/dut/sim/simproto"
	"github.com/rcconform/rcconform/wire"
)

// exchange opens a connection on the simulator of command, sends a SEND
// with AckReq and waits 1 ms of simulated time for its ACK; it returns
// what the adapter panicked with (nil: nothing) and the ACK.
func exchange(t *testing.T, command string) (panicked error, ack *wire.Packet) {
	t.Helper()
	d, err := dut.New("sim", dut.Options{Seed: 1, Settings: map[string]string{sim.SetSim: command, sim.SetTimeout: "2s"}})
	if err != nil {
		t.Fatalf("starting %s: %v", command, err)
	}
	defer d.(*sim.Sim).Close()
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(error)
			if !ok {
				panic(r)
			}
			panicked = err
		}
	}()
	c, err := d.NewConn(dut.ConnConfig{ExpectedPSN: 10, SetPSNs: true})
	if err != nil {
		t.Fatalf("opening a connection: %v", err)
	}
	if err := c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: 10, AckReq: true}, Payload: []byte("ping")}); err != nil {
		t.Fatal(err)
	}
	if rec, ok := c.Recv(time.Millisecond); ok {
		ack = rec.Packet
	}
	return nil, ack
}

// TestBrokenSimulator: a simulator that breaks the protocol mid-run is
// stopped within the wall-clock timeout, and the adapter panics with an
// error wrapping dut.ErrBroken that says what the simulator sent; the
// same simulator speaking the protocol gets its ACK through.
func TestBrokenSimulator(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"garbage", `"advancing the model, please wait"; wanted one JSON object on one line`},
		{"backwards", "time must not go backwards"},
		{"past-until", "a time no later than until"},
		{"stuck", "a frame, or the time until"},
		{"bad-frame", "a frame that is not RoCEv2 over Ethernet"},
		{"flood", "the simulator emitted more than 65536 frames at"},
		{"hang", "sent nothing answering within 2s of wall-clock time (a hang, or a model too slow for the setting timeout); its standard error ended with: model: waiting for a clock edge"},
		{"exit", "exited (exit status 3) instead of answering; its standard error ended with: model: assertion failed in rx_fifo"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			err, _ := exchange(t, fakeSim(t, tc.mode))
			if err == nil {
				t.Fatal("the adapter went on with a simulator that broke the protocol")
			}
			if !errors.Is(err, dut.ErrBroken) || !errors.Is(err, simproto.ErrProtocol) {
				t.Errorf("the panic %v does not wrap dut.ErrBroken and simproto.ErrProtocol", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not say %q:\n%v", tc.want, err)
			}
			if tc.mode == "hang" {
				stopped(t, err)
			}
		})
	}
	t.Run("clean", func(t *testing.T) {
		err, ack := exchange(t, fakeSim(t, "clean"))
		if err != nil {
			t.Fatalf("the adapter broke on a simulator speaking the protocol: %v", err)
		}
		if ack == nil || ack.Opcode != wire.Acknowledge || ack.PSN != 10 {
			t.Fatalf("no ACK of PSN 10 through the adapter: %v", ack)
		}
	})
}

// TestCheck: sim-check passes a simulator speaking the protocol, and
// fails, naming the step, one that breaks it or whose device answers
// wrongly.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		failed bool
		want   string
	}{
		{"clean", false, "ok   destroy_qp"},
		{"backwards", true, "FAIL frame: a SEND Only with AckReq, answered by an ACK: the device adapter broke: the simulator broke the protocol"},
		{"bad-frame", true, "FAIL frame: a SEND Only with AckReq, answered by an ACK: the device adapter broke: the simulator broke the protocol: the simulator emitted, at 11000 ns, a frame that is not RoCEv2"},
	} {
		var out bytes.Buffer
		n := sim.Check(fakeSim(t, tc.mode), 2*time.Second, &out)
		if (n > 0) != tc.failed || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: %d steps failed, output:\n%s\nwanted %q", tc.mode, n, out.String(), tc.want)
		}
	}
}

// stopped fails t unless the simulator whose pid err names (as the hang
// mode writes it on its standard error) is no longer running: the shell
// that started it stopped, with the simulator (its process group).
func stopped(t *testing.T, err error) {
	t.Helper()
	m := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error does not name the simulator's pid: %v", err)
	}
	stat := "/proc/" + m[1] + "/stat"
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to tell whether the simulator still runs")
	}
	for range 100 {
		b, err := os.ReadFile(stat)
		// Gone, or a zombie no one has reaped yet: not running.
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the hung simulator (pid %s) still runs after the adapter gave up on it", m[1])
}
