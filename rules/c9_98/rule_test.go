package c9_98

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
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
