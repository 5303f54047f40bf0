package verdicts

import (
	"sort"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	_ "github.com/rcconform/rcconform/rules"
	"github.com/rcconform/rcconform/wire"
)

// A case is one hand-built trace audited by every monitor.
type vcase struct {
	name     string
	build    func(t *ht.Trace)
	settings harness.Settings
	fail     string // the one clause that must fail ("" none)
	// undecided, when set, is a clause that must come out indeterminate
	// (not pass) on the trace.
	undecided string
}

func capture(mtu int) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU = mtu
	return s
}

func complete(mtu int) harness.Settings {
	s := capture(mtu)
	s.Complete = true
	return s
}

// seedWalk is the 17-step walk of response-generation.txt: SEND 300,
// WRITE 301, READ 302–303 (8 KiB at a 4 KiB MTU), SEND 304 lost before
// the capture point when lost, SEND 305 answered by a sequence NAK naming
// 304, 304 and 305 resent, ACK 305 with MSN 5.
func seedWalk(lost bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 300, false)
		t.Req(wire.WriteOnly, 301, false)
		t.Read(302, 8192)
		t.ReadResp(wire.ReadResponseFirst, 302, 2, 4096)
		t.ReadResp(wire.ReadResponseLast, 303, 3, 4096)
		if !lost {
			t.Req(wire.SendOnly, 304, false)
		}
		t.Req(wire.SendOnly, 305, true)
		t.NAK(304, wire.NAKPSNSequence, 3)
		t.Req(wire.SendOnly, 304, false)
		t.Req(wire.SendOnly, 305, true)
		t.Ack(305, 5)
	}
}

var cases = []vcase{
	{name: "seed walk, 304 lost before the capture point, MTU unknown", build: seedWalk(true), settings: capture(0)},
	{name: "seed walk, 304 lost before the capture point, MTU 4096", build: seedWalk(true), settings: capture(4096)},
	{name: "seed walk, capture at the responder", build: seedWalk(true), settings: complete(4096)},
	{name: "READ response Middle lost before the capture point", build: lostMiddle(true), settings: capture(1024)},
	{name: "READ response Middle lost before the capture point, MTU unknown", build: lostMiddle(true), settings: capture(0)},
	{name: "READ responses all seen", build: lostMiddle(false), settings: capture(1024)},
	{name: "late ACK reordered after the sender", build: lateAck(true), settings: capture(0)},
	{name: "ACKs in order", build: lateAck(false), settings: capture(0)},
	{name: "late READ response reordered after the sender", build: lateReadResp, settings: capture(1024)},
}

// lostMiddle: two READs of 5 KiB at MTU 1024 (F, M, M, M, L each); the
// first's second Middle is lost before the capture point when lost.
func lostMiddle(lost bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		t.Req(wire.SendOnly, 10, true)
		t.Ack(10, 1)
		t.Read(11, 5*1024)
		t.Read(16, 5*1024)
		rs := t.ReadStream(11, 5*1024, 1024, 2)
		t.ReadStream(16, 5*1024, 1024, 3)
		t.Req(wire.SendOnly, 21, true)
		t.Ack(21, 4)
		if lost {
			for i, r := range t.Records {
				if r == rs[2] {
					t.Remove(i)
				}
			}
		}
	}
}

// lateAck: a responder that counts its IPv4 Identification up ACKs every
// SEND; when late, the network delays one ACK behind the next.
func lateAck(late bool) func(t *ht.Trace) {
	return func(t *ht.Trace) {
		for i := range 12 {
			t.Req(wire.SendOnly, wire.PSN(100+2*i), false)
			t.Req(wire.SendOnly, wire.PSN(101+2*i), true)
		}
		for i := range 12 {
			t.Ack(wire.PSN(101+2*i), uint32(2*i+2))
		}
		t.IPIDs(1000, 5000)
		if late {
			n := len(t.Records)
			t.Swap(n-4, n-3)
		}
	}
}

// lateReadResp: READ responses counted up in IP ID, one Middle delayed
// behind the next by the network.
func lateReadResp(t *ht.Trace) {
	for i := range 10 {
		t.Req(wire.SendOnly, wire.PSN(100+i), true)
		t.Ack(wire.PSN(100+i), uint32(i+1))
	}
	t.Read(110, 5*1024)
	t.ReadStream(110, 5*1024, 1024, 11)
	t.IPIDs(1000, 5000)
	n := len(t.Records)
	t.Swap(n-3, n-2)
}

func clauses(ts map[string]*harness.Tally, pred func(*harness.Tally) bool) []string {
	var out []string
	for k, t := range ts {
		if pred(t) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestVerdicts(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &ht.Trace{}
			c.build(tr)
			ts, fs := ht.AuditAll(tr, c.settings)
			failed := clauses(ts, func(x *harness.Tally) bool { return x.Violations > 0 })
			var want []string
			if c.fail != "" {
				want = []string{c.fail}
			}
			if strings.Join(failed, ",") != strings.Join(want, ",") {
				var msgs []string
				for _, f := range fs {
					msgs = append(msgs, f.ID+": "+f.Message)
				}
				t.Errorf("failed %v, want %v\n  %s", failed, want, strings.Join(msgs, "\n  "))
			}
			if c.undecided != "" {
				if v := ts[c.undecided].Verdict(); v != "indeterminate" {
					t.Errorf("%s: verdict %s, want indeterminate (tally %+v)", c.undecided, v, ts[c.undecided])
				}
			}
		})
	}
}
