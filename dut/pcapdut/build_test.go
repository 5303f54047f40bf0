package pcapdut

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// This file builds the synthetic captures of the tests: frames encoded
// with wire.Frame.AppendEthernet, written by gopacket's pcapgo.Writer.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	reqAddr = netip.MustParseAddr("10.0.0.2")
	rspAddr = netip.MustParseAddr("10.0.0.1")
	reqMAC  = [6]byte{0x52, 0x54, 0, 0, 0, 2}
	rspMAC  = [6]byte{0x52, 0x54, 0, 0, 0, 1}
)

// capFrame is one record of a capture to write.
type capFrame struct {
	data []byte
	orig int           // length on the wire; 0 means len(data)
	at   time.Duration // after t0
}

// writePcap writes frames as a nanosecond pcap of the given link type.
func writePcap(t testing.TB, lt layers.LinkType, frames []capFrame) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, lt); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		orig := f.orig
		if orig == 0 {
			orig = len(f.data)
		}
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(f.at), CaptureLength: len(f.data), Length: orig}
		if err := w.WritePacket(ci, f.data); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// writeFile writes b to a file in a temporary directory and returns its path.
func writeFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// frameOpt changes a frame before it is encoded.
type frameOpt func(f *wire.Frame)

func withVLAN(id uint16) frameOpt { return func(f *wire.Frame) { f.HasVLAN, f.VLAN = true, id } }
func withIPv6() frameOpt {
	return func(f *wire.Frame) {
		f.Encap = wire.RoCEv2IPv6
		f.Src, f.Dst = v6(f.Src), v6(f.Dst)
	}
}
func withRoCEv1() frameOpt {
	return func(f *wire.Frame) {
		f.Encap = wire.RoCEv1
		f.Src = netip.AddrFrom16(f.Src.As16()) // IPv4-mapped GIDs
		f.Dst = netip.AddrFrom16(f.Dst.As16())
	}
}
func withPort(p uint16) frameOpt { return func(f *wire.Frame) { f.DstPort = p } }

func v6(a netip.Addr) netip.Addr {
	b := a.As4()
	return netip.AddrFrom16([16]byte{0xfe, 0x80, 14: b[2], 15: b[3]})
}

// frame builds a RoCE frame of p, from the requester when p is a request
// and from the responder otherwise.
func frame(p wire.Packet, ipid uint16, opts ...frameOpt) *wire.Frame {
	f := &wire.Frame{Encap: wire.RoCEv2IPv4, TTL: 64, IPID: ipid, SrcPort: 49152, DstPort: wire.UDPPort, Packet: p}
	if p.Opcode.IsResponse() {
		f.SrcMAC, f.DstMAC, f.Src, f.Dst = rspMAC, reqMAC, rspAddr, reqAddr
	} else {
		f.SrcMAC, f.DstMAC, f.Src, f.Dst = reqMAC, rspMAC, reqAddr, rspAddr
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

func eth(p wire.Packet, ipid uint16, opts ...frameOpt) []byte {
	return frame(p, ipid, opts...).AppendEthernet(nil)
}

// sll wraps the frame's network layer in a Linux cooked (v1) header.
func sll(f *wire.Frame) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint16(b[0:], 0) // to us
	binary.BigEndian.PutUint16(b[2:], 1) // ARPHRD_ETHER
	binary.BigEndian.PutUint16(b[4:], 6)
	copy(b[6:], f.SrcMAC[:])
	binary.BigEndian.PutUint16(b[14:], wire.EtherTypeIPv4)
	return f.AppendNetwork(b)
}

func arp() []byte {
	b := make([]byte, 42)
	copy(b[0:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:], reqMAC[:])
	binary.BigEndian.PutUint16(b[12:], 0x0806)
	return b
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func sendOnly(psn wire.PSN, n int, ackReq bool) wire.Packet {
	return wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PKey: 0xFFFF, DestQP: 0x11, PSN: psn, AckReq: ackReq}, Payload: payload(n)}
}

func ack(psn wire.PSN, msn uint32) wire.Packet {
	return wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PKey: 0xFFFF, DestQP: 0x22, PSN: psn},
		AETH: wire.AETH{Syndrome: wire.SynACK(wire.CreditInvalid), MSN: msn}}
}

// recorder is an observer that keeps every record.
type recorder struct {
	recs  []*trace.Record
	ended int
}

func (r *recorder) Observe(rec *trace.Record) { r.recs = append(r.recs, rec) }
func (r *recorder) End()                      { r.ended++ }

// auditBytes audits an in-memory capture into a recorder.
func auditBytes(t testing.TB, b []byte) (reports.CaptureInfo, *recorder, error) {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(b), "test.pcap")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	info, err := auditReader(rd, rec, nil, 0)
	if rec.ended != 1 {
		t.Errorf("End called %d times, want 1", rec.ended)
	}
	return info, rec, err
}
