package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/catalog"
	"github.com/rcconform/rcconform/wire"
)

// invoke runs the command and returns its exit status and outputs.
func invoke(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// ---- synthetic captures ----

var (
	reqAddr = netip.MustParseAddr("10.0.0.2")
	rspAddr = netip.MustParseAddr("10.0.0.1")
)

func send(psn wire.PSN) wire.Packet {
	return wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PKey: 0xFFFF, DestQP: 0x11, PSN: psn, AckReq: true}, Payload: []byte("hello, world")}
}

func ack(psn wire.PSN, msn uint32) wire.Packet {
	return wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PKey: 0xFFFF, DestQP: 0x22, PSN: psn},
		AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: msn}}
}

// encode encodes p as the requester's host (10.0.0.2) sends it, or the
// responder's (10.0.0.1) when p is a response.
func encode(p wire.Packet, ipid uint16) []byte { return encodeFrom(p, ipid, p.Opcode.IsResponse()) }

// encodeFrom encodes p as the responder's host sends it (fromResponder)
// or the requester's.
func encodeFrom(p wire.Packet, ipid uint16, fromResponder bool) []byte {
	f := wire.Frame{Encap: wire.RoCEv2IPv4, TTL: 64, IPID: ipid, SrcPort: 49152, DstPort: wire.UDPPort, Packet: p,
		Src: reqAddr, Dst: rspAddr, SrcMAC: [6]byte{2, 0, 0, 0, 0, 2}, DstMAC: [6]byte{2, 0, 0, 0, 0, 1}}
	if fromResponder {
		f.Src, f.Dst, f.SrcMAC, f.DstMAC = f.Dst, f.Src, f.DstMAC, f.SrcMAC
	}
	return f.AppendEthernet(nil)
}

// pcapOf writes packets as a pcap, one microsecond apart.
func pcapOf(t *testing.T, pkts ...wire.Packet) []byte {
	t.Helper()
	frames := make([][]byte, len(pkts))
	for i, p := range pkts {
		frames[i] = encode(p, uint16(i+1))
	}
	return pcapOfFrames(t, frames...)
}

// pcapOfFrames writes Ethernet frames as a pcap, one microsecond apart.
func pcapOfFrames(t *testing.T, frames ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, data := range frames {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(data), Length: len(data)}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func file(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// clean is a SEND/ACK exchange that breaks nothing.
func clean(t *testing.T) string {
	return file(t, "clean.pcap", pcapOf(t, send(10), ack(10, 1), send(11), ack(11, 2), send(12), ack(12, 3)))
}

// backwards has an ACK whose PSN goes back behind the previous one
// (frame 4): C9-95 fails.
func backwards(t *testing.T) string {
	return file(t, "backwards.pcap", pcapOf(t, send(10), send(11), ack(11, 2), ack(10, 2)))
}

// ---- tests ----

func TestAuditExitStatus(t *testing.T) {
	cleanPath, badPath := clean(t), backwards(t)
	damaged := pcapOf(t, send(10), ack(10, 1), send(11), ack(11, 2))
	tests := []struct {
		name string
		args []string
		want int
		err  string // in stderr
	}{
		{"clean", []string{"audit", cleanPath}, exitOK, ""},
		{"violation", []string{"audit", badPath}, exitViolation, ""},
		{"violation and clean", []string{"audit", cleanPath, badPath}, exitViolation, ""},
		{"missing file", []string{"audit", "/nonexistent/none.pcap"}, exitUsage, "/nonexistent/none.pcap"},
		{"wrong magic", []string{"audit", file(t, "x.pcap", []byte("GIF89a, not a capture"))}, exitUsage, "bad magic"},
		{"truncated", []string{"audit", file(t, "cut.pcap", damaged[:len(damaged)-7])}, exitUsage, "frame 4"},
		{"unknown rule", []string{"audit", "--rules", "C9-95,C9-9999", cleanPath}, exitUsage, `unknown rule ID "C9-9999"`},
		{"bad format", []string{"audit", "--format", "xml", cleanPath}, exitUsage, `unknown --format "xml"`},
		{"bad srq", []string{"audit", "--srq", "some", cleanPath}, exitUsage, "--srq"},
		{"bad mtu", []string{"audit", "--mtu", "1000", cleanPath}, exitUsage, "--mtu 1000"},
		{"bad retry", []string{"audit", "--retry-cnt", "9", cleanPath}, exitUsage, "--retry-cnt 9"},
		{"bad icrc mode", []string{"audit", "--icrc", "off", cleanPath}, exitUsage, "--icrc: ICRC mode \"off\""},
		{"unknown flag", []string{"audit", "--bogus", cleanPath}, exitUsage, "flag provided but not defined"},
		{"no capture", []string{"audit"}, exitUsage, "no capture given"},
		{"flags after captures", []string{"audit", badPath, "--rules", "C9-116"}, exitOK, ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"no command", nil, exitUsage, "usage:"},
		{"help", []string{"audit", "--help"}, exitOK, "usage: rcconform audit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := invoke(t, tc.args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
			if !strings.Contains(stderr, tc.err) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.err)
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("panic: %s", stderr)
			}
		})
	}
}

// contract is the JSON shape `audit --format json` promises its users:
// these keys, which tools reading the JSON rely on, are its written form.
type contract struct {
	Kind     string `json:"kind"`
	Captures []struct {
		File       string   `json:"file"`
		Frames     *int     `json:"frames"`
		RoCEFrames *int     `json:"roce_frames"`
		Errors     []string `json:"errors"`
	} `json:"captures"`
	Clauses []struct {
		ID         string `json:"id"`
		Verdict    string `json:"verdict"`
		Checked    *int   `json:"checked"`
		Violations *int   `json:"violations"`
		Undecided  *int   `json:"undecided"`
		Reason     string `json:"reason"`
		Capture    string `json:"capture"`
	} `json:"clauses"`
	Findings []struct {
		ID      string  `json:"id"`
		Capture string  `json:"capture"`
		Frame   *int    `json:"frame"`
		QP      *uint32 `json:"qp"`
		PSN     *uint32 `json:"psn"`
		Message string  `json:"message"`
	} `json:"findings"`
}

func decodeContract(t *testing.T, s string) contract {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, s)
	}
	for _, k := range []string{"captures", "clauses", "findings"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	var c contract
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	if _, err := reports.ReadJSON(strings.NewReader(s)); err != nil {
		t.Errorf("reports.ReadJSON rejects the output: %v", err)
	}
	return c
}

func TestAuditJSON(t *testing.T) {
	cleanPath, badPath := clean(t), backwards(t)
	code, out, stderr := invoke(t, "audit", "--format", "json", cleanPath, badPath)
	if code != exitViolation {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr not empty: %q", stderr)
	}
	c := decodeContract(t, out)
	if c.Kind != "audit" || len(c.Captures) != 2 || c.Captures[0].File != cleanPath || *c.Captures[0].Frames != 6 || *c.Captures[1].RoCEFrames != 4 {
		t.Errorf("captures %+v", c.Captures)
	}
	ids := catalogIDs()
	if len(c.Clauses) != 2*len(ids) {
		t.Fatalf("%d clause results, want one per clause per capture (%d)", len(c.Clauses), 2*len(ids))
	}
	for i, cl := range c.Clauses {
		want, capture := ids[i%len(ids)], []string{cleanPath, badPath}[i/len(ids)]
		if cl.ID != want || cl.Capture != capture {
			t.Fatalf("clause %d is %s/%s, want %s/%s (catalogue order, capture by capture)", i, cl.ID, cl.Capture, want, capture)
		}
		if cl.Checked == nil || cl.Violations == nil || !reports.Verdict(cl.Verdict).Valid() {
			t.Errorf("clause %+v", cl)
		}
		e, _ := catalog.Lookup(cl.ID)
		switch {
		case e.Status == catalog.TextUnavailable && cl.Verdict != "text-unavailable":
			t.Errorf("%s: verdict %s, want text-unavailable", cl.ID, cl.Verdict)
		case cl.Verdict == "unsupported" && cl.Reason != reasonNoMonitor:
			t.Errorf("%s: unsupported with reason %q", cl.ID, cl.Reason)
		}
		if cl.ID == "C9-95" {
			want := map[string]string{cleanPath: "pass", badPath: "fail"}[cl.Capture]
			if cl.Verdict != want {
				t.Errorf("C9-95 on %s: %s, want %s", cl.Capture, cl.Verdict, want)
			}
		}
	}
	if len(c.Findings) != 1 {
		t.Fatalf("findings %+v", c.Findings)
	}
	f := c.Findings[0]
	if f.ID != "C9-95" || f.Capture != badPath || f.Frame == nil || *f.Frame != 4 || *f.QP != 0x11 || *f.PSN != 10 || !strings.Contains(f.Message, "goes back") {
		t.Errorf("finding %+v", f)
	}
}

func TestAuditText(t *testing.T) {
	code, out, _ := invoke(t, "audit", backwards(t))
	if code != exitViolation {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"rcconform audit: FAIL",
		"== Violations ==",
		"C9-95  §9.7.5.1.1",
		"frame 4, QP 0x000011, PSN 10",
		"goes back behind the earlier ACK PSN 11",
		"acceptable:",
		"seen: ACK PSN 10",
		"ladder:",
		"<==",
		"== Verdicts: ",
		"C9-95          fail",
		"UNDECIDED",
		"1 violation in ",
		"[1 ×] ACK PSN 10 goes back behind the earlier ACK PSN 11 (frame 4)",
		"#1 of 1: ",
		"== Captures ==",
		"FRAMES  ROCE  SKIPPED  BAD ICRC  TRUNCATED  ERRORS  CAPTURE",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// TestAuditUndecided: every clause carries its undecided instances; ACKs
// before any request leave C9-95 undecided, counted and shown.
func TestAuditUndecided(t *testing.T) {
	path := file(t, "acks.pcap", pcapOf(t, ack(10, 1), ack(11, 2), ack(12, 3)))
	code, out, _ := invoke(t, "audit", "--format", "json", "--rules", "C9-95,C9-148", path)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	c := decodeContract(t, out)
	for _, cl := range c.Clauses {
		if cl.Undecided == nil {
			t.Fatalf("clause %s lacks \"undecided\"", cl.ID)
		}
		if cl.ID == "C9-95" && (cl.Verdict != "indeterminate" || *cl.Undecided < 1) {
			t.Errorf("C9-95: verdict %s, %d undecided", cl.Verdict, *cl.Undecided)
		}
	}
	_, text, _ := invoke(t, "audit", "--rules", "C9-95", path)
	if !regexp.MustCompile(`C9-95\s+indeterminate, [1-9]\d* undecided\s+0\s+0\s+[1-9]`).MatchString(text) {
		t.Errorf("text output does not show the undecided instances:\n%s", text)
	}
}

func TestAuditTruncatedStillReports(t *testing.T) {
	b := pcapOf(t, send(10), send(11), ack(11, 2), ack(10, 2), send(12))
	path := file(t, "cut.pcap", b[:len(b)-5])
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := invoke(t, "audit", "--format", "json", "--out", out, path)
	if code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if stdout != "" {
		t.Errorf("stdout with --out: %q", stdout)
	}
	if !strings.Contains(stderr, path) || !strings.Contains(stderr, "frame 5") {
		t.Errorf("stderr %q does not name the file and frame", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	c := decodeContract(t, string(b))
	if len(c.Captures) != 1 || *c.Captures[0].Frames != 4 || len(c.Captures[0].Errors) != 1 || !strings.Contains(c.Captures[0].Errors[0], "capture: truncated") {
		t.Errorf("captures %+v", c.Captures)
	}
	if len(c.Findings) != 1 || c.Findings[0].ID != "C9-95" {
		t.Errorf("the violation before the damage was not reported: %+v", c.Findings)
	}
	// JUnit too.
	code, stdout, _ = invoke(t, "audit", "--format", "junit", path)
	if code != exitUsage || !strings.Contains(stdout, "<testsuites") || !strings.Contains(stdout, "capture: truncated") {
		t.Errorf("junit: exit %d\n%s", code, stdout)
	}
}

func TestAuditJUnit(t *testing.T) {
	code, out, _ := invoke(t, "audit", "--format", "junit", "--rules", "C9-95,C9-99", backwards(t))
	if code != exitViolation {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Classname string    `xml:"classname,attr"`
				Failure   *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out)
	}
	if doc.Tests != 2 || doc.Failures != 1 || len(doc.Suites) != 1 || doc.Suites[0].Cases[0].Classname != "C9-95" || doc.Suites[0].Cases[0].Failure == nil {
		t.Errorf("JUnit %+v", doc)
	}
}

func TestAuditRulesFilter(t *testing.T) {
	code, out, _ := invoke(t, "audit", "--format", "json", "--rules", " C9-116 , C9-99", backwards(t))
	if code != exitOK {
		t.Fatalf("exit %d: only C9-116 and C9-99 are audited", code)
	}
	c := decodeContract(t, out)
	if len(c.Clauses) != 2 || c.Clauses[0].ID != "C9-99" || c.Clauses[1].ID != "C9-116" || len(c.Findings) != 0 {
		t.Errorf("clauses %+v findings %+v", c.Clauses, c.Findings)
	}
}

func TestMaxFindings(t *testing.T) {
	pkts := []wire.Packet{send(10), send(11), send(12), ack(12, 3), ack(11, 3), ack(10, 3)}
	path := file(t, "two.pcap", pcapOf(t, pkts...))
	code, out, _ := invoke(t, "audit", "--max-findings", "1", path)
	if code != exitViolation || !strings.Contains(out, "… and 1 more violations of C9-95") {
		t.Errorf("exit %d\n%s", code, out)
	}
	code, out, _ = invoke(t, "audit", "--format", "json", "--max-findings", "0", path)
	if c := decodeContract(t, out); code != exitViolation || len(c.Findings) != 2 {
		t.Errorf("exit %d, %d findings", code, len(c.Findings))
	}
	if code, _, _ := invoke(t, "audit", "--max-findings", "-1", path); code != exitUsage {
		t.Errorf("negative --max-findings: exit %d", code)
	}
}

func catalogIDs() []string {
	var ids []string
	for _, e := range catalog.All() {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestRules(t *testing.T) {
	code, out, _ := invoke(t, "rules", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var list []map[string]string
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		for _, k := range []string{"id", "section", "side", "level", "status", "summary"} {
			if _, ok := r[k]; !ok {
				t.Errorf("rule %v lacks %q", r, k)
			}
		}
		ids = append(ids, r["id"])
	}
	if !slices.Equal(ids, catalogIDs()) {
		t.Errorf("ids %v, want the catalogue's %v", ids, catalogIDs())
	}
	code, out, _ = invoke(t, "rules")
	if code != exitOK || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "C9-150.2.1") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	if code, _, _ := invoke(t, "rules", "--format", "yaml"); code != exitUsage {
		t.Errorf("bad format: exit %d", code)
	}
}

func TestDefects(t *testing.T) {
	code, out, _ := invoke(t, "defects", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var list []struct {
		Name    string   `json:"name"`
		Clauses []string `json:"clauses"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	want := reference.Defects()
	if len(list) != len(want) || len(list) == 0 {
		t.Fatalf("%d defects, want %d", len(list), len(want))
	}
	for i, d := range list {
		if d.Name != want[i].Name || !slices.Equal(d.Clauses, want[i].Clauses) && len(want[i].Clauses) > 0 {
			t.Errorf("defect %d = %+v, want %+v", i, d, want[i])
		}
		if d.Clauses == nil {
			t.Errorf("defect %s: clauses is null", d.Name)
		}
	}
	code, out, _ = invoke(t, "defects")
	if code != exitOK || !strings.Contains(out, want[0].Name) {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	result := filepath.Join(dir, "r.json")
	if code, _, _ := invoke(t, "audit", "--format", "json", "--out", result, backwards(t)); code != exitViolation {
		t.Fatalf("audit exit %d", code)
	}
	html, md, junit := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.md"), filepath.Join(dir, "r.xml")
	code, _, stderr := invoke(t, "report", "--in", result, "--html", html, "--markdown", md, "--junit", junit)
	if code != exitOK {
		t.Fatalf("report exit %d: %s", code, stderr)
	}
	for p, want := range map[string]string{html: "<html", md: "C9-95", junit: `classname="C9-95"`} {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, lacks %q", p, err, want)
		}
	}
	code, out, _ := invoke(t, "report", "--in", result)
	if code != exitOK || !strings.Contains(out, "rcconform audit: FAIL") {
		t.Errorf("text report: exit %d\n%s", code, out)
	}
	if code, _, _ := invoke(t, "report"); code != exitUsage {
		t.Errorf("no --in: exit %d", code)
	}
	if code, _, stderr := invoke(t, "report", "--in", file(t, "bad.json", []byte(`{"kind":"nonsense"}`))); code != exitUsage || !strings.Contains(stderr, "unknown kind") {
		t.Errorf("bad result: exit %d %s", code, stderr)
	}
}

func TestGenBenchCapture(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.pcap")
	code, stdout, stderr := invoke(t, "gen-bench-capture", "--frames", "3000", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "3000 frames") {
		t.Errorf("stdout %q", stdout)
	}
	code, js, _ := invoke(t, "audit", "--format", "json", "--mtu", "1024", out)
	c := decodeContract(t, js)
	if code != exitOK || *c.Captures[0].RoCEFrames != 3000 || len(c.Findings) != 0 {
		t.Errorf("audit of the bench capture: exit %d, %+v, findings %+v", code, c.Captures, c.Findings)
	}
}

// TestAuditCaptureDrops: a capture whose file reports packets it dropped
// (an interface statistics block, as gopacket writes it) is audited with
// a note saying so; claimed complete, it is refused as bad input.
func TestAuditCaptureDrops(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range []wire.Packet{send(10), ack(10, 1), send(11), ack(11, 2)} {
		data := encode(p, uint16(i+1))
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(data), Length: len(data)}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteInterfaceStats(0, pcapgo.NgInterfaceStatistics{PacketsReceived: pcapgo.NgNoValue64, PacketsDropped: 4}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := file(t, "drops.pcapng", buf.Bytes())
	const reported = "the capture file reports packets it dropped (interface 0's statistics: 4 dropped by the interface (isb_ifdrop), unknown by the operating system (isb_osdrop))"
	code, out, stderr := invoke(t, "audit", path)
	if code != exitOK || !strings.Contains(out, "notes on "+path+":\n  "+reported) {
		t.Errorf("exit %d, want %d, and the text output to note %q:\n%s%s", code, exitOK, reported, out, stderr)
	}
	code, out, _ = invoke(t, "audit", "--format", "json", path)
	if code != exitOK || !strings.Contains(out, reported) {
		t.Errorf("exit %d; JSON output lacks the note:\n%s", code, out)
	}
	code, _, stderr = invoke(t, "audit", "--complete", path)
	if code != exitUsage || !strings.Contains(stderr, "auditing "+path+": --complete says the capture holds every packet") ||
		!strings.Contains(stderr, "4 dropped by the interface (isb_ifdrop)") {
		t.Errorf("--complete: exit %d, want %d, and stderr to name the file and its drops:\n%s", code, exitUsage, stderr)
	}
}
