// Package c9_103 checks C9-103 (§9.7.5.1.4): answering a duplicate
// request, one whose PSN is behind the responder's expected PSN, never
// moves that expected PSN.
package c9_103

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-103"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return &judge{} })) }

// judge: the expected PSN is visible on the wire only through the
// responder's later answers. After a duplicate, a sequence NAK (or
// invalid-request NAK) must still name an expected PSN the responder could
// have had had the duplicate changed nothing; one behind all of them, with
// a duplicate in between, shows the duplicate moved it back. A positive
// answer to the next new request, or a NAK naming the unchanged expected
// PSN, shows the duplicate left it alone.
//
// On complete traces the model knows the window of expected PSNs exactly;
// elsewhere only a lower bound (the PSN after the newest request the
// responder acknowledged), so only a NAK behind that bound is flagged, and
// there the trace cannot tell a duplicate that moved the expected PSN from
// a NAK that misnames it: the one finding names both clauses
// (dupnak.MovedOrWrongNAK). Nor, off complete traces, can it tell them
// from a NAK built while latched and sent late, where the NAK names its
// previous one's PSN after the responder was shown past it
// (dupnak.PassedNAK).
type judge struct {
	// nak is the last NAK the responder sent (haveNAK: one came): a NAK
	// repeating it, same code and PSN, is the NAK latch's concern
	// (C9-114/C9-122), not a sign that a duplicate moved the expected PSN.
	nak     uint8 // syndrome
	nakPSN  wire.PSN
	haveNAK bool
}

// Kinds implements harness.KindFilter: Acknowledges only.
func (*judge) Kinds() harness.Kinds { return opcodes }

var opcodes = harness.KindsWhere(func(op wire.Opcode) bool { return op == wire.Acknowledge })

func (j *judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead || p.Opcode != wire.Acknowledge {
		return
	}
	repeat := false
	if !p.AETH.IsACK() {
		repeat = j.haveNAK && p.AETH.Syndrome == j.nak && p.PSN == j.nakPSN
		j.nak, j.nakPSN, j.haveNAK = p.AETH.Syndrome, p.PSN, true
	}
	if len(ev.DupsSinceBase) == 0 {
		return
	}
	if p.AETH.IsACK() {
		if ev.Exact && ev.NamesStep {
			k.Checked(c) // a new request after the duplicate was taken in sequence
		}
		return
	}
	if !p.AETH.IsNAK(wire.NAKPSNSequence) && !p.AETH.IsNAK(wire.NAKInvalidRequest) {
		return
	}
	dups := ev.DupsSinceBase
	last := dups[len(dups)-1].Packet
	switch {
	case ev.Exact && ev.InWindow:
		k.Checked(c)
	case ev.RepeatsPassed:
		dupnak.PassedNAK(k, c, ev)
	case repeat:
		k.Indeterminate(c, fmt.Sprintf("after a duplicate the NAK names PSN %d behind the expected PSN, but it repeats the responder's previous NAK (same code and PSN): a NAK sent twice is the NAK latch's concern (C9-114/C9-122), and it shows nothing about where the duplicate left the expected PSN", p.PSN))
	case ev.Exact && ev.Behind:
		k.Violation(c, ev.Rec, fmt.Sprintf("after the duplicate %s (%s), the NAK names PSN %d, behind the expected PSN %s the responder had before it: the duplicate moved the expected PSN",
			last.Opcode.ShortName(), dupnak.DupList(dups), p.PSN, receive.FormatPSNs(ev.Window)),
			[]string{fmt.Sprintf("a NAK naming the unchanged expected PSN %s", receive.FormatPSNs(ev.Window)), "the duplicate answered and the expected PSN left where it was"},
			dupnak.Seen(ev.Rec))
	case dupnak.BehindAfterDup(k, ev):
		dupnak.MovedOrWrongNAK(k, c, ev)
	case !ev.Exact:
		k.Indeterminate(c, "a NAK followed a duplicate, but the expected PSN before the duplicate is not known: "+k.T.Why())
	}
}

func (*judge) End(*dupnak.Checker, *harness.Conn) {}
