package synth

import (
	"bytes"
	"slices"
	"testing"

	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	st, err := Write(&buf, Options{Frames: 5000, QPs: 4, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if st.Frames != 5000 || st.Requests == 0 || st.Requests == st.Frames {
		t.Fatalf("stats %+v", st)
	}
	r, err := capture.NewReader(bytes.NewReader(buf.Bytes()), "synth")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[wire.Opcode]int{}
	qps := map[uint32]bool{}
	var f wire.Frame
	n, wrapped := 0, false
	for {
		cf, err := r.Next()
		if err != nil {
			break
		}
		n++
		if err := f.DecodeEthernet(cf.Data); err != nil {
			t.Fatalf("frame %d: %v", cf.Num, err)
		}
		if st := f.CheckICRC(); st != wire.ICRCOK {
			t.Fatalf("frame %d: ICRC %v", cf.Num, st)
		}
		seen[f.Opcode]++
		qps[f.DestQP] = true
		if f.PSN < 100 && f.Opcode.IsRequest() {
			wrapped = true
		}
	}
	if n != 5000 {
		t.Errorf("%d frames read", n)
	}
	for _, op := range []wire.Opcode{wire.SendFirst, wire.SendMiddle, wire.SendLast, wire.SendOnly, wire.SendOnlyImm,
		wire.WriteFirst, wire.WriteLast, wire.WriteOnly, wire.ReadRequest, wire.ReadResponseFirst, wire.ReadResponseMiddle,
		wire.ReadResponseLast, wire.ReadResponseOnly, wire.Acknowledge, wire.AtomicAcknowledge, wire.CompareSwap, wire.FetchAdd} {
		if seen[op] == 0 {
			t.Errorf("no %v in %v", op, seen)
		}
	}
	if len(qps) != 8 {
		t.Errorf("%d destination QPs, want 8 (4 connections, both directions)", len(qps))
	}
	if !wrapped {
		t.Error("no QP crossed the PSN wrap")
	}
	var again bytes.Buffer
	if _, err := Write(&again, Options{Frames: 5000, QPs: 4, Seed: 9}); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Errorf("the same options gave a different capture (%v)", err)
	}
}

// frames writes a capture with o and returns its frames, decoded.
func frames(t *testing.T, o Options) []wire.Frame {
	t.Helper()
	var buf bytes.Buffer
	st, err := Write(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(buf.Bytes()), "synth")
	if err != nil {
		t.Fatal(err)
	}
	var out []wire.Frame
	for {
		cf, err := r.Next()
		if err != nil {
			break
		}
		var f wire.Frame
		if err := f.DecodeEthernet(cf.Data); err != nil {
			t.Fatalf("%+v: frame %d: %v", o, cf.Num, err)
		}
		out = append(out, f)
	}
	if len(out) != st.Frames {
		t.Fatalf("%+v: %d frames read, %d written", o, len(out), st.Frames)
	}
	return out
}

// TestSRQ: with SRQ every acknowledgment carries the invalid-credit code,
// without it none does, and the frames are otherwise the same.
func TestSRQ(t *testing.T) {
	credits := func(srq bool) (invalid, counted int, ops []wire.Opcode) {
		for _, f := range frames(t, Options{Frames: 2000, QPs: 3, Seed: 4, SRQ: srq}) {
			ops = append(ops, f.Opcode)
			if f.Opcode.Has(wire.HdrAETH) && f.AETH.IsACK() {
				if f.AETH.Value() == wire.CreditInvalid {
					invalid++
				} else {
					counted++
				}
			}
		}
		return invalid, counted, ops
	}
	inv, cnt, plain := credits(false)
	if inv != 0 || cnt == 0 {
		t.Errorf("without SRQ: %d invalid-credit codes, %d counts", inv, cnt)
	}
	inv, cnt, srq := credits(true)
	if inv == 0 || cnt != 0 {
		t.Errorf("with SRQ: %d invalid-credit codes, %d counts", inv, cnt)
	}
	if !slices.Equal(plain, srq) {
		t.Error("SRQ changed the traffic, not only the credit codes")
	}
}

// TestOps: Ops limits the requests to the operations it names; an Ops
// that names none is an error.
func TestOps(t *testing.T) {
	for _, c := range []struct {
		ops  []wire.Opcode
		want []wire.Opcode // every request opcode the capture may hold
	}{
		{[]wire.Opcode{wire.SendFirst}, []wire.Opcode{wire.SendFirst, wire.SendMiddle, wire.SendLast, wire.SendLastImm, wire.SendOnly, wire.SendOnlyImm}},
		{[]wire.Opcode{wire.ReadRequest}, []wire.Opcode{wire.ReadRequest}},
		{[]wire.Opcode{wire.CompareSwap, wire.FetchAdd}, []wire.Opcode{wire.CompareSwap, wire.FetchAdd}},
	} {
		seen := map[wire.Opcode]bool{}
		for _, f := range frames(t, Options{Frames: 1000, QPs: 2, Seed: 3, Ops: c.ops}) {
			if f.Opcode.IsRequest() {
				seen[f.Opcode] = true
			}
		}
		for _, op := range c.ops {
			if !seen[op] {
				t.Errorf("%v: no %v", c.ops, op)
			}
		}
		for op := range seen {
			if !slices.Contains(c.want, op) {
				t.Errorf("%v: a %v request", c.ops, op)
			}
		}
	}
	if _, err := Write(&bytes.Buffer{}, Options{Ops: []wire.Opcode{wire.Acknowledge}}); err == nil {
		t.Error("Ops with no operation: no error")
	}
}

// TestWhole: with Whole every connection's first response carries an MSN
// counted from zero (at most the messages it ended) and its last
// acknowledges its last request; without, neither holds.
func TestWhole(t *testing.T) {
	// whole counts the connections whose first response has an MSN
	// counted from zero, and those whose last request was acknowledged.
	whole := func(o Options) (fromZero, settled int) {
		fs := frames(t, o)
		if o.Whole && len(fs) < o.Frames || !o.Whole && len(fs) != o.Frames {
			t.Errorf("Whole %v: %d frames for %d", o.Whole, len(fs), o.Frames)
		}
		type qp struct {
			ends           uint32 // message ends sent
			seen, fromZero bool   // a response seen; the first's MSN at most ends
			lastReq        wire.PSN
			ackedLast      bool
		}
		qps := map[uint32]*qp{} // by the requester's QP (a response's destination)
		for _, f := range fs {
			if f.Opcode.IsRequest() {
				// The requester's QP is the one its responses go to: the
				// synthetic QPs of a connection are 0x100+3i and 0x200+5i.
				q := (f.DestQP-0x200)/5*3 + 0x100
				if qps[q] == nil {
					qps[q] = &qp{}
				}
				qps[q].lastReq, qps[q].ackedLast = f.PSN, false
				if pos := f.Opcode.Position(); pos == wire.PosLast || pos == wire.PosOnly {
					qps[q].ends++
				}
				continue
			}
			c := qps[f.DestQP]
			if c == nil {
				continue
			}
			if !c.seen {
				c.seen, c.fromZero = true, f.AETH.MSN <= c.ends
			}
			if f.Opcode == wire.Acknowledge && f.PSN == c.lastReq {
				c.ackedLast = true
			}
		}
		for _, c := range qps {
			if c.fromZero {
				fromZero++
			}
			if c.ackedLast {
				settled++
			}
		}
		return fromZero, settled
	}
	o := Options{Frames: 3000, QPs: 4, Seed: 5, Ops: []wire.Opcode{wire.SendFirst, wire.WriteFirst}, Whole: true}
	if z, s := whole(o); z != 4 || s != 4 {
		t.Errorf("Whole: %d of 4 connections from MSN 0, %d settled", z, s)
	}
	o.Whole = false
	if z, s := whole(o); z != 0 || s == 4 {
		t.Errorf("not Whole: %d of 4 connections from MSN 0, %d settled", z, s)
	}
}
