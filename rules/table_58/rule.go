// Package table_58 checks the Table 58 rule (responder error behaviour,
// §9.9.x; no clause number is public, so it is keyed by its table): a
// responder that receives an RDMA READ or ATOMIC request while all of its
// negotiated responder resources for outstanding READ/ATOMIC requests are
// in use answers with a NAK invalid request (code 1). This is not a
// receiver-not-ready condition and is never answered with an RNR NAK.
package table_58

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the rule this package checks.
const ID = "Table-58"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return judge{} })) }

// judge: an RNR NAK naming a READ or ATOMIC request is a violation: an RNR
// NAK is for a request lacking a receive WQE, and the resource a READ or
// ATOMIC can lack is a READ/ATOMIC resource, whose shortage Table 58
// classes as an invalid request. A NAK invalid request naming a READ or
// ATOMIC is consistent with the table. How many resources the responder
// negotiated, and so whether a READ it served was one too many, no
// capture shows: only the active scenarios, which set the number, judge
// that.
type judge struct{}

// Kinds implements harness.KindFilter: RNR NAKs and invalid request NAKs
// only.
func (judge) Kinds() harness.Kinds {
	return 1<<harness.KindRNRNAK | 1<<harness.NAKKind(wire.NAKInvalidRequest)
}

func (judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead || p.Opcode != wire.Acknowledge || !ev.NamedSeen {
		return
	}
	rdat := ev.Named == wire.ReadRequest || opc.Class(ev.Named) == wire.ClassAtomic
	if !rdat {
		return
	}
	switch {
	case p.AETH.IsRNR():
		k.Violation(c, ev.Rec, fmt.Sprintf("an RNR NAK refuses the %s at PSN %d: a READ or ATOMIC needs no receive WQE, and running out of READ/ATOMIC responder resources is an invalid request (Table 58), not receiver-not-ready", ev.Named, p.PSN),
			[]string{"the READ/ATOMIC executed", "a NAK invalid request if it exceeds the responder resources"},
			dupnak.Seen(ev.Rec))
	case p.AETH.IsNAK(wire.NAKInvalidRequest):
		k.Checked(c)
	}
}

func (judge) End(*dupnak.Checker, *harness.Conn) {}
