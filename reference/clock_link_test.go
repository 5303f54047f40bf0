package reference

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

func TestClock(t *testing.T) {
	c := NewClock()
	var order []string
	c.AfterFunc(2*time.Microsecond, func() { order = append(order, "b1") })
	c.AfterFunc(time.Microsecond, func() {
		order = append(order, "a")
		c.AfterFunc(time.Microsecond, func() { order = append(order, "b3") })
	})
	c.AfterFunc(2*time.Microsecond, func() { order = append(order, "b2") })
	stopped := c.AfterFunc(3*time.Microsecond, func() { order = append(order, "never") })
	if !stopped.Stop() || stopped.Stop() {
		t.Errorf("Stop: want true then false")
	}
	if at, ok := c.NextEvent(); !ok || at != time.Microsecond {
		t.Errorf("NextEvent %v %v", at, ok)
	}
	c.RunUntil(2 * time.Microsecond)
	if got := join(order); got != "a b1 b2 b3" {
		t.Errorf("order %q: events at equal times must run in scheduling order", got)
	}
	if c.Now() != 2*time.Microsecond {
		t.Errorf("Now %v", c.Now())
	}
	c.RunUntil(time.Second)
	if c.Now() != time.Second || c.Step() {
		t.Errorf("Now %v, or an event left", c.Now())
	}
	var ran bool
	tm := c.AfterFunc(-5, func() { ran = true })
	if !c.Step() || !ran || c.Now() != time.Second || tm.Stop() {
		t.Errorf("negative delay runs now")
	}
}

func join(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

// linkRig sends numbered SEND frames from A and records what B receives.
type linkRig struct {
	c    *Clock
	l    *Link
	got  []wire.PSN
	when []time.Duration
}

func newLinkRig(seed int64, rules ...Impairment) *linkRig {
	r := &linkRig{c: NewClock()}
	r.l = NewLink(r.c, time.Microsecond, seed)
	for _, x := range rules {
		r.l.AddRule(x)
	}
	r.l.Connect(func([]byte) {}, func(b []byte) {
		var f wire.Frame
		if f.DecodeEthernet(b) == nil {
			r.got = append(r.got, f.PSN)
			r.when = append(r.when, r.c.Now())
		}
	})
	return r
}

func frameFor(op wire.Opcode, psn wire.PSN) []byte {
	f := wire.Frame{Encap: wire.RoCEv2IPv4, Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.0.0.2"), DstPort: wire.UDPPort}
	f.Opcode, f.PSN = op, psn
	if op == wire.Acknowledge {
		f.AETH.Syndrome = 0x1F
	}
	return f.AppendEthernet(nil)
}

func (r *linkRig) sendN(n int, gap time.Duration) {
	for i := 0; i < n; i++ {
		op := wire.SendOnly
		if i%3 == 2 {
			op = wire.Acknowledge
		}
		psn := wire.PSN(i)
		r.c.AfterFunc(time.Duration(i)*gap, func() { r.l.SendA(frameFor(op, psn)) })
	}
	r.c.RunUntil(time.Second)
}

func TestLinkImpairments(t *testing.T) {
	cases := []struct {
		name  string
		rules []Impairment
		want  []wire.PSN
	}{
		{"none", nil, []wire.PSN{0, 1, 2, 3, 4, 5}},
		{"drop by index", []Impairment{{Action: Drop, ByIndex: true, Index: 1}}, []wire.PSN{0, 2, 3, 4, 5}},
		{"drop only the other direction", []Impairment{{Dir: BtoA, Action: Drop}}, []wire.PSN{0, 1, 2, 3, 4, 5}},
		{"drop the 2nd ACK", []Impairment{{Action: Drop, ByOpcode: true, Opcode: wire.Acknowledge, Nth: 2}}, []wire.PSN{0, 1, 2, 3, 4}},
		{"drop every ACK", []Impairment{{Action: Drop, ByOpcode: true, Opcode: wire.Acknowledge}}, []wire.PSN{0, 1, 3, 4}},
		{"drop by PSN", []Impairment{{Action: Drop, ByPSN: true, PSN: 4}}, []wire.PSN{0, 1, 2, 3, 5}},
		{"duplicate", []Impairment{{Action: Duplicate, ByIndex: true, Index: 3}}, []wire.PSN{0, 1, 2, 3, 3, 4, 5}},
		{"reorder past the next", []Impairment{{Action: Reorder, ByIndex: true, Index: 1}}, []wire.PSN{0, 2, 1, 3, 4, 5}},
		{"reorder past two", []Impairment{{Action: Reorder, ByIndex: true, Index: 1, Hold: 2}}, []wire.PSN{0, 2, 3, 1, 4, 5}},
		{"reorder the last: released after MaxHold", []Impairment{{Action: Reorder, ByIndex: true, Index: 5}}, []wire.PSN{0, 1, 2, 3, 4, 5}},
		{"delay past three", []Impairment{{Action: Delay, ByIndex: true, Index: 0, Delay: 350 * time.Nanosecond}}, []wire.PSN{1, 2, 3, 0, 4, 5}},
		{"times bound", []Impairment{{Action: Drop, Times: 2}}, []wire.PSN{2, 3, 4, 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newLinkRig(1, c.rules...)
			r.sendN(6, 100*time.Nanosecond)
			if !equalPSNs(r.got, c.want) {
				t.Errorf("received %v, want %v", r.got, c.want)
			}
		})
	}
}

func equalPSNs(a, b []wire.PSN) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLinkProbabilityFromSeed(t *testing.T) {
	run := func(seed int64) []wire.PSN {
		r := newLinkRig(seed, Impairment{Action: Drop, Prob: 0.3})
		r.sendN(200, 10*time.Nanosecond)
		return r.got
	}
	a, b, c := run(7), run(7), run(8)
	if !equalPSNs(a, b) {
		t.Errorf("the same seed gave different losses")
	}
	if equalPSNs(a, c) {
		t.Errorf("different seeds gave the same losses")
	}
	if n := 200 - len(a); n < 30 || n > 90 {
		t.Errorf("%d of 200 dropped at p=0.3", n)
	}
}

func TestLinkLatencyAndOrder(t *testing.T) {
	r := newLinkRig(1)
	r.sendN(3, 0)
	if !equalPSNs(r.got, []wire.PSN{0, 1, 2}) || r.when[0] != time.Microsecond || r.when[2] != time.Microsecond {
		t.Errorf("got %v at %v", r.got, r.when)
	}
}

func TestWritePcapng(t *testing.T) {
	r := newLinkRig(1, Impairment{Action: Drop, ByIndex: true, Index: 1})
	r.l.Connect(func([]byte) {}, func(b []byte) { r.l.SendB(frameFor(wire.Acknowledge, 99)) })
	r.sendN(3, 1500*time.Nanosecond)
	var buf bytes.Buffer
	if err := r.l.WritePcapng(&buf); err != nil {
		t.Fatal(err)
	}
	rd, err := capture.NewReader(&buf, "link.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Duration
	var sizes []int
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.LinkType != 1 {
			t.Errorf("link type %d", f.LinkType)
		}
		var wf wire.Frame
		if err := wf.DecodeEthernet(f.Data); err != nil || wf.CheckICRC() != wire.ICRCOK {
			t.Errorf("frame %d: %v", f.Num, err)
		}
		times = append(times, time.Duration(f.Time.UnixNano()))
		sizes = append(sizes, len(f.Data))
	}
	// A sends at 0, 1.5 µs (dropped, still captured) and 3 µs; B answers
	// each delivered frame 1 µs later.
	want := []time.Duration{0, 1 * time.Microsecond, 1500 * time.Nanosecond, 3 * time.Microsecond, 4 * time.Microsecond}
	if len(times) != len(want) {
		t.Fatalf("%d frames at %v, want %v", len(times), times, want)
	}
	for i := range want {
		if times[i] != want[i] {
			t.Errorf("frame %d at %v, want %v", i+1, times[i], want[i])
		}
	}
}
