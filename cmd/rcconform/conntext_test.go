package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// softRoCE is a public soft-RoCE capture with its CM handshake: its REQ
// and REP announce path MTU 1024 and no SRQ, and its ACKs carry credit
// code 0x1F.
var softRoCE = filepath.Join("..", "..", "..", "shared", "captures", "public", "magnate3-soft-roce-rdma-dump.pcap")

func needCapture(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("capture absent: %v", err)
	}
}

func TestAuditConnectionsJSON(t *testing.T) {
	needCapture(t, softRoCE)
	code, out, stderr := invoke(t, "audit", "--format", "json", softRoCE)
	if code != exitViolation {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	var raw struct {
		Connections []map[string]json.RawMessage   `json:"connections"`
		Clauses     []struct{ ID, Verdict string } `json:"clauses"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Connections) != 2 {
		t.Fatalf("connections %s", out)
	}
	// The contract's keys, every one present (unknown values null).
	for _, c := range raw.Connections {
		for _, k := range []string{"capture", "requester", "responder", "first_psn", "settings", "source", "complete"} {
			if _, ok := c[k]; !ok {
				t.Errorf("connection lacks %q: %v", k, c)
			}
		}
		var s map[string]json.RawMessage
		if err := json.Unmarshal(c["settings"], &s); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"mtu", "srq", "ack_timeout", "retry_cnt", "rnr_retry", "responder_resources"} {
			if _, ok := s[k]; !ok {
				t.Errorf("settings lack %q: %s", k, c["settings"])
			}
		}
	}
	var first struct {
		Requester struct {
			Addr string
			QPN  *uint32
		}
		FirstPSN struct{ Requester, Responder *uint32 } `json:"first_psn"`
		Settings struct {
			MTU        *int
			SRQ        *bool
			AckTimeout *int `json:"ack_timeout"`
		}
		Source   map[string]string
		Complete bool
	}
	b, _ := json.Marshal(raw.Connections[0])
	if err := json.Unmarshal(b, &first); err != nil {
		t.Fatal(err)
	}
	if first.Requester.Addr != "10.11.11.82" || *first.Requester.QPN != 0x11 || *first.FirstPSN.Requester != 8138740 ||
		*first.Settings.MTU != 1024 || *first.Settings.SRQ || first.Settings.AckTimeout != nil ||
		first.Source["mtu"] != "cm" || first.Source["srq"] != "cm" || !first.Complete {
		t.Errorf("first connection %+v", first)
	}
	for _, c := range raw.Clauses {
		if c.ID == "C9-150.2.1" && c.Verdict != "fail" {
			t.Errorf("C9-150.2.1 %s without --srq, want fail (no SRQ announced, credit code 0x1F sent)", c.Verdict)
		}
	}
}

func TestAuditConnectionsText(t *testing.T) {
	needCapture(t, softRoCE)
	_, out, _ := invoke(t, "audit", "--srq", "all", softRoCE)
	for _, want := range []string{
		"== Connections ==",
		"REQUESTER                 RESPONDER                 FIRST PSN        MTU        SRQ",
		"10.11.11.82 QP 0x000011   10.11.11.251 QP 0x000011  8138740/1220282  1024 (cm)  yes (flag)",
		"REQ REP RTU DREQ DREP",
		"notes on " + softRoCE + ":",
		"--srq all contradicts the CM handshake of 10.11.11.82 QP 0x000011 → 10.11.11.251 QP 0x000011 (REP, frame 2: the responder's SRQ says none); the flag is used",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// Without a handshake, no CM column values and no notes.
	_, out, _ = invoke(t, "audit", clean(t))
	if !strings.Contains(out, "== Connections ==") || strings.Contains(out, "notes on") || !strings.Contains(out, "10.0.0.2 QP 0x000022") {
		t.Errorf("text output:\n%s", out)
	}
}
