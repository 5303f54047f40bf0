package live

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/wire"
)

// timingProbes is how many round trips the adapter measures after the
// preflight's.
const timingProbes = 16

// Timing is what the adapter measured of real time before the run, and
// the tolerance it derived: a lower bound on an interval between two of
// the device's packets, as the harness sees them, may come out short by
// the first packet's delivery latency (at most the slowest round trip)
// and by the lateness of the harness's own timers. Nothing else: the
// device's own timer granularity is reported, never added, because a
// clause that says "not before" is broken by a timer that fires early,
// however coarse the device's clock (a jiffies timer firing a tick before
// the interval ends deviates; its tick explains the finding, it does not
// excuse it).
type Timing struct {
	Probes      int           // round trips measured
	MinRTT      time.Duration // fastest probe round trip
	MaxRTT      time.Duration // slowest probe round trip
	Overshoot   time.Duration // the harness's worst timer lateness (a 200 µs sleep)
	DeviceTimer time.Duration // the device's timer granularity, as its agent reports it: reported, not part of Tolerance
	Floor       time.Duration // the configured tolerance, the least used
	Tolerance   time.Duration // max(Floor, MaxRTT + Overshoot)
}

func (t Timing) String() string {
	if t.Probes == 0 {
		return fmt.Sprintf("%v (configured; not measured: probe=false)", t.Tolerance)
	}
	return fmt.Sprintf("%v (slowest of %d probe round trips %v, fastest %v; harness timer lateness %v; floor %v; device timer tick %v, reported, not tolerated)",
		t.Tolerance, t.Probes, t.MaxRTT.Round(time.Microsecond), t.MinRTT.Round(time.Microsecond), t.Overshoot.Round(time.Microsecond), t.Floor, t.DeviceTimer)
}

// measure sends RDMA WRITEs with AckReq on the preflight's connection,
// from PSN next on, and times their ACKs and the harness's own timers.
func (d *DUT) measure(c *Conn, next wire.PSN) {
	t := Timing{Floor: d.cfg.Tolerance, DeviceTimer: time.Duration(d.hello.Device.TimerNS)}
	// The preflight probe's round trip counts too: an emulated device's
	// first answers can be the slowest.
	if d.probe > 0 {
		t.Probes, t.MinRTT, t.MaxRTT = 1, d.probe, d.probe
	}
	info := c.Info()
	data := []byte("rcconform timing")
	for i := 0; i < timingProbes; i++ {
		p := &wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, PKey: 0xFFFF, DestQP: info.DeviceQPN, PSN: next.Add(i), AckReq: true},
			RETH: wire.RETH{VA: info.VA, RKey: info.RKey, Length: uint32(len(data))}, Payload: data}
		at := c.Now()
		if err := c.Send(p); err != nil {
			break
		}
		for {
			rec, ok := c.Recv(at + d.cfg.ProbeTimeout - c.Now())
			if !ok {
				break
			}
			if rec.Packet.Opcode == wire.Acknowledge && rec.Packet.PSN == p.PSN {
				rtt := rec.Time - at
				if rtt < t.MinRTT {
					t.MinRTT = rtt
				}
				t.MaxRTT = max(t.MaxRTT, rtt)
				t.Probes++
				break
			}
		}
	}
	for i := 0; i < timingProbes; i++ {
		s := time.Now()
		time.Sleep(200 * time.Microsecond)
		t.Overshoot = max(t.Overshoot, time.Since(s)-200*time.Microsecond)
	}
	t.Tolerance = max(t.Floor, t.MaxRTT+t.Overshoot)
	if t.Probes == 0 {
		t.Tolerance = t.Floor
	}
	d.timing = t
}
