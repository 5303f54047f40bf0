package c9_97

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	_ "github.com/rcconform/rcconform/rules/c9_107" // C9-107 judges the same replay
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestFirstAndOnlyCarryAnACK(t *testing.T) {
	var b rtest.Builder
	b.Req(wire.WriteOnly, 1, false, 8)
	b.Read(2, 3000)
	b.Read(5, 10)
	b.ReadStream(2, 3000, 1024, 2)
	b.ReadStream(5, 10, 1024, 3)
	tl := rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	if tl.Checked != 2 {
		t.Fatalf("checked %d stream starts, want 2", tl.Checked)
	}
	rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
}

func TestMiddleFirstIsFlagged(t *testing.T) {
	var b rtest.Builder
	b.Read(2, 3000)
	b.Resp(wire.ReadResponseMiddle, 2, 0, 0, 1024)
	b.Resp(wire.ReadResponseMiddle, 3, 0, 0, 1024)
	b.Resp(wire.ReadResponseLast, 4, 0x04, 1, 952)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "begins with RDMA READ Response Middle")
}

func TestNAKSyndromeInFirstIsFlagged(t *testing.T) {
	var b rtest.Builder
	b.Read(2, 100)
	b.Resp(wire.ReadResponseOnly, 2, wire.SynNAK(wire.NAKRemoteAccess), 0, 0)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "acknowledges nothing")
}

// A retry of the tail of a READ answered from the middle of the original
// sequence (a Middle first, as Linux rxe's responder does): a violation of
// C9-97 (no AETH where the replay begins) and of C9-107, which agree
// (docs/interpretations.md, "Opcodes of a partial READ replay"). Opening with
// First is right.
func TestPartialReplayStartingWithMiddle(t *testing.T) {
	for _, first := range []bool{false, true} {
		var b rtest.Builder
		b.Read(10, 4*256)
		b.ReadStream(10, 4*256, 256, 1)
		d := b.Read(12, 2*256)
		d.Packet.RETH.VA += 512
		if first {
			b.Resp(wire.ReadResponseFirst, 12, 0x04, 1, 256)
		} else {
			b.Resp(wire.ReadResponseMiddle, 12, 0, 0, 256)
		}
		b.Resp(wire.ReadResponseLast, 13, 0x04, 1, 256)
		for _, id := range []string{ID, "C9-107"} {
			if first {
				rtest.WantPass(t, b.Recs, rtest.Active(256), id)
			} else {
				rtest.WantViolation(t, b.Recs, rtest.Active(256), id, "First")
			}
		}
	}
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 512, ExpectedPSN: 0xFFFFFD, SetPSNs: true})
		r.Send(time.Millisecond, r.WriteOnly(10, 0, false), r.Read(5*512, 0), r.Read(3, 0))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("read-first-no-aeth")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "carries no AETH")
}

// A READ sent again at its own PSN after a silence, once the responder had
// acknowledged every request, may begin QPs made anew with the same
// numbers, which holds other clauses' findings back; but its answer
// opening with a Middle is illegal on the old QPs (a replay) and on new
// ones (a new READ) alike: it fails, with no MSN after it to tell which.
func TestMiddleFirstOnAnyQPs(t *testing.T) {
	var b rtest.Builder
	b.Req(wire.SendOnly, 1, true, 8)
	b.Ack(1, 1)
	b.Read(2, 8)
	b.Resp(wire.ReadResponseOnly, 2, 0x04, 2, 8)
	b.Read(2, 8)
	b.Resp(wire.ReadResponseMiddle, 2, 0, 0, 8)
	for _, r := range b.Recs[4:] {
		r.Time += time.Millisecond // the silence before the READ sent again
	}
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "begins with RDMA READ Response Middle")
}

// A Middle at the PSN of a partial READ retry, right after the original
// answer's First there: it goes on with the original answer, unless the
// packets the responder sent between were that answer's Middle and Last,
// and it then begins the retry's answer without an AETH. Where the
// responder's IPv4 IDs show it sent fewer packets between than the
// original answer had left, it goes on (pass); where they show as many
// missed, or say nothing, it stays open; on a complete trace nothing was
// missed.
func TestMiddleAtAPartialRetryAfterPacketsMissed(t *testing.T) {
	for _, c := range []struct {
		name     string
		perIDs   bool
		missed   int // responder packets missed between the First and the Middle
		settings harness.Settings
		open     bool
	}{
		{"IDs counting, none missed", true, 0, rtest.Capture(256), false},
		{"IDs counting, one missed", true, 1, rtest.Capture(256), false},
		{"IDs counting, the original's Middle and Last missed", true, 2, rtest.Capture(256), true},
		{"IDs telling nothing", false, 2, rtest.Capture(256), true},
		{"complete", true, 2, rtest.Active(256), false},
	} {
		var b rtest.Builder
		b.PerSender = c.perIDs
		b.AckedSends(1, 1, 2, 3, 4, 5, 6, 7, 8, 9) // the responder counts its IDs up
		b.Read(10, 3*256)                          // 10..12
		b.Resp(wire.ReadResponseFirst, 10, wire.SynACK(4), 10, 256)
		d := b.Read(11, 2*256) // a partial retry: 11..12
		d.Packet.RETH.VA += 256
		for _, r := range []*trace.Record{
			b.Resp(wire.ReadResponseMiddle, 11, 0, 0, 256),
			b.Resp(wire.ReadResponseLast, 12, wire.SynACK(4), 10, 256),
		} {
			r.IPID += uint16(c.missed)
		}
		if !c.perIDs {
			for _, r := range b.Recs {
				r.IPID = 0 // an ID that never changes
			}
		}
		tl := rtest.Tally(rtest.Audit(b.Recs, c.settings, ID), ID)
		if tl.Violations > 0 || (tl.Open > 0) != c.open {
			t.Errorf("%s: %+v, want open %v", c.name, tl, c.open)
		}
	}
}
