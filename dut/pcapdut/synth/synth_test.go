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

// TestSRQ: with SRQ every acknowledgment carries the invalid-credit code,
// without it none does, and the frames are otherwise the same.
func TestSRQ(t *testing.T) {
	credits := func(srq bool) (invalid, counted int, frames []wire.Opcode) {
		var buf bytes.Buffer
		if _, err := Write(&buf, Options{Frames: 2000, QPs: 3, Seed: 4, SRQ: srq}); err != nil {
			t.Fatal(err)
		}
		r, err := capture.NewReader(bytes.NewReader(buf.Bytes()), "synth")
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		for {
			cf, err := r.Next()
			if err != nil {
				break
			}
			if err := f.DecodeEthernet(cf.Data); err != nil {
				t.Fatalf("SRQ %v, frame %d: %v", srq, cf.Num, err)
			}
			frames = append(frames, f.Opcode)
			if f.Opcode.Has(wire.HdrAETH) && f.AETH.IsACK() {
				if f.AETH.Value() == wire.CreditInvalid {
					invalid++
				} else {
					counted++
				}
			}
		}
		return invalid, counted, frames
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
