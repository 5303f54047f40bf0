package reference

import (
	"container/heap"
	"time"
)

// Clock is a deterministic virtual clock: time moves only when an event
// runs. Events are kept in a heap ordered by time and, for equal times, by
// the order they were scheduled in. Nothing here uses the wall clock or
// goroutines; a Clock must be driven from one goroutine.
type Clock struct {
	now  time.Duration
	seq  uint64
	heap eventHeap
}

// Timer is one scheduled event; Stop cancels it.
type Timer struct {
	c     *Clock
	at    time.Duration
	seq   uint64
	f     func()
	index int // position in the heap, -1 once run or stopped
}

// NewClock returns a clock at time zero with nothing scheduled.
func NewClock() *Clock { return &Clock{} }

// Now returns the current virtual time.
func (c *Clock) Now() time.Duration { return c.now }

// AfterFunc schedules f to run d after now (d < 0 counts as 0). Events due
// at the same time run in the order they were scheduled.
func (c *Clock) AfterFunc(d time.Duration, f func()) *Timer {
	if d < 0 {
		d = 0
	}
	c.seq++
	t := &Timer{c: c, at: c.now + d, seq: c.seq, f: f}
	heap.Push(&c.heap, t)
	return t
}

// When returns the time the timer is (or was) due.
func (t *Timer) When() time.Duration { return t.at }

// Pending reports whether the timer has neither run nor been stopped.
func (t *Timer) Pending() bool { return t != nil && t.index >= 0 }

// Stop cancels the timer. It returns true if the timer was pending, false
// if it had already run or been stopped. A nil timer is allowed.
func (t *Timer) Stop() bool {
	if t == nil || t.index < 0 {
		return false
	}
	heap.Remove(&t.c.heap, t.index)
	t.index = -1
	return true
}

// Step runs the earliest pending event, advancing Now to its time. It
// returns false when nothing is scheduled.
func (c *Clock) Step() bool {
	if len(c.heap) == 0 {
		return false
	}
	t := heap.Pop(&c.heap).(*Timer)
	t.index = -1
	if t.at > c.now {
		c.now = t.at
	}
	t.f()
	return true
}

// RunUntil runs every event due at or before t (including events those
// events schedule), then sets Now to t if it is later.
func (c *Clock) RunUntil(t time.Duration) {
	for len(c.heap) > 0 && c.heap[0].at <= t {
		c.Step()
	}
	if t > c.now {
		c.now = t
	}
}

// Run runs events until none is left or limit events have run; it returns
// the number run. It is meant for tests with a bounded amount of work.
func (c *Clock) Run(limit int) int {
	n := 0
	for n < limit && c.Step() {
		n++
	}
	return n
}

// NextEvent returns the time of the earliest pending event.
func (c *Clock) NextEvent() (time.Duration, bool) {
	if len(c.heap) == 0 {
		return 0, false
	}
	return c.heap[0].at, true
}

// Pending returns the number of scheduled events.
func (c *Clock) Pending() int { return len(c.heap) }

type eventHeap []*Timer

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *eventHeap) Push(x any) {
	t := x.(*Timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	t.index = -1
	return t
}
