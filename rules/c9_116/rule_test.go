package c9_116

import (
	"testing"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	fresh := ht.Fresh(100) // an active run on a QP whose responder expects PSN 100
	mtu1024 := ht.Complete()
	mtu1024.MTU = 1024
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(tr *ht.Trace)
		want     reports.Verdict
	}{
		{"AckReq answered by a later coalesced ACK", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(11, 2)
		}, reports.Pass},
		{"a duplicate with AckReq on a fresh QP answered behind its PSN: C9-105's to judge", fresh, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(0xFFFFFF, 0)
		}, reports.Indeterminate},
		{"AckReq on the first expected PSN of a fresh QP never answered", fresh, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(99, 0)
			tr.Req(wire.SendOnly, 100, true)
		}, reports.Fail},
		{"AckReq covered by a READ response's AETH", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Read(11, 8)
			tr.Resp(wire.ReadResponseOnly, 11, 0x1F, 2)
		}, reports.Pass},
		{"a READ answered with a Middle at its own PSN: answered, the opcode is C9-97's", ht.Complete(), func(tr *ht.Trace) {
			tr.Read(11, 8)
			tr.ReadResp(wire.ReadResponseMiddle, 11, 0, 8)
		}, reports.Pass},
		{"a READ Middle past a READ's own PSN covers nothing", ht.Complete(), func(tr *ht.Trace) {
			tr.Read(11, 3*1024)
			tr.ReadResp(wire.ReadResponseMiddle, 12, 0, 1024)
		}, reports.Fail},
		{"AckReq never answered, complete trace", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, false)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(10, 1)
		}, reports.Fail},
		{"AckReq never answered, ordinary capture: the ACK may be lost after the capture point", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 11, true)
		}, reports.Indeterminate},
		{"a sequence NAK for an earlier PSN releases the obligation", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 12, true)
			tr.Resp(wire.Acknowledge, 10, wire.SynNAK(wire.NAKPSNSequence), 0)
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
		}, reports.Pass},
		{"out-of-sequence request under the NAK latch is not valid", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 11, true)
			tr.Resp(wire.Acknowledge, 10, wire.SynNAK(wire.NAKPSNSequence), 0)
			tr.Req(wire.SendOnly, 12, true)
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
		}, reports.Pass},
		{"AckReq on a SEND of the path MTU never answered", mtu1024, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true).PayloadLen = 1024
		}, reports.Fail},
		{"AckReq on a SEND longer than the path MTU never answered: not a valid request (§9.7.5.1.5's)", mtu1024, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true).PayloadLen = 1028
		}, reports.NotExercised},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &ht.Trace{}
			c.build(tr)
			tally, fs := ht.Audit(tr, ID, c.settings)
			if got := tally.Verdict(); got != c.want {
				t.Fatalf("verdict %s, want %s (tally %+v, findings %+v)", got, c.want, tally, fs)
			}
		})
	}
}
