package reports

import (
	"bytes"
	"strings"
	"testing"
)

func TestConnectionsJSON(t *testing.T) {
	qpn, psn, mtu, no := uint32(0x11), uint32(100), 1024, false
	r := Result{Kind: KindAudit, Connections: []Connection{{
		Capture:   "a.pcap",
		Requester: Endpoint{Addr: "10.0.0.2", QPN: &qpn},
		Responder: Endpoint{Addr: "LID 12"},
		FirstPSN:  FirstPSN{Requester: &psn},
		Settings:  ConnSettings{MTU: &mtu, SRQ: &no},
		Source:    map[string]string{"mtu": SourceCM, "srq": SourceFlag},
		Complete:  true, Handshake: "REQ REP RTU",
	}}}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"qpn": null`, `"responder": null`, `"ack_timeout": null`, `"responder_resources": null`,
		`"mtu": 1024`, `"srq": false`, `"srq": "flag"`, `"complete": true`, `"handshake": "REQ REP RTU"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, buf.String())
		}
	}
	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	c := back.Connections[0]
	if len(back.Connections) != 1 || *c.Requester.QPN != 0x11 || c.Responder.QPN != nil || *c.Settings.MTU != 1024 ||
		*c.Settings.SRQ || c.Settings.RetryCnt != nil || c.Source["srq"] != SourceFlag || !c.Complete {
		t.Errorf("read back %+v", back.Connections)
	}
	// A suite result has none, and says nothing about them.
	buf.Reset()
	if err := (&Result{Kind: KindSuite}).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "connections") {
		t.Errorf("suite JSON mentions connections:\n%s", buf.String())
	}
}
