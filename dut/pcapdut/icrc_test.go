package pcapdut_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// spoilICRC zeroes the ICRC of every RoCEv2 frame keep selects (nil:
// all), as a capture whose addresses were rewritten (or whose path did not
// record the wire's ICRC) shows them.
func spoilICRC(frames []capture.Frame, keep func(d []byte) bool) []capture.Frame {
	out := make([]capture.Frame, len(frames))
	for i, f := range frames {
		out[i] = f
		out[i].Data = bytes.Clone(f.Data)
		if d := out[i].Data; rocev2(d) && (keep == nil || keep(d)) {
			end := 14 + int(binary.BigEndian.Uint16(d[16:]))
			clear(d[end-4 : end])
		}
	}
	return out
}

// auditFileOpts writes frames to a pcap file and audits it with opt.
func auditFileOpts(t *testing.T, frames []capture.Frame, opt pcapdut.Options) (reports.CaptureInfo, *harness.Sink) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcap")
	if err := os.WriteFile(path, pcapOf(t, frames, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := harness.NewSink("c.pcap")
	info, err := pcapdut.AuditFileOptions(path, harness.NewAuditor(harness.UnknownSettings(), sink), nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	return info, sink
}

func isResponse(d []byte) bool { return wire.Opcode(d[42]).IsResponse() }

// TestICRCNotRecorded: a capture whose every ICRC was lost on the way to
// the file (zeroed here; rewritten addresses do the same), while the
// responders answered the requests, is audited as the capture with its
// ICRCs: the same tallies and findings, a deviation in it still caught,
// and a note saying so. Before, every frame was left out as dropped by its
// receiver and every clause was not exercised. Where some ICRCs are good,
// or only one side's are bad and nothing answers it, a bad ICRC is still
// the receiver's drop (a device that sends bad ICRCs gets no answer).
func TestICRCNotRecorded(t *testing.T) {
	for _, src := range sources(t, "rxe/send-4k-mtu1024.pcap") {
		t.Run(src.name, func(t *testing.T) { icrcNotRecorded(t, src.frames) })
	}
}

// icrcNotRecorded is TestICRCNotRecorded on the frames of one RC
// connection's SENDs, every frame RoCEv2 over IPv4.
func icrcNotRecorded(t *testing.T, frames []capture.Frame) {
	roce, responses := 0, 0
	for _, f := range frames {
		if rocev2(f.Data) {
			roce++
			if isResponse(f.Data) {
				responses++
			}
		}
	}
	requests := roce - responses
	// The same capture with one deviation: the 50th ACK's MSN 5 behind.
	deviant := spoilICRC(frames, func([]byte) bool { return false })
	acks := 0
	for _, f := range deviant {
		if d := f.Data; rocev2(d) && d[42] == byte(wire.Acknowledge) {
			if acks++; acks == 50 {
				msn := binary.BigEndian.Uint32(d[42+12:]) & 0xffffff
				binary.BigEndian.PutUint32(d[42+12:], uint32(d[42+12])<<24|(msn-5))
				reICRC(d)
				break
			}
		}
	}
	for _, c := range []struct {
		name   string
		frames []capture.Frame
	}{{"clean", frames}, {"an MSN gone back", deviant}} {
		t.Run(c.name, func(t *testing.T) {
			_, want := auditFileOpts(t, c.frames, pcapdut.Options{})
			info, got := auditFileOpts(t, spoilICRC(c.frames, nil), pcapdut.Options{})
			if d := harness.DiffSinks(want, got); d != "" {
				t.Errorf("with its ICRCs zeroed the capture audits otherwise: %s", d)
			}
			if info.BadICRC != 0 || len(info.Notes) == 0 || !strings.HasPrefix(info.Notes[0], fmt.Sprintf("%d RoCE frames carry an ICRC that does not match", roce)) {
				t.Errorf("bad ICRC %d, notes %q", info.BadICRC, info.Notes)
			}
			info, got = auditFileOpts(t, spoilICRC(c.frames, nil), pcapdut.Options{ICRC: pcapdut.ICRCCheck})
			if info.BadICRC != roce || len(got.Findings) != 0 {
				t.Errorf("--icrc=check: bad ICRC %d, %d findings", info.BadICRC, len(got.Findings))
			}
		})
	}
	if f := failing(func() *harness.Sink { _, s := auditFileOpts(t, spoilICRC(deviant, nil), pcapdut.Options{}); return s }()); len(f) != 1 || f[0] != "C9-148" {
		t.Errorf("the deviation with its ICRCs zeroed fails %v, want C9-148", f)
	}
	// The responder's ICRCs bad, the requester's good: the responses were
	// dropped (auto checks), unless told otherwise.
	acksBad := spoilICRC(frames, isResponse)
	info, _ := auditFileOpts(t, acksBad, pcapdut.Options{})
	if info.BadICRC != responses || len(info.Notes) != 0 {
		t.Errorf("responses' ICRCs bad: bad ICRC %d (want the %d ACKs), notes %q", info.BadICRC, responses, info.Notes)
	}
	info, got := auditFileOpts(t, acksBad, pcapdut.Options{ICRC: pcapdut.ICRCIgnore})
	if _, want := auditFileOpts(t, frames, pcapdut.Options{}); info.BadICRC != 0 || harness.DiffSinks(want, got) != "" {
		t.Errorf("--icrc=ignore: bad ICRC %d, sinks differ: %s", info.BadICRC, harness.DiffSinks(want, got))
	}
	// Requests with bad ICRCs and no response at all: a requester whose
	// packets its responder dropped, not a capture that lost its ICRCs.
	var unanswered []capture.Frame
	for _, f := range spoilICRC(frames, nil) {
		if !rocev2(f.Data) || !isResponse(f.Data) {
			unanswered = append(unanswered, f)
		}
	}
	if info, _ := auditFileOpts(t, unanswered, pcapdut.Options{}); info.BadICRC != requests || len(info.Notes) != 0 {
		t.Errorf("unanswered requests with bad ICRCs: bad ICRC %d (want %d), notes %q", info.BadICRC, requests, info.Notes)
	}
}

func TestParseICRCMode(t *testing.T) {
	for s, want := range map[string]pcapdut.ICRCMode{"auto": pcapdut.ICRCAuto, "": pcapdut.ICRCAuto, "check": pcapdut.ICRCCheck, "ignore": pcapdut.ICRCIgnore} {
		if got, err := pcapdut.ParseICRCMode(s); err != nil || got != want {
			t.Errorf("%q: %v, %v", s, got, err)
		}
	}
	if _, err := pcapdut.ParseICRCMode("off"); err == nil {
		t.Error("off: no error")
	}
}
