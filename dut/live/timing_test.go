package live_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/live"
	"github.com/rcconform/rcconform/dut/live/serve"
	"github.com/rcconform/rcconform/wire"
)

// TestMeasuredTolerance: before a run the adapter measures the round trip
// and its own timer lateness, takes the larger of that and the configured
// floor as its tolerance, and states how it was made up. The device's
// timer tick (4 ms here) is reported but never part of the tolerance.
func TestMeasuredTolerance(t *testing.T) {
	s := startServe(t, serve.ServeOptions{Settings: map[string]string{"timer-tick": "4ms"}})
	d := openLive(t, s, map[string]string{"tolerance": "50us"})
	tm := d.Timing()
	if tm.Probes == 0 || tm.MinRTT <= 0 || tm.MaxRTT < tm.MinRTT {
		t.Fatalf("no round trips measured: %+v", tm)
	}
	if want := max(tm.Floor, tm.MaxRTT+tm.Overshoot); d.Tolerance() != want || tm.Floor != 50*time.Microsecond {
		t.Errorf("tolerance %v, want max(floor %v, %v + %v), without the device's tick %v", d.Tolerance(), tm.Floor, tm.MaxRTT, tm.Overshoot, tm.DeviceTimer)
	}
	if tm.DeviceTimer != 4*time.Millisecond {
		t.Errorf("device timer tick %v, want the served reference's 4ms", tm.DeviceTimer)
	}
	env := d.Environment()["tolerance"]
	if !strings.Contains(env, "probe round trips") || !strings.Contains(env, "timer") {
		t.Errorf("the environment does not say how the tolerance was made up: %q", env)
	}
	// Without the probe nothing is measured: the floor is the tolerance.
	d2 := openLive(t, s, map[string]string{"probe": "false", "tolerance": "3ms"})
	if d2.Tolerance() != 3*time.Millisecond || !strings.Contains(d2.Environment()["tolerance"], "not measured") || d2.Timing().DeviceTimer != 4*time.Millisecond {
		t.Errorf("unprobed: tolerance %v, %q", d2.Tolerance(), d2.Environment()["tolerance"])
	}
	if runtime.GOOS == "linux" && !strings.Contains(d.Describe(), "arrival times from the kernel") {
		t.Errorf("on Linux the receiving socket gives kernel time stamps: %s", d.Describe())
	}
}

// TestPostSends: several work requests go to the agent in one post_send
// and reach the send queue in order; a bad one is refused by number.
func TestPostSends(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, map[string]string{"probe": "false"})
	c := newConn(t, d, dut.ConnConfig{DevicePSN: 10, ExpectedPSN: 1, SetPSNs: true})
	lc := c.(*live.Conn)
	var wrs []dut.WR
	for i := 1; i <= 3; i++ {
		wrs = append(wrs, dut.WR{ID: uint64(i), Op: dut.OpSend, Data: []byte{byte(i)}})
	}
	if err := lc.PostSends(wrs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r := expect(t, c, "a SEND", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.SendOnly })
		if r.Packet.PSN != wire.PSN(10+i) || r.Packet.Payload[0] != byte(i+1) {
			t.Errorf("SEND %d: %v", i+1, r.Packet)
		}
	}
	bad := []dut.WR{wrs[0], {ID: 9, Op: dut.Op(99)}}
	if err := lc.PostSends(bad); err == nil || !strings.Contains(err.Error(), "2") {
		t.Errorf("a batch with an unknown op: %v", err)
	}
}
