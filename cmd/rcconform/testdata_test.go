package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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
	name  string
	pkts  []wire.Packet
	cut   int // bytes cut off the end of the file
	bad   int // 1-based packet whose ICRC is spoilt
	exit  int
	c9_95 reports.Verdict
}{
	{name: "clean.pcap", pkts: []wire.Packet{send(10), ack(10, 1), send(11), ack(11, 2), send(12), ack(12, 3)}, exit: exitOK, c9_95: reports.Pass},
	{name: "ack-psn-backwards.pcap", pkts: []wire.Packet{send(10), send(11), ack(11, 2), ack(10, 2)}, exit: exitViolation, c9_95: reports.Fail},
	{name: "bad-icrc.pcap", pkts: []wire.Packet{send(10), ack(10, 1), send(11), ack(9, 2)}, bad: 4, exit: exitOK, c9_95: reports.Pass},
	{name: "truncated.pcap", pkts: []wire.Packet{send(10), send(11), ack(11, 2), ack(10, 2), send(12)}, cut: 5, exit: exitUsage, c9_95: reports.Fail},
}

func fixtureBytes(t *testing.T, i int) []byte {
	f := fixtures[i]
	b := pcapOf(t, f.pkts...)
	if f.bad > 0 {
		// The last byte of packet f.bad is its ICRC's: find it by
		// re-encoding the packets before it.
		off := 24
		for k := 0; k < f.bad; k++ {
			off += 16 + len(encode(f.pkts[k], uint16(k+1)))
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
