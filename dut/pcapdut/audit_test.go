package pcapdut

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

func TestSendAckExchange(t *testing.T) {
	small, large := sendOnly(100, 40, true), sendOnly(101, 1000, true)
	b := writePcap(t, layers.LinkTypeEthernet, []capFrame{
		{data: eth(small, 7), at: 0},
		{data: eth(ack(100, 1), 900), at: 5 * time.Microsecond},
		{data: eth(large, 8), at: 9 * time.Microsecond},
		{data: eth(ack(101, 2), 901), at: 12 * time.Microsecond},
	})
	info, rec, err := auditBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != 4 || info.RoCEFrames != 4 || info.Skipped != 0 || info.BadICRC != 0 || info.Truncated != 0 || len(info.Errors) != 0 {
		t.Fatalf("info = %+v", info)
	}
	if info.Format != "pcap-ns" || info.File != "test.pcap" {
		t.Errorf("format %q file %q", info.Format, info.File)
	}
	if len(rec.recs) != 4 {
		t.Fatalf("%d records, want 4", len(rec.recs))
	}
	want := []struct {
		frame int
		at    time.Duration
		dir   trace.Dir
		op    wire.Opcode
		psn   wire.PSN
		ipid  uint16
		plen  int
		kept  int
	}{
		{1, 0, trace.ToResponder, wire.SendOnly, 100, 7, 40, 0},
		{2, 5 * time.Microsecond, trace.ToRequester, wire.Acknowledge, 100, 900, 0, 0},
		{3, 9 * time.Microsecond, trace.ToResponder, wire.SendOnly, 101, 8, 1000, 0},
		{4, 12 * time.Microsecond, trace.ToRequester, wire.Acknowledge, 101, 901, 0, 0},
	}
	for i, w := range want {
		r := rec.recs[i]
		if r.Frame != w.frame || r.Time != w.at || r.Dir != w.dir || r.Packet.Opcode != w.op || r.Packet.PSN != w.psn ||
			r.IPID != w.ipid || !r.HasIPID || r.PayloadLen != w.plen || len(r.Packet.Payload) != w.kept ||
			r.ICRC != wire.ICRCOK || r.Truncated {
			t.Errorf("record %d = %+v (packet %v), want %+v", i, r, r.Packet, w)
		}
	}
	if r := rec.recs[0]; r.Src != reqAddr || r.Dst != rspAddr {
		t.Errorf("request from %v to %v", r.Src, r.Dst)
	}
	if r := rec.recs[1]; r.Src != rspAddr || r.Dst != reqAddr || r.Packet.AETH.MSN != 1 || !r.Packet.AETH.IsACK() {
		t.Errorf("ACK record %+v %v", r, r.Packet)
	}
	for _, r := range rec.recs {
		if r.Packet.Payload != nil {
			t.Errorf("frame %d: payload kept (%d bytes), want it dropped", r.Frame, len(r.Packet.Payload))
		}
	}
	// Records must not alias the reader's buffers.
	if rec.recs[0].Packet == rec.recs[2].Packet {
		t.Error("records share a packet")
	}
}

func TestEncapsulations(t *testing.T) {
	tests := []struct {
		name string
		lt   layers.LinkType
		data []byte
		src  string
		ipid bool
	}{
		{"vlan", layers.LinkTypeEthernet, eth(sendOnly(5, 8, true), 1, withVLAN(42)), "10.0.0.2", true},
		{"ipv6", layers.LinkTypeEthernet, eth(sendOnly(5, 8, true), 1, withIPv6()), "fe80::2", false},
		{"rocev1", layers.LinkTypeEthernet, eth(sendOnly(5, 8, true), 1, withRoCEv1()), "10.0.0.2", false},
		{"sll", layers.LinkTypeLinuxSLL, sll(frame(sendOnly(5, 8, true), 1)), "10.0.0.2", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, rec, err := auditBytes(t, writePcap(t, tc.lt, []capFrame{{data: tc.data}}))
			if err != nil {
				t.Fatal(err)
			}
			if info.RoCEFrames != 1 || info.Skipped != 0 || info.BadICRC != 0 || len(info.Errors) != 0 || len(rec.recs) != 1 {
				t.Fatalf("info %+v, %d records", info, len(rec.recs))
			}
			r := rec.recs[0]
			if r.Src.String() != tc.src || r.HasIPID != tc.ipid || r.ICRC != wire.ICRCOK || r.Packet.PSN != 5 {
				t.Errorf("record %+v", r)
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	ud := sendOnly(1, 8, false)
	ud.Opcode = 0x64 // UD SEND Only: RoCE, not RC
	cnp := wire.Packet{BTH: wire.BTH{Opcode: wire.CNP, DestQP: 0x11}, Payload: make([]byte, 16)}
	b := writePcap(t, layers.LinkTypeEthernet, []capFrame{
		{data: arp()},
		{data: eth(sendOnly(1, 8, true), 1, withPort(53))}, // UDP, not 4791
		{data: eth(ud, 2)},
		{data: eth(cnp, 3)},
		{data: eth(sendOnly(2, 8, true), 4)},
		{data: arp()[:10]}, // shorter than an Ethernet header
	})
	info, rec, err := auditBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != 6 || info.RoCEFrames != 3 || info.Skipped != 3 || info.BadICRC != 0 || len(info.Errors) != 0 {
		t.Fatalf("info = %+v", info)
	}
	if len(rec.recs) != 1 || rec.recs[0].Frame != 5 {
		t.Fatalf("records %v", rec.recs)
	}
}

func TestUnsupportedLinkType(t *testing.T) {
	b := writePcap(t, layers.LinkType(105), []capFrame{{data: make([]byte, 40)}, {data: make([]byte, 40)}})
	info, rec, err := auditBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != 2 || info.Skipped != 2 || info.RoCEFrames != 0 || len(rec.recs) != 0 {
		t.Fatalf("info = %+v", info)
	}
	if len(info.Errors) != 1 || !strings.Contains(info.Errors[0], "2 frames of link type 105 (IEEE802_11) skipped") {
		t.Errorf("errors %q", info.Errors)
	}
}

func TestBadICRC(t *testing.T) {
	bad := eth(sendOnly(7, 100, true), 1)
	bad[len(bad)-10] ^= 0x01 // a payload bit
	f := frame(sendOnly(7, 100, true), 1)
	f.DecodeEthernet(bad) // to know the computed ICRC
	b := writePcap(t, layers.LinkTypeEthernet, []capFrame{
		{data: eth(sendOnly(6, 100, true), 0)},
		{data: bad},
	})
	info, rec, err := auditBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if info.RoCEFrames != 2 || info.BadICRC != 1 || len(rec.recs) != 1 {
		t.Fatalf("info %+v, %d records", info, len(rec.recs))
	}
	net := f.Network()
	want := fmt.Sprintf("frame 2: bad ICRC (0x%08x on the wire, 0x%08x computed)", f.ICRC, wire.ComputeICRC(net[:len(net)-4], f.Encap))
	if len(info.Errors) != 1 || info.Errors[0] != want {
		t.Errorf("errors %q, want %q", info.Errors, want)
	}
}

func TestErrorsBounded(t *testing.T) {
	var frames []capFrame
	for i := range MaxListedErrors + 5 {
		b := eth(sendOnly(wire.PSN(i), 8, true), uint16(i))
		b[len(b)-1] ^= 0xFF // the ICRC itself
		frames = append(frames, capFrame{data: b})
	}
	info, rec, err := auditBytes(t, writePcap(t, layers.LinkTypeEthernet, frames))
	if err != nil {
		t.Fatal(err)
	}
	if info.BadICRC != MaxListedErrors+5 || len(rec.recs) != 0 {
		t.Fatalf("info %+v", info)
	}
	if len(info.Errors) != MaxListedErrors+1 || info.Errors[MaxListedErrors] != "… and 5 more frame errors not listed (5 bad ICRC)" {
		t.Errorf("%d errors, last %q", len(info.Errors), info.Errors[len(info.Errors)-1])
	}
}

func TestSnaplen(t *testing.T) {
	full := eth(sendOnly(9, 1000, true), 1)
	write := wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, DestQP: 0x11, PSN: 10, AckReq: true},
		RETH: wire.RETH{VA: 0x1000, RKey: 5, Length: 1000}, Payload: payload(1000)}
	wfull := eth(write, 2)
	const hdrs = 14 + 20 + 8 // Ethernet, IPv4, UDP
	b := writePcap(t, layers.LinkTypeEthernet, []capFrame{
		{data: full[:128], orig: len(full)},         // payload cut
		{data: wfull[:hdrs+12+8], orig: len(wfull)}, // cut inside the RETH
		{data: full[:len(full)-2], orig: len(full)}, // only the ICRC cut
		{data: eth(sendOnly(11, 8, true), 3)},       // whole
		{data: full[:hdrs+4], orig: len(full)},      // cut inside the BTH
	})
	info, rec, err := auditBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != 5 || info.RoCEFrames != 5 || info.Truncated != 4 || info.BadICRC != 0 {
		t.Fatalf("info = %+v", info)
	}
	if len(rec.recs) != 3 {
		t.Fatalf("%d records, want 3", len(rec.recs))
	}
	for _, i := range []int{0, 1} {
		r := rec.recs[i]
		if !r.Truncated || r.ICRC != wire.ICRCUnverifiable || r.PayloadLen != 1000 || r.Packet.Payload != nil {
			t.Errorf("cut record %d: %+v", i, r)
		}
	}
	if r := rec.recs[2]; r.Truncated || r.ICRC != wire.ICRCOK || r.Frame != 4 {
		t.Errorf("whole record %+v", r)
	}
	if len(info.Errors) != 2 || !strings.HasPrefix(info.Errors[0], "frame 2: cut by the capture's snaplen inside its transport headers (62 of") ||
		!strings.HasPrefix(info.Errors[1], "frame 5: cut by the capture's snaplen inside its transport headers") {
		t.Errorf("errors %q", info.Errors)
	}
}

// TestSenderCut: a frame whose IP length runs past its end, though the
// capture recorded every byte the wire carried (captured = original
// length), left its sender short: a malformed packet its receiver drops,
// listed as such and not judged, never counted as cut by the capture. The
// same bytes with an original length that says the capture cut them are
// judged as a cut frame (TestSnaplen).
func TestSenderCut(t *testing.T) {
	full := eth(sendOnly(9, 1000, true), 1)
	noICRC := full[:len(full)-4]
	const hdrs = 14 + 20 + 8
	for _, tc := range []struct {
		name      string
		f         capFrame
		malformed bool
	}{
		{"no ICRC, not cut", capFrame{data: noICRC}, true},
		{"no pad or ICRC, not cut", capFrame{data: full[:len(full)-7]}, true},
		{"BTH short, not cut", capFrame{data: full[:hdrs+4]}, true},
		{"no ICRC, cut by the snaplen", capFrame{data: noICRC, orig: len(full)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, rec, err := auditBytes(t, writePcap(t, layers.LinkTypeEthernet, []capFrame{tc.f}))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.malformed {
				if info.Truncated != 1 || len(rec.recs) != 1 || len(info.Errors) != 0 {
					t.Errorf("cut frame: info %+v, %d records", info, len(rec.recs))
				}
				return
			}
			if info.RoCEFrames != 1 || info.Truncated != 0 || len(rec.recs) != 0 || len(info.Errors) != 1 {
				t.Fatalf("info %+v, %d records", info, len(rec.recs))
			}
			if e := info.Errors[0]; !strings.HasPrefix(e, "frame 1: malformed RoCE frame, not analysed:") || !strings.Contains(e, "the sender's malformed packet") {
				t.Errorf("error %q", e)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	// A reserved RC opcode is a request no responder can execute, not a
	// malformed frame: it is analysed (§9.7.5.1.5 judges its answer).
	rsv := sendOnly(1, 8, true)
	rsv.Opcode = 0x15
	reserved := eth(rsv, 1)
	short := eth(wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, DestQP: 0x11, PSN: 2}}, 2)
	short[14+20+8] = byte(wire.ReadRequest) // needs a RETH the frame lacks
	pad := eth(wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, DestQP: 0x11, PSN: 3}}, 3)
	pad[14+20+8+1] |= 0x30 // pad count 3, no payload
	b := writePcap(t, layers.LinkTypeEthernet, []capFrame{{data: reserved}, {data: short}, {data: pad}, {data: eth(sendOnly(4, 8, true), 4)}})
	info, rec, err := auditBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if info.RoCEFrames != 4 || info.Skipped != 0 || len(rec.recs) != 2 || rec.recs[0].Frame != 1 || rec.recs[1].Frame != 4 {
		t.Fatalf("info %+v, records %v", info, rec.recs)
	}
	if r := rec.recs[0]; r.Dir != trace.ToResponder || r.Packet.Opcode != 0x15 || r.PayloadLen != 8 {
		t.Errorf("the reserved opcode's record: %v, %d bytes", r, r.PayloadLen)
	}
	wants := []string{"frame 2: malformed RoCE frame", "frame 3: malformed RoCE frame"}
	if len(info.Errors) != len(wants) {
		t.Fatalf("errors %q", info.Errors)
	}
	for i, w := range wants {
		if !strings.HasPrefix(info.Errors[i], w) {
			t.Errorf("error %d = %q, want prefix %q", i, info.Errors[i], w)
		}
	}
	for i, sentinel := range []error{wire.ErrShort, wire.ErrPad} {
		// The message carries the decoder's own words.
		if !strings.Contains(info.Errors[i], sentinel.Error()) {
			t.Errorf("error %d = %q, want it to say %q", i, info.Errors[i], sentinel)
		}
	}
}

func TestDamagedPartWay(t *testing.T) {
	var frames []capFrame
	for i := range 10 {
		frames = append(frames, capFrame{data: eth(sendOnly(wire.PSN(i), 8, true), uint16(i))})
	}
	b := writePcap(t, layers.LinkTypeEthernet, frames)
	path := writeFile(t, "cut.pcap", b[:len(b)-20]) // inside the last frame
	rec := &recorder{}
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info, err := auditReader(r, rec, nil, 0)
	if !errors.Is(err, capture.ErrTruncated) {
		t.Fatalf("err = %v, want capture.ErrTruncated", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "frame 10") {
		t.Errorf("error %q does not name the file and frame 10", err)
	}
	if info.Frames != 9 || info.RoCEFrames != 9 || len(rec.recs) != 9 || rec.ended != 1 {
		t.Errorf("info %+v, %d records, ended %d", info, len(rec.recs), rec.ended)
	}
	if len(info.Errors) != 1 || info.Errors[0] != err.Error() {
		t.Errorf("errors %q", info.Errors)
	}
}

func TestAuditFileErrors(t *testing.T) {
	_, err := AuditFile("/nonexistent/x.pcap", nil, nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/nonexistent/x.pcap") {
		t.Errorf("missing file: %v", err)
	}
	p := writeFile(t, "bad.pcap", []byte("this is not a capture at all"))
	info, err := AuditFile(p, nil, nil)
	if !errors.Is(err, capture.ErrBadMagic) || info.File != p || len(info.Errors) != 1 {
		t.Errorf("bad magic: %v, %+v", err, info)
	}
}

func TestProgress(t *testing.T) {
	var frames []capFrame
	for i := range progressEvery + 10 {
		frames = append(frames, capFrame{data: eth(sendOnly(wire.PSN(i), 8, false), uint16(i))})
	}
	b := writePcap(t, layers.LinkTypeEthernet, frames)
	p := writeFile(t, "p.pcap", b)
	var calls []int64
	var tot int64
	r, err := capture.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := auditReader(r, &recorder{}, func(read, total int64) { calls = append(calls, read); tot = total }, int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[1] != int64(len(b)) || tot != int64(len(b)) {
		t.Errorf("progress calls %v (total %d), file %d bytes", calls, tot, len(b))
	}
}

func TestAdapter(t *testing.T) {
	if _, err := New(dut.Options{}); err == nil || !strings.Contains(err.Error(), "no capture file") {
		t.Errorf("no capture: %v", err)
	}
	if _, err := New(dut.Options{Capture: "/nonexistent/y.pcap"}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/nonexistent/y.pcap") {
		t.Errorf("missing capture: %v", err)
	}
	p := writeFile(t, "ok.pcap", writePcap(t, layers.LinkTypeEthernet, []capFrame{{data: eth(sendOnly(1, 8, true), 1)}}))
	d, err := dut.New("pcap", dut.Options{Capture: p})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != "pcap" || d.Capabilities() != (dut.Capabilities{Capture: true}) {
		t.Errorf("name %q caps %+v", d.Name(), d.Capabilities())
	}
	if _, err := d.NewConn(dut.ConnConfig{}); !errors.Is(err, dut.ErrUnsupported) {
		t.Errorf("NewConn: %v", err)
	}
}

// panicker panics on its second record.
type panicker struct{ recorder }

func (p *panicker) Observe(r *trace.Record) {
	if len(p.recs) == 1 {
		panic("monitor bug")
	}
	p.recorder.Observe(r)
}

func TestMonitorPanic(t *testing.T) {
	b := writePcap(t, layers.LinkTypeEthernet, []capFrame{
		{data: eth(sendOnly(1, 8, true), 1)}, {data: arp()}, {data: eth(sendOnly(2, 8, true), 2)}, {data: eth(sendOnly(3, 8, true), 3)},
	})
	rd, err := capture.NewReader(bytes.NewReader(b), "p.pcap")
	if err != nil {
		t.Fatal(err)
	}
	info, err := auditReader(rd, &panicker{}, nil, 0)
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Frame != 3 || len(pe.Stack) == 0 {
		t.Fatalf("err = %v", err)
	}
	if want := "auditing p.pcap: frame 3: internal error in a monitor (please report it): monitor bug"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if info.Frames != 3 || len(info.Errors) != 1 {
		t.Errorf("info %+v", info)
	}
}
