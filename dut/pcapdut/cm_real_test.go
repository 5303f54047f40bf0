package pcapdut_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
)

// handshakeCaptures are the public captures holding the connection
// manager's handshake, with the settings their REQ/REP announce for the
// first audited connection, and the clauses that without flags were
// indeterminate (the MTU or SRQ unknown) and are now decided.
var handshakeCaptures = []struct {
	file    string
	conns   int // audited connections taking the handshake's settings
	mtu     int
	decided map[string]reports.Verdict
}{
	{"magnate3-ib-rping-ib2.pcap", 2, 4096, map[string]reports.Verdict{"C9-150.2.1": reports.Pass, "C9-96": reports.Pass}},
	{"magnate3-ibdump-read2.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Pass}},
	{"magnate3-ibdump-send.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Pass}},
	{"magnate3-ibdump-write.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Pass}},
	{"magnate3-nvme-discover.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Pass, "C9-96": reports.Pass}},
	{"magnate3-nvme-discover2.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Pass, "C9-96": reports.Pass}},
	// Soft-RoCE announces no SRQ in its REQ and REP, then sends credit
	// code 0x1F ("no valid count") in every ACK.
	{"magnate3-soft-roce-rdma-dump.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Fail}},
	{"montybeatnik-rxe-read-write-ecn.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Fail}},
	{"montybeatnik-rxe-test.pcap", 2, 1024, map[string]reports.Verdict{"C9-150.2.1": reports.Fail}},
	{"srinivaskoritala-wireshark-sample-infiniband.pcap", 3, 2048, map[string]reports.Verdict{"o9-95.2.2": reports.Pass}},
}

// auditShared audits a shared capture (capturesDir/rel) with every
// monitor and no flags; it skips when the capture is absent, naming the
// tests that run the same paths on the project's own captures, and fails
// on an audit error.
func auditShared(t *testing.T, rel, own string) (reports.CaptureInfo, *harness.Auditor, *harness.Sink) {
	t.Helper()
	path := filepath.Join(capturesDir, rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("capture absent (%v); %s", err, own)
	}
	sink := harness.NewSink(path)
	a := harness.NewAuditor(harness.UnknownSettings(), sink)
	info, err := pcapdut.AuditFile(path, a, nil)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return info, a, sink
}

func TestPublicHandshakes(t *testing.T) {
	for _, c := range handshakeCaptures {
		t.Run(c.file, func(t *testing.T) {
			info, _, sink := auditShared(t, filepath.Join("public", c.file), "TestCMHandshake and TestCMFlags run the handshake, in every encapsulation, on built captures")
			if len(info.Notes) != 0 {
				t.Errorf("notes %q", info.Notes)
			}
			cm := 0
			for _, conn := range info.Connections {
				if !strings.HasPrefix(conn.Handshake, "REQ REP") || conn.Source["mtu"] != reports.SourceCM {
					continue
				}
				cm++
				if *conn.Settings.MTU != c.mtu || conn.Settings.SRQ == nil || conn.Source["srq"] != reports.SourceCM ||
					conn.Requester.QPN == nil || conn.Responder.QPN == nil || conn.FirstPSN.Requester == nil {
					t.Errorf("connection %+v", conn)
				}
			}
			if cm < c.conns {
				t.Errorf("%d connections with settings from the handshake, want %d: %+v", cm, c.conns, info.Connections)
			}
			for id, want := range c.decided {
				if got := sink.Tally(id).Verdict(); got != want {
					t.Errorf("%s: %s without flags, want %s (%+v)", id, got, want, sink.Tally(id))
				}
			}
		})
	}
}

// TestPublicNativeIB reads the two native InfiniBand captures: every frame
// is decoded (none skipped), every ICRC and VCRC is there and good, and
// the RC connections are audited.
func TestPublicNativeIB(t *testing.T) {
	for _, c := range []struct {
		file       string
		frames, rc int
	}{
		{"magnate3-ib-rping-ib2.pcap", 127, 120},
		{"srinivaskoritala-wireshark-sample-infiniband.pcap", 43, 19},
	} {
		t.Run(c.file, func(t *testing.T) {
			info, a, sink := auditShared(t, filepath.Join("public", c.file), "TestCMHandshake and TestNativeIBVCRC run native InfiniBand on built captures")
			if info.Frames != c.frames || info.RoCEFrames != c.frames || info.Skipped != 0 || info.BadICRC != 0 ||
				info.Truncated != 0 || len(info.Errors) != 0 || len(info.Notes) != 0 {
				t.Errorf("info %+v", info)
			}
			packets := 0
			for _, conn := range a.Conns() {
				packets += conn.Packets
			}
			if packets != c.rc {
				t.Errorf("%d RC packets audited, want %d", packets, c.rc)
			}
			checked := 0
			for _, tl := range sink.Tallies {
				checked += tl.Checked
			}
			if checked == 0 {
				t.Error("no monitor checked anything")
			}
			for _, conn := range info.Connections {
				if !strings.HasPrefix(conn.Requester.Addr, "LID ") || !strings.HasPrefix(conn.Responder.Addr, "LID ") {
					t.Errorf("connection not keyed by LID: %+v", conn)
				}
			}
		})
	}
}
