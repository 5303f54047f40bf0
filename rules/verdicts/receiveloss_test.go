package verdicts

import (
	"fmt"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// An active run whose adapter lost some of the device's packets on their
// way in (a live adapter's socket queue overflowed on a loaded host:
// dut.LossReporter) has a trace that shows every packet the harness sent
// and the connection from its start, but not every packet the device
// sent. Audited as such (Settings.ReceiveLoss), no gap the loss made may
// fail a clause; audited as a complete active trace, the same gaps do
// fail (so the setting is what decides).

// activeRun is the settings rulekit gives an active scenario's trace with
// the device as the responder.
func activeRun(mtu int, start wire.PSN, lossy bool) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU, s.Active, s.StartKnown, s.StartPSN, s.ReceiveLoss = mtu, true, true, start, lossy
	return s
}

// lossyExchanges are clean exchanges of a device responding correctly.
var lossyExchanges = []struct {
	name  string
	mtu   int
	build func(t *ht.Trace)
}{
	{"SENDs, a WRITE, a READ and a go-back-N after a loss", 4096, seedWalkFrom},
	{"a READ of five packets between two SENDs", 1024, func(t *ht.Trace) {
		t.Req(wire.SendOnly, 300, true)
		t.Ack(300, 1)
		t.Read(301, 5*1024)
		t.ReadStream(301, 5*1024, 1024, 2)
		t.Req(wire.SendOnly, 306, true)
		t.Ack(306, 3)
	}},
	{"two READs back to back, then an ATOMIC", 1024, func(t *ht.Trace) {
		t.Read(300, 3*1024)
		t.Read(303, 2*1024)
		t.ReadStream(300, 3*1024, 1024, 1)
		t.ReadStream(303, 2*1024, 1024, 2)
		t.Atomic(wire.FetchAdd, 305)
		t.AtomicAck(305, 3, 7)
	}},
	{"an RNR NAK, the resend after its delay, and its ACK", 1024, func(t *ht.Trace) {
		t.Req(wire.SendOnly, 300, true)
		t.Ack(300, 1)
		t.Req(wire.SendOnly, 301, true)
		t.RNR(301, 1, 1)
		t.Wait(time.Millisecond)
		t.Req(wire.SendOnly, 301, true)
		t.Ack(301, 2)
	}},
	{"a duplicate READ re-executed", 1024, func(t *ht.Trace) {
		t.Read(300, 2*1024)
		t.ReadStream(300, 2*1024, 1024, 1)
		t.Read(300, 2*1024)
		t.ReadStream(300, 2*1024, 1024, 1)
		t.Req(wire.SendOnly, 302, true)
		t.Ack(302, 2)
	}},
}

// seedWalkFrom is the walk of seedWalk with the request lost before the
// responder, starting at the responder's expected PSN 300.
func seedWalkFrom(t *ht.Trace) { seedWalk(true)(t) }

func TestReceiveLossNeverFails(t *testing.T) {
	caught := 0
	for _, ex := range lossyExchanges {
		whole := &ht.Trace{}
		ex.build(whole)
		var devicePkts []int
		for i, r := range whole.Records {
			if r.Dir == trace.ToRequester {
				devicePkts = append(devicePkts, i)
			}
		}
		if _, fs := ht.AuditAll(whole, activeRun(ex.mtu, 300, false)); len(fs) > 0 {
			t.Fatalf("%s: the whole exchange fails %s: %s", ex.name, fs[0].ID, fs[0].Message)
		}
		// Lose each of the device's packets, then each pair of them.
		var losses [][]int
		for a := range devicePkts {
			losses = append(losses, []int{devicePkts[a]})
			for b := a + 1; b < len(devicePkts); b++ {
				losses = append(losses, []int{devicePkts[a], devicePkts[b]})
			}
		}
		for _, lost := range losses {
			name := fmt.Sprintf("%s, losing records %v", ex.name, lost)
			tr := &ht.Trace{}
			ex.build(tr)
			for k := len(lost) - 1; k >= 0; k-- {
				tr.Remove(lost[k])
			}
			if _, fs := ht.AuditAll(tr, activeRun(ex.mtu, 300, true)); len(fs) > 0 {
				t.Errorf("%s: audited as a run that lost the device's packets, it fails %s: %s", name, fs[0].ID, fs[0].Message)
			}
			if _, fs := ht.AuditAll(tr, activeRun(ex.mtu, 300, false)); len(fs) > 0 {
				caught++
			}
		}
	}
	// The losses do leave traces that a complete active run fails: the
	// setting, not the exchanges, is what keeps them from failing.
	if caught == 0 {
		t.Error("no loss made any clause fail on a complete active trace: the test shows nothing")
	}
	t.Logf("%d lossy traces fail some clause when taken as complete", caught)
}
