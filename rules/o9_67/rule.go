// Package o9_67 checks o9-67 (§9.7.5.1.4), optional for responders that
// implement atomics: a duplicate ATOMIC whose PSN is not among the saved
// ATOMIC results (its resource was reused, for instance) is dropped: the
// responder neither executes it nor answers it, with an ATOMIC
// acknowledgment or with a NAK.
package o9_67

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "o9-67"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return &judge{} })) }

// judge: a NAK (any code, or an RNR NAK) naming the PSN of a duplicate
// ATOMIC is a violation, whether or not a result was saved: with one the
// saved value goes back (o9-66), without one the duplicate is dropped. So
// is, on complete traces, an error NAK naming a PSN that no request
// carried since the responder's last proven point while a duplicate
// ATOMIC waits for its answer (the NAK answers that duplicate). An
// ATOMIC is a duplicate when its PSN was already answered, or when the
// model places it behind the responder's expected PSN; on complete traces
// a NAK that the responder could have built about the original request
// (still in its window) is not counted. Whether a result was saved, and
// whether memory changed twice, no capture shows; an answer with a
// different value is o9-66's finding. A sequence NAK naming a duplicate
// ATOMIC's PSN behind the expected PSN is judged for its PSN (C9-111), not
// here.
type judge struct{ dups, naked int }

// Kinds implements harness.KindFilter: responses (ATOMIC answers and
// NAKs).
func (*judge) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool { return opc.IsResponse(op) })

func (j *judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead {
		return
	}
	if opc.Class(p.Opcode) == wire.ClassAtomic {
		return
	}
	if a := ev.Answer; a != nil && a.Kind == receive.AnsStart && a.Req != nil && a.Req.Atomic && a.Req.Dup {
		j.dups++ // answered with an ATOMIC acknowledgment, not a NAK
		return
	}
	if p.Opcode != wire.Acknowledge || p.AETH.IsACK() {
		return
	}
	d := ev.DupNamed
	if d != nil && opc.Class(d.Packet.Opcode) == wire.ClassAtomic && p.AETH.IsNAK(wire.NAKPSNSequence) && ev.Behind {
		// A sequence NAK names the responder's expected PSN, not the
		// request it answers: naming a PSN behind it (here the
		// duplicate ATOMIC's), its fault is its PSN, judged under
		// C9-111/C9-121 (with C9-103 after a duplicate). One root
		// cause, one clause.
		k.Indeterminate(c, fmt.Sprintf("a sequence NAK names PSN %d, a duplicate ATOMIC's, behind the responder's expected PSN: a sequence NAK names the expected PSN, not the request it answers, so its PSN is judged under C9-111/C9-121", p.PSN))
		return
	}
	if d == nil || opc.Class(d.Packet.Opcode) != wire.ClassAtomic {
		if w := ev.WaitingDupAtomic; w != nil && ev.Exact && !ev.ReqSinceBase && !ev.Accepted && !p.AETH.IsNAK(wire.NAKPSNSequence) {
			// The NAK names no request that arrived since the
			// responder's last proven point; the waiting duplicate
			// ATOMIC is what it answers.
			d = w.Rec
		} else {
			return
		}
	} else if k.T.Complete() && (!ev.Exact || ev.Accepted) {
		k.Indeterminate(c, "a NAK names a duplicate ATOMIC's PSN, but it may be about the original request: "+k.T.Why())
		return
	}
	j.naked++
	k.Violation(c, ev.Rec, fmt.Sprintf("the duplicate ATOMIC at PSN %d (frame %d) is answered with a NAK (%s): a duplicate ATOMIC with no saved result is dropped silently, one with a saved result gets it back",
		d.Packet.PSN, d.Frame, p.AETH),
		[]string{"no answer: the duplicate dropped", "an ATOMIC acknowledgment returning the saved original value (o9-66)"},
		dupnak.Seen(ev.Rec))
}

func (j *judge) End(k *dupnak.Checker, c *harness.Conn) {
	_, waiting := k.T.End()
	for _, w := range waiting {
		if w.Atomic && w.Dup {
			j.dups++ // dropped, not NAKed
		}
	}
	for i := 0; i < j.dups; i++ {
		k.Checked(c)
	}
}
