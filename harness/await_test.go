package harness

import (
	"testing"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// awaiter raises, on its first ACK, an instance of "awaited" that waits
// for a request at or past the ACK's PSN (checked) and is open if the
// trace ends first; it records which frames the instance was offered.
type awaiter struct {
	offered *[]int
	raised  bool
}

func (w *awaiter) Observe(c *Conn, r *trace.Record) {
	if w.raised || r.Packet.Opcode != wire.Acknowledge {
		return
	}
	w.raised = true
	a := r.Packet.PSN
	c.Await(func(c *Conn, next *trace.Record) bool {
		if next == nil {
			c.Unresolved("awaited", "the trace ended first")
			return true
		}
		*w.offered = append(*w.offered, next.Frame)
		if next.Dir == trace.ToResponder && next.Packet.PSN.AtOrAfter(a) {
			c.Checked("awaited")
			return true
		}
		return false
	})
}

func (*awaiter) End(*Conn) {}

func TestAwait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		recs    []*trace.Record
		offered []int
		checked int
		open    int
	}{
		{"settled by the record that decides it, offered every record until then",
			[]*trace.Record{req(1, wire.SendOnly, 7, 10, true), ack(2, 7, 12, 0, 1), req(3, wire.SendOnly, 7, 11, true), ack(4, 7, 11, 0, 2), req(5, wire.SendOnly, 7, 12, true), req(6, wire.SendOnly, 7, 13, true)},
			[]int{3, 4, 5}, 1, 0},
		{"open when the trace ends first",
			[]*trace.Record{req(1, wire.SendOnly, 7, 10, true), ack(2, 7, 12, 0, 1), req(3, wire.SendOnly, 7, 11, true)},
			[]int{3}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var offered []int
			sink := NewSink("t")
			a := NewAuditor(UnknownSettings(), sink)
			a.mons = []Monitor{{Clause: "awaited", New: func(*Conn) Checker { return &awaiter{offered: &offered} }}}
			for _, r := range tc.recs {
				a.Observe(r)
			}
			a.End()
			tl := sink.Tally("awaited")
			if tl == nil {
				t.Fatalf("the instance was never settled")
			}
			if len(offered) != len(tc.offered) || tl.Checked != tc.checked || tl.Open != tc.open {
				t.Fatalf("offered frames %v, checked %d, open %d; want %v, %d, %d", offered, tl.Checked, tl.Open, tc.offered, tc.checked, tc.open)
			}
			for i := range offered {
				if offered[i] != tc.offered[i] {
					t.Fatalf("offered frames %v, want %v", offered, tc.offered)
				}
			}
		})
	}
}

// One instance beyond maxAwaited is settled at once, as at the end.
func TestAwaitBound(t *testing.T) {
	c := &Conn{sink: NewSink("")}
	settled := 0
	for range maxAwaited + 1 {
		c.Await(func(c *Conn, next *trace.Record) bool {
			if next != nil {
				return false
			}
			settled++
			return true
		})
	}
	if settled != 1 || len(c.awaited) != maxAwaited {
		t.Fatalf("settled %d at once, %d held; want 1 and %d", settled, len(c.awaited), maxAwaited)
	}
	c.decideAwaited(nil)
	if settled != maxAwaited+1 || len(c.awaited) != 0 {
		t.Fatalf("after the end: settled %d, %d held", settled, len(c.awaited))
	}
}

// An instance raised while another is decided waits for the records after
// it, and is offered the end of the trace too (it was dropped).
func TestAwaitRaisedWhileDeciding(t *testing.T) {
	c := &Conn{sink: NewSink("")}
	var offered []int
	inner := func(c *Conn, next *trace.Record) bool {
		if next == nil {
			offered = append(offered, 0)
			return true
		}
		offered = append(offered, next.Frame)
		return false
	}
	c.Await(func(c *Conn, next *trace.Record) bool {
		c.Await(inner)
		return true
	})
	c.decideAwaited(&trace.Record{Frame: 1})
	c.decideAwaited(&trace.Record{Frame: 2})
	c.decideAwaited(nil)
	if len(offered) != 2 || offered[0] != 2 || offered[1] != 0 || len(c.awaited) != 0 {
		t.Fatalf("the raised instance was offered %v (0: the end), %d held; want [2 0], 0", offered, len(c.awaited))
	}
	// Raised at the end: offered the end as well.
	offered = nil
	c.Await(func(c *Conn, next *trace.Record) bool {
		c.Await(inner)
		return true
	})
	c.decideAwaited(nil)
	if len(offered) != 1 || offered[0] != 0 {
		t.Fatalf("raised at the end, offered %v; want [0]", offered)
	}
}
