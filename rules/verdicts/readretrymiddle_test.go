package verdicts

import (
	"slices"
	"strings"
	"testing"

	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// A READ's answer begins (its First, at frame F), the requester asks
// again for part of it (a partial retry, from the READ's second PSN),
// the capture misses the next responder packets, an ACK passes the READ,
// the requester asks again from the same PSN, and then a Middle comes at
// the PSN the retry asks from (the recall test's "C9-97 READ answer
// begins with a Middle", seed 54). Sent after the ACK, the Middle is
// wrong whichever request it answers: it begins the retry's answer
// without the AETH (C9-97), or it continues the first answer after an
// ACK passed the READ (C9-101). The responder's counting IDs date it
// after the ACK, and the requester's show it sent no copy of the whole
// READ the capture missed (whose replay alone could explain the Middle):
// one finding naming both. Without IDs the Middle may be the first
// answer's, sent before the ACK and delayed (the answer's Last sent
// before the ACK too, and lost): open. With IDs dating the Middle before
// the ACK it is that: nothing fails.
func TestMiddleAtAPartialRetrysPSNAfterAnACK(t *testing.T) {
	build := func(ids, lateMiddle bool) *ht.Trace {
		tr := &ht.Trace{}
		for i := range 9 {
			tr.Req(wire.SendOnly, wire.PSN(100+i), true)
			tr.Ack(wire.PSN(100+i), uint32(i+1))
		}
		tr.Read(109, 3*1024) // 109..111 at MTU 1024
		tr.ReadResp(wire.ReadResponseFirst, 109, 10, 1024)
		tr.Read(110, 2*1024).Packet.RETH.VA = 0x1400 // the partial retry
		tr.Req(wire.SendOnly, 112, true)
		tr.Req(wire.SendOnly, 113, true)
		lostMiddle := len(tr.Records)
		tr.ReadResp(wire.ReadResponseMiddle, 110, 0, 1024) // lost before the capture point
		tr.ReadResp(wire.ReadResponseLast, 111, 10, 1024)  // lost
		tr.Ack(113, 12)
		tr.Read(110, 2*1024).Packet.RETH.VA = 0x1400 // asked again
		injected := len(tr.Records)
		tr.ReadResp(wire.ReadResponseMiddle, 110, 0, 1024)
		tr.Req(wire.SendOnly, 114, true)
		tr.Ack(114, 13)
		if ids {
			tr.IPIDs(1000, 5000)
		}
		if lateMiddle {
			// The Middle the capture shows is the first answer's, sent
			// before the ACK and delayed: it keeps that one's ID.
			tr.Records[injected].IPID = tr.Records[lostMiddle].IPID
		}
		tr.Remove(lostMiddle + 1)
		tr.Remove(lostMiddle)
		return tr
	}
	t.Run("dated after the ACK", func(t *testing.T) {
		tallies, fs := ht.AuditAll(build(true, false), ht.Capture())
		var got *reports.Finding
		for i, f := range fs {
			if f.ID == "C9-97" {
				got = &fs[i]
			}
		}
		if got == nil {
			t.Fatalf("C9-97 passes the Middle at the retry's PSN after the ACK: C9-97 %+v, C9-101 %+v, findings %v", tallies["C9-97"], tallies["C9-101"], fs)
		}
		ids := []string{}
		for _, a := range got.Alternatives {
			ids = append(ids, a.ID)
		}
		if !slices.Contains(ids, "C9-101") || !slices.Contains(ids, "C9-97") || !strings.Contains(got.Message, "went out after the ACK") {
			t.Errorf("the finding does not name C9-101 and C9-97: %v %s", ids, got.Message)
		}
		if v := tallies["C9-101"].Verdict(); v != reports.Fail {
			t.Errorf("C9-101 %s, want fail with the one finding", v)
		}
	})
	t.Run("no ID", func(t *testing.T) {
		tallies, fs := ht.AuditAll(build(false, false), ht.Capture())
		failsNeither(t, fs, "a Middle no ID dates")
		if tl := tallies["C9-101"]; tl == nil || tl.Open == 0 {
			t.Errorf("C9-101 is not left open: %+v", tl)
		}
	})
	t.Run("dated before the ACK", func(t *testing.T) {
		_, fs := ht.AuditAll(build(true, true), ht.Capture())
		failsNeither(t, fs, "the first answer's Middle, sent before the ACK,")
	})
}

// failsNeither fails the test if a finding names C9-97 or C9-101.
func failsNeither(t *testing.T, fs []reports.Finding, what string) {
	t.Helper()
	for _, f := range fs {
		if f.ID == "C9-97" || f.ID == "C9-101" {
			t.Fatalf("%s fails %s: %s", what, f.ID, f.Message)
		}
	}
}
