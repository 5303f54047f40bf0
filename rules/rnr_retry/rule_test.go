package rnr_retry

import (
	"fmt"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/reqtest"
	"github.com/rcconform/rcconform/wire"
)

// live returns the settings of an active run on a real clock whose
// adapter measured timing tolerance tol.
func live(tol time.Duration) harness.Settings {
	s := reqtest.Active(1024, 14, 7, 7)
	s.Tolerance = tol
	return s
}

func TestMonitorHandBuilt(t *testing.T) {
	d12 := wire.RNRDelay(12)            // 0.64 ms
	live2 := live(5 * time.Millisecond) // RNR retry count 2
	live2.RNRRetry = 2
	// rnrs answers r with an RNR NAK n times, resending after wait.
	rnrs := func(s *reqtest.Script, r []*trace.Record, n int, code uint8, wait time.Duration) []*trace.Record {
		for i := 0; i < n; i++ {
			s.RNR(r[0].Packet.PSN, code)
			s.Wait(wait)
			r = s.Resend(r...)
		}
		return r
	}
	// acked: n SENDs before PSN 10, each acknowledged.
	acked := func(s *reqtest.Script, n int) {
		for k := n; k > 0; k-- {
			s.Send(wire.PSN(10).Add(-k), 1)
			s.ACK(wire.PSN(10).Add(-k))
		}
	}
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(s *reqtest.Script)
		want     reqtest.Verdict
	}{
		{"resend after the delay", reqtest.Active(1024, 14, 7, 7), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 2), 1, 12, d12)
		}, reqtest.Pass},
		{"resend after half the delay", reqtest.Active(1024, 14, 7, 7), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 2), 1, 12, d12/2)
		}, reqtest.Fail},
		{"code 0 (655.36 ms): resent when the transport timer (67 ms) would fire", reqtest.Active(1024, 14, 7, 7), func(s *reqtest.Script) {
			rnrs(s, s.Send(0xFFFFFF, 1), 1, 0, wire.AckTimeout(14))
		}, reqtest.Fail},
		{"every code of the table, each resend after its delay", reqtest.Active(1024, 14, 7, 7), func(s *reqtest.Script) {
			r := s.Send(10, 1)
			for c := uint8(0); c < 32; c++ {
				r = rnrs(s, r, 1, c, wire.RNRDelay(c))
			}
		}, reqtest.Pass},
		{"the transport timer had expired before the RNR NAK came: a resend already under way", reqtest.Active(1024, 1, 7, 7), func(s *reqtest.Script) {
			r := s.Send(10, 1)
			s.At(wire.AckTimeout(1) + time.Microsecond)
			s.RNR(10, 20)
			s.Resend(r...)
		}, reqtest.Indet},
		{"RNR retry count 2: two RNR retries", reqtest.Active(1024, 14, 7, 2), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 2, 1, time.Millisecond)
		}, reqtest.Pass},
		{"RNR retry count 2: three RNR retries", reqtest.Active(1024, 14, 7, 2), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 3, 1, time.Millisecond)
		}, reqtest.Fail},
		{"RNR retry count 0: one RNR retry", reqtest.Active(1024, 14, 7, 0), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 1, 1, time.Millisecond)
		}, reqtest.Fail},
		{"RNR retry count 2: timeouts in between cost the other counter", reqtest.Active(1024, 10, 7, 2), func(s *reqtest.Script) {
			r := s.Send(10, 1)
			r = rnrs(s, r, 1, 1, time.Millisecond)
			s.Wait(wire.AckTimeout(10))
			r = s.Resend(r...)
			s.Wait(wire.AckTimeout(10))
			r = s.Resend(r...)
			rnrs(s, r, 1, 1, time.Millisecond)
		}, reqtest.Pass},
		{"RNR retry count 7: twenty RNR retries", reqtest.Active(1024, 14, 7, 7), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 20, 2, time.Millisecond)
		}, reqtest.Pass},
		{"RNR retry count 1: an acknowledgment in between ends the episode", reqtest.Active(1024, 14, 7, 1), func(s *reqtest.Script) {
			r := s.Send(10, 2)
			r = rnrs(s, r, 1, 1, time.Millisecond)
			s.ACK(10)
			rnrs(s, r[1:], 1, 1, time.Millisecond)
		}, reqtest.Pass},
		{"real clock: a resend 40 µs after an RNR NAK asking for 60 µs, within the tolerance", live(5 * time.Millisecond), func(s *reqtest.Script) {
			rnrs(s, s.Send(1000, 1), 1, 5, 40*time.Microsecond)
		}, reqtest.Indet},
		{"real clock: a resend before the RNR NAK's time stamp (crossed on the wire)", live(5 * time.Millisecond), func(s *reqtest.Script) {
			r := s.Send(1000, 1)
			s.Wait(time.Millisecond)
			s.RNR(1000, 1)
			s.Recs[len(s.Recs)-1].Time += 40 * time.Microsecond // the harness stamped its NAK after the resend arrived
			s.Resend(r...)
		}, reqtest.Indet},
		{"real clock, RNR retry count 2: a third RNR retry within the tolerance of the NAK that spent the count (it may have crossed it)", live2, func(s *reqtest.Script) {
			rnrs(s, s.Send(1000, 1), 3, 5, 600*time.Microsecond)
		}, reqtest.NoFail},
		{"real clock, RNR retry count 2: a third RNR retry beyond the tolerance of that NAK", live2, func(s *reqtest.Script) {
			rnrs(s, s.Send(1000, 1), 3, 5, 6*time.Millisecond)
		}, reqtest.Fail},
		{"real clock: a resend short of the delay by more than the tolerance", live(time.Millisecond), func(s *reqtest.Script) {
			rnrs(s, s.Send(1000, 1), 1, 18, wire.RNRDelay(18)-2*time.Millisecond) // 3.12 ms of 5.12
		}, reqtest.Fail},
		{"capture, timeout unknown: a resend before the delay", reqtest.Capture(1024, -1, -1, 7, false), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 1, 12, d12/2)
		}, reqtest.Indet},
		{"capture, timeout known and not expired: a resend before the delay, a response the capture missed may have asked for it", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 1, 12, d12/2)
		}, reqtest.Suspect},
		{"capture, timeout known and not expired: a resend before the delay, the responder's IDs show nothing missed", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			s.RspCounts = true
			acked(s, 20)
			rnrs(s, s.Send(10, 1), 1, 12, d12/2)
			s.ACK(10)
		}, reqtest.Fail},
		{"capture, timeout known and not expired: a resend before the delay, the responder's IDs show a packet missed", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			s.RspCounts = true
			acked(s, 20)
			r := s.Send(10, 1)
			s.RspSkip = true
			rnrs(s, r, 1, 12, d12/2)
			s.ACK(10)
		}, reqtest.Suspect},
		{"complete: a READ the RNR NAK passes, its answer not received, re-issued at once (the implied NAK)", reqtest.Capture(1024, 14, -1, 7, true), func(s *reqtest.Script) {
			rd := s.Read(7, 0x1000, 3*1024)
			s.Send(10, 1)
			s.RNR(10, 12)
			s.Wait(d12 / 4)
			s.Again(rd)
		}, reqtest.NoFail},
		{"IPv6: an identical repeat sooner than the RNR NAK's delay (a copy the network made, or an early resend)", reqtest.Capture(1024, 14, -1, 7, true), func(s *reqtest.Script) {
			s.NoIPID = true
			rnrs(s, s.Send(10, 1), 1, 12, d12/2)
		}, reqtest.Suspect},
		{"capture: a READ the RNR NAK passes, answered, re-issued at once (its answer may have been lost after the capture point)", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			s.RspCounts = true
			acked(s, 20)
			rd := s.Read(10, 0x1000, 3*1024)
			s.ReadResp(wire.ReadResponseFirst, 10, 1024)
			s.ReadResp(wire.ReadResponseMiddle, 11, 1024)
			s.ReadResp(wire.ReadResponseLast, 12, 1024)
			s.Send(13, 1)
			s.RNR(13, 12)
			s.Wait(d12 / 4)
			s.Again(rd)
			s.ACK(9)
		}, reqtest.Suspect},
		{"capture: a resend after the delay, the requester's IDs showing nothing missed since the request", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			acked(s, 20)
			rnrs(s, s.Send(10, 1), 1, 12, d12)
		}, reqtest.Pass},
		{"capture: a resend after the delay, the requester's IDs showing a packet missed since the request (maybe an earlier resend)", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			acked(s, 20)
			r := s.Send(10, 1)
			s.RNR(10, 12)
			s.Wait(d12)
			s.ReqSkip = true
			s.Resend(r...)
		}, reqtest.Suspect},
		{"capture: a resend after the delay, no IPv4 Identification to tell whether an earlier one escaped the capture", reqtest.Capture(1024, 14, -1, 7, false), func(s *reqtest.Script) {
			s.NoIPID = true
			acked(s, 20)
			rnrs(s, s.Send(10, 1), 1, 12, d12)
		}, reqtest.Indet},
		{"complete: a resend after the delay, no IPv4 Identification", reqtest.Capture(1024, 14, -1, 7, true), func(s *reqtest.Script) {
			s.NoIPID = true
			acked(s, 20)
			rnrs(s, s.Send(10, 1), 1, 12, d12)
		}, reqtest.Pass},
		{"capture, RNR retry count unknown, resends after the delay", reqtest.Capture(1024, 14, -1, -1, false), func(s *reqtest.Script) {
			rnrs(s, s.Send(10, 1), 2, 12, d12)
		}, reqtest.NoFail},
	}
	for _, tc := range cases {
		s := reqtest.NewScript()
		tc.build(s)
		reqtest.Expect(t, tc.name, reqtest.Audit(ID, tc.settings, s.Recs), tc.want)
	}
}

// TestMonitorReference audits traces, and captures, of the reference
// device answered with RNR NAKs.
func TestMonitorReference(t *testing.T) {
	for _, tc := range []struct {
		defect string
		code   uint8
		want   reqtest.Verdict
	}{
		{"", 12, reqtest.Pass},
		{"", 0, reqtest.Pass},
		{"rnr-resend-early", 12, reqtest.Fail},
		{"rnr-resend-early", 0, reqtest.Fail},
	} {
		active, captured := reqtest.AuditReference(t, ID, tc.defect, dut.ConnConfig{MTU: 1024, DevicePSN: 0xFFFFFE, SetPSNs: true, Timeout: 14, RetryCnt: 7, RNRRetry: 7},
			func(rs *requester.Responder) {
				round := rs.PostAndReceive(0xFFFFFE, requester.SendWR(1, 100), requester.SendWR(2, 10))
				for i := 0; i < 3; i++ {
					rs.RNR(round[0].Packet.PSN, tc.code)
					round = rs.ExpectRound(round, requester.Upper(wire.RNRDelay(tc.code)), "the resend")
				}
				rs.Answer(round[len(round)-1])
				rs.ExpectStatus(2, dut.StatusSuccess, requester.Liveness, "acknowledged")
			})
		name := fmt.Sprintf("reference, defect %q, RNR code %d", tc.defect, tc.code)
		reqtest.Expect(t, name, active, tc.want)
		reqtest.Expect(t, name+", its capture", captured, tc.want)
	}
}

// TestMonitorCaptures audits real Linux soft-RoCE captures, which hold no
// instance of this rule: nothing is flagged.
func TestMonitorCaptures(t *testing.T) {
	for _, name := range []string{"send-4k-4qp-loss1", "send-4k-mtu1024", "read-8k-mtu1024", "write-8k-mtu1024", "atomic-cas", "mix-ipv6-mtu1024", "errors"} {
		reqtest.Expect(t, name, reqtest.CaptureFile(t, reqtest.Captures+"/rxe/"+name+".pcap", ID, reqtest.Capture(0, 14, 7, 7, false)), reqtest.None)
	}
}

// TestMissedResendDuringTheWait: after an RNR NAK, the requester's next
// captured packet is a new request sent within the NAK's delay, and its
// IPv4 Identifications show one packet it sent in between that the
// capture missed. The new request takes the PSN right after the previous
// one, so the missed packet was no new request: a resend sooner than the
// delay (or, had the NAK not arrived, sooner than the transport timer),
// unless another flow took that ID. Open, not passed. With no missed
// packet, or sent after the delay, nothing is left open; nor where the
// transport timer had run since the outstanding request was sent (code 1,
// 8 µs). Its interval unknown, it may have run: open. A requester not
// yet seen to number its packets one by one is judged once its later
// packets show it does (never, if the trace ends first). So is a resend
// of the NAK's PSN no sooner than the delay (resend): legal as the first
// since the NAK, but a packet missed since the previous transmission may
// have been an earlier one.
func TestMissedResendDuringTheWait(t *testing.T) {
	d12 := wire.RNRDelay(12)
	for _, tc := range []struct {
		name          string
		skip          bool
		wait          time.Duration
		timeout       int
		before, after int // SENDs acknowledged before the RNR NAK, and after the new request
		resend        bool
		wantOpened    bool
	}{
		{"a packet missed within the delay", true, d12 / 4, 14, 9, 0, false, true},
		{"none missed", false, d12 / 4, 14, 9, 0, false, false},
		{"a packet missed after the delay", true, d12 + time.Millisecond, 14, 9, 0, false, false},
		{"the transport timer unknown", true, d12 / 4, -1, 9, 0, false, true},
		{"the transport timer run", true, d12 / 4, 1, 9, 0, false, false},
		{"the IDs shown to count later", true, d12 / 4, 14, 1, 9, false, true},
		{"the IDs never shown to count", true, d12 / 4, 14, 1, 0, false, false},
		{"a resend after the delay, a packet missed before it", true, d12 + time.Millisecond, 14, 9, 0, true, true},
		{"a resend after the delay, none missed", false, d12 + time.Millisecond, 14, 9, 0, true, false},
		{"a resend after the delay, the IDs shown to count later", true, d12 + time.Millisecond, 14, 1, 9, true, true},
		{"a resend after the delay, the IDs never shown to count", true, d12 + time.Millisecond, 14, 1, 0, true, false},
	} {
		s := reqtest.NewScript()
		for psn := wire.PSN(10 - tc.before); psn < 10; psn++ {
			s.Send(psn, 1)
			s.ACK(psn)
		}
		s.Send(10, 1)
		s.RNR(10, 12)
		s.Wait(tc.wait)
		s.ReqSkip = tc.skip
		next := wire.PSN(12)
		if tc.resend {
			s.Send(10, 1)
			s.ACK(10)
			next = 11
		} else {
			s.Send(11, 1)
			s.Wait(d12)
		}
		for psn := next; psn < next.Add(tc.after); psn++ {
			s.Send(psn, 1)
			s.ACK(psn)
		}
		res := reqtest.Audit(ID, reqtest.Capture(1024, tc.timeout, 7, 7, false), s.Recs)
		if got := res.Tally.Open > 0; got != tc.wantOpened || res.Tally.Violations != 0 {
			t.Errorf("%s: open %v, want %v: %s", tc.name, got, tc.wantOpened, res)
		}
	}
}
