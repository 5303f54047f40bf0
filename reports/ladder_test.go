package reports

import (
	"strings"
	"testing"
)

func TestLadderText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rungs []Rung
		want  string
	}{
		{"empty", nil, ""},
		{
			"capture with frames and notes",
			retryFromWrongPSN().Ladder,
			` t(us)  dir          opcode       PSN  A  syndrome                  MSN  frame
 0.000  req --> rsp  SEND_FIRST   500                                      120
 1.050  req --> rsp  SEND_MIDDLE  502                                      121      PSN 501 lost on the wire
 4.730  req <-- rsp  ACKNOWLEDGE  501     NAK (PSN sequence error)   12    122
 9.210  req --> rsp  SEND_MIDDLE  502                                      124  <== the resend must begin at PSN 501
10.400  req --> rsp  SEND_LAST    503  A                                   125
`,
		},
		{
			"suite run without frames",
			sampleSuite().Findings[0].Ladder,
			`t(us)  dir          opcode              PSN  A  syndrome          MSN
0.000  req --> rsp  RDMA_WRITE_FIRST   1200
1.180  req --> rsp  RDMA_WRITE_MIDDLE  1201
2.360  req --> rsp  RDMA_WRITE_LAST    1202  A
7.845  req <-- rsp  ACKNOWLEDGE        1203     ACK (credits 31)   58  <== PSN 1203 was never sent
`,
		},
		{
			"out of order time, PSN at the wrap, line breaks folded, highlight without note",
			[]Rung{
				{TimeNS: 5_000_000, Dir: DirReqToRsp, Opcode: "RDMA_READ_REQUEST", PSN: 0xFFFFFF, AckReq: true, Frame: 7},
				{TimeNS: 4_999_500, Dir: DirRspToReq, Opcode: "RDMA_READ_RESPONSE_ONLY", PSN: 0xFFFFFF, Syndrome: "ACK\n(credits 0)", MSN: msn(0), Frame: 6, Highlight: true},
			},
			` t(us)  dir          opcode                        PSN  A  syndrome         MSN  frame
 0.000  req --> rsp  RDMA_READ_REQUEST        16777215  A                            7
-0.500  req <-- rsp  RDMA_READ_RESPONSE_ONLY  16777215     ACK (credits 0)    0      6  <==
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LadderText(tc.rungs)
			if got != tc.want {
				t.Errorf("LadderText:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestLadderTextMarksOnlyTheHighlight(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(LadderText(ackBeyondReceived().Ladder), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header and 4 rungs:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, line := range lines {
		marked := strings.Contains(line, highlightMarker)
		if want := i == 4; marked != want {
			t.Errorf("line %d marked %v, want %v: %q", i, marked, want, line)
		}
	}
}

func TestRelMicros(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0.000", 1: "0.001", 999: "0.999", 1000: "1.000", 12_345_678: "12345.678", -1500: "-1.500",
	} {
		if got := relMicros(ns); got != want {
			t.Errorf("relMicros(%d) = %q, want %q", ns, got, want)
		}
	}
}
