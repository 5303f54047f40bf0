package harness

import "github.com/rcconform/rcconform/harness/trace"

// This file holds the instances a monitor raised that the trace did not
// yet decide when it saw them: an ACK that may lie inside a READ's range
// whose last PSN the trace has not shown, an ACK ahead of every request
// the capture has shown. The connection holds each until a later record,
// or what the reconstruction learns from it, settles it, or the trace
// ends. (Instances that wait for a sender's next IPv4 Identification
// are held by ViolationUnlessMissed, evidence.go.)

// Decide settles an awaited instance as the record next arrives, before
// any monitor sees it: the reconstruction describes the trace up to the
// record before next. next is nil when the trace has ended (the
// reconstruction then holds every record) or too many instances are
// held: the instance must then be settled. Decide returns
// true once it has raised the instance's outcome (Violation, Checked,
// Unresolved or Indeterminate), false to go on waiting.
type Decide func(c *Conn, next *trace.Record) bool

// maxAwaited bounds the instances one connection holds; one raised
// beyond it is settled at once, as at the end of the trace.
const maxAwaited = 256

// Await holds an instance until decide settles it (Decide).
func (c *Conn) Await(decide Decide) {
	if len(c.awaited) >= maxAwaited {
		decide(c, nil)
		return
	}
	c.awaited = append(c.awaited, decide)
}

// decideAwaited offers next (nil: the end of the trace) to every instance
// held, in the order they were raised, and forgets those it settles.
func (c *Conn) decideAwaited(next *trace.Record) {
	k := 0
	for _, d := range c.awaited {
		if d(c, next) || next == nil {
			continue
		}
		c.awaited[k] = d
		k++
	}
	clear(c.awaited[k:])
	c.awaited = c.awaited[:k]
}
