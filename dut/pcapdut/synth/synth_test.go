package synth

import (
	"bytes"
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
