package traces

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/internal/suiterun"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/reports/annotate"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// The scenarios run, under the defect ack-psn-ahead: a Go scenario it
// fails (C9-95), one it leaves passing (C9-100), and a script it fails.
var scenarios = []struct{ focus, file, name string }{
	{"AckReq on the third and the sixth SEND", "c9_95-ackreq-on-the-third-and-the-sixth-send.pcapng", "AckReq on the third and the sixth SEND"},
	{"C9-100 .*a 48-packet READ at MTU 256 whose region is invalidated after 1 response packets$",
		"c9_100-a-48-packet-read-at-mtu-256-whose-region-is-invalidated-after-1-response-packets.pcapng",
		"a 48-packet READ at MTU 256 whose region is invalidated after 1 response packets"},
	{"c9_95-coalesced-ack", "script-c9_95-coalesced-ack.pcapng", "scripts/c9_95-coalesced-ack.rcs"},
}

// frame is a frame read back: its packet and comments.
type frame struct {
	pkt      *wire.Packet
	comments []string
}

// read reads the frames of a pcapng file, each a RoCEv2 packet with a
// right ICRC.
func read(t *testing.T, path string) []frame {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []frame
	for {
		fr, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		var f wire.Frame
		if err := f.DecodeEthernet(fr.Data); err != nil {
			t.Fatalf("%s frame %d: %v", path, fr.Num, err)
		}
		if s := f.CheckICRC(); s != wire.ICRCOK {
			t.Errorf("%s frame %d: ICRC %v", path, fr.Num, s)
		}
		out = append(out, frame{pkt: f.Packet.Clone(), comments: slices.Clone(fr.Comments)})
	}
}

// qps returns the QP numbers a trace's packets are sent to, sorted: the
// connection's two QPs, unique in a run.
func qps(fs []frame) []uint32 {
	var q []uint32
	for _, f := range fs {
		if !slices.Contains(q, f.pkt.DestQP) {
			q = append(q, f.pkt.DestQP)
		}
	}
	slices.Sort(q)
	return q
}

// has reports whether some comment of f begins with prefix.
func has(f frame, prefix string) bool {
	return slices.ContainsFunc(f.comments, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// TestTraces runs three scenarios with --traces and reads the files back:
// one per scenario, named after it; frame for frame the packets that
// crossed the reference's link (the --trace-dir capture of the same
// connection); the failed expectation's finding on the packet it names,
// the scenario's steps and expectations on theirs, none of a failure on
// the scenario that passed.
func TestTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the rule suite")
	}
	bin := suiterun.Build(t, "..")
	wd, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	traces, links, jsonPath := filepath.Join(dir, "traces"), filepath.Join(dir, "links"), filepath.Join(dir, "result.json")
	args := []string{"-ginkgo.no-color", "--defect=ack-psn-ahead", "--json=" + jsonPath, "--traces=" + traces, "--trace-dir=" + links}
	for _, s := range scenarios {
		args = append(args, "-ginkgo.focus="+s.focus)
	}
	res, out, err := suiterun.Exec(bin, wd, jsonPath, args)
	if res == nil {
		t.Fatalf("%v\n%s", err, out)
	}

	ents, err := os.ReadDir(traces)
	if err != nil {
		t.Fatal(err)
	}
	var names, want []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	for _, s := range scenarios {
		want = append(want, s.file)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("--traces wrote %q, want one file per scenario: %q\n%s", names, want, out)
	}
	linkFiles, _ := filepath.Glob(filepath.Join(links, "*.pcapng"))
	if len(linkFiles) != len(scenarios) {
		t.Fatalf("--trace-dir wrote %d captures, want %d", len(linkFiles), len(scenarios))
	}
	var linked [][]frame
	for _, f := range linkFiles {
		linked = append(linked, read(t, f))
	}

	for _, s := range scenarios {
		fs := read(t, filepath.Join(traces, s.file))
		if len(fs) == 0 {
			t.Fatalf("%s: no frame", s.file)
		}
		i := slices.IndexFunc(linked, func(l []frame) bool { return slices.Equal(qps(l), qps(fs)) })
		if i < 0 {
			t.Fatalf("%s: no link capture of its QPs %x", s.file, qps(fs))
		}
		if len(fs) != len(linked[i]) {
			t.Errorf("%s: %d frames, the link carried %d", s.file, len(fs), len(linked[i]))
		}
		for j := range min(len(fs), len(linked[i])) {
			if !reflect.DeepEqual(fs[j].pkt, linked[i][j].pkt) {
				t.Errorf("%s frame %d: %v, the link carried %v", s.file, j+1, fs[j].pkt, linked[i][j].pkt)
			}
		}
		var own []reports.Finding
		for _, f := range res.Findings {
			if f.Scenario == s.name {
				own = append(own, f)
			}
		}
		failed := false
		for _, f := range fs {
			failed = failed || has(f, "rcconform: expectation not met") || slices.ContainsFunc(f.comments, func(c string) bool { return strings.Contains(c, " fail: ") })
		}
		switch s.file {
		case scenarios[1].file:
			if failed || len(own) > 0 {
				t.Errorf("%s: the scenario passed, yet: %v", s.file, own)
			}
			// The READ (frame 1), then the step awaiting its answer,
			// which came as frame 2.
			if at := fs[min(1, len(fs)-1)]; at.pkt.Opcode != wire.ReadResponseFirst ||
				!has(at, "rcconform: step (C9-116 governs it): the device answers the READ") ||
				!has(at, "rcconform: awaited (C9-116 governs it): READ response packets within") {
				t.Errorf("%s frame 2 (%v): the step and the answer it awaited missing: %q", s.file, at.pkt, at.comments)
			}
		case scenarios[0].file:
			if len(own) != 1 || own[0].ID != "C9-95" || own[0].Frame <= 0 || own[0].Frame > len(fs) {
				t.Fatalf("%s: want one finding of C9-95 naming a frame, have %+v", s.file, own)
			}
			f := own[0]
			at := fs[f.Frame-1]
			if !harness.IsAck(at.pkt) || uint32(at.pkt.PSN) != f.PSN {
				t.Errorf("%s: the finding names frame %d (PSN %d), which holds %v", s.file, f.Frame, f.PSN, at.pkt)
			}
			if !slices.Contains(at.comments, annotate.FindingComment(f)) || !has(at, "rcconform: expectation not met (C9-95 governs it)") {
				t.Errorf("%s frame %d: the finding's comments missing: %q", s.file, f.Frame, at.comments)
			}
			tsharkShows(t, filepath.Join(traces, s.file), "C9-95 fail", f.Frame)
			for j, fr := range fs {
				if j != f.Frame-1 && slices.ContainsFunc(fr.comments, func(c string) bool { return strings.Contains(c, "C9-95 fail") }) {
					t.Errorf("%s frame %d: a finding's comment off its frame: %q", s.file, j+1, fr.comments)
				}
			}
		default: // the script
			if len(own) == 0 {
				t.Fatalf("%s: the script did not fail", s.file)
			}
			if !has(fs[0], "rcconform: line ") {
				t.Errorf("%s frame 1: no script line: %q", s.file, fs[0].comments)
			}
			last := fs[len(fs)-1]
			if !harness.IsAck(last.pkt) || !has(last, "rcconform: expectation not met (C9-95 governs it)") {
				t.Errorf("%s: the unmet expectation is not on the last packet, the ACK that came instead: %v %q", s.file, last.pkt, last.comments)
			}
		}
	}
}

// TestTracesBadFolder: a --traces folder that cannot be made stops the
// suite before any scenario, with exit status 1 and an error naming it;
// a trace that cannot be written fails the run, naming the file, once
// the run's result is written.
func TestTracesBadFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the rule suite")
	}
	bin := suiterun.Build(t, "..")
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(dir, "traces", scenarios[1].file) // a folder where the trace should go
	if err := os.MkdirAll(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, traces, says string
		result             bool
	}{
		{"a folder under a file", filepath.Join(file, "traces"), `--traces "` + filepath.Join(file, "traces") + `": cannot make the folder`, false},
		{"a trace's name taken by a folder", filepath.Join(dir, "traces"), "saving the scenarios' traces (--traces): annotating: writing \"" + taken + "\"", true},
	} {
		jsonPath := filepath.Join(dir, "result.json")
		os.Remove(jsonPath)
		cmd := exec.Command(bin, "-ginkgo.no-color", "--traces="+tc.traces, "--json="+jsonPath, "-ginkgo.focus="+scenarios[1].focus)
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: want exit status 1, have %v\n%s", tc.name, err, out)
		}
		if !strings.Contains(string(out), tc.says) || strings.Contains(string(out), "panic") {
			t.Errorf("%s: the error does not say %q, or panics:\n%s", tc.name, tc.says, out)
		}
		if _, err := os.Stat(jsonPath); tc.result && err != nil {
			t.Errorf("%s: no result written: %v", tc.name, err)
		}
	}
}

// tsharkShows checks, where tshark is installed (RCCONFORM_TSHARK=require:
// it must be), that Wireshark's reading of path finds a comment holding
// text on frame alone.
func tsharkShows(t *testing.T, path, text string, frame int) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("RCCONFORM_TSHARK") == "require" {
			t.Fatal("RCCONFORM_TSHARK=require, but there is no tshark")
		}
		t.Logf("no tshark (apt-get install tshark): Wireshark's reading of %s not checked", filepath.Base(path))
		return
	}
	out, err := exec.Command(tshark, "-r", path, "-Y", `frame.comment contains "`+text+`"`, "-T", "fields", "-e", "frame.number").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", path, err)
	}
	if got, want := strings.Fields(string(out)), []string{strconv.Itoa(frame)}; !slices.Equal(got, want) {
		t.Errorf("tshark finds %q on frames %q of %s, want %q", text, got, filepath.Base(path), want)
	}
}
