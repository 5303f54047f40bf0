package pcapdut_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/dut/pcapdut/synth"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	_ "github.com/rcconform/rcconform/rules" // every monitor
	"github.com/rcconform/rcconform/wire/capture"
)

// capturesDir is where the team's real captures sit when a checkout has
// them beside the repository (they are not part of it); the tests that
// read them skip when they are absent.
const capturesDir = "../../../shared/captures"

// realCaptures are the expected counts: frames and RoCE frames from the
// captures' READMEs (rxe/README.md; public/PROVENANCE.md, whose "IB/RoCE"
// count for the two ERF files is native InfiniBand, read as such).
//
// Every frame of five magnate3 files (the ones whose PROVENANCE notes say
// their Ethernet MACs are bogus) fails the ICRC check, except those cut by
// the snaplen: each file's wire and computed ICRCs differ by one constant,
// so the capture path changed a covered field the same way in every frame.
// Two of them hold RC requests and the responses to them: there the audit
// finds that the capture does not hold the wire's ICRCs (ICRCAuto) and
// judges the frames (unrecorded); the other three hold only DC, UC and UD
// packets, whose bad ICRCs stay counted.
var realCaptures = []struct {
	file               string
	frames, roce       int
	badICRC, truncated int
	unrecorded         bool
}{
	{"rxe/send-4k-mtu1024.pcap", 1546, 1500, 0, 0, false},
	{"rxe/write-8k-mtu1024.pcap", 2753, 2700, 0, 0, false},
	{"rxe/read-8k-mtu1024.pcap", 2749, 2700, 0, 0, false},
	{"rxe/atomic-cas.pcap", 2051, 2000, 0, 0, false},
	{"rxe/mix-ipv6-mtu1024.pcap", 1593, 1550, 0, 0, false},
	{"rxe/send-4k-4qp-loss1.pcap", 5140, 5089, 0, 0, false},
	{"rxe/errors.pcap", 40, 21, 0, 0, false},
	{"public/magnate3-dc-small.pcap", 19, 19, 19, 0, false},
	{"public/magnate3-dc-small2.pcap", 29, 29, 29, 0, false},
	{"public/magnate3-ib-rping-ib2.pcap", 127, 127, 0, 0, false}, // ERF
	{"public/magnate3-ibdump-read2.pcap", 16, 13, 0, 0, false},
	{"public/magnate3-ibdump-send.pcap", 9, 9, 0, 0, false},
	{"public/magnate3-ibdump-write.pcap", 17, 17, 0, 0, false},
	{"public/magnate3-mlx-ib_send_bw_over_roce.pcap", 45, 10, 0, 0, false},
	{"public/magnate3-mlx-rocev1.pcap", 2468, 2468, 0, 0, false},
	{"public/magnate3-mlx-rocev1_test.pcap", 624, 624, 0, 0, false},
	{"public/magnate3-mlx-rocev2-2_test.pcap", 641, 641, 0, 0, false},
	{"public/magnate3-mlx-rocev2_test.pcap", 708, 708, 0, 0, false},
	{"public/magnate3-nvme-discover.pcap", 65, 61, 0, 0, false},
	{"public/magnate3-nvme-discover2.pcap", 31, 31, 0, 0, false},
	{"public/magnate3-nvme-host-echo.pcap", 69, 69, 0, 0, false},
	{"public/magnate3-nvme-host_cat.pcap", 49, 49, 0, 0, false},
	{"public/magnate3-nvme-rdma-25echoTo27.pcap", 45, 45, 0, 0, false},
	{"public/magnate3-nvme-rdma-idle.pcap", 4, 4, 0, 0, false},
	{"public/magnate3-rc-small.pcap", 21, 21, 21, 0, true},
	{"public/magnate3-soft-roce-rdma-dump.pcap", 19, 19, 0, 0, false},
	{"public/magnate3-uc-sg.pcap", 17, 17, 17, 0, false},
	{"public/magnate3-uccl-rdma-nccl2.pcap", 520, 509, 20, 489, true},
	{"public/montybeatnik-rxe-read-write-ecn.pcap", 12, 12, 0, 0, false},
	{"public/montybeatnik-rxe-test.pcap", 16, 12, 0, 0, false},
	{"public/oferby-proxy-roce.pcap", 123, 105, 0, 0, false},
	{"public/srinivaskoritala-wireshark-sample-infiniband.pcap", 43, 43, 0, 0, false}, // ERF
}

// TestRealCaptures audits every real capture with every monitor: no read
// error, no malformed frame, the RoCE frame counts the captures'
// documentation gives, and the bad ICRCs and snaplen cuts they hold.
func TestRealCaptures(t *testing.T) {
	if _, err := os.Stat(capturesDir); err != nil {
		t.Skipf("no real captures (%v); TestSynthetic audits the project's own", err)
	}
	for _, c := range realCaptures {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			info, a, _ := auditShared(t, c.file, "TestSynthetic audits the project's own")
			if info.Frames != c.frames || info.RoCEFrames != c.roce || info.Skipped != c.frames-c.roce {
				t.Errorf("frames %d RoCE %d skipped %d, want %d %d %d", info.Frames, info.RoCEFrames, info.Skipped, c.frames, c.roce, c.frames-c.roce)
			}
			bad := c.badICRC
			if c.unrecorded {
				bad = 0
				note := fmt.Sprintf("%d RoCE frames carry an ICRC that does not match their headers, judged as if the ICRC were not recorded", c.badICRC)
				if len(info.Notes) == 0 || !strings.HasPrefix(info.Notes[0], note) {
					t.Errorf("notes %q, want one beginning %q", info.Notes, note)
				}
			}
			if info.BadICRC != bad || info.Truncated != c.truncated {
				t.Errorf("bad ICRC %d, truncated %d, want %d, %d", info.BadICRC, info.Truncated, bad, c.truncated)
			}
			wantErrs := min(bad, pcapdut.MaxListedErrors)
			if bad > pcapdut.MaxListedErrors {
				wantErrs++ // "… and N more"
			}
			if len(info.Errors) != wantErrs {
				t.Errorf("%d errors, want %d: %q", len(info.Errors), wantErrs, info.Errors)
			}
			if c.roce > 0 && bad == 0 && len(a.Conns()) == 0 {
				t.Error("no RC connection rebuilt")
			}
		})
	}
}

// TestSynthetic audits a synthetic capture of conformant traffic: every
// frame is RoCE with a good ICRC, and no monitor finds a violation.
func TestSynthetic(t *testing.T) {
	var buf bytes.Buffer
	st, err := synth.Write(&buf, synth.Options{Frames: 20_000, QPs: 6, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := capture.NewReader(bytes.NewReader(buf.Bytes()), "synthetic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	sink := harness.NewSink("synthetic.pcap")
	s := harness.UnknownSettings()
	s.MTU = 1024
	a := harness.NewAuditor(s, sink)
	info, err := pcapdut.AuditReader(rd, a, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != st.Frames || info.RoCEFrames != st.Frames || info.Skipped != 0 || info.BadICRC != 0 || len(info.Errors) != 0 {
		t.Fatalf("info %+v, wrote %+v", info, st)
	}
	if n := len(a.Conns()); n != 6 {
		t.Errorf("%d connections, want 6", n)
	}
	for _, f := range sink.Findings {
		t.Errorf("false positive on conformant traffic: %s frame %d: %s\n%s", f.ID, f.Frame, f.Message, f.Seen)
	}
	checked := 0
	for _, tl := range sink.Tallies {
		checked += tl.Checked
	}
	if checked == 0 {
		t.Error("no monitor checked anything")
	}
}

// BenchmarkAudit audits an in-memory synthetic capture of 100k frames with
// every registered monitor.
func BenchmarkAudit(b *testing.B) {
	benchAudit(b, func() pcapdut.Observer {
		return harness.NewAuditor(harness.UnknownSettings(), harness.NewSink("bench.pcap"))
	})
}

// portRecorder keeps the UDP source ports of the records it observes.
type portRecorder struct{ ports map[uint16]int }

func (p *portRecorder) Observe(r *trace.Record) { p.ports[r.SrcPort]++ }
func (p *portRecorder) End()                    {}

// TestRecordsCarryUDPPort: the records of RoCEv2 frames carry the
// frame's UDP source port, which the pairing of a connection's first
// response uses: in a synthetic capture of three connections, each using
// its own port both ways (49152 + 17i), and, when the shared captures are
// beside the repository, over IPv4 and over IPv6 in soft-RoCE's (it gives
// both directions of its connection 49441: rxe/README.md and tshark
// agree).
func TestRecordsCarryUDPPort(t *testing.T) {
	var buf bytes.Buffer
	if _, err := synth.Write(&buf, synth.Options{Frames: 900, QPs: 3, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	rd, err := capture.NewReader(bytes.NewReader(buf.Bytes()), "synthetic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	p := &portRecorder{ports: map[uint16]int{}}
	if _, err := pcapdut.AuditReader(rd, p, nil, 0); err != nil {
		t.Fatal(err)
	}
	if len(p.ports) != 3 || p.ports[49152] == 0 || p.ports[49169] == 0 || p.ports[49186] == 0 || p.ports[49152]+p.ports[49169]+p.ports[49186] != 900 {
		t.Errorf("synthetic: UDP source ports of the records %v, want 49152, 49169 and 49186 on 900", p.ports)
	}
	for _, c := range []struct {
		file string
		n    int
	}{{"rxe/send-4k-mtu1024.pcap", 1500}, {"rxe/mix-ipv6-mtu1024.pcap", 1550}} {
		path := filepath.Join(capturesDir, c.file)
		if _, err := os.Stat(path); err != nil {
			t.Logf("shared capture absent: %v", err)
			continue
		}
		p := &portRecorder{ports: map[uint16]int{}}
		if _, err := pcapdut.AuditFile(path, p, nil); err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(p.ports) != 1 || p.ports[49441] != c.n {
			t.Errorf("%s: UDP source ports of the records %v, want 49441 on all %d", c.file, p.ports, c.n)
		}
	}
}
