package s9_7_5_1_2

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
	active := reqtest.Active(1024, timeout, 7, 7)
	later := 100 * time.Microsecond
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(s *reqtest.Script)
		want     reqtest.Verdict
	}{
		{"an ACK passes a READ: re-issued", active, func(s *reqtest.Script) {
			rd := s.Read(0xFFFFFF, 0x1000, 2048)
			s.Req(wire.SendOnly, 1, 8)
			s.ACK(1)
			s.Again(rd)
		}, reqtest.Pass},
		{"an ACK passes a READ: a new request instead", active, func(s *reqtest.Script) {
			s.Read(0xFFFFFF, 0x1000, 2048)
			s.Req(wire.SendOnly, 1, 8)
			s.ACK(1)
			s.Wait(later)
			s.Req(wire.SendOnly, 2, 8)
		}, reqtest.Fail},
		{"an ACK passes a READ: the SEND after it resent instead", active, func(s *reqtest.Script) {
			s.Read(0xFFFFFF, 0x1000, 2048)
			snd := s.Req(wire.SendOnly, 1, 8)
			s.ACK(1)
			s.Wait(later)
			s.Again(snd)
		}, reqtest.Fail},
		{"a request in flight, then the re-issue", active, func(s *reqtest.Script) {
			rd := s.Read(50, 0x1000, 100)
			s.Req(wire.SendOnly, 51, 8)
			s.ACK(51)
			s.Req(wire.SendOnly, 52, 8)
			s.Wait(later)
			s.Again(rd)
		}, reqtest.Pass},
		{"half a READ answered, then an ACK passes it: re-issued for the rest", active, func(s *reqtest.Script) {
			passedRead(s, 2)
			s.Read(52, 0x1000+2048, 2048)
		}, reqtest.Pass},
		{"half a READ answered, then an ACK passes it: re-issued skipping a missing response", active, func(s *reqtest.Script) {
			passedRead(s, 2)
			s.Wait(later)
			s.Read(53, 0x1000+3072, 1024)
		}, reqtest.Fail},
		// The path MTU not told: the READ's span is learnt after it was
		// sent (the MTU from its First response), so the ACK passing it
		// is an implied NAK all the same.
		{"MTU unknown: half a READ answered, then an ACK passes it: re-issued for the rest", reqtest.Capture(0, -1, -1, -1, true), func(s *reqtest.Script) {
			passedRead(s, 2)
			s.Read(52, 0x1000+2048, 2048)
		}, reqtest.Pass},
		{"MTU unknown: a READ's First answered, then an ACK passes it: a new request instead", reqtest.Capture(0, -1, -1, -1, true), func(s *reqtest.Script) {
			passedRead(s, 1)
			s.Wait(10 * time.Millisecond)
			s.Req(wire.SendOnly, 55, 8)
		}, reqtest.Fail},
		{"the response of a later READ passes an earlier one: re-issued", active, func(s *reqtest.Script) {
			r1 := s.Read(50, 0x1000, 100)
			s.Read(51, 0x2000, 100)
			s.ReadResp(wire.ReadResponseOnly, 51, 100)
			s.Again(r1)
		}, reqtest.Pass},
		{"READs answered in order: no implied NAK", active, func(s *reqtest.Script) {
			s.Read(50, 0x1000, 100)
			s.Read(51, 0x2000, 100)
			s.ReadResp(wire.ReadResponseOnly, 50, 100)
			s.ReadResp(wire.ReadResponseOnly, 51, 100)
			s.Req(wire.SendOnly, 52, 8)
		}, reqtest.None},
		{"an ACK that may predate a re-issue already under way is not judged", active, func(s *reqtest.Script) {
			rd := s.Read(50, 0x1000, 100)
			snd := s.Req(wire.SendOnly, 51, 8)
			s.Wait(wire.AckTimeout(timeout))
			s.Resend(rd, snd)
			s.ACK(51)
			s.Wait(later)
			s.Req(wire.SendOnly, 52, 8)
		}, reqtest.None},
		{"capture: an ACK passes a READ, then new requests (the ACK may have been lost)", reqtest.Capture(1024, -1, -1, -1, false), func(s *reqtest.Script) {
			s.Read(50, 0x1000, 100)
			s.Req(wire.SendOnly, 51, 8)
			s.ACK(51)
			s.Wait(10 * time.Millisecond)
			s.Req(wire.SendOnly, 52, 8)
		}, reqtest.Indet},
		{"capture --complete: an ACK passes a READ, then new requests", reqtest.Capture(1024, -1, -1, -1, true), func(s *reqtest.Script) {
			s.Read(50, 0x1000, 100)
			s.Req(wire.SendOnly, 51, 8)
			s.ACK(51)
			s.Wait(10 * time.Millisecond)
			s.Req(wire.SendOnly, 52, 8)
		}, reqtest.Fail},
	}
	for _, tc := range cases {
		s := reqtest.NewScript()
		tc.build(s)
		reqtest.Expect(t, tc.name, reqtest.Audit(ID, tc.settings, s.Recs), tc.want)
	}
}

// passedRead adds a 4 KiB READ at PSN 50 (four responses at MTU 1024)
// and a SEND at 54, the READ's first answered responses, and the ACK of
// the SEND, which passes the READ.
func passedRead(s *reqtest.Script, answered int) {
	s.Read(50, 0x1000, 4096)
	s.Req(wire.SendOnly, 54, 8)
	ops := []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseMiddle}
	for i := range answered {
		s.ReadResp(ops[i], wire.PSN(50+i), 1024)
	}
	s.ACK(54)
}

// TestMonitorReference audits traces, and captures, of the reference
// device whose READ is passed by the acknowledgment of the SEND after it.
func TestMonitorReference(t *testing.T) {
	for _, tc := range []struct {
		defect string
		want   reqtest.Verdict
	}{
		{"", reqtest.Pass},
		{"implied-nak-ignored", reqtest.Fail},
	} {
		active, captured := reqtest.AuditReference(t, ID, tc.defect, dut.ConnConfig{MTU: 1024, DevicePSN: 0xFFFFFE, SetPSNs: true, Timeout: timeout, RetryCnt: 7, RNRRetry: 7},
			func(rs *requester.Responder) {
				round := rs.PostAndReceive(0xFFFFFE, rs.ReadWR(1, 2000, 0), requester.SendWR(2, 10))
				rs.ACK(round[1].Packet.PSN)
				answerAll := func() {
					for rec := rs.Next(requester.Liveness); rec != nil; rec = rs.Next(requester.Liveness) {
						rs.Answer(rec)
					}
				}
				answerAll()
				rs.Post(requester.SendWR(3, 10))
				answerAll()
			})
		name := fmt.Sprintf("reference, defect %q", tc.defect)
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
