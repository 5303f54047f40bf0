package wire

import (
	"errors"
	"testing"
)

// ibFrameREP is the CM REP of magnate3-ib-rping-ib2.pcap (frame 4), LID 12
// to LID 18, LRH through VCRC.
var ibFrameREP = mustHex("000200120048000c6440ffff000000010002c0a1800100000000000101070203000000000000000e7500ab30001300000000000018db9f3c30ab00750000000000002900000000005e0c4500010180e008c0eb0300b6a0b40000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000044235e1f4abc")

// TestDecodeCMCaptured decodes the REQ and REP a ConnectX sent on a native
// IB fabric (values as Wireshark shows them).
func TestDecodeCMCaptured(t *testing.T) {
	dec := func(b []byte) CMMsg {
		t.Helper()
		var f Frame
		if err := f.DecodeNetwork(ProtoInfiniBand, b); !errors.Is(err, ErrUnknownOpcode) {
			t.Fatalf("decode: %v", err)
		}
		m, err := DecodeCMPacket(&f.Packet)
		if err != nil {
			t.Fatalf("CM: %v", err)
		}
		return m
	}
	req := dec(ibFrameREQ)
	want := CMMsg{Kind: CMAttrREQ, LocalCommID: 0x30ab0075, LocalQPN: 0x29, StartingPSN: 0xf6db68,
		ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 0, ServiceID: 0x0106_1c06, // rdma_cm's TCP port space, port 7174
		RetryCount: 7, PathMTU: 4096, PathMTUCode: 5, LocalACKTimeout: 19, PKey: 0xFFFF}
	req.MAD = MADHeader{}
	if req != want {
		t.Errorf("REQ\n got %+v\nwant %+v", req, want)
	}
	rep := dec(ibFrameREP)
	wantREP := CMMsg{Kind: CMAttrREP, LocalCommID: 0x18db9f3c, RemoteCommID: 0x30ab0075, LocalQPN: 0x29,
		StartingPSN: 0x5e0c45, ResponderResources: 1, InitiatorDepth: 1, TargetACKDelay: 16, RNRRetryCount: 7}
	if rep.MAD.BaseVersion != 1 || rep.MAD.MgmtClass != MgmtClassCM || rep.MAD.ClassVersion != 2 || rep.MAD.Method != 3 ||
		rep.MAD.TID != 0x0e7500ab30 || rep.MAD.AttrID != CMAttrREP {
		t.Errorf("REP MAD header %+v", rep.MAD)
	}
	rep.MAD = MADHeader{}
	if rep != wantREP {
		t.Errorf("REP\n got %+v\nwant %+v", rep, wantREP)
	}
	if req.String() != "REQ" || rep.String() != "REP" {
		t.Errorf("names %q %q", req.String(), rep.String())
	}
}

// TestDecodeCMLayout checks each field at the offset of IBTA Vol 1
// Tables 106–113 (bytes after the 24-byte MAD header), setting the bytes
// by hand rather than through AppendCM.
func TestDecodeCMLayout(t *testing.T) {
	mad := func(attr uint16, set func(d []byte)) []byte {
		b := make([]byte, 256)
		b[0], b[1], b[2], b[3] = 1, MgmtClassCM, 2, 3
		b[16], b[17] = byte(attr>>8), byte(attr)
		set(b[MADHeaderLen:])
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want CMMsg
	}{
		{"REQ", mad(CMAttrREQ, func(d []byte) {
			copy(d[0:], []byte{0xA1, 0xA2, 0xA3, 0xA4})      // local comm ID
			copy(d[32:], []byte{0x12, 0x34, 0x56, 0x07})     // local QPN, responder resources
			d[39] = 0x05                                     // initiator depth
			d[43] = 0xB0 | 0x01                              // remote CM timeout 22, RC, end-to-end flow control
			copy(d[44:], []byte{0xAB, 0xCD, 0xEF, 0xB0 | 6}) // starting PSN, retry count 6
			d[50] = 0x30 | 0x05                              // MTU 1024, RNR retry 5
			d[51] = 0xF0 | 0x08                              // SRQ
			d[95] = 14 << 3                                  // primary local ACK timeout 14
		}), CMMsg{Kind: CMAttrREQ, LocalCommID: 0xA1A2A3A4, LocalQPN: 0x123456, ResponderResources: 7, InitiatorDepth: 5,
			E2EFlowControl: true, StartingPSN: 0xABCDEF, RetryCount: 6, PathMTU: 1024, PathMTUCode: 3, RNRRetryCount: 5,
			SRQ: true, LocalACKTimeout: 14}},
		{"REQ UC", mad(CMAttrREQ, func(d []byte) { d[43] = 1 << 1; d[50] = 0x70 }),
			CMMsg{Kind: CMAttrREQ, TransportService: 1, PathMTUCode: 7}},
		{"REP", mad(CMAttrREP, func(d []byte) {
			copy(d[0:], []byte{0, 0, 0, 9})
			copy(d[4:], []byte{0, 0, 0, 8})
			copy(d[12:], []byte{0x00, 0x00, 0x42, 0xFF}) // local QPN (low byte reserved)
			copy(d[20:], []byte{0x00, 0x10, 0x00, 0xFF}) // starting PSN
			d[24], d[25] = 3, 4
			d[26] = 9<<3 | 1
			d[27] = 6<<5 | 0x10
		}), CMMsg{Kind: CMAttrREP, LocalCommID: 9, RemoteCommID: 8, LocalQPN: 0x42, StartingPSN: 0x1000,
			ResponderResources: 3, InitiatorDepth: 4, TargetACKDelay: 9, E2EFlowControl: true, RNRRetryCount: 6, SRQ: true}},
		{"REJ", mad(CMAttrREJ, func(d []byte) { d[3], d[7], d[8], d[11] = 1, 2, 0x40, 28 }),
			CMMsg{Kind: CMAttrREJ, LocalCommID: 1, RemoteCommID: 2, Rejected: 1, RejReason: 28}},
		{"RTU", mad(CMAttrRTU, func(d []byte) { d[3], d[7] = 1, 2 }), CMMsg{Kind: CMAttrRTU, LocalCommID: 1, RemoteCommID: 2}},
		{"MRA", mad(CMAttrMRA, func(d []byte) { d[3], d[7] = 1, 2 }), CMMsg{Kind: CMAttrMRA, LocalCommID: 1, RemoteCommID: 2}},
		{"DREQ", mad(CMAttrDREQ, func(d []byte) { d[3], d[7], d[10] = 1, 2, 0x29 }),
			CMMsg{Kind: CMAttrDREQ, LocalCommID: 1, RemoteCommID: 2, RemoteQPN: 0x29}},
		{"DREP", mad(CMAttrDREP, func(d []byte) { d[3], d[7] = 1, 2 }), CMMsg{Kind: CMAttrDREP, LocalCommID: 1, RemoteCommID: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeCM(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			m.MAD = MADHeader{}
			if m != tc.want {
				t.Errorf("\n got %+v\nwant %+v", m, tc.want)
			}
			// AppendCM writes what DecodeCM reads back.
			round, err := DecodeCM(AppendCM(nil, &m))
			if err != nil {
				t.Fatal(err)
			}
			round.MAD = MADHeader{}
			if round != m {
				t.Errorf("AppendCM round trip\n got %+v\nwant %+v", round, m)
			}
		})
	}
}

func TestDecodeCMErrors(t *testing.T) {
	req := AppendCM(nil, &CMMsg{Kind: CMAttrREQ})
	sa := append([]byte(nil), req...)
	sa[1] = 0x03 // subnet administration
	lap := append([]byte(nil), req...)
	lap[17] = 0x19 // LAP: not read
	for _, tc := range []struct {
		name string
		b    []byte
		err  error
	}{
		{"empty", nil, ErrShort},
		{"header cut", req[:20], ErrShort},
		{"REQ cut", req[:MADHeaderLen+90], ErrShort},
		{"not CM", sa, ErrNotRoCE},
		{"LAP", lap, ErrNotRoCE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeCM(tc.b); !errors.Is(err, tc.err) {
				t.Errorf("err %v, want %v", err, tc.err)
			}
		})
	}
	p := Packet{BTH: BTH{Opcode: UDSendOnly, DestQP: 2}, Payload: append(make([]byte, DETHLen), req...)}
	if _, err := DecodeCMPacket(&p); !errors.Is(err, ErrNotRoCE) {
		t.Errorf("QP 2: %v", err)
	}
	p.DestQP, p.Opcode = GSIQP, SendOnly
	if _, err := DecodeCMPacket(&p); !errors.Is(err, ErrNotRoCE) {
		t.Errorf("RC SEND: %v", err)
	}
	p.Opcode, p.Payload = UDSendOnly, p.Payload[:5]
	if _, err := DecodeCMPacket(&p); !errors.Is(err, ErrShort) {
		t.Errorf("no DETH: %v", err)
	}
	if MTUFromCode(0) != 0 || MTUFromCode(6) != 0 || MTUFromCode(1) != 256 || MTUFromCode(5) != 4096 {
		t.Error("MTUFromCode")
	}
	if CMAttrName(0x19) != "CM attribute 0x0019" {
		t.Errorf("CMAttrName(0x19) = %q", CMAttrName(0x19))
	}
}

func FuzzDecodeCM(f *testing.F) {
	for _, k := range []uint16{CMAttrREQ, CMAttrMRA, CMAttrREJ, CMAttrREP, CMAttrRTU, CMAttrDREQ, CMAttrDREP, 0x19} {
		f.Add(AppendCM(nil, &CMMsg{Kind: k, LocalCommID: 1, RemoteCommID: 2, LocalQPN: 3, StartingPSN: 4, PathMTUCode: 3}))
	}
	f.Add(ibFrameREQ[LRHLen+BTHLen+DETHLen:])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeCM(b)
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrNotRoCE) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if m.LocalQPN > 0xFFFFFF || m.StartingPSN > 0xFFFFFF || m.RetryCount > 7 || m.RNRRetryCount > 7 || m.LocalACKTimeout > 31 {
			t.Fatalf("field out of range: %+v", m)
		}
		// What was read survives a round trip through AppendCM.
		round, err := DecodeCM(AppendCM(nil, &m))
		if err != nil {
			t.Fatal(err)
		}
		round.MAD.Status, m.MAD.Status = 0, 0
		if round.Kind != m.Kind || round.LocalQPN != m.LocalQPN || round.StartingPSN != m.StartingPSN || round.SRQ != m.SRQ ||
			round.PathMTU != m.PathMTU || round.RNRRetryCount != m.RNRRetryCount || round.RemoteCommID != m.RemoteCommID {
			t.Fatalf("round trip %+v → %+v", m, round)
		}
	})
}

func FuzzDecodeNativeIB(f *testing.F) {
	for _, b := range [][]byte{ibFrameGRH, ibFrameREQ, ibFrameSend, ibFrameAck, ibFrameREP} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		err := fr.DecodeNetwork(ProtoInfiniBand, b)
		if err != nil && !errors.Is(err, ErrShort) && !errors.Is(err, ErrNotRoCE) && !errors.Is(err, ErrMalformed) &&
			!errors.Is(err, ErrUnknownOpcode) && !errors.Is(err, ErrPad) {
			t.Fatalf("unclassified error %v", err)
		}
		if fr.Network() != nil {
			fr.CheckICRC()
			fr.CheckVCRC()
		}
		if err == nil || errors.Is(err, ErrUnknownOpcode) {
			DecodeCMPacket(&fr.Packet)
		}
	})
}
