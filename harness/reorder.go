package harness

import "github.com/rcconform/rcconform/harness/trace"

// reorderDepth is how many records of a connection the Auditor holds
// back to put packets the network reordered after their sender back into
// the sender's order.
const reorderDepth = 8

// heldRing is the size of the reorder buffer's ring: a power of two
// above reorderDepth.
const heldRing = 16

// heldAt returns the i-th record held back, oldest first.
func (c *Conn) heldAt(i int) *trace.Record { return c.held[(c.heldHead+i)&(heldRing-1)] }

// heldSet sets the i-th record held back to r.
func (c *Conn) heldSet(i int, r *trace.Record) { c.held[(c.heldHead+i)&(heldRing-1)] = r }

// hold takes r into the connection's reorder buffer: where its sender
// counts IDs up and r was sent before a record held back from the same
// sender, r goes before it. It returns the records to deliver now, in
// order (valid until the next call).
func (c *Conn) hold(r *trace.Record) []*trace.Record {
	d := r.Dir & 1
	c.ids[d].learn(r)
	if c.nHeld == 0 && !c.ids[0].countsUp() && !c.ids[1].countsUp() {
		c.out[0] = r
		return c.out[:1]
	}
	at := c.nHeld
	if c.DatedByID(r) {
		// r goes before the earliest held record its sender sent after
		// it (SentBeforeByID, with what does not change along the loop
		// tested once).
		for i := c.nHeld - 1; i >= 0; i-- {
			h := c.heldAt(i)
			if d := h.IPID - r.IPID; d != 0 && d < idStep && h.Dir == r.Dir && h.HasIPID && h.Src == r.Src {
				at = i
			}
		}
	}
	for i := c.nHeld; i > at; i-- {
		c.heldSet(i, c.heldAt(i-1))
	}
	c.heldSet(at, r)
	c.nHeld++
	if at < c.nHeld-1 {
		c.Reordered++
	}
	if c.nHeld <= reorderDepth {
		return nil
	}
	c.out[0] = c.release()
	return c.out[:1]
}

// release takes the first record out of the reorder buffer. The IDs may
// have shown a sender to count up only after its records were taken in
// (a reordering within its first packets): the record its sender sent
// first among those held goes first.
func (c *Conn) release() *trace.Record {
	first := 0
	if f := c.heldAt(0); c.DatedByID(f) {
		// SentBeforeByID(heldAt(i), f), with what does not change along
		// the loop tested once and the ID test, which in-order traffic
		// fails, first.
		for i := 1; i < c.nHeld; i++ {
			if h := c.heldAt(i); f.IPID-h.IPID-1 < idStep-1 && h.Dir == f.Dir && h.HasIPID && h.Src == f.Src {
				first, f = i, h
			}
		}
	}
	r := c.heldAt(first)
	if first == 0 {
		c.held[c.heldHead] = nil
		c.heldHead = (c.heldHead + 1) & (heldRing - 1)
	} else {
		c.Reordered++
		for i := first; i < c.nHeld-1; i++ {
			c.heldSet(i, c.heldAt(i+1))
		}
		c.heldSet(c.nHeld-1, nil)
	}
	c.nHeld--
	return r
}

// flush returns the records still held back.
func (c *Conn) flush() []*trace.Record {
	out := make([]*trace.Record, 0, c.nHeld)
	for c.nHeld > 0 {
		out = append(out, c.release())
	}
	return out
}
