package harness_test

import (
	"reflect"
	"testing"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// The seed's walk with 304 lost before the capture point and the MTU
// unknown: the READ's span is closed by its Last response, the sequence
// NAK pins the expected PSN at 304, 305 was dropped, the resent 304 is
// in sequence.
func TestReconSeedWalk(t *testing.T) {
	tr := &ht.Trace{}
	tr.Req(wire.SendOnly, 300, false)
	tr.Req(wire.WriteOnly, 301, false)
	tr.Read(302, 8192)
	tr.ReadResp(wire.ReadResponseFirst, 302, 2, 4096)
	tr.ReadResp(wire.ReadResponseLast, 303, 3, 4096)
	tr.Req(wire.SendOnly, 305, true)
	tr.NAK(304, wire.NAKPSNSequence, 3)
	tr.Req(wire.SendOnly, 304, false)
	tr.Req(wire.SendOnly, 305, true)
	tr.Ack(305, 5)
	c := harness.ExposeAudit(tr.Records, harness.UnknownSettings())
	steps := c.Steps
	// Before the resent 304 (record 8): expected exactly 304, 305 dropped.
	if x, ok := steps[7].Exp.Exact(); !ok || x != 304 || steps[7].Class != harness.ReqInSeq {
		t.Fatalf("before the resent 304: expected %+v class %v, want exactly 304, in sequence", steps[7].Exp, steps[7].Class)
	}
	if !steps[7].Dropped305 {
		t.Fatalf("305 not marked dropped after the sequence NAK")
	}
	// Before the resent 305: the resent 304 may have been lost after the
	// capture point (nothing says where the capture was taken), so the
	// responder expects 304 or 305, and the class of 305 is open.
	if e := steps[8].Exp; !e.HaveLo || !e.HaveHi || e.Lo != 304 || e.Hi != 305 || steps[8].Class != harness.ReqUnknown {
		t.Fatalf("before the resent 305: expected %+v class %v, want 304..305, unknown", steps[8].Exp, steps[8].Class)
	}
	// At the responder (--complete) it is exact: 304 accepted, 305 in
	// sequence again.
	s := harness.UnknownSettings()
	s.Complete = true
	if cs := harness.ExposeAudit(tr.Records, s).Steps; cs[8].Class != harness.ReqInSeq {
		t.Fatalf("complete: before the resent 305: expected %+v class %v", cs[8].Exp, cs[8].Class)
	} else if x, ok := cs[8].Exp.Exact(); !ok || x != 305 {
		t.Fatalf("complete: before the resent 305: expected %+v", cs[8].Exp)
	}
	if s := c.Conn.ReadSpanAt(302); s == nil || !s.Known() || s.LastMin != 303 || !s.Closed {
		t.Fatalf("READ span not closed at 303 by its Last response: %+v", s)
	}
	if c.Conn.InsideRead(304) {
		t.Fatalf("304 taken for a partial retry of the READ at 302")
	}
	// The first acknowledgment, the READ's First with MSN 2, counts SEND
	// 300 and WRITE 301: the walk begins at the QP's creation.
	if !c.Conn.FromStart() || c.Conn.Complete() {
		t.Fatalf("FromStart %v Complete %v, want true, false", c.Conn.FromStart(), c.Conn.Complete())
	}
}

// A connection whose first request is acknowledged with MSN 1 is seen
// from its start; one whose first acknowledgment carries MSN 7 is not.
func TestReconFromStart(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		want bool
	}{{1, true}, {7, false}} {
		tr := &ht.Trace{}
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, tc.msn)
		c := harness.ExposeAudit(tr.Records, harness.UnknownSettings())
		if got := c.Conn.FromStart(); got != tc.want {
			t.Errorf("MSN %d: FromStart %v, want %v", tc.msn, got, tc.want)
		}
		if c.Conn.Complete() {
			t.Errorf("MSN %d: a capture showing the start is not complete (loss around the capture point stays possible)", tc.msn)
		}
	}
}

// IPv4 IDs counting up put an ACK the network delayed back before the
// ACK it was sent before; without IDs the capture order stays.
func TestReconSenderOrder(t *testing.T) {
	for _, ids := range []bool{true, false} {
		tr := &ht.Trace{}
		for i := range 12 {
			tr.Req(wire.SendOnly, wire.PSN(100+i), true)
		}
		for i := range 12 {
			tr.Ack(wire.PSN(100+i), uint32(i+1))
		}
		if ids {
			tr.IPIDs(1000, 5000)
		}
		n := len(tr.Records)
		tr.Swap(n-4, n-3)
		c := harness.ExposeAudit(tr.Records, harness.UnknownSettings())
		var psns []wire.PSN
		for _, st := range c.Steps[12:] {
			psns = append(psns, st.Rec.Packet.PSN)
		}
		inOrder := true
		for i := 1; i < len(psns); i++ {
			if psns[i].Before(psns[i-1]) {
				inOrder = false
			}
		}
		if inOrder != ids || (c.Conn.Reordered > 0) != ids {
			t.Errorf("IDs %v: ACK PSNs seen in order %v (reordered %d): %v", ids, inOrder, c.Conn.Reordered, psns)
		}
	}
}

// An open instance keeps a clause from passing; an undecided one does not.
func TestUnresolvedBlocksPass(t *testing.T) {
	for _, tc := range []struct {
		t    harness.Tally
		want reports.Verdict
	}{
		{harness.Tally{Checked: 3, Indeterminate: 2}, reports.Pass},
		{harness.Tally{Checked: 3, Indeterminate: 2, Open: 1}, reports.Indeterminate},
		{harness.Tally{Checked: 3, Violations: 1, Open: 1}, reports.Fail},
		{harness.Tally{Indeterminate: 1}, reports.Indeterminate},
		{harness.Tally{}, reports.NotExercised},
	} {
		if got := tc.t.Verdict(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.t, got, tc.want)
		}
	}
}

// CopyRing.Check: a packet repeating a remembered one with its IPv4 ID,
// from a sender whose IDs change, is a copy; a new ID makes it a second
// transmission; without an ID (IPv6), or from a sender whose ID stays
// fixed, the repeat may be either (maybe); a packet differing in a byte
// is neither.
func TestCopyRingCheck(t *testing.T) {
	for _, tc := range []struct {
		name              string
		hasID, vary       bool
		id                uint16
		msn               uint32
		wantCopy, wantMay bool
	}{
		{name: "IPv4 same ID", hasID: true, vary: true, id: 1, msn: 2, wantCopy: true},
		{name: "IPv4 new ID", hasID: true, vary: true, id: 5, msn: 2},
		{name: "IPv4 fixed ID", hasID: true, vary: false, id: 1, msn: 2, wantMay: true},
		{name: "IPv6", msn: 2, wantMay: true},
		{name: "IPv6 other MSN", msn: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &ht.Trace{}
			tr.Ack(101, 2)
			tr.Ack(102, 3)
			again := tr.Ack(101, tc.msn)
			for i, r := range tr.Records {
				r.HasIPID = tc.hasID
				if tc.hasID {
					r.IPID = uint16(i + 1)
				}
			}
			again.IPID = tc.id
			var k harness.CopyRing
			for _, r := range tr.Records[:2] {
				if cp, maybe := k.Check(r, tc.vary); cp || maybe {
					t.Fatalf("frame %d: copy %v, maybe %v for a new packet", r.Frame, cp, maybe)
				}
			}
			if cp, maybe := k.Check(again, tc.vary); cp != tc.wantCopy || maybe != tc.wantMay {
				t.Errorf("copy %v, maybe %v; want %v, %v", cp, maybe, tc.wantCopy, tc.wantMay)
			}
		})
	}
}

// A copy far behind the packet it repeats (more than the ring's depth of
// the connection's packets between, as a capture of two interfaces
// written in batches shows): found by its IPv4 ID, from a sender whose
// IDs change. The same ID on a packet that differs anywhere is not a
// copy, nor is the same packet under a new ID.
func TestCopyRingFar(t *testing.T) {
	for _, tc := range []struct {
		name     string
		bend     func(p *wire.Packet)
		id       uint16
		vary     bool
		wantCopy bool
		early    bool // the first packets checked as from a sender whose IDs have not yet changed
	}{
		{name: "same ID, same packet", id: 1, vary: true, wantCopy: true},
		{name: "same ID, other MSN", id: 1, vary: true, bend: func(p *wire.Packet) { p.AETH.MSN++ }},
		{name: "same ID, other PSN", id: 1, vary: true, bend: func(p *wire.Packet) { p.PSN++ }},
		{name: "same ID, AckReq set", id: 1, vary: true, bend: func(p *wire.Packet) { p.AckReq = true }},
		{name: "new ID", id: 400, vary: true},
		{name: "same ID from a sender whose ID stays", id: 1, vary: false},
		// The packet repeated came before the sender was seen to change
		// its ID (its first packets): still found.
		{name: "same ID, remembered before the IDs were seen to change", id: 1, vary: true, wantCopy: true, early: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &ht.Trace{}
			first := tr.Ack(100, 1)
			for i := range 100 {
				tr.Ack(wire.PSN(101+i), uint32(2+i))
			}
			for i, r := range tr.Records {
				r.HasIPID, r.IPID = true, uint16(i+1)
			}
			var k harness.CopyRing
			for i, r := range tr.Records {
				if cp, _ := k.Check(r, tc.vary && !(tc.early && i < 2)); cp {
					t.Fatalf("frame %d taken as a copy", r.Frame)
				}
			}
			again := tr.Recopy(0)
			again.IPID = tc.id
			if tc.bend != nil {
				tc.bend(again.Packet)
			}
			if cp, _ := k.Check(again, tc.vary); cp != tc.wantCopy {
				t.Errorf("a repeat of frame %d, 100 packets later: copy %v, want %v", first.Frame, cp, tc.wantCopy)
			}
		})
	}
}

// Every field Check compares changes the fingerprint of a packet, so a
// packet that differs in any of them is never taken for a far copy.
func TestCopyFingerprintFields(t *testing.T) {
	base := func() *trace.Record {
		tr := &ht.Trace{}
		r := tr.Ack(100, 1)
		r.HasIPID, r.IPID = true, 7
		return r
	}
	// Set each field of the packet's headers (reflection finds them all,
	// so a field added later is covered) to another value.
	var paths [][]int
	var walk func(tp reflect.Type, at []int)
	walk = func(tp reflect.Type, at []int) {
		for i := range tp.NumField() {
			f := tp.Field(i)
			p := append(append([]int{}, at...), i)
			switch {
			case f.Name == "Payload" || f.Name == "PadOverride":
				// The payload is compared by its bytes (below); a pad
				// override only shapes encoding.
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, p)
			default:
				paths = append(paths, p)
			}
		}
	}
	walk(reflect.TypeOf(wire.Packet{}), nil)
	if len(paths) < 20 {
		t.Fatalf("only %d fields found", len(paths))
	}
	for _, p := range paths {
		a, b := base(), base()
		v := reflect.ValueOf(b.Packet).Elem().FieldByIndex(p)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(v.Uint() ^ 1)
		default:
			t.Fatalf("field %v of kind %v", p, v.Kind())
		}
		var k harness.CopyRing
		k.Check(a, true)
		for i := range 40 { // push a out of the ring
			f := base()
			f.IPID, f.Packet.PSN = uint16(1000+i), wire.PSN(2000+i)
			k.Check(f, true)
		}
		if cp, _ := k.Check(b, true); cp {
			t.Errorf("a packet differing in field %s is taken for a copy", reflect.TypeOf(wire.Packet{}).FieldByIndex(p).Name)
		}
		if cp, _ := k.Check(b, true); !cp {
			t.Errorf("field %s: a packet repeated at once is not a copy", reflect.TypeOf(wire.Packet{}).FieldByIndex(p).Name)
		}
	}
	// The payload's bytes and the payload length count too.
	for _, bend := range []func(r *trace.Record){
		func(r *trace.Record) { r.Packet.Payload = []byte{1} },
		func(r *trace.Record) { r.PayloadLen = 9 },
		func(r *trace.Record) { r.Src = ht.Requester },
	} {
		a, b := base(), base()
		bend(b)
		var k harness.CopyRing
		k.Check(a, true)
		for i := range 40 {
			f := base()
			f.IPID, f.Packet.PSN = uint16(1000+i), wire.PSN(2000+i)
			k.Check(f, true)
		}
		if cp, _ := k.Check(b, true); cp {
			t.Errorf("a packet differing in its payload, length or sender is taken for a copy")
		}
	}
}
