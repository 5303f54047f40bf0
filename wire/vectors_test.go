package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// vectorsPath is the scapy-built test-vector file, relative to the
// package directory.
var vectorsPath = filepath.Join("..", "..", "shared", "testvectors", "rocev2-scapy.json")

type testVector struct {
	Name   string         `json:"name"`
	Frame  []byte         `json:"-"`
	ICRC   []byte         `json:"-"`
	Fields map[string]any `json:"fields"`
	Note   string         `json:"note"`

	FrameHex string `json:"frame_hex"`
	ICRCHex  string `json:"icrc_wire_hex"`
}

// loadVectors reads the vectors, skipping the test when the file is absent.
func loadVectors(tb testing.TB) []testVector {
	tb.Helper()
	data, err := os.ReadFile(vectorsPath)
	if errors.Is(err, os.ErrNotExist) {
		tb.Skipf("test vectors not found at %s", vectorsPath)
	}
	if err != nil {
		tb.Fatal(err)
	}
	var file struct {
		Vectors []testVector `json:"vectors"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		tb.Fatalf("decoding %s: %v", vectorsPath, err)
	}
	if len(file.Vectors) == 0 {
		tb.Fatalf("%s: no vectors", vectorsPath)
	}
	for i := range file.Vectors {
		v := &file.Vectors[i]
		if v.Frame, err = hex.DecodeString(v.FrameHex); err != nil {
			tb.Fatalf("vector %s: frame_hex: %v", v.Name, err)
		}
		if v.ICRC, err = hex.DecodeString(v.ICRCHex); err != nil || len(v.ICRC) != 4 {
			tb.Fatalf("vector %s: icrc_wire_hex %q: %v", v.Name, v.ICRCHex, err)
		}
	}
	return file.Vectors
}

// checkVectorFields compares the decoded frame with the vector's field list.
func checkVectorFields(t *testing.T, v testVector, f *Frame) {
	t.Helper()
	num := func(key string) (uint64, bool) {
		x, ok := v.Fields[key].(float64)
		if !ok {
			t.Errorf("field %s = %v: not a number", key, v.Fields[key])
		}
		return uint64(x), ok
	}
	for key := range v.Fields {
		switch key {
		case "ip_version":
			want, _ := num(key)
			got := uint64(4)
			if f.Encap != RoCEv2IPv4 {
				got = 6
			}
			if got != want {
				t.Errorf("ip_version = %d, want %d", got, want)
			}
		case "opcode":
			if want, _ := num(key); uint64(f.Opcode) != want {
				t.Errorf("opcode = %#x, want %#x", uint8(f.Opcode), want)
			}
		case "dest_qp":
			if want, _ := num(key); uint64(f.DestQP) != want {
				t.Errorf("dest_qp = %d, want %d", f.DestQP, want)
			}
		case "psn":
			if want, _ := num(key); uint64(f.PSN) != want {
				t.Errorf("psn = %d, want %d", f.PSN, want)
			}
		case "ack_req":
			want, ok := v.Fields[key].(bool)
			if !ok || f.AckReq != want {
				t.Errorf("ack_req = %v, want %v", f.AckReq, v.Fields[key])
			}
		case "tos":
			if want, _ := num(key); uint64(f.TOS) != want {
				t.Errorf("tos = %d, want %d", f.TOS, want)
			}
		case "ttl":
			if want, _ := num(key); uint64(f.TTL) != want {
				t.Errorf("ttl = %d, want %d", f.TTL, want)
			}
		default:
			t.Errorf("vector field %q is not checked by this test", key)
		}
	}
}

// vectorLayout is where a decoded vector's parts sit in the frame.
type vectorLayout struct {
	net, udp, bth, end int // offsets: network header, UDP header, BTH, end of ICRC
}

func layoutOf(t *testing.T, frame []byte, f *Frame) vectorLayout {
	t.Helper()
	net := len(frame) - len(f.Network())
	for i := range f.Network() {
		if &frame[net+i] != &f.Network()[i] {
			t.Fatal("Network() does not alias the frame's tail")
		}
		break
	}
	l := vectorLayout{net: net, end: net + len(f.Network())}
	switch f.Encap {
	case RoCEv2IPv4:
		l.udp = net + int(frame[net]&0x0F)*4
		l.bth = l.udp + 8
	case RoCEv2IPv6:
		l.udp = net + 40
		l.bth = l.udp + 8
	default:
		l.udp = -1
		l.bth = net + 40
	}
	return l
}

func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			var f Frame
			if err := f.DecodeEthernet(v.Frame); err != nil {
				t.Fatalf("DecodeEthernet: %v", err)
			}
			checkVectorFields(t, v, &f)
			if f.Truncated {
				t.Error("Truncated set on a whole frame")
			}
			if f.ReservedBitsSet() {
				t.Error("ReservedBitsSet on a scapy frame")
			}
			if f.DstPort != UDPPort {
				t.Errorf("UDP destination port %d", f.DstPort)
			}
			if len(f.Network()) != len(v.Frame)-14 {
				t.Errorf("Network() is %d bytes, want %d", len(f.Network()), len(v.Frame)-14)
			}
			// The payload and pad make up the rest of the transport.
			if got, want := HeadersLen(f.Opcode)+len(f.Payload)+int(f.PadCnt)+ICRCLen,
				len(v.Frame)-14-20-8; got != want {
				t.Errorf("headers+payload+pad+ICRC = %d bytes, frame carries %d", got, want)
			}
			if int(f.PadCnt) != (-len(f.Payload))&3 || f.PadOverride != 0 {
				t.Errorf("pad count %d for %d payload bytes (PadOverride %d)", f.PadCnt, len(f.Payload), f.PadOverride)
			}

			// The ICRC: as read, as computed, as checked.
			var wire [4]byte
			binary.LittleEndian.PutUint32(wire[:], f.ICRC)
			if !bytes.Equal(wire[:], v.ICRC) {
				t.Errorf("ICRC read as % x, want % x", wire, v.ICRC)
			}
			if !bytes.Equal(v.Frame[len(v.Frame)-4:], v.ICRC) {
				t.Errorf("vector's last 4 bytes % x differ from icrc_wire_hex % x", v.Frame[len(v.Frame)-4:], v.ICRC)
			}
			net := f.Network()
			if got := ComputeICRC(net[:len(net)-4], f.Encap); got != f.ICRC {
				t.Errorf("ComputeICRC = %#08x, want %#08x", got, f.ICRC)
			}
			if st := f.CheckICRC(); st != ICRCOK {
				t.Errorf("CheckICRC = %v", st)
			}

			// Byte for byte back.
			out := f.AppendEthernet(nil)
			if !bytes.Equal(out, v.Frame) {
				t.Errorf("AppendEthernet:\n got %x\nwant %x", out, v.Frame)
			}
			// Also when appending to a prefix.
			prefix := []byte("prefix")
			out = f.AppendEthernet(prefix)
			if !bytes.Equal(out[:6], prefix) || !bytes.Equal(out[6:], v.Frame) {
				t.Errorf("AppendEthernet after a prefix differs")
			}
			// And the transport alone.
			l := layoutOf(t, v.Frame, &f)
			tr := f.Packet.AppendTransport(nil)
			if !bytes.Equal(tr, v.Frame[l.bth:l.end-4]) {
				t.Errorf("AppendTransport:\n got %x\nwant %x", tr, v.Frame[l.bth:l.end-4])
			}
			var p Packet
			if err := p.DecodeTransport(v.Frame[l.bth : l.end-4]); err != nil {
				t.Errorf("DecodeTransport: %v", err)
			} else if !packetsEqual(&p, &f.Packet) {
				t.Errorf("DecodeTransport = %v, DecodeEthernet = %v", &p, &f.Packet)
			}
		})
	}
}

// maskedOffsets returns the frame offsets the ICRC masks: IPv4 TOS, TTL and
// header checksum, the UDP checksum and BTH byte 4.
func maskedOffsets(l vectorLayout) map[int]string {
	return map[int]string{
		l.net + 1: "IPv4 TOS", l.net + 8: "IPv4 TTL", l.net + 10: "IPv4 checksum", l.net + 11: "IPv4 checksum",
		l.udp + 6: "UDP checksum", l.udp + 7: "UDP checksum", l.bth + 4: "BTH byte 4",
	}
}

// TestVectorsICRCCoverage changes each byte of each vector: every covered
// byte must make the ICRC check fail, every masked byte must not.
func TestVectorsICRCCoverage(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			var f Frame
			if err := f.DecodeEthernet(v.Frame); err != nil {
				t.Fatalf("DecodeEthernet: %v", err)
			}
			if f.Encap != RoCEv2IPv4 {
				t.Skip("masked offsets are written for IPv4")
			}
			l := layoutOf(t, v.Frame, &f)
			masked := maskedOffsets(l)
			wantICRC := f.ICRC
			buf := make([]byte, len(v.Frame))
			rejected := 0
			for off := range v.Frame {
				for _, mut := range []func(byte) byte{
					func(b byte) byte { return ^b },
					func(b byte) byte { return b ^ 0x01 }, func(b byte) byte { return b ^ 0x02 },
					func(b byte) byte { return b ^ 0x04 }, func(b byte) byte { return b ^ 0x08 },
					func(b byte) byte { return b ^ 0x10 }, func(b byte) byte { return b ^ 0x20 },
					func(b byte) byte { return b ^ 0x40 }, func(b byte) byte { return b ^ 0x80 },
					func(byte) byte { return 0x00 }, func(byte) byte { return 0xFF },
				} {
					copy(buf, v.Frame)
					buf[off] = mut(buf[off])
					if buf[off] == v.Frame[off] {
						continue
					}
					var g Frame
					err := g.DecodeEthernet(buf)
					switch {
					case off < l.net:
						// Ethernet header: not covered. Only the EtherType
						// can turn the frame into something else.
						if off >= 12 {
							if err == nil && g.CheckICRC() != ICRCOK {
								t.Errorf("EtherType byte %d changed: ICRC %v", off, g.CheckICRC())
							}
							continue
						}
						if err != nil || g.CheckICRC() != ICRCOK {
							t.Errorf("MAC byte %d changed to %#02x: err %v, ICRC %v", off, buf[off], err, g.CheckICRC())
						}
					case masked[off] != "":
						if err != nil {
							t.Errorf("masked %s (byte %d) set to %#02x: %v", masked[off], off, buf[off], err)
						} else if st := g.CheckICRC(); st != ICRCOK {
							t.Errorf("masked %s (byte %d) set to %#02x: ICRC %v, want ok", masked[off], off, buf[off], st)
						}
					default:
						// Covered: the CRC over the same span must differ
						// (CRC-32 catches every error burst up to 32 bits)...
						if off < l.end-4 && ComputeICRC(buf[l.net:l.end-4], RoCEv2IPv4) == wantICRC {
							t.Errorf("covered byte %d set to %#02x: CRC unchanged", off, buf[off])
						}
						// ...and the decoder must not accept the frame.
						var st ICRCStatus
						if err == nil || errors.Is(err, ErrUnknownOpcode) || errors.Is(err, ErrPad) {
							st = g.CheckICRC()
						}
						switch {
						case st == ICRCBad:
						case st == ICRCUnverifiable && g.Truncated:
							// A length field grew past the frame's end.
							rejected++
						case st == ICRCUnchecked && err != nil:
							// A header no longer says RoCE, or a length is
							// malformed: rejected before the ICRC.
							rejected++
						default:
							t.Errorf("covered byte %d set to %#02x: err %v, ICRC %v, want bad", off, buf[off], err, st)
						}
					}
				}
			}
			t.Logf("%d mutations of covered bytes rejected before the ICRC check (lengths, version, protocol, port, fragment)", rejected)
		})
	}
}

// packetsEqual compares two packets field by field, the payload by content.
func packetsEqual(a, b *Packet) bool {
	x, y := *a, *b
	if !bytes.Equal(x.Payload, y.Payload) {
		return false
	}
	x.Payload, y.Payload = nil, nil
	return reflect.DeepEqual(x, y)
}

// TestICRCSeed: the CRC register after the eight 0xFF bytes standing in
// for the LRH is rxe's seed 0xdebb20e3, complemented (§7.8.1,
// §A17.4.3.4; docs/interpretations.md, "Wire formats").
func TestICRCSeed(t *testing.T) {
	if crcAfterLRH != ^uint32(0xdebb20e3) {
		t.Errorf("CRC after eight 0xFF bytes = %#08x, want ^0xdebb20e3", crcAfterLRH)
	}
	if ComputeICRC(nil, RoCEv2IPv4) != crcAfterLRH {
		t.Error("ComputeICRC of nothing is not the LRH seed")
	}
}
