// Package c9_113 checks C9-113 (§9.7.5.1.5): when the responder refuses a
// request with an RNR NAK, for instance a SEND that finds no receive WQE,
// the NAK's BTH PSN is the PSN of the refused request.
package c9_113

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-113"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return &judge{} })) }

// needsRWQE reports whether a request packet is one where a responder
// takes a receive WQE: the first (or only) packet of a SEND, and the
// packet carrying a WRITE's immediate data (its Last or Only).
func needsRWQE(op wire.Opcode) bool {
	switch op {
	case wire.SendFirst, wire.SendOnly, wire.SendOnlyImm, wire.SendOnlyInvalidate,
		wire.WriteLastImm, wire.WriteOnlyImm:
		return true
	}
	return false
}

// judge: an RNR NAK's PSN must name a request the responder received at its
// expected PSN (on complete traces: a request the model accepted in sequence
// within the window of the NAK; elsewhere: a request the capture shows), not
// one it had already acknowledged, and a packet where a receive WQE is taken:
// a SEND's First or Only packet, or a WRITE's packet with immediate data
// (docs/interpretations.md, "RNR NAK for a multi-packet SEND": a multi-packet
// SEND is refused at its First). An RNR NAK naming a READ or ATOMIC is judged
// under Table 58 (running out of READ/ATOMIC resources is not an RNR
// condition). Whether the receive queue really was empty no capture shows.
//
// One root cause, one clause: an RNR NAK that repeats, PSN for PSN, an
// earlier RNR NAK this judge found right, with no request at that PSN
// since to refuse, is the earlier NAK sent again; whether a responder may
// repeat a NAK unprompted is §9.7.7.2's rule, so the repeat is undecided
// here, not a wrong PSN.
type judge struct {
	// good holds the PSNs of RNR NAKs found right (bounded).
	good map[wire.PSN]bool
}

// maxGood bounds judge.good.
const maxGood = 1024

func (j *judge) held(x wire.PSN) {
	if j.good == nil || len(j.good) >= maxGood {
		j.good = map[wire.PSN]bool{}
	}
	j.good[x] = true
}

// Kinds implements harness.KindFilter: RNR NAKs only.
func (*judge) Kinds() harness.Kinds { return 1 << harness.KindRNRNAK }

func (j *judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead || p.Opcode != wire.Acknowledge || !p.AETH.IsRNR() {
		return
	}
	x := p.PSN
	if ev.NamedSeen && (ev.Named == wire.ReadRequest || opc.Class(ev.Named) == wire.ClassAtomic) {
		k.Indeterminate(c, "an RNR NAK named a READ or ATOMIC request: judged under Table-58")
		return
	}
	expected := []string{"an RNR NAK with the PSN of the refused request: a SEND's First or Only packet, or a WRITE's packet carrying immediate data, received at the expected PSN"}
	switch {
	case ev.Exact && ev.DupNamed != nil && !ev.Accepted:
		k.Indeterminate(c, fmt.Sprintf("an RNR NAK names PSN %d, a duplicate: refusing a duplicate is not a matter of its PSN", x))
	case ev.Exact && ev.AckedAlready && !ev.Accepted:
		k.Violation(c, ev.Rec, fmt.Sprintf("the RNR NAK names PSN %d, a request the responder had already acknowledged (through PSN %d): it refuses nothing it had not executed", x, ev.AckedPSN),
			expected, dupnak.Seen(ev.Rec))
	case ev.Exact && !ev.Accepted && j.good[x]:
		k.Indeterminate(c, fmt.Sprintf("an RNR NAK names PSN %d again, with no new request at that PSN to refuse: it repeats an earlier RNR NAK, which §9.7.7.2 judges", x))
	case ev.Exact && !ev.Accepted:
		k.Violation(c, ev.Rec, fmt.Sprintf("the RNR NAK names PSN %d, but no request with that PSN reached the responder while PSN %d was its expected PSN (when it built the NAK it could only have expected %s)", x, x, receive.FormatPSNs(ev.Window)),
			expected, dupnak.Seen(ev.Rec))
	case !k.T.Complete() && ev.HaveLower && ev.Behind:
		dupnak.BehindUnlessResendMissed(k, c, ev, fmt.Sprintf("the RNR NAK names PSN %d, behind PSN %d that the responder's expected PSN had already reached (the trace's ACKs and NAKs show it), and the requester resent none: it refuses nothing it had not executed", x, ev.Lower),
			expected, fmt.Sprintf("an RNR NAK names PSN %d, behind PSN %d that the responder's expected PSN had already reached (the trace's ACKs and NAKs show it): either the wrong request, or a resend the capture missed (refusing a duplicate is not a matter of its PSN)", x, ev.Lower),
			harness.Either{
				Message: fmt.Sprintf("the RNR NAK names PSN %d, behind PSN %d that the responder's expected PSN had already reached (the trace's ACKs and NAKs show it, and the responder's IPv4 Identifications show the NAK sent after them)", x, ev.Lower),
				Alts: []reports.Alternative{
					{ID: ID, If: fmt.Sprintf("no request with PSN %d reached the responder since: the NAK names a request it did not refuse", x)},
					{ID: "C9-105", If: fmt.Sprintf("a resend of PSN %d the capture missed reached it: a duplicate, which the responder acknowledges and never refuses", x)},
				},
			})
	case !ev.NamedSeen && k.T.Complete() && ev.Exact:
		k.Violation(c, ev.Rec, fmt.Sprintf("the RNR NAK names PSN %d, which no request carried", x), expected, dupnak.Seen(ev.Rec))
	case !ev.NamedSeen && c.SeesEveryRequest():
		c.Unresolved(ID, fmt.Sprintf("an RNR NAK names PSN %d, which no request in the capture carried although the capture shows the connection from its start: only a request the capture dropped explains it", x))
	case !ev.NamedSeen:
		k.Indeterminate(c, fmt.Sprintf("an RNR NAK names PSN %d, a request the capture does not show", x))
	case !needsRWQE(ev.Named):
		k.Violation(c, ev.Rec, fmt.Sprintf("the RNR NAK names PSN %d, a %s: no receive WQE is taken at that packet, so it is not the request refused for want of one (a SEND is refused at its First packet)", x, ev.Named),
			expected, dupnak.Seen(ev.Rec))
	case k.T.Complete() && !ev.Exact:
		k.Indeterminate(c, "an RNR NAK's PSN cannot be placed yet: "+k.T.Why())
	default:
		j.held(x)
		k.Checked(c)
	}
}

func (*judge) End(*dupnak.Checker, *harness.Conn) {}
