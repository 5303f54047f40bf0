package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/rules/script"
	"github.com/rcconform/rcconform/wire"
)

// traceCapture runs the script example against the reference (with
// defect, if any) and writes its trace as a pcap.
func traceCapture(t *testing.T, example, defect string) string {
	t.Helper()
	s, err := script.ParseFile(example)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dut.New("reference", dut.Options{Seed: 3, Defect: defect})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Run(d)
	var pkts []wire.Packet
	for _, r := range res.Trace {
		pkts = append(pkts, *r.Packet)
	}
	if len(pkts) == 0 || res.Err != nil {
		t.Fatalf("%s made no trace (%v)", example, res.Err)
	}
	return file(t, filepath.Base(example)+".pcap", pcapOf(t, pkts...))
}

// TestScriptFromCapture: a script written from a capture of a
// conformant exchange (the reference's own trace of an example script)
// runs unchanged and passes against the reference, and fails under the
// defect that breaks what it expects; one written from a capture of a
// defective exchange expects what the rules fix, not what was recorded:
// it passes against the clean reference, and against the reference with
// that defect it reproduces the deviation, failing on the clause.
func TestScriptFromCapture(t *testing.T) {
	for _, tc := range []struct {
		example, defect, side string
		// deviant: the example's trace under the defect still holds what
		// the defect breaks (an example stopped by a resend with a new
		// PSN ends before any resend its script could expect).
		deviant bool
	}{
		{"c9_95-coalesced-ack.rcs", "ack-psn-ahead", "responder", true},
		{"c9_96-read-response-psns.rcs", "read-resp-psn-skew", "responder", true},
		{"o9_58-atomic-ack.rcs", "atomic-ack-psn-skew", "responder", true},
		{"c9_121-sequence-nak.rcs", "nak-seq-received-psn", "responder", true},
		{"c9_140-retransmit-timer.rcs", "gbn-new-psn", "requester", false},
		{"s9_9_2_2-fatal-nak.rcs", "retry-after-fatal-nak", "requester", true},
	} {
		t.Run(tc.example, func(t *testing.T) {
			example := filepath.Join("../../rules/scripts", tc.example)
			out := filepath.Join(t.TempDir(), "from.rcs")
			capture := traceCapture(t, example, "")
			if code, _, errOut := invoke(t, "script", "--from", capture, "--connection", "1", "--side", tc.side, "--out", out); code != exitOK {
				t.Fatalf("--from: exit %d: %s", code, errOut)
			}
			if code, stdout, _ := invoke(t, "script", out); code != exitOK {
				b, _ := os.ReadFile(out)
				t.Fatalf("the script from a conformant capture: exit %d, want 0\n%s\n%s", code, stdout, b)
			}
			if code, stdout, _ := invoke(t, "script", "--defect", tc.defect, out); code != exitViolation {
				t.Errorf("under %s: exit %d, want 1\n%s", tc.defect, code, stdout)
			}
			if !tc.deviant {
				return
			}
			deviant := traceCapture(t, example, tc.defect)
			if code, _, errOut := invoke(t, "script", "--from", deviant, "--connection", "1", "--side", tc.side, "--out", out); code != exitOK {
				t.Fatalf("--from the deviant capture: exit %d: %s", code, errOut)
			}
			if code, stdout, _ := invoke(t, "script", "--defect", tc.defect, out); code != exitViolation || !strings.Contains(stdout, "the failed line:") {
				t.Errorf("the deviant capture's script under %s: exit %d, want 1 on a line of the script\n%s", tc.defect, code, stdout)
			}
			if code, stdout, _ := invoke(t, "script", out); code != exitOK {
				b, _ := os.ReadFile(out)
				t.Errorf("the deviant capture's script against the clean reference: exit %d, want 0\n%s\n%s", code, stdout, b)
			}
		})
	}
}

// TestScriptFromCaptureGaps: what a capture lacks is not played: a
// capture that begins mid-message starts at the next message, one that
// lost requests ends before the gap; both say so.
func TestScriptFromCaptureGaps(t *testing.T) {
	mid := send(9)
	mid.Opcode = wire.SendLast
	lost := send(14) // 12 and 13 lost
	capture := file(t, "gaps.pcap", pcapOf(t, mid, send(10), ack(10, 1), send(11), ack(11, 2), lost, ack(14, 5)))
	code, out, errOut := invoke(t, "script", "--from", capture, "--connection", "1", "--side", "responder")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"epsn=10", "frames before 2 are left out", "lost requests before frame 6"} {
		if !strings.Contains(out+errOut, w) {
			t.Errorf("lacks %q:\n%s\n%s", w, out, errOut)
		}
	}
	if strings.Contains(out, "psn=epsn+4") {
		t.Errorf("the request after the gap is played:\n%s", out)
	}
}

// TestScriptFromRequesterGaps: with the device as requester, a packet the
// capture lost before its capture point is played from its resend (and
// the resend expected again, go-back-n), a packet the capture shows after
// its acknowledgment is played in its place, a capture that ends inside a
// message ends the script before it; every work request the recorded
// answers complete is expected to complete (§9.7.5.1.2). Each script
// passes against the reference.
func TestScriptFromRequesterGaps(t *testing.T) {
	nak := ack(11, 1)
	nak.AETH.Syndrome = wire.SynNAK(wire.NAKPSNSequence)
	cut := send(12)
	cut.Opcode, cut.AckReq, cut.Payload = wire.SendFirst, false, make([]byte, 256) // the path MTU
	for _, tc := range []struct {
		name string
		pkts []wire.Packet
		want []string
	}{
		{"lost", []wire.Packet{send(10), send(12), nak, send(11), send(12), ack(12, 3)},
			[]string{"psn=dpsn+1 len=12 [trigger]    # frame 4: lost before the capture point, as its resend in frame 4 shows",
				">> SEND_ONLY psn=dpsn+1 len=12 within", "[go-back-n]", "completion id=3 status=success [§9.7.5.1.2]"}},
		{"late", []wire.Packet{send(10), ack(10, 1), ack(11, 2), send(11)},
			[]string{"# frame 4: the capture shows it after its acknowledgment, in frame 4", "completion id=2 status=success [§9.7.5.1.2]"}},
		{"cut", []wire.Packet{send(10), ack(10, 1), send(11), ack(11, 2), cut},
			[]string{"the capture ends inside the message frame 5 begins", "completion id=2 status=success [§9.7.5.1.2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := file(t, tc.name+".pcap", pcapOf(t, tc.pkts...))
			out := filepath.Join(t.TempDir(), "from.rcs")
			if code, _, errOut := invoke(t, "script", "--from", capture, "--connection", "1", "--side", "requester", "--out", out); code != exitOK {
				t.Fatalf("--from: exit %d: %s", code, errOut)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("the script lacks %q:\n%s", w, b)
				}
			}
			if code, stdout, _ := invoke(t, "script", out); code != exitOK {
				t.Errorf("against the reference: exit %d, want 0\n%s\n%s", code, stdout, b)
			}
		})
	}
}

// TestScriptFromUsage: bad --from invocations exit 2 and say why.
func TestScriptFromUsage(t *testing.T) {
	c := clean(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", c, "--connection", "1"}, "--side requester or responder"},
		{[]string{"--from", file(t, "unanswered.pcap", pcapOf(t, send(10), send(11))), "--connection", "1", "--side", "requester"},
			"unanswered.pcap, connection 1: the device's side of the connection gives nothing the rules fix to check: no answer of the recorded responder completes a request of the device's"},
		{[]string{"--from", c, "--connection", "1", "--side", "both"}, "--side requester or responder"},
		{[]string{"--from", c, "--side", "responder"}, "--connection N"},
		{[]string{"--from", c, "--connection", "9", "--side", "responder"}, "no connection 9 (it has 1)"},
		{[]string{"--from", "missing.pcap", "--connection", "1", "--side", "responder"}, "missing.pcap"},
		{[]string{"--from", c, "--connection", "1", "--side", "responder", "x.rcs"}, "runs none"},
	} {
		code, _, errOut := invoke(t, append([]string{"script"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
