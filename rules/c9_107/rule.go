// Package c9_107 checks C9-107 (§9.7.5.1.4): a duplicate RDMA READ is
// executed again: the data is read from memory anew and the response
// stream starts at the duplicate request's PSN. This works only while the
// responder still holds the original READ's PSN range among its READ
// resources.
package c9_107

import (
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/receive"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-107"

func init() { harness.RegisterMonitor(dupnak.Monitor(ID, func() dupnak.Judge { return &judge{} })) }

// judge follows the answers to duplicate READs (a READ request whose PSNs
// were already answered, or that the model places behind the expected
// PSN): the replay must start at the duplicate's own PSN with a First (or
// Only, for one packet) opcode, go on with Middles, and end with a Last at
// the last PSN its RETH length reserves. A READ response inside the
// original's range that starts at another PSN while a duplicate waits
// means the replay did not start where the duplicate asked.
//
// A duplicate READ that gets no answer is indeterminate: the responder
// may no longer hold the READ's resources, which no capture shows. Whether
// memory was read again, rather than served from a copy, is visible only
// to the active scenarios, which change memory between the two READs.
//
// One root cause, one clause: a replay's wrong opcode at the first, a
// middle or the last position is C9-107's only when the trace shows the
// device gets that position right in its answers to new READs on the
// same connection. Where its answers to new READs make the same fault (a
// First or a Last that went out as a Middle), the device's READ response
// format is at fault, which C9-97 and C9-98 judge for every answer; where
// no answer to a new READ shows that position (the original's stream was
// abandoned before its end, say), the trace does not tell the two apart.
// Either way the replay is left undecided here. As the answer to a new
// READ may show the position after the replay (a duplicate that arrives
// while the original is still streaming), a replay's fault is held until
// the evidence comes or the connection ends.
type judge struct {
	// newFaults are the opcode faults of answers to new READs seen on
	// the connection; good the positions they got right.
	newFaults map[opFault]bool
	good      [nPos]bool
	// held are the replays' opcode faults not yet judged.
	held []heldFault
}

// Positions in a READ response stream.
const (
	posStart = iota // the First of a stream of several packets
	posMiddle
	posLast
	posOnly // the one packet of a one-packet stream
	nPos
)

// opFault is a wrong opcode at a position of a READ response stream.
type opFault struct {
	pos       int
	got, want wire.Opcode
}

// heldFault is a replay's opcode fault awaiting evidence.
type heldFault struct {
	fault    opFault
	rec      *trace.Record
	msg      string
	expected []string
}

// maxHeld bounds the faults held per connection; past it the oldest is
// left undecided.
const maxHeld = 256

// position returns the position of a READ response packet answered as a.
func position(a *receive.Answer, op wire.Opcode) int {
	switch {
	case a.Kind == receive.AnsStart && a.Req != nil && a.Req.N == 1:
		// A one-packet answer getting its Only right says nothing of how
		// the device starts a stream of several (as where a cut start
		// leaves only Onlys of the answers to new READs).
		return posOnly
	case a.Kind == receive.AnsStart:
		return posStart
	case len(a.WantOpcode) > 0 && a.WantOpcode[0] == wire.ReadResponseLast,
		len(a.WantOpcode) == 0 && op == wire.ReadResponseLast:
		return posLast
	}
	return posMiddle
}

// undecided leaves a replay's fault to C9-97 and C9-98.
func undecided(k *dupnak.Checker, c *harness.Conn, h heldFault, why string) {
	k.Indeterminate(c, fmt.Sprintf("the replay has %s where %s belongs (frame %d), %s: the device's READ response format is judged under C9-97 and C9-98",
		h.fault.got, h.fault.want, h.rec.Frame, why))
}

// release judges the held faults that evidence now decides.
func (j *judge) release(k *dupnak.Checker, c *harness.Conn) {
	n := 0
	for _, h := range j.held {
		switch {
		case j.newFaults[h.fault]:
			undecided(k, c, h, "as in the answers to new READs on this connection")
		case j.good[h.fault.pos]:
			k.Violation(c, h.rec, h.msg, h.expected, dupnak.Seen(h.rec))
		default:
			j.held[n] = h
			n++
			continue
		}
	}
	j.held = j.held[:n]
}

func opcodes(ops []wire.Opcode) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return strings.Join(s, " or ")
}

// Kinds implements harness.KindFilter: READ responses only.
func (*judge) Kinds() harness.Kinds { return readResponseOpcodes }

var readResponseOpcodes = harness.KindsWhere(func(op wire.Opcode) bool {
	return opc.Class(op) == wire.ClassReadResponse
})

func (j *judge) Event(k *dupnak.Checker, c *harness.Conn, ev *receive.Event) {
	a := ev.Answer
	if a == nil || ev.Dead || opc.Class(ev.Rec.Packet.Opcode) != wire.ClassReadResponse {
		return
	}
	p := ev.Rec.Packet
	switch a.Kind {
	case receive.AnsStart, receive.AnsContinue, receive.AnsResume:
		req := a.Req
		if req == nil {
			return
		}
		if u := a.Unstarted; u != nil && u.Dup {
			c.Unresolved(ID, fmt.Sprintf("a READ response %s at PSN %d, the PSN of the duplicate READ of frame %d, may go on with the answer owed to the READ at PSN %d (frame %d), whose range holds it, its first packets lost before the capture point; otherwise the replay begins without its First (--complete decides)",
				p.Opcode, p.PSN, u.Rec.Frame, req.PSN, req.Rec.Frame))
		}
		pos := position(a, p.Opcode)
		if !req.Dup {
			if len(a.WantOpcode) > 0 {
				if j.newFaults == nil {
					j.newFaults = map[opFault]bool{}
				}
				j.newFaults[opFault{pos, p.Opcode, a.WantOpcode[0]}] = true
			} else {
				j.good[pos] = true
			}
			j.release(k, c)
			return
		}
		if len(a.WantOpcode) > 0 {
			where := "continues"
			if a.Kind == receive.AnsStart {
				where = "starts"
			}
			if len(j.held) == maxHeld {
				undecided(k, c, j.held[0], "and too many replays waited for evidence")
				j.held = j.held[1:]
			}
			j.held = append(j.held, heldFault{fault: opFault{pos, p.Opcode, a.WantOpcode[0]}, rec: ev.Rec,
				msg: fmt.Sprintf("the replay of the duplicate READ at PSN %d (frame %d) %s with %s at PSN %d, not %s: a duplicate READ is answered like a new one, from its own PSN, and this device's answers to new READs get that position right",
					req.PSN, req.Rec.Frame, where, p.Opcode, p.PSN, opcodes(a.WantOpcode)),
				expected: []string{fmt.Sprintf("%s at PSN %d", opcodes(a.WantOpcode), p.PSN)}})
			j.release(k, c)
			return
		}
		if a.EndsEarly {
			l, _ := req.Last()
			k.Violation(c, ev.Rec, fmt.Sprintf("the replay of the duplicate READ at PSN %d ends at PSN %d, before PSN %d where its RETH length ends", req.PSN, p.PSN, l),
				[]string{fmt.Sprintf("%d response packets, PSNs %s", req.N, dupnak.PSNRange(req.PSN, req.N))}, dupnak.Seen(ev.Rec))
			return
		}
		if a.Completed {
			k.Checked(c)
		}
	case receive.AnsUnmatched:
		if len(a.Covering) == 0 {
			return
		}
		d := a.Covering[0]
		if !k.T.Complete() && !c.SeesEveryRequest() {
			k.Indeterminate(c, "a READ response started at a PSN no request in the capture asked for while a duplicate READ waited: the capture may miss the request it answers")
			return
		}
		if f := c.ResponsePSNFault(); f != "" {
			k.Indeterminate(c, "a READ response started inside a READ's range while a duplicate of it waited, on a connection whose response numbering is at fault: "+f)
			return
		}
		k.Violation(c, ev.Rec, fmt.Sprintf("a READ response stream starts at PSN %d inside the original READ at PSN %d, but the duplicate READ waiting (frame %d) asked from PSN %d: the replay starts at the duplicate's PSN",
			p.PSN, d.Orig.PSN, d.Rec.Frame, d.PSN),
			[]string{fmt.Sprintf("the replay starting at PSN %d with %s", d.PSN, map[bool]string{true: "READ Response Only", false: "READ Response First"}[d.N == 1])},
			dupnak.Seen(ev.Rec))
	}
}

func (j *judge) End(k *dupnak.Checker, c *harness.Conn) {
	for _, h := range j.held {
		undecided(k, c, h, "and no answer to a new READ on this connection shows that position")
	}
	j.held = nil
	_, waiting := k.T.End()
	for _, w := range waiting {
		if w.Dup && !w.Atomic {
			k.Indeterminate(c, fmt.Sprintf("the duplicate READ at PSN %d got no replay: the responder may no longer hold that READ's resources, which the trace does not show", w.PSN))
		}
	}
}
