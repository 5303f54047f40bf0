package go_back_n

import (
	"fmt"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/reqtest"
	"github.com/rcconform/rcconform/wire"
)

// liveRun returns the settings of an active run whose device has timer
// code timeout, on a clock whose timestamps are good to tol (0: exact).
func liveRun(timeout uint8, tol time.Duration) harness.Settings {
	s := reqtest.Active(1024, int(timeout), 2, 0)
	s.Tolerance = tol
	return s
}

// labSweep: SENDs 3000 and 3001, a sequence NAK for 3000, both resent, a
// second NAK, then after 22.9 ms 3000 resent and 3001 pause later.
func labSweep(pause time.Duration) func(s *reqtest.Script) {
	return func(s *reqtest.Script) {
		r := s.Send(3000, 2)
		s.NAK(3000, wire.NAKPSNSequence)
		s.Wait(4 * time.Millisecond)
		r = s.Resend(r...)
		s.NAK(3000, wire.NAKPSNSequence)
		s.Wait(22900 * time.Microsecond)
		s.Again(r[0])
		s.Wait(pause)
		s.Again(r[1])
	}
}

func TestMonitorHandBuilt(t *testing.T) {
	T := wire.AckTimeout(timeout)
	active := reqtest.Active(1024, timeout, 7, 7)
	later := 100 * time.Microsecond // past the in-flight allowance
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(s *reqtest.Script)
		want     reqtest.Verdict
	}{
		// The soft-RoCE lab (6.12, a loaded host, tolerance 15.6 ms):
		// two sequence NAKs, then 3000 resent and 3001 1.58 ms after it,
		// against a 16.78 ms timer. Within the tolerance the pause may
		// or may not hold a timer expiry: undecided, never a violation.
		{"real clock: 3001 goes on from 3000 after a pause within the tolerance of the timer", liveRun(12, 15600*time.Microsecond), labSweep(1580 * time.Microsecond), reqtest.Undecided},
		{"real clock: 3001 goes on from 3000 after a pause past the timer and the tolerance", liveRun(12, 15600*time.Microsecond), labSweep(wire.AckTimeout(12) + 16*time.Millisecond), reqtest.Fail},
		{"exact clock: 3001 goes on from 3000 after a short pause", liveRun(12, 0), labSweep(1580 * time.Microsecond), reqtest.Pass},
		{"exact clock: 3001 after a pause of the whole timer interval", liveRun(12, 0), labSweep(wire.AckTimeout(12)), reqtest.Fail},
		{"NAK for the third of four: resent from it", active, func(s *reqtest.Script) {
			r := s.Send(0xFFFFFE, 4)
			s.NAK(0, wire.NAKPSNSequence)
			s.Resend(r[2:]...)
		}, reqtest.Pass},
		{"NAK for the third of four: resent from the fourth", active, func(s *reqtest.Script) {
			r := s.Send(0xFFFFFE, 4)
			s.NAK(0, wire.NAKPSNSequence)
			s.Wait(later)
			s.Resend(r[3:]...)
		}, reqtest.Fail},
		{"NAK: new PSNs instead of going back", active, func(s *reqtest.Script) {
			s.Send(10, 4)
			s.NAK(12, wire.NAKPSNSequence)
			s.Wait(later)
			s.Send(14, 2)
		}, reqtest.Fail},
		{"NAK: a packet in flight first, then the go-back", active, func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.NAK(12, wire.NAKPSNSequence)
			r = append(r, s.Req(wire.SendOnly, 14, 16))
			s.Wait(later)
			s.Resend(r[2:]...)
		}, reqtest.Pass},
		{"NAK that may predate a go-back-N already under way is not judged", active, func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.Wait(T)
			s.Resend(r[0], r[1])
			s.NAK(10, wire.NAKPSNSequence)
			s.Resend(r[2], r[3])
		}, reqtest.NoFail},
		{"a resent PSN with another opcode", active, func(s *reqtest.Script) {
			s.Req(wire.SendOnly, 30, 16)
			s.Wait(T)
			s.Req(wire.WriteOnly, 30, 16)
		}, reqtest.Fail},
		{"a resent PSN with another payload", active, func(s *reqtest.Script) {
			s.Req(wire.SendOnly, 30, 16)
			s.Wait(T)
			s.Req(wire.SendOnly, 30, 17)
		}, reqtest.Fail},
		{"a multi-packet SEND resumed mid-message with its own opcodes", active, func(s *reqtest.Script) {
			s.Req(wire.SendFirst, 30, 1024)
			b := s.Req(wire.SendMiddle, 31, 1024)
			c := s.Req(wire.SendLast, 32, 10)
			s.NAK(31, wire.NAKPSNSequence)
			s.Resend(b, c)
		}, reqtest.Pass},
		{"timeout after a partial ACK: resumed at the oldest unacknowledged", active, func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.ACK(11)
			s.Wait(T)
			s.Resend(r[2:]...)
		}, reqtest.Pass},
		{"timeout after a partial ACK: resumed from the very first (legal)", active, func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.ACK(11)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Pass},
		{"timeout after a partial ACK: the oldest unacknowledged skipped", active, func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.ACK(11)
			s.Wait(T)
			s.Resend(r[3:]...)
		}, reqtest.Fail},
		{"capture: timeout after a partial ACK, the oldest unacknowledged skipped (its resend may have been lost before the capture point)", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.ACK(11)
			s.Wait(T)
			s.Resend(r[3:]...)
		}, reqtest.Suspect},
		{"READ with two responses: re-requested from the third as an exact subset", active, func(s *reqtest.Script) {
			s.Read(50, 0x1000, 4096)
			s.ReadResp(wire.ReadResponseFirst, 50, 1024)
			s.ReadResp(wire.ReadResponseMiddle, 51, 1024)
			s.Wait(T)
			s.Read(52, 0x1000+2048, 2048)
		}, reqtest.Pass},
		{"READ with two responses: re-requested from the third with a wrong address", active, func(s *reqtest.Script) {
			s.Read(50, 0x1000, 4096)
			s.ReadResp(wire.ReadResponseFirst, 50, 1024)
			s.ReadResp(wire.ReadResponseMiddle, 51, 1024)
			s.Wait(T)
			s.Read(52, 0x1000, 2048)
		}, reqtest.Fail},
		{"READ with two responses: re-requested from the fourth, skipping the third", active, func(s *reqtest.Script) {
			s.Read(50, 0x1000, 4096)
			s.ReadResp(wire.ReadResponseFirst, 50, 1024)
			s.ReadResp(wire.ReadResponseMiddle, 51, 1024)
			s.Wait(T)
			s.Read(53, 0x1000+3072, 1024)
		}, reqtest.Fail},
		{"a PSN inside a READ's range resent as a SEND", active, func(s *reqtest.Script) {
			s.Read(50, 0x1000, 4096)
			s.Wait(T)
			s.Req(wire.SendOnly, 51, 8)
		}, reqtest.Fail},
		{"RNR NAK: the refused packet resent after the delay", active, func(s *reqtest.Script) {
			r := s.Send(10, 2)
			s.RNR(10, 12)
			s.Wait(wire.RNRDelay(12))
			s.Resend(r...)
		}, reqtest.Pass},
		{"RNR NAK: new requests during the RNR wait", active, func(s *reqtest.Script) {
			s.Send(10, 2)
			s.RNR(10, 12)
			s.Wait(later)
			s.Send(12, 1)
		}, reqtest.Fail},
		{"capture: NAK, then new requests (the NAK may have been lost)", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			s.Send(10, 4)
			s.NAK(12, wire.NAKPSNSequence)
			s.Wait(10 * time.Millisecond)
			s.Send(14, 2)
		}, reqtest.Indet},
		{"capture: NAK, then a go-back-N beyond its PSN (its resend may have been lost before the capture point)", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.NAK(12, wire.NAKPSNSequence)
			s.Wait(10 * time.Millisecond)
			s.Resend(r[3:]...)
		}, reqtest.NoFail},
		{"capture --complete: NAK, then a go-back-N beyond its PSN", reqtest.Capture(1024, -1, -1, -1, true), func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.NAK(12, wire.NAKPSNSequence)
			s.Wait(10 * time.Millisecond)
			s.Resend(r[3:]...)
		}, reqtest.Fail},
		{"capture: a go-back-N with a gap (lost before the capture point)", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.NAK(10, wire.NAKPSNSequence)
			s.Resend(r[0], r[1], r[3])
		}, reqtest.Pass},
		{"active: a go-back-N that leaves a PSN out", active, func(s *reqtest.Script) {
			r := s.Send(10, 4)
			s.NAK(10, wire.NAKPSNSequence)
			s.Resend(r[0], r[1], r[3])
		}, reqtest.Fail},
		{"capture: READ subset with the MTU unknown", reqtest.Capture(0, -1, -1, -1, false), func(s *reqtest.Script) {
			s.Req(wire.SendFirst, 40, 1024) // lets the MTU be inferred
			s.Req(wire.SendLast, 41, 10)
			s.Read(42, 0x1000, 4096)
			s.ReadResp(wire.ReadResponseFirst, 42, 1024)
			s.Wait(T)
			s.Read(43, 0x1000+1024, 3072)
		}, reqtest.Pass},
	}
	for _, tc := range cases {
		s := reqtest.NewScript()
		tc.build(s)
		reqtest.Expect(t, tc.name, reqtest.Audit(ID, tc.settings, s.Recs), tc.want)
	}
}

// TestMonitorReference audits traces, and captures, of the reference
// device whose first packets are NAKed as lost.
func TestMonitorReference(t *testing.T) {
	for _, tc := range []struct {
		defect string
		want   reqtest.Verdict
	}{
		{"", reqtest.Pass},
		{"gbn-skip-one", reqtest.Fail},
		{"gbn-new-psn", reqtest.Fail},
	} {
		active, captured := reqtest.AuditReference(t, ID, tc.defect, dut.ConnConfig{MTU: 1024, DevicePSN: 0xFFFFFE, SetPSNs: true, Timeout: timeout, RetryCnt: 7, RNRRetry: 7},
			func(rs *requester.Responder) {
				rs.Post(requester.SendWR(1, 3000), requester.SendWR(2, 10))
				rs.Collect(retries.ActiveReaction) // all four on their way
				rs.NAK(0, wire.NAKPSNSequence)
				for _, rec := range rs.Collect(requester.Liveness) {
					rs.Answer(rec)
				}
			})
		name := fmt.Sprintf("reference, defect %q", tc.defect)
		reqtest.Expect(t, name, active, tc.want)
		reqtest.Expect(t, name+", its capture", captured, tc.want)
	}
}

// TestMonitorCaptures audits real Linux soft-RoCE traffic: the loss
// capture's go-back-N resends all repeat their originals; where a NAK's
// resend is missing (lost again before the capture point) the verdict is
// indeterminate, not a failure.
func TestMonitorCaptures(t *testing.T) {
	f := reqtest.Captures + "/rxe/send-4k-4qp-loss1.pcap"
	res := reqtest.CaptureFile(t, f, ID, reqtest.Capture(1024, 14, 7, 7, false))
	reqtest.Expect(t, "loss capture", res, reqtest.Pass)
	if res.Tally.Checked < 1000 {
		t.Errorf("loss capture: want the resends checked, got %s", res)
	}
	for _, name := range []string{"send-4k-mtu1024", "read-8k-mtu1024", "write-8k-mtu1024", "atomic-cas", "mix-ipv6-mtu1024", "errors"} {
		reqtest.Expect(t, name, reqtest.CaptureFile(t, reqtest.Captures+"/rxe/"+name+".pcap", ID, reqtest.Capture(0, -1, -1, -1, false)), reqtest.NoFail)
	}
}
