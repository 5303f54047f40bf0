package pcapdut_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire/capture"
)

// mirrored returns the Ethernet frame f as a collector receives it from a
// switch's mirror session, through the tunnel kind (0 ERSPAN type II, 1
// ERSPAN type III with a platform subheader, 2 GRE Transparent Ethernet
// Bridging over IPv6, 3 VXLAN), the mirrored frame cut to keep bytes
// (0: whole).
func mirrored(f []byte, kind, keep int) []byte {
	if keep > 0 && keep < len(f) {
		f = f[:keep]
	}
	var tun []byte
	proto, next := uint16(0x0800), byte(47)
	switch kind {
	case 0:
		tun = []byte{0x10, 0, 0x88, 0xbe, 0, 0, 0, 1, 0x10, 0, 0, 7, 0, 0, 0, 3}
	case 1:
		tun = []byte{0x10, 0, 0x22, 0xeb, 0, 0, 0, 1, 0x20, 0, 0, 7, 1, 2, 3, 4, 0, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9}
	case 2:
		proto, tun = 0x86dd, []byte{0x20, 0, 0x65, 0x58, 0, 0, 0, 42}
	case 3:
		next = 17
		tun = []byte{0xd0, 0, 0x12, 0xb5, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 42, 0}
		binary.BigEndian.PutUint16(tun[4:], uint16(len(tun)+len(f)))
	}
	var ip []byte
	if proto == 0x0800 {
		ip = []byte{0x45, 0, 0, 0, 0xbe, 0xef, 0x40, 0, 63, next, 0, 0, 192, 168, 77, 1, 192, 168, 77, 2}
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(tun)+len(f)))
	} else {
		ip = make([]byte, 40)
		ip[0], ip[6], ip[7] = 0x60, next, 64
		binary.BigEndian.PutUint16(ip[4:], uint16(len(tun)+len(f)))
	}
	eth := []byte{2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 8, byte(proto >> 8), byte(proto)}
	return slices.Concat(eth, ip, tun, f)
}

// framesOf returns the frames of a capture of Ethernet link type, and
// closes it.
func framesOf(t *testing.T, rd *capture.Reader) []capture.Frame {
	t.Helper()
	defer rd.Close()
	var out []capture.Frame
	for {
		f, err := rd.Next()
		if err != nil {
			break
		}
		if f.LinkType != capture.LinkTypeEthernet {
			t.Fatalf("%s: link type %d", rd.Name(), f.LinkType)
		}
		g := *f
		g.Data = bytes.Clone(f.Data)
		out = append(out, g)
	}
	return out
}

// pcapOf writes frames as a pcap file's bytes, each through wrap (nil:
// as is).
func pcapOf(t *testing.T, frames []capture.Frame, wrap func(i int, f []byte) []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		d := f.Data
		if wrap != nil {
			d = wrap(i, d)
		}
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(d), Length: len(d)}
		if err := w.WritePacket(ci, d); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// auditFrames writes frames as a pcap, each through wrap (nil: as is),
// and audits it with a single auditor (workers 0) or a sharded one.
func auditFrames(t *testing.T, frames []capture.Frame, wrap func(i int, f []byte) []byte, workers int) (reports.CaptureInfo, *harness.Sink) {
	t.Helper()
	buf := pcapOf(t, frames, wrap)
	rd, err := capture.NewReader(bytes.NewReader(buf), "frames.pcap")
	if err != nil {
		t.Fatal(err)
	}
	sink := harness.NewSink("frames.pcap")
	var a pcapdut.Observer = harness.NewAuditor(harness.UnknownSettings(), sink)
	if workers > 0 {
		a = harness.NewShardedAuditor(harness.UnknownSettings(), sink, workers)
	}
	info, err := pcapdut.AuditReader(rd, a, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return info, sink
}

// TestMirroredCaptures audits shared captures as a collector of a
// switch's mirror session records them (each frame inside ERSPAN, GRE or
// VXLAN, the kinds taking turns): every count, connection, tally and
// finding is the plain capture's.
func TestMirroredCaptures(t *testing.T) {
	for _, src := range sources(t, "rxe/send-4k-4qp-loss1.pcap", "rxe/read-8k-mtu1024.pcap", "rxe/mix-ipv6-mtu1024.pcap", "rxe/errors.pcap", "public/magnate3-mlx-rocev2_test.pcap") {
		t.Run(src.name, func(t *testing.T) {
			frames := src.frames
			info, sink := auditFrames(t, frames, nil, 0)
			minfo, msink := auditFrames(t, frames, func(i int, f []byte) []byte { return mirrored(f, i%4, 0) }, 0)
			if info.RoCEFrames == 0 || len(sink.Tallies) == 0 {
				t.Fatalf("nothing audited in the plain capture: %+v", info)
			}
			if !reflect.DeepEqual(info, minfo) {
				t.Errorf("capture info differs:\nplain    %+v\nmirrored %+v", info, minfo)
			}
			if !reflect.DeepEqual(sink.Tallies, msink.Tallies) || !reflect.DeepEqual(sink.Findings, msink.Findings) {
				t.Errorf("verdicts differ: %d findings plain, %d mirrored", len(sink.Findings), len(msink.Findings))
			}
		})
	}
}

// TestMirrorTruncates: a mirror session that cuts each mirrored frame
// (ERSPAN's T bit) gives frames whose headers are read and whose payload
// length comes from their IP header, as a capture's snaplen does.
func TestMirrorTruncates(t *testing.T) {
	for _, src := range sources(t, "rxe/write-8k-mtu1024.pcap") {
		t.Run(src.name, func(t *testing.T) {
			// Every WRITE packet carries payload and is cut; the ACKs fit
			// whole (in the shared capture, 300 WRITEs of 8 packets with
			// 1 KiB each: 2400 cut, 300 ACKs).
			roce, cut := 0, 0
			for _, f := range src.frames {
				if rocev2(f.Data) {
					roce++
					if len(f.Data) > 96 {
						cut++
					}
				}
			}
			info, _ := auditFrames(t, src.frames, func(i int, f []byte) []byte { return mirrored(f, 0, 96) }, 0)
			if cut == 0 || info.RoCEFrames != roce || info.Truncated != cut || info.BadICRC != 0 {
				t.Errorf("RoCE %d, truncated %d, bad ICRC %d; want %d, %d, 0", info.RoCEFrames, info.Truncated, info.BadICRC, roce, cut)
			}
		})
	}
}
