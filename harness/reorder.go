package harness

import "github.com/rcconform/rcconform/harness/trace"

// reorderDepth is how many records of a connection the Auditor holds
// back to put packets the network reordered after their sender back into
// the sender's order.
const reorderDepth = 8

// heldRing is the size of the reorder buffer's ring: a power of two
// above reorderDepth.
const heldRing = 16

// chainStep bounds the step between the IDs of a chain's neighbours
// (idChain): a chain as long as the buffer can be, each ID up to
// chainStep after the one before it, spans less than 1<<16 - idStep, so
// no ID of it can read as sent after a later one.
const chainStep = 4096

// idChain follows the records of one direction held back that carry an
// IPv4 ID, in the buffer's order: n of them, the last with ID last. Unless
// broken, each ID is 1 to chainStep after the one before it: then none of
// them was sent after a later one by its sender (SentBeforeByID), so the
// buffer's scans for a record out of its sender's order can be left out,
// as in-order traffic has them find nothing. Broken is only ever a
// doubt: it is cleared when the chain is walked again (ordered).
type idChain struct {
	n      int
	last   uint16
	broken bool
}

// inStep reports whether ID b may follow a in an unbroken chain.
func inStep(a, b uint16) bool { return b-a-1 < chainStep }

// ordered reports whether the chain of direction d is unbroken, walking
// it again where it was in doubt.
func (ch *idChain) ordered(c *Conn, d trace.Dir) bool {
	if !ch.broken {
		return true
	}
	n, broken := 0, false
	for i := range c.nHeld {
		if h := c.heldAt(i); chained(h) && h.Dir&1 == d {
			broken = broken || n > 0 && !inStep(ch.last, h.IPID)
			n++
			ch.last = h.IPID
		}
	}
	ch.n, ch.broken = n, broken
	return !broken
}

// follows reports whether r, of direction d, was sent after every
// record of the chain: it is in step after an unbroken chain's last.
func (ch *idChain) follows(c *Conn, d trace.Dir, r *trace.Record) bool {
	return ch.ordered(c, d) && (ch.n == 0 || inStep(ch.last, r.IPID))
}

// add takes r, which carries an ID, into the chain, last in the buffer
// or (not last) before some of it.
func (ch *idChain) add(r *trace.Record, last bool) {
	if !last || ch.n > 0 && !inStep(ch.last, r.IPID) {
		ch.broken = true
	}
	if last {
		ch.last = r.IPID
	}
	ch.n++
}

// remove takes one record out of the chain: its first (the buffer's
// oldest record of its direction) or (not first) another.
func (ch *idChain) remove(first bool) {
	ch.n--
	if !first {
		ch.broken = true
	}
	if ch.n == 0 {
		ch.broken = false
	}
}

// chained reports whether record r takes a place in its sender's order by
// its IPv4 ID: it carries one and is no copy of a request already seen
// (trace.Record.Copy). A copy was made by the network (or recorded twice
// by the capture) after its sender sent the packet once, in its place: it
// reached the capture point, and the peer beyond it, where it was
// recorded, and moving it back to the place its ID names would put it
// before packets of the other direction that the peer built before it
// arrived.
func chained(r *trace.Record) bool { return r.HasIPID && !r.Copy }

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
	ch := &c.chains[d]
	if c.DatedByID(r) && !r.Copy && !ch.follows(c, d, r) {
		// r goes before the earliest held record its sender sent after
		// it (SentBeforeByID, with what does not change along the loop
		// tested once).
		for i := c.nHeld - 1; i >= 0; i-- {
			h := c.heldAt(i)
			if d := h.IPID - r.IPID; d != 0 && d < idStep && h.Dir == r.Dir && chained(h) && h.Src == r.Src {
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
	if chained(r) {
		ch.add(r, at == c.nHeld-1)
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
	if f := c.heldAt(0); c.DatedByID(f) && !f.Copy && !c.chains[f.Dir&1].ordered(c, f.Dir&1) {
		// SentBeforeByID(heldAt(i), f), with what does not change along
		// the loop tested once and the ID test, which in-order traffic
		// fails, first.
		for i := 1; i < c.nHeld; i++ {
			if h := c.heldAt(i); f.IPID-h.IPID-1 < idStep-1 && h.Dir == f.Dir && chained(h) && h.Src == f.Src {
				first, f = i, h
			}
		}
	}
	r := c.heldAt(first)
	if chained(r) {
		c.chains[r.Dir&1].remove(first == 0)
	}
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
