package reports

// Fixtures shared by the tests and the demo page. The clause summaries and
// texts are illustrative wording for exercising the renderers, not the
// catalogue's entries.

func msn(n uint32) *uint32 { return &n }

const (
	captureA = "rdma-write.pcapng"
	captureB = "send-retry.pcap"
)

// ackBeyondReceived is a responder finding: an ACK names a PSN the
// requester never sent.
func ackBeyondReceived() Finding {
	const t0 = 1_700_000_000_000_000_000
	return Finding{
		ID: "C9-95", Capture: captureA, Frame: 18, QP: 0x000012, PSN: 1203,
		Message: "ACK for PSN 1203 acknowledges a request that was never sent",
		Clause:  "An ACK acknowledges only requests the responder has received: its PSN is that of a request it has executed.",
		Expected: []string{
			"ACK with PSN 1202 (the last request received)",
			"no ACK yet: a later coalesced ACK covering PSN 1202",
		},
		Seen:     "ACK with PSN 1203, MSN 58",
		Scenario: "audit",
		Ladder: []Rung{
			{TimeNS: t0, Dir: DirReqToRsp, Opcode: "RDMA_WRITE_FIRST", PSN: 1200, Frame: 15, QP: 0x000012},
			{TimeNS: t0 + 1_180, Dir: DirReqToRsp, Opcode: "RDMA_WRITE_MIDDLE", PSN: 1201, Frame: 16, QP: 0x000012},
			{TimeNS: t0 + 2_360, Dir: DirReqToRsp, Opcode: "RDMA_WRITE_LAST", PSN: 1202, AckReq: true, Frame: 17, QP: 0x000012},
			{TimeNS: t0 + 7_845, Dir: DirRspToReq, Opcode: "ACKNOWLEDGE", PSN: 1203, Syndrome: "ACK (credits 31)", MSN: msn(58), Frame: 18, QP: 0x000011,
				Highlight: true, Note: "PSN 1203 was never sent"},
		},
	}
}

// retryFromWrongPSN is a requester finding: after a NAK for a PSN sequence
// error the requester resends from the wrong PSN.
func retryFromWrongPSN() Finding {
	const t0 = 1_700_000_100_000_000_000
	return Finding{
		ID: "C9-116", Capture: captureB, Frame: 124, QP: 0x000031, PSN: 502,
		Message: "after a PSN sequence error NAK for PSN 501, the requester resent from PSN 502",
		Clause:  "After a NAK for a PSN sequence error, the requester resends starting at the PSN the NAK names.",
		Expected: []string{
			"resend beginning at PSN 501",
		},
		Seen: "resend beginning at PSN 502",
		Ladder: []Rung{
			{TimeNS: t0, Dir: DirReqToRsp, Opcode: "SEND_FIRST", PSN: 500, Frame: 120, QP: 0x000031},
			{TimeNS: t0 + 1_050, Dir: DirReqToRsp, Opcode: "SEND_MIDDLE", PSN: 502, Frame: 121, QP: 0x000031, Note: "PSN 501 lost on the wire"},
			{TimeNS: t0 + 4_730, Dir: DirRspToReq, Opcode: "ACKNOWLEDGE", PSN: 501, Syndrome: "NAK (PSN sequence error)", MSN: msn(12), Frame: 122, QP: 0x000030},
			{TimeNS: t0 + 9_210, Dir: DirReqToRsp, Opcode: "SEND_MIDDLE", PSN: 502, Frame: 124, QP: 0x000031,
				Highlight: true, Note: "the resend must begin at PSN 501"},
			{TimeNS: t0 + 10_400, Dir: DirReqToRsp, Opcode: "SEND_LAST", PSN: 503, AckReq: true, Frame: 125, QP: 0x000031},
		},
	}
}

// sampleAudit is an audit of two captures with every verdict and two
// findings with ladders.
func sampleAudit() *Result {
	return &Result{
		Kind: KindAudit,
		DUT:  "pcap",
		Captures: []CaptureInfo{
			{File: captureA, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Format: "pcapng", Frames: 1204, RoCEFrames: 1180, Skipped: 24, BadICRC: 1},
			{File: captureB, Format: "pcap", Frames: 388, RoCEFrames: 388, Truncated: 3,
				Errors: []string{"frame 301: UDP length 1064 exceeds the frame; decoded from the headers present"}},
		},
		Clauses: []ClauseResult{
			{ID: "C9-95", Section: "9.7.5.1.1", Side: "responder", Level: "mandatory",
				Summary: "An ACK acknowledges only requests that were received",
				Verdict: Fail, Checked: 412, Violations: 1, Capture: captureA},
			{ID: "C9-116", Section: "9.7.6.1.2", Side: "requester", Level: "mandatory",
				Summary: "A requester resends from the PSN a sequence-error NAK names",
				Verdict: Pass, Checked: 3, Undecided: 2, Capture: captureA},
			{ID: "o9-66", Section: "9.7.5.2.8", Side: "responder", Level: "optional",
				Summary: "RDMA READ responses are generated in order",
				Verdict: NotExercised, Reason: "no RDMA READ request in this capture", Capture: captureA},
			{ID: "9.7.8", Section: "9.7.8", Side: "both", Level: "mandatory",
				Summary: "Response timeouts are honoured",
				Verdict: TextUnavailable, Reason: "the clause's text has not been checked against the specification", Capture: captureA},
			{ID: "C9-95", Section: "9.7.5.1.1", Side: "responder", Level: "mandatory",
				Summary: "An ACK acknowledges only requests that were received",
				Verdict: Pass, Checked: 96, Capture: captureB},
			{ID: "C9-116", Section: "9.7.6.1.2", Side: "requester", Level: "mandatory",
				Summary: "A requester resends from the PSN a sequence-error NAK names",
				Verdict: Fail, Checked: 1, Violations: 1, Capture: captureB, Checks: []string{"nak-sequence-retry"}},
			{ID: "o9-66", Section: "9.7.5.2.8", Side: "responder", Level: "optional",
				Summary: "RDMA READ responses are generated in order",
				Verdict: Indeterminate, Undecided: 1, Reason: "the connection began before the capture; outstanding READs unknown", Capture: captureB},
			{ID: "9.7.8", Section: "9.7.8", Side: "both", Level: "mandatory",
				Summary: "Response timeouts are honoured",
				Verdict: Unsupported, Reason: "needs the requester's completion queue, which a capture cannot show", Capture: captureB},
		},
		Findings: []Finding{ackBeyondReceived(), retryFromWrongPSN()},
		Run: &Run{Suite: Suite{Module: "github.com/rcconform/rcconform", Version: "(devel)", Commit: "0123456789abcdef0123456789abcdef01234567"},
			Date:     "2026-03-14T15:09:26Z",
			Settings: map[string]string{"srq": "unknown", "mtu": "1024", "complete": "false"}},
	}
}

// sampleSuite is a suite run against the reference DUT with one defect on.
func sampleSuite() *Result {
	f := ackBeyondReceived()
	f.Capture, f.Frame, f.Scenario = "", 0, "write-then-ack"
	for i := range f.Ladder {
		f.Ladder[i].Frame = 0
		f.Ladder[i].TimeNS -= 1_700_000_000_000_000_000
	}
	return &Result{
		Kind: KindSuite, DUT: "reference", Defect: "ack-beyond-received", Seed: 42,
		Clauses: []ClauseResult{
			{ID: "C9-95", Section: "9.7.5.1.1", Side: "responder", Level: "mandatory",
				Summary: "An ACK acknowledges only requests that were received",
				Verdict: Fail, Checked: 7, Violations: 1, Checks: []string{"write-then-ack", "coalesced-ack"}},
			{ID: "C9-116", Section: "9.7.6.1.2", Side: "requester", Level: "mandatory",
				Summary: "A requester resends from the PSN a sequence-error NAK names",
				Verdict: Pass, Checked: 2},
			{ID: "o9-66", Section: "9.7.5.2.8", Side: "responder", Level: "optional",
				Summary: "RDMA READ responses are generated in order",
				Verdict: Unsupported, Reason: "the DUT declares no RDMA READ support"},
		},
		Findings: []Finding{f},
		Run: &Run{Suite: Suite{Module: "github.com/rcconform/rcconform", Version: "(devel)", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true},
			Date:     "2026-03-14T15:09:26Z",
			Declared: map[string]string{"device": "rcconform's reference RC transport (virtual clock)", "defect": "ack-beyond-received"},
			Settings: map[string]string{"dut": "reference", "seed": "42", "defect": "ack-beyond-received"}},
	}
}
