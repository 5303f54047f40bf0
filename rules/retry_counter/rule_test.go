package retry_counter

import (
	"fmt"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/reqtest"
	"github.com/rcconform/rcconform/wire"
)

var T = wire.AckTimeout(10)

func TestMonitorHandBuilt(t *testing.T) {
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(s *reqtest.Script)
		want     reqtest.Verdict
	}{
		{"retry count 2: two timeouts", reqtest.Active(1024, 10, 2, 7), func(s *reqtest.Script) {
			r := s.Send(100, 2)
			for i := 0; i < 2; i++ {
				s.Wait(T)
				s.Resend(r...)
			}
		}, reqtest.Pass},
		{"retry count 2: three timeouts", reqtest.Active(1024, 10, 2, 7), func(s *reqtest.Script) {
			r := s.Send(100, 2)
			for i := 0; i < 3; i++ {
				s.Wait(T)
				s.Resend(r...)
			}
		}, reqtest.Fail},
		// One root cause, one clause: a resend nothing asked for, sooner
		// than the transport timer could expire, is C9-140's violation;
		// whether it spent a transport retry cannot be told.
		{"retry count 1: a timeout, then a resend 100 µs later with nothing to cause it", reqtest.Active(1024, 10, 1, 7), func(s *reqtest.Script) {
			r := s.Send(100, 1)
			s.Wait(T)
			r = s.Resend(r...)
			s.Wait(100 * time.Microsecond)
			s.Resend(r...)
		}, reqtest.Undecided},
		{"retry count 1: two timeouts, each a whole interval apart", reqtest.Active(1024, 10, 1, 7), func(s *reqtest.Script) {
			r := s.Send(100, 1)
			s.Wait(T)
			r = s.Resend(r...)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Fail},
		{"retry count 0: one timeout", reqtest.Active(1024, 10, 0, 7), func(s *reqtest.Script) {
			r := s.Send(0xFFFFFF, 1)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Fail},
		{"retry count 2: NAK, timeout, NAK", reqtest.Active(1024, 10, 2, 7), func(s *reqtest.Script) {
			r := s.Send(7, 2)
			s.NAK(7, wire.NAKPSNSequence)
			r = s.Resend(r...)
			s.Wait(T)
			r = s.Resend(r...)
			s.NAK(7, wire.NAKPSNSequence)
			s.Resend(r...)
		}, reqtest.Fail},
		{"retry count 2: three RNR NAKs and two timeouts (RNR is another counter)", reqtest.Active(1024, 10, 2, 3), func(s *reqtest.Script) {
			r := s.Send(7, 1)
			for i := 0; i < 3; i++ {
				s.RNR(7, 1)
				s.Wait(20 * time.Microsecond)
				r = s.Resend(r...)
			}
			for i := 0; i < 2; i++ {
				s.Wait(T)
				r = s.Resend(r...)
			}
		}, reqtest.Pass},
		{"retry count 1: an acknowledgment in between ends the episode", reqtest.Active(1024, 10, 1, 7), func(s *reqtest.Script) {
			r := s.Send(40, 2)
			s.Wait(T)
			s.Resend(r...)
			s.ACK(40)
			s.Wait(T)
			s.Resend(r[1])
		}, reqtest.Pass},
		{"retry count 2: network duplicates are not retries", reqtest.Active(1024, 10, 2, 7), func(s *reqtest.Script) {
			r := s.Send(100, 2)
			for i := 0; i < 2; i++ {
				s.Wait(T)
				r = s.Resend(r...)
				s.NetDup(r[0])
				s.NetDup(r[1])
			}
		}, reqtest.Pass},
		{"retry count 7: seven retries", reqtest.Active(1024, 10, 7, 7), func(s *reqtest.Script) {
			r := s.Send(100, 1)
			for i := 0; i < 7; i++ {
				s.Wait(T)
				r = s.Resend(r...)
			}
		}, reqtest.Pass},
		{"retry count 7: an eighth retry (7 is not unlimited for this counter)", reqtest.Active(1024, 10, 7, 7), func(s *reqtest.Script) {
			r := s.Send(100, 1)
			for i := 0; i < 8; i++ {
				s.Wait(T)
				r = s.Resend(r...)
			}
		}, reqtest.Fail},
		{"capture, retry count unknown", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			r := s.Send(100, 1)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Indet},
		// Off a complete trace, an RNR NAK the capture dropped may have
		// driven such retries: the first retry is checked, the second left
		// open; a capture at the requester decides.
		{"capture, retry count 1: two retries with nothing in between", reqtest.Capture(0, -1, 1, -1, false), func(s *reqtest.Script) {
			r := s.Send(100, 2)
			s.Wait(T)
			r = s.Resend(r...)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.NoFail},
		{"complete capture, retry count 1: two retries with nothing in between", reqtest.Capture(0, -1, 1, -1, true), func(s *reqtest.Script) {
			r := s.Send(100, 2)
			s.Wait(T)
			r = s.Resend(r...)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Fail},
	}
	for _, tc := range cases {
		s := reqtest.NewScript()
		tc.build(s)
		reqtest.Expect(t, tc.name, reqtest.Audit(ID, tc.settings, s.Recs), tc.want)
	}

	// In a capture, a resend after an RNR NAK that may never have reached
	// the requester could be a timeout: counted as unsure.
	s := reqtest.NewScript()
	r := s.Send(100, 1)
	for i := 0; i < 2; i++ {
		s.Wait(T)
		r = s.Resend(r...)
	}
	s.RNR(100, 1)
	s.Wait(T)
	s.Resend(r...)
	res := reqtest.Audit(ID, reqtest.Capture(1024, -1, 2, -1, false), s.Recs)
	if res.Tally.Violations != 0 || res.Tally.Indeterminate == 0 {
		t.Errorf("capture, two timeouts and a resend after an RNR NAK: want indeterminate and no violation, got %s", res)
	}
}

// TestMonitorReference audits traces, and captures, of the reference
// device whose requests go unanswered until its retry count is spent.
func TestMonitorReference(t *testing.T) {
	for _, tc := range []struct {
		defect string
		retry  uint8
		want   reqtest.Verdict
	}{
		{"", 0, reqtest.None},
		{"", 3, reqtest.Pass},
		{"retry-count-plus-one", 0, reqtest.Fail},
		{"retry-count-plus-one", 3, reqtest.Fail},
		{"", 7, reqtest.Pass},
		{"retry-7-unlimited", 7, reqtest.Fail},
	} {
		active, captured := reqtest.AuditReference(t, ID, tc.defect, dut.ConnConfig{MTU: 1024, DevicePSN: 500, SetPSNs: true, Timeout: 10, RetryCnt: tc.retry, RNRRetry: 7},
			func(rs *requester.Responder) {
				rs.Post(requester.SendWR(1, 100), requester.SendWR(2, 2000))
				rs.Collect(time.Second)
			})
		name := fmt.Sprintf("reference, defect %q, retry count %d", tc.defect, tc.retry)
		reqtest.Expect(t, name, active, tc.want)
		reqtest.Expect(t, name+", its capture", captured, tc.want)
	}
}

// TestMonitorCaptures audits real Linux soft-RoCE traffic with loss: with
// perftest's retry count (7) every retry episode is within it; claiming a
// retry count of 0 makes each of its 27 retries a violation.
func TestMonitorCaptures(t *testing.T) {
	f := reqtest.Captures + "/rxe/send-4k-4qp-loss1.pcap"
	reqtest.Expect(t, "loss capture, retry count 7", reqtest.CaptureFile(t, f, ID, reqtest.Capture(1024, 14, 7, 7, false)), reqtest.Pass)
	reqtest.Expect(t, "loss capture, retry count 0 claimed", reqtest.CaptureFile(t, f, ID, reqtest.Capture(1024, 14, 0, 7, false)), reqtest.Fail)
	reqtest.Expect(t, "loss capture, retry count unknown", reqtest.CaptureFile(t, f, ID, reqtest.Capture(0, -1, -1, -1, false)), reqtest.Indet)
	for _, name := range []string{"send-4k-mtu1024", "read-8k-mtu1024", "write-8k-mtu1024", "atomic-cas", "mix-ipv6-mtu1024", "errors"} {
		reqtest.Expect(t, name, reqtest.CaptureFile(t, reqtest.Captures+"/rxe/"+name+".pcap", ID, reqtest.Capture(0, 14, 0, 0, false)), reqtest.None)
	}
}
