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

// TestScriptFromUsage: bad --from invocations exit 2 and say why.
func TestScriptFromUsage(t *testing.T) {
	c := clean(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", c, "--connection", "1"}, "--side requester or responder"},
		{[]string{"--from", c, "--connection", "1", "--side", "requester"}, "nothing the rules fix"},
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
