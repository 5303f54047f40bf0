package s9_7_5_2

import (
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
	"github.com/rcconform/rcconform/wire"
)

func TestSyndromes(t *testing.T) {
	legal := []uint8{0x00, 0x1F, 0x0B, 0x20, 0x3F, 0x60, 0x61, 0x62, 0x63}
	for _, syn := range legal {
		if p := Problem(syn); p != "" {
			t.Errorf("syndrome 0x%02x: %s", syn, p)
		}
	}
	for syn, want := range map[uint8]string{
		0x80: "reserved bit 7", 0x9F: "reserved bit 7", 0xE0: "reserved bit 7",
		0x40: "reserved kind 10", 0x5F: "reserved kind 10",
		0x64: "code 4", 0x65: "code 5", 0x7F: "code 31",
	} {
		var b rtest.Builder
		b.Send(1, true)
		b.Resp(wire.Acknowledge, 1, syn, 1, 0)
		rtest.WantViolation(t, b.Recs, rtest.Capture(0), ID, want)
	}
	var b rtest.Builder
	b.Read(1, 2048)
	b.ReadStream(1, 2048, 1024, 1)
	b.Atomic(3)
	b.Resp(wire.AtomicAcknowledge, 3, 0x1F, 2, 0)
	b.NAK(4, wire.NAKRemoteOp, 2)
	tl := rtest.WantPass(t, b.Recs, rtest.Capture(0), ID)
	if tl.Checked != 4 {
		t.Fatalf("checked %d AETHs, want 4", tl.Checked)
	}
	// A READ response First carrying the reserved bit.
	var c rtest.Builder
	c.Read(1, 2048)
	c.Resp(wire.ReadResponseFirst, 1, 0x84, 1, 1024)
	rtest.WantViolation(t, c.Recs, rtest.Capture(0), ID, "RDMA READ Response First")
}

func TestReference(t *testing.T) {
	ack := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 1, SetPSNs: true})
		r.Send(time.Millisecond, r.SendOnly(8, true), r.Read(3000, 0))
		return r
	}
	remoteOp := func(defect string) *rtest.Ref {
		r := rtest.NewRef(t, defect, nil, dut.ConnConfig{MTU: 1024, ExpectedPSN: 1, SetPSNs: true, RecvWQEs: -1})
		if err := r.Conn.PostRecv(1, 8); err != nil {
			t.Fatal(err)
		}
		r.Send(time.Millisecond, r.SendOnly(100, true))
		return r
	}
	for _, r := range []*rtest.Ref{ack(""), remoteOp("")} {
		rtest.WantPass(t, r.Trace(), r.Settings(), ID)
	}
	bad := ack("syndrome-reserved-bit")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "reserved bit 7")
	bad = remoteOp("nak-code-reserved")
	rtest.WantViolation(t, bad.Trace(), bad.Settings(), ID, "code 5")
}
