package s9_9_2_2

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

func TestMonitorHandBuilt(t *testing.T) {
	T := wire.AckTimeout(timeout)
	active := reqtest.Active(1024, timeout, 7, 7)
	later := 100 * time.Microsecond
	// A live device on a real clock: the trace's times are the harness's,
	// off from the device's by up to the adapter's tolerance.
	live := active
	live.Tolerance = 2 * time.Millisecond
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(s *reqtest.Script)
		want     reqtest.Verdict
	}{
		{"nothing after a remote access NAK", active, func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(11, wire.NAKRemoteAccess)
		}, reqtest.Pass},
		{"packets in flight right after the NAK, then nothing", active, func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(10, wire.NAKRemoteOp)
			s.Send(13, 2)
		}, reqtest.Pass},
		{"the NAKed request resent at once", active, func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKInvalidRequest)
			s.Wait(later)
			s.Resend(r...)
		}, reqtest.Fail},
		{"live: a resend within the adapter's tolerance after the NAK", live, func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKInvalidRequest)
			s.Wait(time.Millisecond)
			s.Resend(r...)
		}, reqtest.Pass},
		{"live: a resend beyond the adapter's tolerance after the NAK", live, func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKInvalidRequest)
			s.Wait(3 * time.Millisecond)
			s.Resend(r...)
		}, reqtest.Fail},
		{"the NAKed request resent after a timeout", active, func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKInvalidRequest)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Fail},
		{"new requests after the NAK", active, func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(12, wire.NAKRemoteAccess)
			s.Wait(later)
			s.Send(13, 1)
		}, reqtest.Fail},
		{"a NAK for a PSN never sent is a ghost", active, func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(40, wire.NAKRemoteAccess)
			s.Wait(later)
			s.Send(13, 1)
		}, reqtest.None},
		{"a reserved NAK code is not judged", active, func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(11, 7)
			s.Wait(later)
			s.Send(13, 1)
		}, reqtest.None},
		{"sequence and RNR NAKs are retried", active, func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKPSNSequence)
			r = s.Resend(r...)
			s.RNR(10, 1)
			s.Wait(later)
			s.Resend(r...)
		}, reqtest.None},
		{"capture: a resend sooner than any timeout after the NAK", reqtest.Capture(1024, timeout, -1, -1, false), func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKRemoteOp)
			s.Wait(2 * time.Millisecond)
			s.Resend(r...)
		}, reqtest.Fail},
		{"capture: a resend after a timeout (the NAK may have been lost)", reqtest.Capture(1024, timeout, -1, -1, false), func(s *reqtest.Script) {
			r := s.Send(10, 3)
			s.NAK(10, wire.NAKRemoteOp)
			s.Wait(T)
			s.Resend(r...)
		}, reqtest.Indet},
		{"capture: new requests (the NAK may have been lost)", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(10, wire.NAKRemoteOp)
			s.Wait(10 * time.Millisecond)
			s.Send(13, 2)
		}, reqtest.Indet},
		{"capture --complete: new requests", reqtest.Capture(1024, -1, -1, -1, true), func(s *reqtest.Script) {
			s.Send(10, 3)
			s.NAK(10, wire.NAKRemoteOp)
			s.Wait(10 * time.Millisecond)
			s.Send(13, 2)
		}, reqtest.Fail},
	}
	for _, tc := range cases {
		s := reqtest.NewScript()
		tc.build(s)
		reqtest.Expect(t, tc.name, reqtest.Audit(ID, tc.settings, s.Recs), tc.want)
	}
}

// TestMonitorReference audits traces, and captures, of the reference
// device answered with each non-retryable NAK.
func TestMonitorReference(t *testing.T) {
	for _, defect := range []string{"", "retry-after-fatal-nak"} {
		for _, code := range []uint8{wire.NAKInvalidRequest, wire.NAKRemoteAccess, wire.NAKRemoteOp} {
			want := reqtest.Pass
			if defect != "" {
				want = reqtest.Fail
			}
			active, captured := reqtest.AuditReference(t, ID, defect, dut.ConnConfig{MTU: 1024, DevicePSN: 77, SetPSNs: true, Timeout: timeout, RetryCnt: 7, RNRRetry: 7},
				func(rs *requester.Responder) {
					rs.PostAndReceive(77, requester.SendWR(1, 10), requester.SendWR(2, 10))
					rs.NAK(77, code)
					rs.Collect(time.Second)
				})
			name := fmt.Sprintf("reference, defect %q, NAK code %d", defect, code)
			reqtest.Expect(t, name, active, want)
			reqtest.Expect(t, name+", its capture", captured, want)
		}
	}
}

// TestMonitorCaptures audits real Linux soft-RoCE error runs: after each
// of the four non-retryable NAKs (two remote access, one remote
// operational, one invalid request) the requester sends nothing more.
func TestMonitorCaptures(t *testing.T) {
	res := reqtest.CaptureFile(t, reqtest.Captures+"/rxe/errors.pcap", ID, reqtest.Capture(0, -1, -1, -1, false))
	reqtest.Expect(t, "errors capture", res, reqtest.Pass)
	if res.Tally.Checked != 4 {
		t.Errorf("errors capture: want four NAKs checked, got %s", res)
	}
	for _, name := range []string{"send-4k-4qp-loss1", "send-4k-mtu1024", "read-8k-mtu1024", "write-8k-mtu1024", "atomic-cas", "mix-ipv6-mtu1024"} {
		reqtest.Expect(t, name, reqtest.CaptureFile(t, reqtest.Captures+"/rxe/"+name+".pcap", ID, reqtest.Capture(0, -1, -1, -1, false)), reqtest.None)
	}
}
