package pcapdut

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire/capture"
)

// isbOpt is an option of an interface statistics block: its code
// (5 isb_ifdrop, 7 isb_osdrop) and 64-bit value.
type isbOpt struct {
	code uint16
	val  uint64
}

// writePcapng writes frames as a pcapng file of one Ethernet interface,
// then an interface statistics block for it with the options given (none:
// no such block).
func writePcapng(t testing.TB, frames []capFrame, stats ...isbOpt) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewNgWriter(&buf, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(capture.LinkTypeEthernet, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(0, t0.Add(f.at), f.data, len(f.data), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(stats) == 0 {
		return buf.Bytes()
	}
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 5) // interface statistics block
	b = le.AppendUint32(b, 0)    // length, set below
	b = le.AppendUint32(b, 0)    // interface 0
	b = le.AppendUint64(b, 0)    // timestamp
	for _, o := range stats {
		b = le.AppendUint64(le.AppendUint16(le.AppendUint16(b, o.code), 8), o.val)
	}
	b = le.AppendUint32(b, 0) // opt_endofopt
	le.PutUint32(b[4:], uint32(len(b)+4))
	b = le.AppendUint32(b, uint32(len(b)+4))
	return append(buf.Bytes(), b...)
}

// auditFile audits the file at path with an auditor of settings s,
// single or sharded.
func auditFile(t *testing.T, path string, s harness.Settings, sharded bool) (reports.CaptureInfo, []*harness.Conn, *harness.Sink, error) {
	t.Helper()
	sink := harness.NewSink("capture")
	if sharded {
		a := harness.NewShardedAuditor(s, sink, 2)
		info, err := AuditFile(path, a, nil)
		return info, a.Conns(), sink, err
	}
	a := harness.NewAuditor(s, sink)
	info, err := AuditFile(path, a, nil)
	return info, a.Conns(), sink, err
}

// TestCaptureDrops: a capture whose file reports drops has no connection
// taken as held whole from its start, says so in its notes, and cannot be
// claimed complete; counts of zero change nothing.
func TestCaptureDrops(t *testing.T) {
	frames := roceFrames(handshake(100))
	complete := harness.UnknownSettings()
	complete.Complete = true
	for _, sharded := range []bool{false, true} {
		name := map[bool]string{false: "auditor", true: "sharded"}[sharded]
		t.Run(name+"/drops", func(t *testing.T) {
			path := writeFile(t, "drops.pcapng", writePcapng(t, frames, isbOpt{5, 3}))
			info, conns, _, err := auditFile(t, path, harness.UnknownSettings(), sharded)
			if err != nil {
				t.Fatal(err)
			}
			if len(conns) != 1 || !conns[0].Settings.CaptureDrops || conns[0].FromStart() || !conns[0].Settings.FromStart {
				t.Fatalf("connections %+v: want one, its handshake seen but not taken as its start for the drops", conns)
			}
			if len(info.Connections) == 0 || info.Connections[0].Complete {
				t.Errorf("listed connections %+v: want the first not complete", info.Connections)
			}
			note := "the capture file reports packets it dropped (interface 0's statistics: 3 dropped by the interface (isb_ifdrop), unknown by the operating system (isb_osdrop)): no connection is taken as held whole from its beginning"
			if len(info.Notes) != 1 || !strings.HasPrefix(info.Notes[0], note) {
				t.Errorf("notes %q, want one beginning %q", info.Notes, note)
			}
			js, err := json.Marshal(info)
			if err != nil || !strings.Contains(string(js), `"notes":["the capture file reports packets it dropped (interface 0's statistics: 3 dropped`) {
				t.Errorf("JSON %s (%v) does not carry the note", js, err)
			}
		})
		t.Run(name+"/drops with --complete", func(t *testing.T) {
			path := writeFile(t, "drops.pcapng", writePcapng(t, frames, isbOpt{7, 2}))
			info, conns, _, err := auditFile(t, path, complete, sharded)
			if !errors.Is(err, ErrCompleteContradicted) {
				t.Fatalf("err = %v, want ErrCompleteContradicted", err)
			}
			for _, s := range []string{path, "--complete", "2 by the operating system (isb_osdrop)"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err %q does not name %q", err, s)
				}
			}
			if info.Frames != 0 || len(conns) != 0 || len(info.Errors) != 1 || info.Errors[0] != err.Error() {
				t.Errorf("info %+v, %d connections: want nothing audited, the error listed", info, len(conns))
			}
		})
		t.Run(name+"/zero counts", func(t *testing.T) {
			for _, s := range []harness.Settings{harness.UnknownSettings(), complete} {
				pcap := writeFile(t, "plain.pcap", writePcap(t, layers.LinkTypeEthernet, frames))
				ng := writeFile(t, "zero.pcapng", writePcapng(t, frames, isbOpt{5, 0}, isbOpt{7, 0}))
				want, wantConns, wantSink, err := auditFile(t, pcap, s, sharded)
				if err != nil {
					t.Fatal(err)
				}
				got, gotConns, gotSink, err := auditFile(t, ng, s, sharded)
				if err != nil {
					t.Fatal(err)
				}
				got.File, got.Format, got.SHA256 = want.File, want.Format, want.SHA256
				for i := range min(len(got.Connections), len(want.Connections)) {
					got.Connections[i].Capture = want.Connections[i].Capture
				}
				gotJS, _ := json.Marshal(struct {
					I reports.CaptureInfo
					C []reports.Connection
				}{got, got.Connections})
				wantJS, _ := json.Marshal(struct {
					I reports.CaptureInfo
					C []reports.Connection
				}{want, want.Connections})
				if !bytes.Equal(gotJS, wantJS) {
					t.Errorf("complete %v: info %s, want %s as without counters", s.Complete, gotJS, wantJS)
				}
				if !reflect.DeepEqual(gotSink.Tallies, wantSink.Tallies) || !reflect.DeepEqual(gotSink.Findings, wantSink.Findings) {
					t.Errorf("complete %v: tallies or findings differ from those without counters", s.Complete)
				}
				if len(gotConns) != 1 || len(wantConns) != 1 || gotConns[0].Settings.CaptureDrops || gotConns[0].FromStart() != wantConns[0].FromStart() || !gotConns[0].FromStart() {
					t.Errorf("complete %v: connections %+v, want one taken from its start as without counters", s.Complete, gotConns)
				}
			}
		})
	}
}

// TestCaptureDropsReason: an ACK naming a PSN beyond every request is open
// either way, but only a capture that reports no drop may be said to show
// the connection from its start (C9-95's reason).
func TestCaptureDropsReason(t *testing.T) {
	steps := append(handshake(100)[:5:5], step{sendOnly(101, 16, false), true}, step{ack(105, 2), false}, step{sendOnly(102, 16, false), true})
	frames := roceFrames(steps)
	for i := range frames {
		frames[i].at = time.Duration(i) * time.Millisecond
	}
	for _, tc := range []struct {
		ifdrop uint64
		reason string
	}{
		{0, "ACK PSN 105 names no request the capture showed (newest 102), although the capture shows the connection from its start"},
		{3, "an ACK named PSN 105, beyond every request the capture showed by its end (newest 102): legal only if the capture missed the requests up to it"},
	} {
		path := writeFile(t, "ahead.pcapng", writePcapng(t, frames, isbOpt{5, tc.ifdrop}))
		_, _, sink, err := auditFile(t, path, harness.UnknownSettings(), false)
		if err != nil {
			t.Fatal(err)
		}
		ta := sink.Tallies["C9-95"]
		if ta == nil || ta.Open != 1 || ta.Violations != 0 || !strings.HasPrefix(ta.Reason, tc.reason) {
			t.Errorf("isb_ifdrop %d: C9-95 %+v, want one open instance, the reason beginning %q", tc.ifdrop, ta, tc.reason)
		}
	}
}

// TestCapturePrecision: a pcapng file whose interface stamps packets to
// the millisecond (if_tsresol 3) gives the audit that precision as a bound
// on the reordering between packets (harness.Settings.TimePrecision); one
// stamped to the nanosecond leaves the microsecond's.
func TestCapturePrecision(t *testing.T) {
	frames := roceFrames(handshake(100))
	for _, tc := range []struct {
		tsresol byte
		want    time.Duration
	}{{9, 0}, {3, time.Millisecond}} {
		file := writePcapng(t, frames)
		// The writer declares nanoseconds (if_tsresol option: code 9,
		// length 1, value 9); declare another unit.
		opt := []byte{9, 0, 1, 0, 9}
		i := bytes.Index(file, opt)
		if i < 0 {
			t.Fatal("no if_tsresol option in the written file")
		}
		file[i+4] = tc.tsresol
		for _, sharded := range []bool{false, true} {
			_, conns, _, err := auditFile(t, writeFile(t, "precision.pcapng", file), harness.UnknownSettings(), sharded)
			if err != nil {
				t.Fatal(err)
			}
			if len(conns) == 0 {
				t.Fatalf("if_tsresol %d: no connection", tc.tsresol)
			}
			if got := conns[0].Settings.TimePrecision; got != tc.want {
				t.Errorf("if_tsresol %d, sharded %v: precision %v, want %v", tc.tsresol, sharded, got, tc.want)
			}
		}
	}
}
