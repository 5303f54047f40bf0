package c9_98

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestLastCarriesAnACK(t *testing.T) {
	var b rtest.Builder
	b.Read(2, 3000)
	b.Read(5, 2048)
	b.Read(7, 1)
	b.ReadStream(2, 3000, 1024, 1)
	b.ReadStream(5, 2048, 1024, 2)
	b.ReadStream(7, 1, 1024, 3)
	tl := rtest.WantPass(t, b.Recs, rtest.Active(1024), ID)
	if tl.Checked != 2 {
		t.Fatalf("checked %d multi-packet responses, want 2", tl.Checked)
	}
}

func TestMiddleAtTheEndIsFlagged(t *testing.T) {
	var b rtest.Builder
	b.Read(0xFFFFFF, 3*256) // 0xFFFFFF, 0, 1
	b.Resp(wire.ReadResponseFirst, 0xFFFFFF, 0x04, 1, 256)
	b.Resp(wire.ReadResponseMiddle, 0, 0, 0, 256)
	b.Resp(wire.ReadResponseMiddle, 1, 0, 0, 256)
	rtest.WantViolation(t, b.Recs, rtest.Active(256), ID, "PSN 1 is the last of the 3 response packets")
	// A capture whose MTU the First packet shows decides it too.
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "ends without the AETH")
}

// TestMiddleAfterAPartialRetry: the Last of a READ's answer escaped the
// capture, the requester asked again from that PSN, and a Middle came
// there: the end of the first answer without its AETH (this clause) or
// the start of the retry's answer without one (C9-97): one finding names
// both.
func TestMiddleAfterAPartialRetry(t *testing.T) {
	var b rtest.Builder
	b.Read(10, 3*1024) // 10..12
	b.Resp(wire.ReadResponseFirst, 10, 0x04, 1, 1024)
	b.Resp(wire.ReadResponseMiddle, 11, 0, 0, 1024)
	b.Req(wire.ReadRequest, 12, true, 0).Packet.RETH = wire.RETH{VA: 0x1800, RKey: 0x77, Length: 1024}
	b.Resp(wire.ReadResponseMiddle, 12, 0, 0, 1024)
	rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, "one of these clauses is broken")
	// The one finding is listed under C9-97 too in a full audit.
	if tallies, _ := harnesstest.AuditAll(&harnesstest.Trace{Records: b.Recs}, rtest.Capture(0)); tallies["C9-97"] == nil || tallies["C9-97"].Violations != 1 {
		t.Errorf("the finding is not listed under C9-97")
	}
}

func TestNAKSyndromeInLastIsFlagged(t *testing.T) {
	var b rtest.Builder
	b.Read(2, 2048)
	b.Resp(wire.ReadResponseFirst, 2, 0x04, 1, 1024)
	b.Resp(wire.ReadResponseLast, 3, wire.SynNAK(wire.NAKRemoteAccess), 1, 0)
	rtest.WantViolation(t, b.Recs, rtest.Active(1024), ID, "must be an ACK")
}

func TestUnknownMTUIsIndeterminate(t *testing.T) {
	var b rtest.Builder
	b.Read(2, 2000)
	b.Resp(wire.ReadResponseMiddle, 2, 0, 0, 1000) // no First: the MTU stays unknown
	b.Resp(wire.ReadResponseLast, 3, 0x04, 1, 1000)
	rtest.WantIndeterminate(t, b.Recs, rtest.Capture(0), ID)
}

func TestReference(t *testing.T) {
	run := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 256, ExpectedPSN: 40, SetPSNs: true})
		r.Send(time.Millisecond, r.Read(9*256, 0), r.Read(257, 0), r.SendOnly(4, true))
		return r
	}
	clean := run("")
	rtest.WantPass(t, clean.Trace(), clean.Settings(), ID)
	bad := run("read-last-no-aeth")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "went out as RDMA READ Response Middle")
}
