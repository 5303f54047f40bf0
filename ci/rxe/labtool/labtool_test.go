package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/rcconform/rcconform/reports"
)

// The baseline in the repository must be complete: every configuration has a
// verdict, every fail its evidence, the table of differences matches.
func TestExpectedJSONIsComplete(t *testing.T) {
	e, err := readExpected("../expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if ps := e.problems(); len(ps) > 0 {
		t.Fatalf("ci/rxe/expected.json is incomplete:\n%s", strings.Join(ps, "\n"))
	}
	if len(e.Clauses) == 0 || len(e.Configs) != 4 {
		t.Fatalf("want 4 configurations and some clauses, have %d and %d", len(e.Configs), len(e.Clauses))
	}
}

func twoKernels() *Expected {
	return &Expected{
		Configs: []Config{
			{Name: "6.1-1500", Kernel: "6.1", NetdevMTU: 1500}, {Name: "6.1-4500", Kernel: "6.1", NetdevMTU: 4500},
			{Name: "6.12-1500", Kernel: "6.12", NetdevMTU: 1500}, {Name: "6.12-4500", Kernel: "6.12", NetdevMTU: 4500},
		},
	}
}

func all(v reports.Verdict) map[string]reports.Verdict {
	return map[string]reports.Verdict{"6.1-1500": v, "6.1-4500": v, "6.12-1500": v, "6.12-4500": v}
}

var goodEvidence = Evidence{Configs: []string{"6.1-1500", "6.1-4500", "6.12-1500", "6.12-4500"},
	RxeDoes: "puts 0x1F in every ACK", Clause: "credits on non-SRQ QPs", Finding: "ACK PSN 7 cr=0x1f", Source: "rxe_resp.c send_ack"}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(e *Expected)
		wants []string // substrings of the problems; none: complete
	}{
		{"complete", func(e *Expected) {}, nil},
		{"fail without evidence", func(e *Expected) { e.Clauses[1].Evidence = nil },
			[]string{"C9-150.2.1: fails in 6.1-1500 without evidence"}},
		{"evidence without source", func(e *Expected) { e.Clauses[1].Evidence[0].Source = " " },
			[]string{"lacks source"}},
		{"missing configuration", func(e *Expected) { delete(e.Clauses[0].Verdicts, "6.12-4500") },
			[]string{"C9-95: no verdict for 6.12-4500", "C9-95 differs between kernels"}},
		{"kernels differ, no row", func(e *Expected) {
			e.Clauses[0].Verdicts["6.12-1500"] = reports.Fail
			e.Clauses[0].Evidence = []Evidence{goodEvidence}
		}, []string{"C9-95 differs between kernels"}},
		{"row that does not match", func(e *Expected) {
			e.Clauses[0].Verdicts["6.12-1500"] = reports.Fail
			e.Clauses[0].Evidence = []Evidence{goodEvidence}
			e.Differences = []Difference{{ID: "C9-95", Kernels: map[string]string{"6.1": "pass", "6.12": "fail"}, Why: "x"}}
		}, []string{`C9-95 on 6.12 says "fail", the verdicts say "1500: fail, 4500: pass"`}},
		{"row that matches", func(e *Expected) {
			e.Clauses[0].Verdicts["6.12-1500"] = reports.Fail
			e.Clauses[0].Evidence = []Evidence{goodEvidence}
			e.Differences = []Difference{{ID: "C9-95", Kernels: map[string]string{"6.1": "pass", "6.12": "1500: fail, 4500: pass"}, Why: "x"}}
		}, nil},
		{"row for a clause that does not differ", func(e *Expected) {
			e.Differences = []Difference{{ID: "C9-95", Kernels: map[string]string{"6.1": "pass", "6.12": "pass"}, Why: "x"}}
		}, []string{"C9-95 is listed but its verdicts do not differ"}},
		{"unsupported without why", func(e *Expected) { e.Clauses[0].Verdicts = all(reports.Unsupported) },
			[]string{"C9-95: unsupported in 6.1-1500 without a why"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := twoKernels()
			e.Clauses = []Clause{{ID: "C9-95", Verdicts: all(reports.Pass)},
				{ID: "C9-150.2.1", Verdicts: all(reports.Fail), Evidence: []Evidence{goodEvidence}}}
			tc.edit(e)
			ps := strings.Join(e.problems(), "\n")
			if len(tc.wants) == 0 && ps != "" {
				t.Fatalf("want no problems, have:\n%s", ps)
			}
			for _, w := range tc.wants {
				if !strings.Contains(ps, w) {
					t.Errorf("want a problem containing %q, have:\n%s", w, ps)
				}
			}
		})
	}
}

func writeResult(t *testing.T, dir, name string, verdicts map[string]reports.Verdict, findings ...reports.Finding) string {
	t.Helper()
	r := &reports.Result{Kind: reports.KindSuite, DUT: "live", Captures: []reports.CaptureInfo{}, Findings: findings}
	for _, id := range []string{"C9-95", "C9-150.2.1"} {
		c := reports.ClauseResult{ID: id, Section: "9.7", Side: "responder", Level: "mandatory", Summary: id, Verdict: verdicts[id]}
		if c.Verdict != reports.Pass && c.Verdict != reports.Fail {
			c.Reason = "because"
		}
		if c.Verdict == reports.Fail {
			c.Violations = 1
		}
		r.Clauses = append(r.Clauses, c)
	}
	if r.Findings == nil {
		r.Findings = []reports.Finding{}
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func baseline(t *testing.T, dir string) string {
	e := twoKernels()
	e.Clauses = []Clause{{ID: "C9-95", Verdicts: all(reports.Pass)},
		{ID: "C9-150.2.1", Verdicts: all(reports.Fail), Evidence: []Evidence{goodEvidence}}}
	p := filepath.Join(dir, "expected.json")
	if err := writeExpected(p, e); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompareAndCandidate(t *testing.T) {
	dir := t.TempDir()
	exp := baseline(t, dir)
	same := writeResult(t, dir, "same.json", map[string]reports.Verdict{"C9-95": reports.Pass, "C9-150.2.1": reports.Fail})
	moved := writeResult(t, dir, "moved.json", map[string]reports.Verdict{"C9-95": reports.Fail, "C9-150.2.1": reports.Fail},
		reports.Finding{ID: "C9-95", Message: "ACK PSN 9 is ahead of the last request 8"})

	var out, errb bytes.Buffer
	if code := run([]string{"compare", "--expected", exp, "6.1-1500=" + same, "6.12-4500=" + same}, &out, &errb); code != 0 {
		t.Fatalf("same verdicts: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "matches") {
		t.Errorf("want a line saying the verdicts match, have %q", out.String())
	}

	out.Reset()
	cand := filepath.Join(dir, "cand.json")
	code := run([]string{"compare", "--expected", exp, "--candidate", cand, "6.1-1500=" + same, "6.12-1500=" + moved}, &out, &errb)
	if code != 1 {
		t.Fatalf("moved verdict: want exit 1, have %d\n%s", code, out.String())
	}
	for _, w := range []string{"C9-95 6.12-1500: expected pass, observed fail — ACK PSN 9 is ahead", "to do before adopting: C9-95: fails in 6.12-1500 without evidence",
		"to do before adopting: differences: C9-95 without a why"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("want %q in:\n%s", w, out.String())
		}
	}
	c, err := readExpected(cand)
	if err != nil {
		t.Fatal(err)
	}
	if c.Clauses[0].Verdicts["6.12-1500"] != reports.Fail || c.Clauses[0].Verdicts["6.1-4500"] != reports.Pass {
		t.Errorf("candidate verdicts: %v", c.Clauses[0].Verdicts)
	}
	if len(c.Clauses[1].Evidence) != 1 {
		t.Errorf("the unchanged fail lost its evidence: %+v", c.Clauses[1])
	}
	out.Reset()
	if code := run([]string{"diff", exp, cand}, &out, &errb); code != 1 || !strings.Contains(out.String(), "C9-95 6.12-1500: pass -> fail") {
		t.Errorf("diff: exit %d, %q", code, out.String())
	}
}

func TestFlapsAreReported(t *testing.T) {
	dir := t.TempDir()
	exp := baseline(t, dir)
	a := writeResult(t, dir, "a.json", map[string]reports.Verdict{"C9-95": reports.Pass, "C9-150.2.1": reports.Fail})
	b := writeResult(t, dir, "b.json", map[string]reports.Verdict{"C9-95": reports.NotExercised, "C9-150.2.1": reports.Fail})
	var out, errb bytes.Buffer
	if code := run([]string{"compare", "--expected", exp, "6.1-1500=" + a, "6.1-1500=" + b}, &out, &errb); code != 1 {
		t.Fatalf("want exit 1 for a flap, have %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FLAP") || !strings.Contains(out.String(), "C9-95 6.1-1500: pass in") {
		t.Errorf("want the flap named, have:\n%s", out.String())
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	exp := baseline(t, dir)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"kind":`), 0o644)
	for _, args := range [][]string{
		{"compare", "--expected", exp, "6.1-1500=" + bad},
		{"compare", "--expected", exp, "no-equals-sign"},
		{"compare", "--expected", bad, "6.1-1500=" + bad},
		{"check", filepath.Join(dir, "missing.json")},
		{"pcapng", bad, filepath.Join(dir, "out.pcapng")},
		{"frobnicate"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: want exit 2 and a message, have %d %q", args, code, errb.String())
		}
	}
}

func TestPcapng(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	f, _ := os.Create(in)
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65535, layers.LinkTypeEthernet)
	frames := [][]byte{bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1100)}
	t0 := time.Unix(1700000000, 123456000)
	for i, fr := range frames {
		w.WritePacket(gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr), Length: len(fr)}, fr)
	}
	f.Close()
	out := filepath.Join(dir, "out.pcapng")
	if err := toPcapng(in, out); err != nil {
		t.Fatal(err)
	}
	g, _ := os.Open(out)
	defer g.Close()
	r, err := pcapgo.NewNgReader(g, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		if !bytes.Equal(data, fr) || !ci.Timestamp.Equal(t0.Add(time.Duration(i)*time.Millisecond)) {
			t.Errorf("frame %d differs: %d bytes at %v", i+1, len(data), ci.Timestamp)
		}
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Errorf("link type %v", r.LinkType())
	}
	if _, _, err := r.ReadPacketData(); err != io.EOF {
		t.Errorf("after the frames: %v, want the end", err)
	}

	// tcpdump stopped in the middle of the second frame: the first is kept.
	b, _ := os.ReadFile(in)
	os.WriteFile(in, b[:len(b)-10], 0o644)
	if err := toPcapng(in, out); err != nil {
		t.Fatalf("a capture cut in its last frame: %v", err)
	}
	g2, _ := os.Open(out)
	defer g2.Close()
	r2, err := pcapgo.NewNgReader(g2, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := r2.ReadPacketData(); err != nil || !bytes.Equal(data, frames[0]) {
		t.Errorf("the whole frame before the cut: %d bytes, %v", len(data), err)
	}
	if _, _, err := r2.ReadPacketData(); err != io.EOF {
		t.Errorf("the cut frame: %v, want it left out", err)
	}
}

// An accepted alternative (a scenario racing the device) is neither a
// difference nor a flap; fail can never be one.
func TestAlsoAccepted(t *testing.T) {
	dir := t.TempDir()
	e := twoKernels()
	e.Clauses = []Clause{{ID: "C9-95", Verdicts: all(reports.NotExercised), Why: "races the device",
		Also: map[string][]reports.Verdict{"6.1-1500": {reports.Pass}}},
		{ID: "C9-150.2.1", Verdicts: all(reports.Fail), Evidence: []Evidence{goodEvidence}}}
	exp := filepath.Join(dir, "expected.json")
	if err := writeExpected(exp, e); err != nil {
		t.Fatal(err)
	}
	pass := writeResult(t, dir, "p.json", map[string]reports.Verdict{"C9-95": reports.Pass, "C9-150.2.1": reports.Fail})
	ne := writeResult(t, dir, "n.json", map[string]reports.Verdict{"C9-95": reports.NotExercised, "C9-150.2.1": reports.Fail})
	var out, errb bytes.Buffer
	if code := run([]string{"compare", "--expected", exp, "6.1-1500=" + pass, "6.1-1500=" + ne}, &out, &errb); code != 0 {
		t.Fatalf("accepted alternative: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"compare", "--expected", exp, "6.12-1500=" + pass}, &out, &errb); code != 1 {
		t.Fatalf("the alternative is accepted only where listed: exit %d\n%s", code, out.String())
	}
	e.Clauses[1].Also = map[string][]reports.Verdict{"6.1-1500": {reports.Pass}}
	e.Clauses[0].Also["6.12-1500"] = []reports.Verdict{reports.Fail}
	ps := strings.Join(e.problems(), "\n")
	if !strings.Contains(ps, "C9-95: fail accepted as an alternative in 6.12-1500") {
		t.Errorf("fail as an alternative not refused:\n%s", ps)
	}
	if !strings.Contains(ps, "C9-150.2.1: alternative verdicts in 6.1-1500 without a why") {
		t.Errorf("alternative without a why not refused:\n%s", ps)
	}
}

// labFrame is an Ethernet frame holding a RoCEv2 packet (its ICRC not
// right: only the sender matters here) from src.
func labFrame(src [4]byte) []byte {
	b := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0,
		0x45, 0, 0, 48, 0, 1, 0x40, 0, 64, 17, 0, 0, src[0], src[1], src[2], src[3], 192, 0, 2, 9,
		0xc0, 0, 0x12, 0xb7, 0, 28, 0, 0,
		17, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0}
	return b
}

// TestPassive: the capture audit may blame the device only for a clause
// the live suite fails there; findings on the harness's packets (its
// stimuli) and findings naming no frame are reported, not judged.
func TestPassive(t *testing.T) {
	dir := t.TempDir()
	exp := baseline(t, dir) // C9-95 passes everywhere, C9-150.2.1 fails
	f, _ := os.Create(filepath.Join(dir, "in.pcap"))
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65535, layers.LinkTypeEthernet)
	for _, src := range [][4]byte{{192, 0, 2, 2}, {192, 0, 2, 1}} { // frame 1 the device's, 2 the harness's
		fr := labFrame(src)
		w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1700000000, 0), CaptureLength: len(fr), Length: len(fr)}, fr)
	}
	f.Close()
	if err := toPcapng(filepath.Join(dir, "in.pcap"), filepath.Join(dir, "capture.pcapng")); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]reports.Verdict{"C9-95": reports.Fail, "C9-150.2.1": reports.Fail}
	for _, tc := range []struct {
		name     string
		findings []reports.Finding
		code     int
		says     string
	}{
		{"device, a clause it fails", []reports.Finding{{ID: "C9-150.2.1", Frame: 1, Message: "m"}}, 0, "suite fails: C9-150.2.1 1; on the harness's own packets (its stimuli): none"},
		{"harness stimulus", []reports.Finding{{ID: "C9-95", Frame: 2, Message: "m"}}, 0, "(its stimuli): C9-95 1"},
		{"device, a clause it passes", []reports.Finding{{ID: "C9-150.2.1", Frame: 1}, {ID: "C9-95", Frame: 1, Message: "ACK goes back"}}, 1, "C9-95 at frame 1, which the live suite gives pass: ACK goes back"},
		{"no frame", []reports.Finding{{ID: "C9-95", Frame: 0, Message: "at the end"}}, 0, "naming no frame of the capture (not judged): C9-95 (frame 0): at the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeResult(t, dir, "audit.json", verdicts, tc.findings...)
			var out, errb bytes.Buffer
			code := run([]string{"passive", "--expected", exp, "--device", "192.0.2.2", "6.1-1500=" + dir}, &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.says) {
				t.Errorf("exit %d (want %d), said:\n%s%s\nwant it to say %q", code, tc.code, out.String(), errb.String(), tc.says)
			}
		})
	}
	if code := run([]string{"passive", "--expected", exp, "6.1-1500=" + dir}, io.Discard, io.Discard); code != 2 {
		t.Errorf("no --device: exit %d", code)
	}
}

// TestScriptVerdicts: the scripts' results next to a run's result.json are
// compared per script and clause (a reproducer that stops failing is a
// difference, with the script's reason), a failed setup line or a passive
// monitor's finding fails its clause in that script, the candidate keeps
// them under "scripts", and check wants a why for every script verdict.
func TestScriptVerdicts(t *testing.T) {
	dir := t.TempDir()
	e := twoKernels()
	e.Clauses = []Clause{{ID: "C9-95", Verdicts: all(reports.Pass)},
		{ID: "C9-150.2.1", Verdicts: all(reports.Fail), Evidence: []Evidence{goodEvidence}}}
	const repro = "ci/rxe/repro/x.rcs"
	e.Scripts = []Clause{{ID: repro + " C9-107", Verdicts: all(reports.Fail), Why: "rxe replays from Middle"},
		{ID: repro + " C9-97", Verdicts: all(reports.Fail), Why: "no AETH"}}
	exp := filepath.Join(dir, "expected.json")
	if err := writeExpected(exp, e); err != nil {
		t.Fatal(err)
	}
	run1 := func(name, scripts string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(d, scriptsDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, scriptsDir, "x.json"), []byte(scripts), 0o644); err != nil {
			t.Fatal(err)
		}
		return writeResult(t, d, "result.json", map[string]reports.Verdict{"C9-95": reports.Pass, "C9-150.2.1": reports.Fail})
	}
	failing := run1("failing", `[{"file":"`+repro+`","verdict":"fail","clauses":[{"id":"C9-107","verdict":"fail"}],
		"failure":{"id":"C9-107","message":"Middle first"},"monitor_findings":[{"id":"C9-97","message":"no AETH"}]}]`)
	passing := run1("passing", `[{"file":"`+repro+`","verdict":"pass","clauses":[{"id":"C9-107","verdict":"pass"}],"monitor_findings":[]}]`)
	var out, errb bytes.Buffer
	if code := run([]string{"compare", "--expected", exp, "6.1-1500=" + failing}, &out, &errb); code != 0 {
		t.Fatalf("the reproducer fails as expected: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	cand := filepath.Join(dir, "cand.json")
	if code := run([]string{"compare", "--expected", exp, "--candidate", cand, "6.1-1500=" + passing}, &out, &errb); code != 1 {
		t.Fatalf("the reproducer passes: want exit 1, have %d\n%s", code, out.String())
	}
	for _, w := range []string{repro + " C9-107 6.1-1500: expected fail, observed pass", repro + " C9-97 6.1-1500: expected fail, observed pass"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("want %q in:\n%s", w, out.String())
		}
	}
	c, err := readExpected(cand)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Clauses) != 2 || len(c.Scripts) != 1 || c.Scripts[0].ID != repro+" C9-107" || c.Scripts[0].Verdicts["6.1-1500"] != reports.Pass {
		t.Errorf("candidate: clauses %+v, scripts %+v", c.Clauses, c.Scripts)
	}
	e.Scripts[0].Why = ""
	if ps := e.problems(); !containsPrefix(ps, repro+" C9-107: fail in 6.1-1500 without a why") {
		t.Errorf("a script verdict without a why: problems %v", ps)
	}
	out.Reset()
	gone := filepath.Join(dir, "gone")
	if err := os.MkdirAll(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	noScripts := writeResult(t, gone, "result.json", map[string]reports.Verdict{"C9-95": reports.Pass, "C9-150.2.1": reports.Fail})
	if code := run([]string{"compare", "--expected", exp, "6.1-1500=" + noScripts}, &out, &errb); code != 1 ||
		!strings.Contains(out.String(), repro+" C9-97 6.1-1500: expected fail, the run has no verdict") {
		t.Errorf("a run without the scripts' results: exit %d\n%s", code, out.String())
	}
	bad := run1("bad", `[{"file":"`+repro+`","clauses":[{"id":"C9-107","verdict":"maybe"}]}]`)
	if code := run([]string{"compare", "--expected", exp, "6.1-1500=" + bad}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown verdict "maybe"`) {
		t.Errorf("a bad script result: exit %d, %q", code, errb.String())
	}
}

func containsPrefix(ss []string, p string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
