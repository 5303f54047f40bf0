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
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/internal/opc"
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
type judge struct{}

func opcodes(ops []wire.Opcode) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return strings.Join(s, " or ")
}

// Opcodes implements harness.OpcodeFilter: READ responses only.
func (*judge) Opcodes() uint32 { return readResponseOpcodes }

var readResponseOpcodes = harness.OpcodesWhere(func(op wire.Opcode) bool {
	return opc.Class(op) == wire.ClassReadResponse
})

func (*judge) Event(k *dupnak.Checker, c *harness.Conn, ev *dupnak.Event) {
	a := ev.Answer
	if a == nil || ev.Dead || opc.Class(ev.Rec.Packet.Opcode) != wire.ClassReadResponse {
		return
	}
	p := ev.Rec.Packet
	switch a.Kind {
	case dupnak.AnsStart, dupnak.AnsContinue, dupnak.AnsResume:
		req := a.Req
		if req == nil || !req.Dup {
			return
		}
		if len(a.WantOpcode) > 0 {
			where := "continues"
			if a.Kind == dupnak.AnsStart {
				where = "starts"
			}
			k.Violation(c, ev.Rec, fmt.Sprintf("the replay of the duplicate READ at PSN %d (frame %d) %s with %s at PSN %d, not %s: a duplicate READ is answered like a new one, from its own PSN",
				req.PSN, req.Rec.Frame, where, p.Opcode, p.PSN, opcodes(a.WantOpcode)),
				[]string{fmt.Sprintf("%s at PSN %d", opcodes(a.WantOpcode), p.PSN)}, dupnak.Seen(ev.Rec))
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
	case dupnak.AnsUnmatched:
		if len(a.Covering) == 0 {
			return
		}
		d := a.Covering[0]
		if !k.T.Complete() {
			k.Indeterminate(c, "a READ response started at a PSN no request in the capture asked for while a duplicate READ waited: the capture may miss the request it answers")
			return
		}
		k.Violation(c, ev.Rec, fmt.Sprintf("a READ response stream starts at PSN %d inside the original READ at PSN %d, but the duplicate READ waiting (frame %d) asked from PSN %d: the replay starts at the duplicate's PSN",
			p.PSN, d.Orig.PSN, d.Rec.Frame, d.PSN),
			[]string{fmt.Sprintf("the replay starting at PSN %d with %s", d.PSN, map[bool]string{true: "READ Response Only", false: "READ Response First"}[d.N == 1])},
			dupnak.Seen(ev.Rec))
	}
}

func (*judge) End(k *dupnak.Checker, c *harness.Conn) {
	_, waiting := k.T.End()
	for _, w := range waiting {
		if w.Dup && !w.Atomic {
			k.Indeterminate(c, fmt.Sprintf("the duplicate READ at PSN %d got no replay: the responder may no longer hold that READ's resources, which the trace does not show", w.PSN))
		}
	}
}
