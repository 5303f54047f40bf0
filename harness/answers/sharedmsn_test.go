package answers_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/answers"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// msnTwins runs C9-148's and C9-149's use of the MSN model twice: each
// with a model of its own, and sharing one as the monitors do
// (SharedMSN).
type msnTwins struct {
	t          answers.Tracker
	m148, m149 answers.MSNModel
	shared     answers.SharedMSN
	diff       *string
}

func (w *msnTwins) Observe(c *harness.Conn, r *trace.Record) {
	ev := w.t.Observe(c, r)
	req := r.Packet.Opcode.IsRequest()
	// Each with its own model.
	var a148, a149 answers.Judgement
	if req {
		w.m148.Request(c, r, ev.MTU)
		w.m149.Request(c, r, ev.MTU)
	} else {
		a148 = w.m148.Model(c, r, ev)
		if a149 = w.m149.NAK(c, r); a149.Skip {
			w.m149.Model(c, r, ev)
		}
	}
	// Sharing: C9-148 first, then C9-149, and the other way round on
	// alternate packets (the memo must not depend on the order).
	var b148, b149 answers.Judgement
	switch {
	case req:
		w.shared.Request(c, r, ev.MTU)
		w.shared.Request(c, r, ev.MTU)
	case c.Packets%2 == 0:
		b148 = w.shared.Model(c, r, ev)
		if b149 = w.shared.NAK(c, r); b149.Skip {
			w.shared.Model(c, r, ev)
		}
	default:
		if b149 = w.shared.NAK(c, r); b149.Skip {
			w.shared.Model(c, r, ev)
		}
		b148 = w.shared.Model(c, r, ev)
	}
	if *w.diff == "" && (!reflect.DeepEqual(a148, b148) || !reflect.DeepEqual(a149, b149)) {
		*w.diff = fmt.Sprintf("at %s: own models %+v / %+v, shared %+v / %+v", r, a148, a149, b148, b149)
	}
}

func (w *msnTwins) End(*harness.Conn) {}

// TestSharedMSNJudgesAsOwnModels: C9-148 and C9-149 share one MSN model;
// on random traffic (MSNs of every value, NAKs before any ACK, the 2^24
// wrap, active runs and captures) both judge every AETH as with models of
// their own.
func TestSharedMSNJudgesAsOwnModels(t *testing.T) {
	const clause = "test-shared-msn"
	var diff string
	harness.RegisterMonitor(harness.Monitor{Clause: clause, New: func(*harness.Conn) harness.Checker {
		return &msnTwins{diff: &diff}
	}})
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		var b ht.Trace
		psn := wire.PSN(rng.Uint32() & wire.PSNMask)
		msn := rng.Uint32() & 0xFFFFFF
		if seed%2 == 0 {
			msn = 0
		}
		for range 60 {
			switch x := rng.IntN(10); {
			case x < 4:
				b.Req(wire.SendOnly, psn, rng.IntN(2) == 0)
				psn = psn.Next()
			case x < 6:
				if rng.IntN(4) != 0 {
					msn++
				}
				b.Ack(psn.Add(-rng.IntN(3)), msn&0xFFFFFF)
			case x < 8:
				m := msn
				if rng.IntN(3) == 0 {
					m = rng.Uint32()
				}
				b.NAK(psn.Add(-rng.IntN(3)), uint8(rng.IntN(4)), m&0xFFFFFF)
			default:
				msn += uint32(rng.IntN(1 << 24))
				b.Ack(psn.Add(-1), msn&0xFFFFFF)
			}
		}
		for _, s := range []harness.Settings{ht.ActiveMTU(1024), ht.CaptureMTU(0)} {
			ht.Audit(&ht.Trace{Records: b.Records}, clause, s)
			if diff != "" {
				t.Fatalf("seed %d, active %v: %s", seed, s.Active, diff)
			}
		}
	}
}
