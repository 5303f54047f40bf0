package wire

import (
	"encoding/hex"
	"errors"
	"hash/crc32"
	"net/netip"
	"testing"
)

// Native InfiniBand frames from the public capture
// magnate3-ib-rping-ib2.pcap (ERF records as ibdump wrote them on a
// ConnectX IB port; LID 18 and LID 12), LRH through VCRC. Wireshark shows
// their ICRC and VCRC as correct.
var (
	// Frame 1: UD SEND Only to the IPoIB broadcast group, with a GRH.
	ibFrameGRH = mustHex("0003c000002100066000000000541b00fe8000000000000008c0eb0300ea512eff12401bffff000000000000ffffffff6440ffff00ffffff0007612800000b1b000001ce080600000020080014040001200001cefe8000000000000008c0eb0300ea512eac10f2330000000000000000000000000000000000000000ac10f24b556746f7e6b7")
	// Frame 3: the CM REQ, a UD SEND Only to QP 1 without a GRH.
	ibFrameREQ = mustHex("0002000c004800126440ffff0000000100010aec800100000000000101070203000000000000000e7500ab30001000000000000030ab0075000000000000000001061c0608c0eb0300ea50e600000000000000000000290100000001000000b0f6db68b7ffff50f00012000cfe8000000000000008c0eb0300ea50e6fe8000000000000008c0eb0300b6a0b4000000110000089800000000000000000000000000000000000000000000000000000000000000000000000000000000000000000040b90f000000000000000000000000ac10f22f000000000000000000000000ac10f238000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000079fc27ad1b9e")
	// Frame 6: RC SEND Only, LID 18 to LID 12, QP 0x29, PSN 0x5e0c45.
	ibFrameSend = mustHex("0002000c000a00120440ffff00000029805e0c45000055c1740eb5f000013f1200000040a2848d7e3fbc")
	// Frame 7: its ACK.
	ibFrameAck = mustHex("000200120007000c1140ffff00000029005e0c4500000001fc272caf8fa5")
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// vcrcBitwise is CRC-16/0x100B computed bit by bit, most significant bit
// first on a bit-reversed register: an implementation independent of
// ComputeVCRC's table, to check it.
func vcrcBitwise(p []byte) uint16 {
	c := uint16(0xFFFF)
	for _, v := range p {
		for i := 0; i < 8; i++ {
			bit := (v>>i)&1 != 0
			top := c&1 != 0
			c >>= 1
			if bit != top {
				c ^= 0xD008 // 0x100B reflected
			}
		}
	}
	return ^c
}

// icrcNoGRH computes the native ICRC of a packet without a GRH the long
// way: a copy with the VL and the BTH's byte 4 set to ones, through
// hash/crc32.
func icrcNoGRH(pkt []byte) uint32 {
	m := append([]byte(nil), pkt...)
	m[0] |= 0xF0
	m[LRHLen+4] = 0xFF
	return crc32.ChecksumIEEE(m)
}

func TestNativeIBCapturedFrames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b        []byte
		grh      bool
		op       Opcode
		slid     uint16
		dlid     uint16
		destQP   uint32
		psn      PSN
		known    bool // an RC opcode the Packet decoder knows
		payloadN int
	}{
		{"GRH broadcast", ibFrameGRH, true, UDSendOnly, 6, 0xc000, 0xFFFFFF, 0x076128, false, 8 + 60},
		{"CM REQ", ibFrameREQ, false, UDSendOnly, 18, 12, 1, 0x010aec, false, 8 + 256},
		{"SEND Only", ibFrameSend, false, SendOnly, 18, 12, 0x29, 0x5e0c45, true, 16},
		{"ACK", ibFrameAck, false, Acknowledge, 12, 18, 0x29, 0x5e0c45, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			err := f.DecodeNetwork(ProtoInfiniBand, tc.b)
			if tc.known && err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !tc.known && !errors.Is(err, ErrUnknownOpcode) {
				t.Fatalf("decode: %v, want ErrUnknownOpcode (a UD opcode)", err)
			}
			if f.Encap != NativeIB || f.HasGRH != tc.grh || f.Opcode != tc.op || f.DestQP != tc.destQP || f.PSN != tc.psn {
				t.Errorf("decoded %v grh=%v %v QP %#x PSN %#x", f.Encap, f.HasGRH, f.Opcode, f.DestQP, f.PSN)
			}
			if f.LRH.SLID != tc.slid || f.LRH.DLID != tc.dlid || f.Src != LIDAddr(tc.slid) || f.Dst != LIDAddr(tc.dlid) {
				t.Errorf("LIDs %d→%d, addresses %v→%v", f.LRH.SLID, f.LRH.DLID, f.Src, f.Dst)
			}
			if len(f.Payload) != tc.payloadN {
				t.Errorf("payload %d bytes, want %d", len(f.Payload), tc.payloadN)
			}
			if st := f.CheckICRC(); st != ICRCOK {
				t.Errorf("ICRC %v (wire 0x%08x, computed 0x%08x)", st, f.ICRC, ComputeICRC(f.Network()[:len(f.Network())-4], NativeIB))
			}
			if st := f.CheckVCRC(); st != ICRCOK || !f.HasVCRC {
				t.Errorf("VCRC %v (wire 0x%04x)", st, f.VCRC)
			}
			body := tc.b[:len(tc.b)-VCRCLen]
			if got, want := ComputeVCRC(body), vcrcBitwise(body); got != want {
				t.Errorf("ComputeVCRC 0x%04x, bitwise 0x%04x", got, want)
			}
			if !tc.grh {
				if got, want := ComputeICRC(body[:len(body)-ICRCLen], NativeIB), icrcNoGRH(body[:len(body)-ICRCLen]); got != want {
					t.Errorf("ICRC 0x%08x, long way 0x%08x", got, want)
				}
			}
		})
	}
}

func TestNativeIBDamage(t *testing.T) {
	// A flipped payload bit breaks both CRCs; a flipped VL (which the
	// ICRC does not cover, though the VCRC does) breaks only the VCRC.
	for _, tc := range []struct {
		name       string
		at         int
		mask       byte
		icrc, vcrc ICRCStatus
	}{
		{"payload", 30, 0x01, ICRCBad, ICRCBad},
		{"VL", 0, 0x10, ICRCOK, ICRCBad},
		{"BTH FECN", LRHLen + 4, 0x80, ICRCOK, ICRCBad},
		{"VCRC", len(ibFrameSend) - 1, 0x01, ICRCOK, ICRCBad},
		{"ICRC", len(ibFrameSend) - 3, 0x01, ICRCBad, ICRCBad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), ibFrameSend...)
			b[tc.at] ^= tc.mask
			var f Frame
			if err := f.DecodeNetwork(ProtoInfiniBand, b); err != nil {
				t.Fatal(err)
			}
			if st := f.CheckICRC(); st != tc.icrc {
				t.Errorf("ICRC %v, want %v", st, tc.icrc)
			}
			if st := f.CheckVCRC(); st != tc.vcrc {
				t.Errorf("VCRC %v, want %v", st, tc.vcrc)
			}
		})
	}
	t.Run("no VCRC captured", func(t *testing.T) {
		var f Frame
		if err := f.DecodeNetwork(ProtoInfiniBand, ibFrameSend[:len(ibFrameSend)-2]); err != nil {
			t.Fatal(err)
		}
		if f.HasVCRC || f.CheckVCRC() != ICRCUnverifiable || f.CheckICRC() != ICRCOK || f.Truncated {
			t.Errorf("VCRC %v (has %v), ICRC %v, truncated %v", f.CheckVCRC(), f.HasVCRC, f.CheckICRC(), f.Truncated)
		}
	})
	t.Run("cut inside the payload", func(t *testing.T) {
		var f Frame
		if err := f.DecodeNetwork(ProtoInfiniBand, ibFrameSend[:30]); err != nil {
			t.Fatal(err)
		}
		if !f.Truncated || f.CheckVCRC() != ICRCUnverifiable || f.CheckICRC() != ICRCUnverifiable || f.PSN != 0x5e0c45 {
			t.Errorf("truncated %v, VCRC %v, ICRC %v, PSN %#x", f.Truncated, f.CheckVCRC(), f.CheckICRC(), f.PSN)
		}
	})
	t.Run("padding after the VCRC", func(t *testing.T) {
		var f Frame
		b := append(append([]byte(nil), ibFrameSend...), 0, 0, 0, 0, 0, 0)
		if err := f.DecodeNetwork(ProtoInfiniBand, b); err != nil {
			t.Fatal(err)
		}
		if f.CheckVCRC() != ICRCOK || f.CheckICRC() != ICRCOK || len(f.Payload) != 16 {
			t.Errorf("VCRC %v, ICRC %v, payload %d", f.CheckVCRC(), f.CheckICRC(), len(f.Payload))
		}
	})
}

func TestNativeIBErrors(t *testing.T) {
	raw := append([]byte(nil), ibFrameSend...)
	raw[1] &^= 3 // LNH raw
	grhBadNext := append([]byte(nil), ibFrameGRH...)
	grhBadNext[LRHLen+6] = 17
	grhBadVersion := append([]byte(nil), ibFrameGRH...)
	grhBadVersion[LRHLen] = 0x40
	tooShortLen := append([]byte(nil), ibFrameSend...)
	tooShortLen[5] = 1 // 4 bytes: shorter than the LRH
	for _, tc := range []struct {
		name string
		b    []byte
		err  error
	}{
		{"empty", nil, ErrShort},
		{"LRH cut", ibFrameSend[:5], ErrShort},
		{"raw LNH", raw, ErrNotRoCE},
		{"GRH next header", grhBadNext, ErrNotRoCE},
		{"GRH version", grhBadVersion, ErrMalformed},
		{"GRH cut", ibFrameGRH[:30], ErrShort},
		{"packet length below headers", tooShortLen, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Frame
			if err := f.DecodeNetwork(ProtoInfiniBand, tc.b); !errors.Is(err, tc.err) {
				t.Errorf("err %v, want %v", err, tc.err)
			}
		})
	}
}

func TestNativeIBRoundTrip(t *testing.T) {
	for _, grh := range []bool{false, true} {
		f := Frame{LRH: LRH{VL: 2, SL: 3, SLID: 7, DLID: 9}, HasGRH: grh, TOS: 0x20, FlowLabel: 0x12345, TTL: 64,
			Src: netip.MustParseAddr("fe80::1"), Dst: netip.MustParseAddr("fe80::2"),
			Packet: Packet{BTH: BTH{Opcode: WriteOnly, PKey: 0xFFFF, DestQP: 0x123, PSN: 77, AckReq: true},
				RETH: RETH{VA: 0x1000, RKey: 5, Length: 5}, Payload: []byte{1, 2, 3, 4, 5}}}
		b := f.AppendIB(nil)
		var g Frame
		if err := g.DecodeNetwork(ProtoInfiniBand, b); err != nil {
			t.Fatalf("grh %v: %v", grh, err)
		}
		if g.CheckICRC() != ICRCOK || g.CheckVCRC() != ICRCOK {
			t.Errorf("grh %v: ICRC %v VCRC %v", grh, g.CheckICRC(), g.CheckVCRC())
		}
		if g.HasGRH != grh || g.LRH.VL != 2 || g.LRH.SL != 3 || g.Src != LIDAddr(7) || g.Dst != LIDAddr(9) ||
			g.Opcode != WriteOnly || g.PSN != 77 || g.RETH != f.RETH || string(g.Payload) != string(f.Payload) ||
			int(g.LRH.PktLen)*4+VCRCLen != len(b) {
			t.Errorf("grh %v: round trip gave %+v", grh, g)
		}
		if grh && (g.FlowLabel != 0x12345 || g.TTL != 64 || g.TOS != 0x20) {
			t.Errorf("GRH fields %x %d %x", g.FlowLabel, g.TTL, g.TOS)
		}
	}
}

func TestLIDAddr(t *testing.T) {
	a := LIDAddr(18)
	if lid, ok := LIDOf(a); !ok || lid != 18 {
		t.Errorf("LIDOf(LIDAddr(18)) = %d, %v", lid, ok)
	}
	if AddrString(a) != "LID 18" {
		t.Errorf("AddrString = %q", AddrString(a))
	}
	for _, s := range []string{"10.0.0.1", "fe80::12", "::ffff:10.0.0.1"} {
		x := netip.MustParseAddr(s)
		if _, ok := LIDOf(x); ok || AddrString(x) != x.String() {
			t.Errorf("%s taken for a LID", s)
		}
	}
	if LIDAddr(1) == LIDAddr(2) || LIDAddr(0xFFFF).Unmap() != LIDAddr(0xFFFF) {
		t.Error("LID addresses collide or unmap")
	}
	if NativeIB.String() != "InfiniBand" {
		t.Errorf("NativeIB.String() = %q", NativeIB.String())
	}
}
