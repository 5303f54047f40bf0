package harness

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

var (
	hostA = netip.MustParseAddr("10.0.0.2")
	hostB = netip.MustParseAddr("10.0.0.1")
)

func req(frame int, op wire.Opcode, qp uint32, psn wire.PSN, ackReq bool) *trace.Record {
	return &trace.Record{Frame: frame, Time: time.Duration(frame) * time.Microsecond, Dir: trace.ToResponder,
		Src: hostA, Dst: hostB, ICRC: wire.ICRCOK,
		Packet: &wire.Packet{BTH: wire.BTH{Opcode: op, DestQP: qp, PSN: psn, AckReq: ackReq}}}
}

func ack(frame int, qp uint32, psn wire.PSN, syn uint8, msn uint32) *trace.Record {
	return &trace.Record{Frame: frame, Time: time.Duration(frame) * time.Microsecond, Dir: trace.ToRequester,
		Src: hostB, Dst: hostA, ICRC: wire.ICRCOK,
		Packet: &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, DestQP: qp, PSN: psn}, AETH: wire.AETH{Syndrome: syn, MSN: msn}}}
}

// recorder is a checker that remembers which connection saw what.
type recorder struct{ seen *[]int }

func (r recorder) Observe(c *Conn, rec *trace.Record) { *r.seen = append(*r.seen, c.ID) }
func (r recorder) End(*Conn)                          {}

func TestAuditorPairsConnectionsByPSN(t *testing.T) {
	var seen []int
	monMu.Lock()
	saved := monitors
	monitors = []Monitor{{Clause: "test", New: func(*Conn) Checker { return recorder{&seen} }}}
	monMu.Unlock()
	defer func() { monMu.Lock(); monitors = saved; monMu.Unlock() }()

	a := NewAuditor(UnknownSettings(), NewSink("x"))
	// Two QPs between the same hosts, PSN spaces far apart; responses
	// are addressed to requester QPs 0x21 and 0x22.
	recs := []*trace.Record{
		req(1, wire.SendOnly, 0x11, 100, true),
		req(2, wire.SendOnly, 0x12, 900000, true),
		ack(3, 0x22, 900000, 0x1F, 1),
		ack(4, 0x21, 100, 0x1F, 1),
		ack(5, 0x22, 900000, 0x1F, 1),
	}
	for _, r := range recs {
		a.Observe(r)
	}
	a.End()
	want := []int{1, 2, 2, 1, 2}
	if len(seen) != len(want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("record %d went to connection %d, want %d (all: %v)", i+1, seen[i], want[i], seen)
		}
	}
	if c := a.Conns()[1]; c.RequesterQP != 0x22 || c.ResponderQP != 0x12 {
		t.Fatalf("connection 2 paired as requester QP 0x%x / responder QP 0x%x", c.RequesterQP, c.ResponderQP)
	}
}

// kindRecorder is a checker that asks for some packet kinds and
// remembers the frames it saw.
type kindRecorder struct {
	kinds Kinds
	seen  *[]int
}

func (k kindRecorder) Kinds() Kinds                       { return k.kinds }
func (k kindRecorder) Observe(c *Conn, rec *trace.Record) { *k.seen = append(*k.seen, rec.Frame) }
func (k kindRecorder) End(*Conn)                          {}

// TestAuditorRoutesByKind: a checker sees the records of the kinds it
// asks for: requests by opcode, Acknowledges by their syndrome (ACK, RNR
// NAK, sequence NAK, other NAK codes, reserved syndromes), and an opcode's
// set (KindsWhere) holds every Acknowledge.
func TestAuditorRoutesByKind(t *testing.T) {
	recs := []*trace.Record{
		req(1, wire.SendOnly, 0x11, 100, true),
		ack(2, 0x21, 100, wire.SynACK(3), 1),
		ack(3, 0x21, 101, wire.SynRNR(4), 1),
		ack(4, 0x21, 101, wire.SynNAK(wire.NAKPSNSequence), 1),
		ack(5, 0x21, 101, wire.SynNAK(wire.NAKRemoteAccess), 1),
		ack(6, 0x21, 101, 0x40, 1),
		ack(7, 0x21, 101, 0x80|wire.SynRNR(1), 1), // bit 7 set: still an RNR NAK's kind
	}
	for _, c := range []struct {
		kinds Kinds
		want  []int
	}{
		{AllKinds, []int{1, 2, 3, 4, 5, 6, 7}},
		{KindsWhere(func(op wire.Opcode) bool { return op == wire.Acknowledge }), []int{2, 3, 4, 5, 6, 7}},
		{KindsWhere(func(op wire.Opcode) bool { return op == wire.SendOnly }), []int{1}},
		{1 << wire.Acknowledge, []int{2}},
		{1 << KindRNRNAK, []int{3, 7}},
		{1 << NAKKind(wire.NAKPSNSequence), []int{4}},
		{1 << NAKKind(wire.NAKRemoteAccess), []int{5}},
		{1 << KindReservedAETH, []int{6}},
	} {
		var seen []int
		monMu.Lock()
		saved := monitors
		monitors = []Monitor{{Clause: "test", New: func(*Conn) Checker { return kindRecorder{c.kinds, &seen} }}}
		monMu.Unlock()
		a := NewAuditor(UnknownSettings(), NewSink("x"))
		for _, r := range recs {
			a.Observe(r)
		}
		a.End()
		monMu.Lock()
		monitors = saved
		monMu.Unlock()
		if fmt.Sprint(seen) != fmt.Sprint(c.want) {
			t.Errorf("kinds %#x: saw frames %v, want %v", c.kinds, seen, c.want)
		}
	}
}

func TestAuditorSkipsBadICRC(t *testing.T) {
	a := NewAuditor(UnknownSettings(), NewSink(""))
	r := req(1, wire.SendOnly, 0x11, 5, true)
	r.ICRC = wire.ICRCBad
	a.Observe(r)
	if len(a.Conns()) != 0 {
		t.Fatal("a frame with a bad ICRC reached the connection model")
	}
}

// TestConnReadUnknownMTU: a READ seen while the path MTU is unknown uses
// at least the PSNs its length needs at the largest MTU (4096), so the
// next new request comes after them and a READ asked from inside them is
// its partial retry, not a new READ; once its answer shows the MTU, the
// rest of its range counts as used too, whatever asked for the span, and
// its answer is owed.
func TestConnReadUnknownMTU(t *testing.T) {
	c := &Conn{Settings: UnknownSettings(), sink: NewSink("")}
	rd := req(1, wire.ReadRequest, 1, 100, false)
	rd.Packet.RETH.Length = 3 * 4096
	c.absorb(rd)
	if c.NextReq != 103 {
		t.Fatalf("NextReq = %d after a READ of 12288 bytes at PSN 100, MTU unknown: want 103 (3 packets at 4096 at least)", c.NextReq)
	}
	retry := req(2, wire.ReadRequest, 1, 101, false)
	retry.Packet.RETH.Length = 2 * 4096
	c.absorb(retry)
	if s := c.ReadSpanAt(101); s == nil || s.First != 100 {
		t.Fatalf("the READ from PSN 101 was taken for a new READ: span %+v", s)
	}
	first := &trace.Record{Frame: 3, Dir: trace.ToRequester, PayloadLen: 1024, Packet: &wire.Packet{BTH: wire.BTH{Opcode: wire.ReadResponseFirst, PSN: 100}}}
	c.absorb(first)
	if c.NextReq != 112 {
		t.Fatalf("NextReq = %d once a READ response of 1024 bytes shows the MTU (the READ's range ends at 111), want 112", c.NextReq)
	}
	if s := c.ReadSpanAt(100); s == nil || !s.Known() || s.LastMin != 111 {
		t.Fatalf("with the MTU known (1024), the READ's span: %+v, want 100..111", s)
	}
	if c.ReadCovering(105) == nil {
		t.Fatalf("the READ's answer, begun but not ended, is not owed once its range is known")
	}
}

func TestConnModel(t *testing.T) {
	c := &Conn{Settings: Settings{MTU: 1024}, sink: NewSink("")}
	c.absorb(req(1, wire.SendOnly, 1, 0xFFFFFE, false))
	rd := req(2, wire.ReadRequest, 1, 0xFFFFFF, false)
	rd.Packet.RETH.Length = 3000
	c.absorb(rd)
	if c.NextReq != 2 {
		t.Fatalf("NextReq = %d, want 2 (READ of 3 packets from 0xFFFFFF wraps)", c.NextReq)
	}
	if r := c.ReadCovering(1); r == nil || r.First != 0xFFFFFF || r.LastMin != 1 {
		t.Fatalf("READ range not tracked across the wrap: %+v", r)
	}
	if !c.SentBefore(0) || c.SentBefore(2) {
		t.Fatal("SentBefore wrong around the wrap")
	}
	last := &trace.Record{Frame: 3, Dir: trace.ToRequester, Packet: &wire.Packet{BTH: wire.BTH{Opcode: wire.ReadResponseLast, PSN: 1}}}
	c.absorb(last)
	if c.ReadCovering(1) != nil || c.ReadCovering(0xFFFFFF) != nil {
		t.Fatal("the READ's answer is still owed after its Last response")
	}
	if s := c.ReadSpanAt(0); s == nil || !s.Closed {
		t.Fatalf("the READ's span is gone or not closed by its Last response: %+v", s)
	}
}

// A positive ACK beyond an owed READ's last PSN ends what it owed (the
// requester takes the READ for lost); one inside leaves it owed.
func TestOwedReadPassedByACK(t *testing.T) {
	c := &Conn{Settings: Settings{MTU: 1024}, sink: NewSink("")}
	rd := req(1, wire.ReadRequest, 1, 10, false)
	rd.Packet.RETH.Length = 3000 // 10..12
	c.absorb(rd)
	c.absorb(req(2, wire.SendOnly, 1, 13, false))
	c.absorb(ack(3, 1, 12, 0, 1))
	if c.ReadCovering(11) == nil {
		t.Fatal("an ACK at the READ's last PSN ended what it owed")
	}
	c.absorb(ack(4, 1, 13, 0, 2))
	if c.ReadCovering(11) != nil {
		t.Fatal("an ACK beyond the READ's last PSN left its answer owed")
	}
}

func TestTallyVerdict(t *testing.T) {
	cases := []struct {
		t    *Tally
		want reports.Verdict
	}{
		{nil, reports.NotExercised},
		{&Tally{}, reports.NotExercised},
		{&Tally{Indeterminate: 2}, reports.Indeterminate},
		{&Tally{Checked: 1, Indeterminate: 2}, reports.Pass},
		{&Tally{Checked: 5, Violations: 1}, reports.Fail},
	}
	for _, c := range cases {
		if got := c.t.Verdict(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.t, got, c.want)
		}
	}
}

func TestLadderHighlights(t *testing.T) {
	r1, r2 := req(1, wire.SendOnly, 1, 7, true), ack(2, 2, 7, 0x1F, 1)
	out := Ladder([]*trace.Record{r1, r2}, r2, true)
	if out == "" || !contains(out, "<==") || !contains(out, "SEND O") || !contains(out, "ACK") {
		t.Fatalf("ladder:\n%s", out)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestTallyKinds: every undecided instance is counted under the kind of its
// reason (reasons that differ only in their numbers are one kind), with
// its first instance's reason and frame, kinds in order of first
// appearance, and the counts add up to the tally's undecided count; open
// and not-open instances of one reason are separate kinds.
func TestTallyKinds(t *testing.T) {
	sink := NewSink("t.pcap")
	c := &Conn{sink: sink}
	steps := []struct {
		frame  int
		open   bool
		reason string
	}{
		{10, false, "the NAK at PSN 5 cannot be placed"},
		{11, false, "the NAK at PSN 6 cannot be placed"},
		{12, true, "the ACK at PSN 7 may cover a lost request"},
		{13, false, "the NAK at PSN 8 cannot be placed"},
		{14, false, "the ACK at PSN 7 may cover a lost request"},
		{15, true, "the ACK at PSN 9 may cover a lost request"},
	}
	for _, s := range steps {
		c.cur = &trace.Record{Frame: s.frame}
		if s.open {
			c.Unresolved("C9-95", s.reason)
		} else {
			c.Indeterminate("C9-95", s.reason)
		}
	}
	tl := sink.Tally("C9-95")
	want := []reports.UndecidedKind{
		{Reason: "the NAK at PSN 5 cannot be placed", Count: 3, Frame: 10},
		{Reason: "the ACK at PSN 7 may cover a lost request", Count: 2, Open: true, Frame: 12},
		{Reason: "the ACK at PSN 7 may cover a lost request", Count: 1, Frame: 14},
	}
	if len(tl.Kinds) != len(want) {
		t.Fatalf("kinds %+v, want %+v", tl.Kinds, want)
	}
	sum := 0
	for i := range want {
		if tl.Kinds[i] != want[i] {
			t.Errorf("kind %d: %+v, want %+v", i, tl.Kinds[i], want[i])
		}
		sum += tl.Kinds[i].Count
	}
	if sum != tl.Indeterminate || tl.Open != 2 {
		t.Errorf("kinds count %d instances, tally %d undecided (%d open, want 2)", sum, tl.Indeterminate, tl.Open)
	}
}

// TestSinkTallyCache: every clause gets its own tally, counted in Tallies,
// whether its cache slot is free, taken by clauses whose IDs differ in a
// digit, or beyond what the cache holds (the map then serves it).
func TestSinkTallyCache(t *testing.T) {
	cases := []struct {
		name    string
		clauses int
	}{
		{"few", 8},
		{"suite-sized", 60},
		{"beyond the cache", 3 * tallyCacheLen},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSink("x")
			for round := 1; round <= 3; round++ {
				for i := range tc.clauses {
					for range i%3 + 1 {
						s.tally(fmt.Sprintf("C9-%d", 100+i)).Checked++
					}
				}
			}
			if len(s.Tallies) != tc.clauses {
				t.Fatalf("%d tallies, want %d", len(s.Tallies), tc.clauses)
			}
			for i := range tc.clauses {
				if got, want := s.Tallies[fmt.Sprintf("C9-%d", 100+i)].Checked, 3*(i%3+1); got != want {
					t.Errorf("C9-%d: checked %d, want %d", 100+i, got, want)
				}
			}
		})
	}
}
