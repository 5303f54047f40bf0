package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmCaptures hold the connection manager's handshake, whose REQ and REP
// announce path MTU 1024 and no SRQ, and ACKs that carry credit code
// 0x1F: the project's own, and a public soft-RoCE capture when the shared
// captures are beside the repository. Each gives its first connection's
// requester and starting PSN, how notes name it, and the head and first
// row of the text output's connections table (up to the SRQ column) with
// --srq all.
var cmCaptures = []struct {
	path            string
	requester       string
	qpn, psn        uint32
	conn, head, row string
}{
	{filepath.Join(testdataDir, "cm-handshake.pcap"), "10.0.0.2", 0x22, 10,
		"10.0.0.2 QP 0x000022 → 10.0.0.1 QP 0x000011",
		"REQUESTER             RESPONDER             FIRST PSN  MTU        SRQ",
		"10.0.0.2 QP 0x000022  10.0.0.1 QP 0x000011  10/500     1024 (cm)  yes (flag)"},
	{filepath.Join("..", "..", "..", "shared", "captures", "public", "magnate3-soft-roce-rdma-dump.pcap"), "10.11.11.82", 0x11, 8138740,
		"10.11.11.82 QP 0x000011 → 10.11.11.251 QP 0x000011",
		"REQUESTER                 RESPONDER                 FIRST PSN        MTU        SRQ",
		"10.11.11.82 QP 0x000011   10.11.11.251 QP 0x000011  8138740/1220282  1024 (cm)  yes (flag)"},
}

// present reports whether the capture at path is there, saying so when
// it is not.
func present(t *testing.T, path string) bool {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Logf("capture absent: %v", err)
		return false
	}
	return true
}

func TestAuditConnectionsJSON(t *testing.T) {
	for _, c := range cmCaptures {
		if present(t, c.path) {
			t.Run(filepath.Base(c.path), func(t *testing.T) { auditConnectionsJSON(t, c.path, c.requester, c.qpn, c.psn) })
		}
	}
}

// auditConnectionsJSON checks the JSON connections of a capture holding a
// CM handshake whose first connection is requester's QP qpn, starting at
// PSN psn.
func auditConnectionsJSON(t *testing.T, path, requester string, qpn, psn uint32) {
	code, out, stderr := invoke(t, "audit", "--format", "json", path)
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
	if first.Requester.Addr != requester || *first.Requester.QPN != qpn || *first.FirstPSN.Requester != psn ||
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
	for _, c := range cmCaptures {
		if !present(t, c.path) {
			continue
		}
		_, out, _ := invoke(t, "audit", "--srq", "all", c.path)
		for _, want := range []string{
			"== Connections ==",
			c.head,
			c.row,
			"REQ REP RTU DREQ DREP",
			"notes on " + c.path + ":",
			"--srq all contradicts the CM handshake of " + c.conn + " (REP, frame 2: the responder's SRQ says none); the flag is used",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: text output lacks %q:\n%s", c.path, want, out)
			}
		}
	}
	// Without a handshake, no CM column values and no notes.
	_, out, _ := invoke(t, "audit", clean(t))
	if !strings.Contains(out, "== Connections ==") || strings.Contains(out, "notes on") || !strings.Contains(out, "10.0.0.2 QP 0x000022") {
		t.Errorf("text output:\n%s", out)
	}
}
