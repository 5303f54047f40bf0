package reports

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestCertificate: every rendering carries the run's certificate (suite,
// date, what the DUT declared, settings, each capture's SHA-256) and,
// for every clause result but a pass, its evidence in one line: a fail's
// first finding (the earliest frame), any other verdict's reason.
func TestCertificate(t *testing.T) {
	r := sampleAudit()
	c := r.Certificate()
	if c.Suite != "github.com/rcconform/rcconform (devel), commit 0123456789abcdef0123456789abcdef01234567" || c.Date != "2026-03-14T15:09:26Z" {
		t.Errorf("suite %q, date %q", c.Suite, c.Date)
	}
	wantEvidence := map[string]string{
		"C9-95 " + captureA:  "frame 18: ACK for PSN 1203 acknowledges a request that was never sent; expected ACK with PSN 1202 (the last request received) or no ACK yet: a later coalesced ACK covering PSN 1202; seen ACK with PSN 1203, MSN 58",
		"o9-66 " + captureA:  "no RDMA READ request in this capture",
		"9.7.8 " + captureA:  "the clause's text has not been checked against the specification",
		"C9-116 " + captureB: "frame 124: after a PSN sequence error NAK for PSN 501, the requester resent from PSN 502; expected resend beginning at PSN 501; seen resend beginning at PSN 502",
		"o9-66 " + captureB:  "the connection began before the capture; outstanding READs unknown",
		"9.7.8 " + captureB:  "needs the requester's completion queue, which a capture cannot show",
	}
	if len(c.NotPassed) != len(wantEvidence) {
		t.Errorf("%d clause results not passed, want %d: %+v", len(c.NotPassed), len(wantEvidence), c.NotPassed)
	}
	for _, np := range c.NotPassed {
		if want := wantEvidence[np.ID+" "+np.Capture]; np.Evidence != want {
			t.Errorf("%s on %s: evidence %q, want %q", np.ID, np.Capture, np.Evidence, want)
		}
	}
	// The first finding is the earliest frame's, however the run ordered them.
	r2 := sampleAudit()
	early := ackBeyondReceived()
	early.Frame, early.Message, early.Expected, early.Seen = 3, "an earlier one", nil, ""
	r2.Findings = append(r2.Findings, early)
	r2.Clauses[0].Violations = 2
	if ev := r2.Evidence()[0]; ev != "frame 3: an earlier one (the first of 2 violations)" {
		t.Errorf("evidence %q, want the earliest frame's finding", ev)
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Run      *Run
		Captures []struct{ SHA256 string }
		Clauses  []struct{ ID, Verdict, Evidence string }
	}
	if err := json.Unmarshal(js.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Run == nil || raw.Run.Suite.Commit == "" || raw.Captures[0].SHA256 == "" {
		t.Errorf("the JSON lacks the certificate: %+v", raw)
	}
	for _, cl := range raw.Clauses {
		if (cl.Verdict == string(Pass)) != (cl.Evidence == "") {
			t.Errorf("JSON: %s %s with evidence %q", cl.ID, cl.Verdict, cl.Evidence)
		}
	}

	var md, page, ju bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&ju, r, "rcconform"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		md.String(): {"### Certificate", "commit 0123456789abcdef", "**Date:** 2026-03-14T15:09:26Z", "SHA-256 9f86d08", "mtu: `1024`",
			"- **Not passed:** 6 clause results", "  - C9-95 **fail** (" + captureA + "): frame 18: ACK for PSN 1203"},
		page.String(): {`<section class="summary" id="summary">`, "commit 0123456789abcdef", "2026-03-14T15:09:26Z", "SHA-256 9f86d08",
			`<td class="evidence">frame 124: after a PSN sequence error NAK`, "break-after: page"},
		ju.String(): {`<property name="suite_commit" value="0123456789abcdef0123456789abcdef01234567">`, `<property name="date" value="2026-03-14T15:09:26Z">`,
			`<property name="setting.mtu" value="1024">`, `<property name="capture_sha256" value="9f86d08`, `<property name="evidence" value="no RDMA READ request in this capture">`},
	} {
		for _, w := range want {
			if !strings.Contains(name, w) {
				t.Errorf("a rendering lacks %q:\n%s", w, name[:min(len(name), 3000)])
			}
		}
	}
	if n := strings.Count(ju.String(), `name="evidence"`); n != 6 {
		t.Errorf("JUnit: %d evidence properties, want one per clause result not passed (6)", n)
	}

	// A result from before certificates says so.
	old := sampleAudit()
	old.Run, old.Captures[0].SHA256 = nil, ""
	if c := old.Certificate(); c.Suite != notRecorded || c.Date != notRecorded || !strings.Contains(c.Device[1].Value, "SHA-256 not recorded") {
		t.Errorf("a result without a certificate: %+v", c)
	}
}

// TestCurrentSuite: the build's commit is the checkout's (a test binary
// carries no version control stamp: git tells), or "unknown" without git.
func TestCurrentSuite(t *testing.T) {
	s := CurrentSuite()
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if s.Commit != "unknown" {
			t.Errorf("no git checkout, but commit %q", s.Commit)
		}
		return
	}
	if want := strings.TrimSpace(string(out)); s.Commit != want || s.Module != "github.com/rcconform/rcconform" {
		t.Errorf("suite %+v, want module github.com/rcconform/rcconform at commit %s", s, want)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600")
	if d := NewRun(nil, nil).Date; d != "2026-01-01T00:00:00Z" {
		t.Errorf("date %q under SOURCE_DATE_EPOCH", d)
	}
}
