package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

var update = flag.Bool("update", false, "rewrite the captures and the sample result in ci/testdata/audit")

// testdataDir holds small captures for trying and testing the audit.
const testdataDir = "../../ci/testdata/audit"

// fixtures are the captures of ci/testdata/audit, with the exit status
// `rcconform audit` must give each and the verdict it must give C9-95.
var fixtures = []struct {
	name    string
	pkts    []wire.Packet
	passive []int // 1-based requests sent by the responder's host (its CM messages)
	cut     int   // bytes cut off the end of the file
	bad     int   // 1-based packet whose ICRC is spoilt
	exit    int
	c9_95   reports.Verdict
}{
	{name: "clean.pcap", pkts: []wire.Packet{send(10), ack(10, 1), send(11), ack(11, 2), send(12), ack(12, 3)}, exit: exitOK, c9_95: reports.Pass},
	{name: "ack-psn-backwards.pcap", pkts: []wire.Packet{send(10), send(11), ack(11, 2), ack(10, 2)}, exit: exitViolation, c9_95: reports.Fail},
	{name: "bad-icrc.pcap", pkts: []wire.Packet{send(10), ack(10, 1), send(11), ack(9, 2)}, bad: 4, exit: exitOK, c9_95: reports.Pass},
	{name: "truncated.pcap", pkts: []wire.Packet{send(10), send(11), ack(11, 2), ack(10, 2), send(12)}, cut: 5, exit: exitUsage, c9_95: reports.Fail},
	{name: "cm-handshake.pcap", pkts: []wire.Packet{
		mad(wire.CMMsg{Kind: wire.CMAttrREQ, LocalCommID: cmActive, LocalQPN: 0x22, StartingPSN: 500, PathMTUCode: 3, LocalACKTimeout: 14, RetryCount: 7, RNRRetryCount: 7}),
		mad(wire.CMMsg{Kind: wire.CMAttrREP, LocalCommID: cmPassive, RemoteCommID: cmActive, LocalQPN: 0x11, StartingPSN: 10, RNRRetryCount: 7}),
		mad(wire.CMMsg{Kind: wire.CMAttrRTU, LocalCommID: cmActive, RemoteCommID: cmPassive}),
		send(10), ack(10, 1), send(11), ack(11, 2),
		mad(wire.CMMsg{Kind: wire.CMAttrDREQ, LocalCommID: cmActive, RemoteCommID: cmPassive, RemoteQPN: 0x11}),
		mad(wire.CMMsg{Kind: wire.CMAttrDREP, LocalCommID: cmPassive, RemoteCommID: cmActive}),
	}, passive: []int{2, 9}, exit: exitViolation, c9_95: reports.Pass},
}

// The CM communication IDs of cm-handshake.pcap's two sides.
const (
	cmActive  = 0xA0000001
	cmPassive = 0xB0000002
)

// mad is a CM message as sent: a UD SEND Only to QP 1 (the General
// Services Interface) whose DETH carries the well-known Q_Key and source
// QP 1.
func mad(m wire.CMMsg) wire.Packet {
	m.MAD = wire.MADHeader{BaseVersion: 1, ClassVersion: 2, Method: 3, TID: 7}
	pl := binary.BigEndian.AppendUint32(nil, 0x80010000)
	pl = binary.BigEndian.AppendUint32(pl, 1)
	return wire.Packet{BTH: wire.BTH{Opcode: wire.UDSendOnly, PKey: 0xFFFF, DestQP: wire.GSIQP, PSN: 1}, Payload: wire.AppendCM(pl, &m)}
}

func fixtureBytes(t *testing.T, i int) []byte {
	f := fixtures[i]
	frames := make([][]byte, len(f.pkts))
	for k, p := range f.pkts {
		frames[k] = encodeFrom(p, uint16(k+1), p.Opcode.IsResponse() || slices.Contains(f.passive, k+1))
	}
	b := pcapOfFrames(t, frames...)
	if f.bad > 0 {
		// The last byte of packet f.bad is its ICRC's: the file header,
		// then each packet's record header and frame.
		off := 24
		for _, fr := range frames[:f.bad] {
			off += 16 + len(fr)
		}
		b[off-1] ^= 0xFF
	}
	return b[:len(b)-f.cut]
}

// TestTestdata checks the committed captures: they are what the fixtures
// build, and they audit with the promised exit status and C9-95 verdict.
// With -update it rewrites them and the sample result.json.
func TestTestdata(t *testing.T) {
	if *update {
		if err := os.MkdirAll(testdataDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	for i, f := range fixtures {
		path := filepath.Join(testdataDir, f.name)
		paths = append(paths, path)
		want := fixtureBytes(t, i)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./cmd/rcconform -run TestTestdata -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the fixture builds (run with -update)", path)
		}
		code, out, stderr := invoke(t, "audit", "--format", "json", path)
		if code != f.exit {
			t.Errorf("%s: exit %d, want %d\n%s", f.name, code, f.exit, stderr)
		}
		res, err := reports.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, c := range res.Clauses {
			if c.ID == "C9-95" && c.Verdict != f.c9_95 {
				t.Errorf("%s: C9-95 %s, want %s", f.name, c.Verdict, f.c9_95)
			}
		}
		if f.bad > 0 && res.Captures[0].BadICRC != 1 {
			t.Errorf("%s: %d bad ICRCs", f.name, res.Captures[0].BadICRC)
		}
	}
	// The sample result: an audit of the clean capture and the violating
	// one (paths as seen from the repository's root).
	code, out, _ := invoke(t, append([]string{"audit", "--format", "json"}, paths[:2]...)...)
	if code != exitViolation {
		t.Fatalf("sample: exit %d", code)
	}
	out = strings.ReplaceAll(out, "../../ci/", "ci/")
	sample := filepath.Join(testdataDir, "result.json")
	if *update {
		if err := os.WriteFile(sample, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reports.ReadJSON(bytes.NewReader(b)); err != nil {
		t.Errorf("%s: %v", sample, err)
	}
}
