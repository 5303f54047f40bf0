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

// maxRaisedAtEnd bounds the rounds of instances raised at the end of a
// trace by others decided there.
const maxRaisedAtEnd = 8

// decideAwaited offers next (nil: the end of the trace) to every instance
// held, in the order they were raised, and forgets those it settles.
//
// An instance raised while deciding (an Await inside a Decide) is kept
// for the records after next; at the end of the trace it is offered the
// end too (a Decide offered the end settles: one raising another there
// more than maxRaisedAtEnd rounds deep is cut off).
func (c *Conn) decideAwaited(next *trace.Record) {
	from := 0
	for round := 0; ; round++ {
		n := len(c.awaited)
		k := from
		for i := from; i < n; i++ {
			d := c.awaited[i]
			if d(c, next) || next == nil {
				continue
			}
			c.awaited[k] = d
			k++
		}
		// Those raised meanwhile were appended past n.
		k += copy(c.awaited[k:], c.awaited[n:])
		clear(c.awaited[k:])
		raised := len(c.awaited) > n
		c.awaited = c.awaited[:k]
		if next != nil || !raised {
			return
		}
		if round == maxRaisedAtEnd {
			clear(c.awaited)
			c.awaited = c.awaited[:0]
			return
		}
		from = 0 // at the end: offer the end to those raised too
	}
}
