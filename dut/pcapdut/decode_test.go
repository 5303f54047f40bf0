package pcapdut

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/gopacket/layers"

	"github.com/rcconform/rcconform/dut/pcapdut/synth"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire/capture"
)

// withDecoders runs f with n decoding goroutines (0: the reading
// goroutine decodes).
func withDecoders(n int, f func()) {
	old := decodeWorkers
	decodeWorkers = func() int { return n }
	defer func() { decodeWorkers = old }()
	f()
}

// TestParallelDecodeTests runs the reading side's tests with the frames
// decoded on several goroutines: counts, listed errors, the CM table,
// progress, read errors part-way and panics come out as with one.
func TestParallelDecodeTests(t *testing.T) {
	for name, test := range map[string]func(*testing.T){
		"SendAckExchange": TestSendAckExchange, "Encapsulations": TestEncapsulations, "Skipped": TestSkipped,
		"UnsupportedLinkType": TestUnsupportedLinkType, "BadICRC": TestBadICRC, "ErrorsBounded": TestErrorsBounded,
		"Snaplen": TestSnaplen, "Malformed": TestMalformed, "DamagedPartWay": TestDamagedPartWay,
		"AuditFileErrors": TestAuditFileErrors, "Progress": TestProgress, "Adapter": TestAdapter,
		"MonitorPanic": TestMonitorPanic, "CMHandshake": TestCMHandshake, "CMFirstRequestElsewhere": TestCMFirstRequestElsewhere,
		"CMFlags": TestCMFlags, "CMRejected": TestCMRejected, "CMEnded": TestCMEnded, "CMNotRC": TestCMNotRC,
		"CMNoHandshake": TestCMNoHandshake, "CMBadMAD": TestCMBadMAD, "NativeIBVCRC": TestNativeIBVCRC,
	} {
		t.Run(name, func(t *testing.T) { withDecoders(3, func() { test(t) }) })
	}
}

// decodeRun is what auditing one capture gave the auditor: its
// CaptureInfo, error, and every record, rendered with its packet.
type decodeRun struct {
	info reports.CaptureInfo
	err  string
	recs []string
}

func auditWith(t *testing.T, n int, open func() (*capture.Reader, error)) decodeRun {
	t.Helper()
	var run decodeRun
	withDecoders(n, func() {
		rd, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		rec := &recorder{}
		info, err := auditReader(rd, rec, func(int64, int64) {}, 0)
		run.info = info
		if err != nil {
			run.err = err.Error()
		}
		for _, r := range rec.recs {
			run.recs = append(run.recs, fmt.Sprintf("%+v %+v", *r, *r.Packet))
		}
	})
	return run
}

// TestParallelDecodeSame: synthetic captures (one cut part-way), the CM
// handshake in every encapsulation, the committed captures of
// ci/testdata/audit and, when they are beside the repository, every
// shared capture give the auditor the same records and the same
// CaptureInfo with 1, 2 and 5 decoding goroutines as with none.
func TestParallelDecodeSame(t *testing.T) {
	type input struct {
		name string
		open func() (*capture.Reader, error)
	}
	var inputs []input
	const shared = "../../../shared/captures"
	files, _ := filepath.Glob(filepath.Join(shared, "*", "*.pcap*"))
	if len(files) == 0 {
		t.Logf("no shared captures in %s: the project's own captures only", shared)
	}
	committed, _ := filepath.Glob("../../ci/testdata/audit/*.pcap")
	if len(committed) == 0 {
		t.Fatal("no captures in ci/testdata/audit")
	}
	for _, f := range append(files, committed...) {
		inputs = append(inputs, input{filepath.Base(f), func() (*capture.Reader, error) { return capture.Open(f) }})
	}
	made := map[string][]byte{}
	for _, o := range []synth.Options{{Frames: 3000, QPs: 3, Seed: 7}, {Frames: 8000, QPs: 16, MTU: 4096, Seed: 8}} {
		var buf bytes.Buffer
		if _, err := synth.Write(&buf, o); err != nil {
			t.Fatal(err)
		}
		made[fmt.Sprintf("synthetic-%d-qps", o.QPs)] = buf.Bytes()
	}
	whole := made["synthetic-3-qps"]
	made["synthetic-cut"] = whole[:len(whole)*2/3]
	withARP := append([]capFrame{{data: arp()}}, roceFrames(handshake(100), withVLAN(7))...)
	made["cm-rocev2-vlan"] = writePcap(t, layers.LinkTypeEthernet, withARP)
	made["cm-rocev1"] = writePcap(t, layers.LinkTypeEthernet, roceFrames(handshake(100), withRoCEv1()))
	made["cm-ipv6"] = writePcap(t, layers.LinkTypeEthernet, roceFrames(handshake(100), withIPv6()))
	made["cm-native-ib"] = writePcap(t, layers.LinkType(capture.LinkTypeInfiniBand), ibFrames(handshake(100)))
	for name, b := range made {
		inputs = append(inputs, input{name, func() (*capture.Reader, error) {
			return capture.NewReader(bytes.NewReader(b), name)
		}})
	}
	total := 0
	for _, in := range inputs {
		want := auditWith(t, 0, in.open)
		total += len(want.recs)
		if in.name == "synthetic-cut" && want.err == "" {
			t.Errorf("%s: no read error", in.name)
		}
		for _, n := range []int{1, 2, 5} {
			got := auditWith(t, n, in.open)
			if !reflect.DeepEqual(got.info, want.info) || got.err != want.err {
				t.Errorf("%s, %d decoders: info %+v err %q, want %+v err %q", in.name, n, got.info, got.err, want.info, want.err)
				continue
			}
			if len(got.recs) != len(want.recs) {
				t.Errorf("%s, %d decoders: %d records, want %d", in.name, n, len(got.recs), len(want.recs))
				continue
			}
			for i := range want.recs {
				if got.recs[i] != want.recs[i] {
					t.Errorf("%s, %d decoders: record %d\n got %s\nwant %s", in.name, n, i, got.recs[i], want.recs[i])
					break
				}
			}
		}
	}
	if total < 10000 {
		t.Errorf("only %d records in all the captures", total)
	}
}
