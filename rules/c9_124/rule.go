// Package c9_124 checks C9-124 (§9.7.5.2): a NAK with code 2 (remote
// access error) carries in its BTH the PSN of the request packet that
// caused the error, rather than the responder's expected PSN.
package c9_124

import (
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-124"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return judge{} })) }

// judge: the offending packet is a request the responder received at its
// expected PSN and had not already acknowledged, so a remote access NAK
// must name such a request: on complete traces, one the model accepted in
// sequence within the NAK's window and that no positive response covered
// before. Which packet of a multi-packet WRITE overran the region's bounds
// needs the bounds, which no capture shows, but a NAK naming a packet the
// responder had already acknowledged cannot be about it.
//
// A NAK strictly inside a new READ's response range is a mid-stream
// failure (C9-100/C9-112), and one about a duplicate is C9-106/C9-115's.
// So is a NAK naming a PSN of a READ's span (its own PSN, say) after the
// responder acknowledged into that span, as its READ response packets
// with an AETH do: which PSN the NAK of a READ failing mid-response
// carries is C9-100/C9-112's rule, not this one's (one root cause, one
// clause).
// On traces that may miss packets, only a NAK naming a request the
// capture shows is counted, and one naming an acknowledged PSN is
// indeterminate (a resend the capture missed may be what it answers).
type judge struct{}

// Kinds implements harness.KindFilter: remote access NAKs only.
func (judge) Kinds() harness.Kinds { return 1 << harness.NAKKind(wire.NAKRemoteAccess) }

func (judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	p := ev.Rec.Packet
	if ev.Dead || !dupnak.IsNAKCode(p, wire.NAKRemoteAccess) {
		return
	}
	if ev.InNewReadStream || ev.InDupReadStream != nil {
		return
	}
	x := p.PSN
	if ev.DupNamed != nil && !ev.Accepted {
		return // about a duplicate: C9-106/C9-115
	}
	if sp := c.ReadSpanAt(x); sp != nil && ev.AckedAlready && sp.Holds(ev.AckedPSN) {
		k.Indeterminate(c, fmt.Sprintf("a remote access NAK names PSN %d in the span of the READ at PSN %d after its response began: a READ failing mid-response is judged under C9-100 and C9-112", x, sp.First))
		return
	}
	expected := []string{"a remote access NAK with the PSN of the request packet that failed (received at the expected PSN, not yet acknowledged)"}
	switch {
	case ev.Exact && ev.AckedAlready && !ev.Accepted:
		k.Violation(c, ev.Rec, fmt.Sprintf("the remote access NAK names PSN %d, a request the responder had already acknowledged (through PSN %d): the NAK must name the packet that failed, not an earlier one of its message", x, ev.AckedPSN),
			expected, dupnak.Seen(ev.Rec))
	case ev.Exact && !ev.Accepted:
		k.Violation(c, ev.Rec, fmt.Sprintf("the remote access NAK names PSN %d, but no request with that PSN reached the responder while PSN %d was its expected PSN (when it built the NAK it could only have expected %s)", x, x, receive.FormatPSNs(ev.Window)),
			expected, dupnak.Seen(ev.Rec))
	case ev.Exact:
		k.Checked(c)
	case k.T.Complete():
		k.Indeterminate(c, "a remote access NAK's PSN cannot be placed: "+k.T.Why())
	case !ev.NamedSeen && c.SeesEveryRequest():
		c.Unresolved(k.ID, fmt.Sprintf("a remote access NAK names PSN %d, which no request in the capture carried although the capture shows the connection from its start: only a request the capture dropped explains it", x))
	case !ev.NamedSeen:
		k.Indeterminate(c, fmt.Sprintf("a remote access NAK names PSN %d, a request the capture does not show", x))
	case ev.AckedAlready:
		dupnak.WrongUnlessResendMissed(k, c, ev.Rec, fmt.Sprintf("the remote access NAK names PSN %d, a request the responder had already acknowledged (through PSN %d), and the requester resent none", x, ev.AckedPSN),
			expected, fmt.Sprintf("a remote access NAK names PSN %d, already acknowledged: either the wrong packet, or a resend the capture missed", x), dupError(c, x, ev.AckedPSN.Next()))
	case ev.HaveLower && ev.Behind:
		dupnak.BehindUnlessResendMissed(k, c, ev, fmt.Sprintf("the remote access NAK names PSN %d, behind PSN %d that the responder's expected PSN had already reached (the trace's ACKs and NAKs show it), and the requester resent none", x, ev.Lower),
			expected, fmt.Sprintf("a remote access NAK names PSN %d, behind PSN %d that the responder's expected PSN had already reached (the trace's ACKs and NAKs show it): either the wrong packet, or a resend the capture missed", x, ev.Lower), dupError(c, x, ev.Lower))
	default:
		k.Checked(c)
	}
}

func (judge) End(*dupnak.Checker, *harness.Conn) {}

// dupError is what a remote access NAK naming PSN x, behind PSN lower
// the responder's expected PSN had reached, is where a resend of x may
// have reached the responder unseen: a NAK for an error found on a
// duplicate, which the responder must drop silently (C9-106, whose
// meaning C9-115 shares), or, if none did, a NAK naming a packet that did
// not fail (C9-124). Where a READ at x had begun its answer (lower lies
// in its span), the NAK may end a READ failing mid-response, which C9-100
// and C9-112 judge: none, and the instance stays open.
func dupError(c *harness.Conn, x, lower wire.PSN) harness.Either {
	if sp := c.ReadSpanAt(x); sp != nil && sp.Holds(lower.Add(-1)) {
		return harness.Either{}
	}
	dup := fmt.Sprintf("a resend of PSN %d the capture missed reached it: an error found on a duplicate, which the responder drops without a NAK", x)
	return harness.Either{
		Message: fmt.Sprintf("the remote access NAK names PSN %d, behind PSN %d that the responder's expected PSN had already reached (the trace's ACKs and NAKs show it, and the responder's IPv4 Identifications show the NAK sent after them)", x, lower),
		Alts: []reports.Alternative{
			{ID: ID, If: fmt.Sprintf("no request with PSN %d reached the responder since: the NAK names a packet that did not fail", x)},
			{ID: "C9-106", If: dup},
			{ID: "C9-115", If: dup + " (the meaning C9-106 shares)"},
		},
	}
}
