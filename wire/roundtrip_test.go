package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"reflect"
	"testing"
)

// rcOpcodes are the RC opcodes the package knows: 0x00–0x17 without the
// reserved 0x15, and the extensions FLUSH (0x1C) and ATOMIC WRITE (0x1D).
var rcOpcodes = func() []Opcode {
	var ops []Opcode
	for op := Opcode(0); op <= 0x17; op++ {
		if op != 0x15 {
			ops = append(ops, op)
		}
	}
	return append(ops, Flush, AtomicWrite)
}()

var encaps = []Encap{RoCEv2IPv4, RoCEv2IPv6, RoCEv1}

// randomFrame builds a frame with every field random (reserved bits
// included), so that a round trip checks each bit of each header.
func randomFrame(rng *rand.Rand, op Opcode, encap Encap, vlan bool, payloadLen int) *Frame {
	f := &Frame{Encap: encap, HasVLAN: vlan}
	rng.Read(f.DstMAC[:])
	rng.Read(f.SrcMAC[:])
	if vlan {
		f.VLAN = uint16(rng.Uint32())
	}
	f.TOS = uint8(rng.Uint32())
	f.TTL = uint8(rng.Uint32())
	if encap == RoCEv2IPv4 {
		var a, b [4]byte
		rng.Read(a[:])
		rng.Read(b[:])
		f.Src, f.Dst = netip.AddrFrom4(a), netip.AddrFrom4(b)
		f.IPID = uint16(rng.Uint32())
		f.DF = rng.Intn(2) == 0
	} else {
		var a, b [16]byte
		rng.Read(a[:])
		rng.Read(b[:])
		f.Src, f.Dst = netip.AddrFrom16(a), netip.AddrFrom16(b)
		f.FlowLabel = rng.Uint32() & 0xFFFFF
	}
	if encap != RoCEv1 {
		f.SrcPort = uint16(rng.Uint32())
		f.DstPort = UDPPort
		f.UDPChecksum = uint16(rng.Uint32())
	}
	p := &f.Packet
	p.BTH = BTH{
		Opcode: op,
		SE:     rng.Intn(2) == 0,
		M:      rng.Intn(2) == 0,
		PadCnt: uint8(rng.Intn(4)), // ignored on encode
		TVer:   uint8(rng.Intn(16)),
		PKey:   uint16(rng.Uint32()),
		FECN:   rng.Intn(2) == 0,
		BECN:   rng.Intn(2) == 0,
		Resv6:  uint8(rng.Intn(64)),
		DestQP: rng.Uint32() & 0xFFFFFF,
		AckReq: rng.Intn(2) == 0,
		Resv7:  uint8(rng.Intn(128)),
		PSN:    PSN(rng.Uint32() & PSNMask),
	}
	p.RETH = RETH{VA: rng.Uint64(), RKey: rng.Uint32(), Length: rng.Uint32()}
	p.AETH = AETH{Syndrome: uint8(rng.Uint32()), MSN: rng.Uint32() & 0xFFFFFF}
	p.Atomic = AtomicETH{VA: rng.Uint64(), RKey: rng.Uint32(), SwapAdd: rng.Uint64(), Compare: rng.Uint64()}
	p.AtomicAck = rng.Uint64()
	p.Imm = rng.Uint32()
	p.IETH = rng.Uint32()
	p.FETH = rng.Uint32()
	p.Payload = make([]byte, payloadLen)
	rng.Read(p.Payload)
	return f
}

// decodedForm returns what decoding the encoding of f into a zero Frame
// gives: headers the opcode does not carry stay zero, the pad count is
// derived, fields the encapsulation lacks are zero.
func decodedForm(f *Frame) Frame {
	g := *f
	g.net, g.icrc, g.ICRC, g.Truncated = nil, ICRCUnchecked, 0, false
	if !g.HasVLAN {
		g.VLAN = 0
	}
	if g.Encap != RoCEv2IPv4 {
		g.IPID, g.DF = 0, false
	} else {
		g.FlowLabel = 0
	}
	if g.Encap == RoCEv1 {
		g.SrcPort, g.DstPort, g.UDPChecksum = 0, 0, 0
	} else if g.DstPort == 0 {
		g.DstPort = UDPPort
	}
	g.Packet = packetDecodedForm(&f.Packet)
	return g
}

func packetDecodedForm(p *Packet) Packet {
	q := *p
	q.PadCnt = uint8(p.Pad())
	if q.PadOverride != 0 && int(q.PadOverride-1)&3 == (-len(q.Payload))&3 {
		q.PadOverride = 0
	}
	q.TVer &= 0x0F
	q.Resv6 &= 0x3F
	q.Resv7 &= 0x7F
	q.DestQP &= 0xFFFFFF
	q.PSN &= PSNMask
	h := Header(0)
	if info, ok := p.Opcode.Info(); ok {
		h = info.Headers
	}
	if h&HdrRETH == 0 {
		q.RETH = RETH{}
	}
	if h&HdrAETH == 0 {
		q.AETH = AETH{}
	}
	q.AETH.MSN &= 0xFFFFFF
	if h&HdrAtomicETH == 0 {
		q.Atomic = AtomicETH{}
	}
	if h&HdrAtomicAckETH == 0 {
		q.AtomicAck = 0
	}
	if h&HdrImmDt == 0 {
		q.Imm = 0
	}
	if h&HdrIETH == 0 {
		q.IETH = 0
	}
	if h&HdrFETH == 0 {
		q.FETH = 0
	}
	return q
}

// framesEqual compares two frames' exported fields, payload by content.
func framesEqual(a, b *Frame) bool {
	x, y := *a, *b
	if !bytes.Equal(x.Payload, y.Payload) {
		return false
	}
	x.Payload, y.Payload = nil, nil
	x.net, y.net = nil, nil
	x.icrc, y.icrc = 0, 0
	return reflect.DeepEqual(x, y)
}

func TestRoundTripAllOpcodes(t *testing.T) {
	rng := rand.New(rand.NewSource(4791))
	n := 0
	for _, op := range rcOpcodes {
		for _, encap := range encaps {
			for _, vlan := range []bool{false, true} {
				for plen := 0; plen <= 7; plen++ {
					for rep := 0; rep < 4; rep++ {
						f := randomFrame(rng, op, encap, vlan, plen)
						name := fmt.Sprintf("%v/%v/vlan=%v/len=%d/%d", op, encap, vlan, plen, rep)
						checkRoundTrip(t, name, f)
						n++
					}
				}
			}
		}
	}
	t.Logf("%d frames round-tripped", n)
}

func checkRoundTrip(t *testing.T, name string, f *Frame) {
	t.Helper()
	frame := f.AppendEthernet(nil)
	hdr := 14
	if f.HasVLAN {
		hdr += 4
	}
	netLen := 40
	if f.Encap == RoCEv2IPv4 {
		netLen = 20
	}
	if f.Encap != RoCEv1 {
		netLen += 8
	}
	if want := hdr + netLen + f.TransportLen() + ICRCLen; len(frame) != want {
		t.Errorf("%s: frame is %d bytes, want %d", name, len(frame), want)
	}
	if pad := f.Pad(); pad != (-len(f.Payload))&3 || (len(f.Payload)+pad)%4 != 0 {
		t.Errorf("%s: pad %d for %d payload bytes", name, pad, len(f.Payload))
	}
	var g Frame
	if err := g.DecodeEthernet(frame); err != nil {
		t.Errorf("%s: DecodeEthernet: %v\n%x", name, err, frame)
		return
	}
	if st := g.CheckICRC(); st != ICRCOK {
		t.Errorf("%s: CheckICRC = %v", name, st)
	}
	want := decodedForm(f)
	want.ICRC = g.ICRC
	if !framesEqual(&g, &want) {
		t.Errorf("%s: decoded\n%+v\nwant\n%+v", name, g, want)
	}
	if again := g.AppendEthernet(nil); !bytes.Equal(again, frame) {
		t.Errorf("%s: re-encoding the decoded frame differs:\n%x\n%x", name, again, frame)
	}
	// The transport alone.
	tr := f.Packet.AppendTransport(nil)
	var p Packet
	if err := p.DecodeTransport(tr); err != nil {
		t.Errorf("%s: DecodeTransport: %v", name, err)
	} else if wp := packetDecodedForm(&f.Packet); !packetsEqual(&p, &wp) {
		t.Errorf("%s: DecodeTransport = %+v, want %+v", name, p, wp)
	}
	if p.ReservedBitsSet() != (f.TVer&0xF != 0 || f.Resv6&0x3F != 0 || f.Resv7&0x7F != 0) {
		t.Errorf("%s: ReservedBitsSet = %v", name, p.ReservedBitsSet())
	}
}

// TestRoundTripPadOverride: a stimulus with a wrong pad count decodes with
// that pad count, and re-encodes to the same bytes.
func TestRoundTripPadOverride(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for plen := 0; plen <= 9; plen++ {
		for pad := 0; pad < 4; pad++ {
			f := randomFrame(rng, SendOnly, RoCEv2IPv4, false, plen)
			f.PadOverride = uint8(pad) + 1
			frame := f.AppendEthernet(nil)
			var g Frame
			if err := g.DecodeEthernet(frame); err != nil {
				t.Errorf("len %d pad %d: %v", plen, pad, err)
				continue
			}
			if int(g.PadCnt) != pad || !bytes.Equal(g.Payload, f.Payload) || g.CheckICRC() != ICRCOK {
				t.Errorf("len %d pad %d: decoded pad %d payload %x ICRC %v", plen, pad, g.PadCnt, g.Payload, g.CheckICRC())
			}
			canonical := pad == (-plen)&3
			if (g.PadOverride == 0) != canonical || !canonical && int(g.PadOverride) != pad+1 {
				t.Errorf("len %d pad %d: PadOverride %d", plen, pad, g.PadOverride)
			}
			if again := g.AppendEthernet(nil); !bytes.Equal(again, frame) {
				t.Errorf("len %d pad %d: re-encoding differs", plen, pad)
			}
		}
	}
}

// TestRoundTripAddresses: zero or mismatched addresses encode without a
// panic (as 0.0.0.0 or ::), and an IPv4-mapped IPv6 address stays IPv6.
func TestRoundTripAddresses(t *testing.T) {
	for _, encap := range encaps {
		f := &Frame{Encap: encap, Packet: Packet{BTH: BTH{Opcode: Acknowledge}}}
		frame := f.AppendEthernet(nil)
		var g Frame
		if err := g.DecodeEthernet(frame); err != nil || g.CheckICRC() != ICRCOK {
			t.Errorf("%v with zero addresses: %v, ICRC %v", encap, err, g.CheckICRC())
		}
		if g.Src.IsUnspecified() != true || g.Dst.IsUnspecified() != true {
			t.Errorf("%v: zero addresses decode as %v, %v", encap, g.Src, g.Dst)
		}
	}
	f := &Frame{Encap: RoCEv2IPv4, Src: netip.MustParseAddr("::ffff:10.0.0.1"), Dst: netip.MustParseAddr("fe80::1"),
		Packet: Packet{BTH: BTH{Opcode: Acknowledge}}}
	var g Frame
	if err := g.DecodeEthernet(f.AppendEthernet(nil)); err != nil {
		t.Fatal(err)
	}
	if g.Src != netip.MustParseAddr("10.0.0.1") || g.Dst != netip.MustParseAddr("0.0.0.0") {
		t.Errorf("IPv4 frame from %v to %v decodes as %v to %v", f.Src, f.Dst, g.Src, g.Dst)
	}
	f = &Frame{Encap: RoCEv2IPv6, Src: netip.MustParseAddr("::ffff:10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		Packet: Packet{BTH: BTH{Opcode: Acknowledge}}}
	if err := g.DecodeEthernet(f.AppendEthernet(nil)); err != nil {
		t.Fatal(err)
	}
	if g.Src != netip.MustParseAddr("::ffff:10.0.0.1") || g.Dst != netip.MustParseAddr("::ffff:10.0.0.2") || !g.IsIPv6() {
		t.Errorf("IPv6 frame decodes with addresses %v, %v", g.Src, g.Dst)
	}
}

// ipv4Frame wraps transport (BTH onwards, without ICRC) in Ethernet, IPv4
// and UDP with the right lengths and a correct ICRC.
func ipv4Frame(transport []byte) []byte {
	f := &Frame{Encap: RoCEv2IPv4, Src: netip.MustParseAddr("10.0.0.2"), Dst: netip.MustParseAddr("10.0.0.1"),
		TTL: 64, DF: true, SrcPort: 0xC000, DstPort: UDPPort}
	b := f.AppendEthernet(nil) // a bare BTH: 14+20+8+12+4
	b = b[:14+20+8]
	b = append(b, transport...)
	binary.BigEndian.PutUint16(b[14+2:], uint16(20+8+len(transport)+ICRCLen))
	b[14+10], b[14+11] = 0, 0
	binary.BigEndian.PutUint16(b[14+10:], ipv4Checksum(b[14:14+20]))
	binary.BigEndian.PutUint16(b[14+20+4:], uint16(8+len(transport)+ICRCLen))
	return binary.LittleEndian.AppendUint32(b, ComputeICRC(b[14:], RoCEv2IPv4))
}

func TestMalformedShortHeaders(t *testing.T) {
	for _, op := range rcOpcodes {
		hl := HeadersLen(op)
		full := (&Packet{BTH: BTH{Opcode: op}}).AppendTransport(nil)
		if len(full) != hl {
			t.Fatalf("%v: empty packet is %d bytes, want %d", op, len(full), hl)
		}
		for n := 0; n < hl; n++ {
			var p Packet
			err := p.DecodeTransport(full[:n])
			if !errors.Is(err, ErrShort) {
				t.Errorf("%v: DecodeTransport of %d of %d header bytes: %v, want ErrShort", op, n, hl, err)
			}
			if n < BTHLen {
				continue
			}
			// In a frame whose lengths agree: still too short.
			var f Frame
			err = f.DecodeEthernet(ipv4Frame(full[:n]))
			if !errors.Is(err, ErrShort) {
				t.Errorf("%v: frame with %d of %d header bytes: %v, want ErrShort", op, n, hl, err)
			}
		}
		var p Packet
		if err := p.DecodeTransport(full); err != nil {
			t.Errorf("%v: DecodeTransport of exactly the headers: %v", op, err)
		}
		var f Frame
		if err := f.DecodeEthernet(ipv4Frame(full)); err != nil || f.CheckICRC() != ICRCOK {
			t.Errorf("%v: frame of exactly the headers: %v, ICRC %v", op, err, f.CheckICRC())
		}
	}
	// Frames too short for their Ethernet, IP or UDP headers, or for a BTH
	// and ICRC.
	good := ipv4Frame((&Packet{BTH: BTH{Opcode: SendOnly}}).AppendTransport(nil))
	for n := 0; n < 14+20+8; n++ {
		var f Frame
		err := f.DecodeEthernet(good[:n])
		if !errors.Is(err, ErrShort) && !errors.Is(err, ErrMalformed) {
			t.Errorf("frame cut at %d bytes: %v, want ErrShort", n, err)
		}
	}
	var f Frame
	for n := 0; n < BTHLen+ICRCLen; n++ {
		b := ipv4Frame(make([]byte, n))
		b = b[:len(b)-ICRCLen] // the ICRC counted in the lengths is the last 4 of the n bytes
		binary.BigEndian.PutUint16(b[14+2:], uint16(20+8+n))
		binary.BigEndian.PutUint16(b[14+24:], uint16(8+n))
		if err := f.DecodeEthernet(b); !errors.Is(err, ErrShort) {
			t.Errorf("UDP payload of %d bytes: %v, want ErrShort", n, err)
		}
	}
}

func TestMalformedUnknownOpcode(t *testing.T) {
	known := map[Opcode]bool{}
	for _, op := range rcOpcodes {
		known[op] = true
	}
	for o := 0; o < 256; o++ {
		op := Opcode(o)
		if known[op] {
			if !op.Known() {
				t.Errorf("%v: Known() = false", op)
			}
			continue
		}
		if op.Known() {
			t.Errorf("opcode %#02x: Known() = true", o)
		}
		transport := append([]byte{byte(op), 0, 0xFF, 0xFF, 0, 0, 0, 0x11, 0x80, 0, 0, 5}, "payload!"...)
		var p Packet
		err := p.DecodeTransport(transport)
		if !errors.Is(err, ErrUnknownOpcode) {
			t.Errorf("opcode %#02x: %v, want ErrUnknownOpcode", o, err)
		}
		if p.Opcode != op || p.DestQP != 0x11 || p.PSN != 5 || !p.AckReq || string(p.Payload) != "payload!" {
			t.Errorf("opcode %#02x: BTH not decoded: %+v", o, p.BTH)
		}
		var f Frame
		err = f.DecodeEthernet(ipv4Frame(transport))
		if !errors.Is(err, ErrUnknownOpcode) {
			t.Errorf("opcode %#02x in a frame: %v, want ErrUnknownOpcode", o, err)
		}
		// The ICRC can still be checked: a receiver drops a frame with a
		// bad one before it looks at the opcode.
		if st := f.CheckICRC(); st != ICRCOK {
			t.Errorf("opcode %#02x in a frame: ICRC %v", o, st)
		}
	}
	var p Packet
	if err := p.DecodeTransport([]byte{0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); !errors.Is(err, ErrUnknownOpcode) {
		t.Errorf("reserved opcode 0x15: %v", err)
	}
}

func TestMalformedPad(t *testing.T) {
	tests := []struct {
		op      Opcode
		payload int // bytes after the headers, pad included
		pad     uint8
		ok      bool
	}{
		{SendOnly, 0, 0, true},
		{SendOnly, 0, 1, false},
		{SendOnly, 2, 3, false},
		{SendOnly, 3, 3, true},
		{SendOnly, 4, 3, true},
		{Acknowledge, 0, 1, false},
		{Acknowledge, 0, 3, false},
		{ReadRequest, 0, 2, false},
		{ReadResponseLast, 1, 2, false},
		{ReadResponseLast, 2, 2, true},
		{CompareSwap, 0, 1, false},
		{WriteOnlyImm, 2, 3, false},
	}
	for _, tc := range tests {
		tr := (&Packet{BTH: BTH{Opcode: tc.op}, Payload: make([]byte, tc.payload), PadOverride: 1}).AppendTransport(nil)
		tr[1] |= tc.pad << 4
		var p Packet
		err := p.DecodeTransport(tr)
		if tc.ok {
			if err != nil {
				t.Errorf("%v with %d bytes and pad %d: %v", tc.op, tc.payload, tc.pad, err)
			} else if len(p.Payload) != tc.payload-int(tc.pad) {
				t.Errorf("%v with %d bytes and pad %d: payload %d bytes", tc.op, tc.payload, tc.pad, len(p.Payload))
			}
			continue
		}
		if !errors.Is(err, ErrPad) {
			t.Errorf("%v with %d bytes and pad %d: %v, want ErrPad", tc.op, tc.payload, tc.pad, err)
		}
		var f Frame
		if err := f.DecodeEthernet(ipv4Frame(tr)); !errors.Is(err, ErrPad) {
			t.Errorf("%v with %d bytes and pad %d in a frame: %v, want ErrPad", tc.op, tc.payload, tc.pad, err)
		} else if st := f.CheckICRC(); st != ICRCOK {
			t.Errorf("%v with %d bytes and pad %d in a frame: ICRC %v", tc.op, tc.payload, tc.pad, st)
		}
	}
}

func TestMalformedReservedBits(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*BTH)
	}{
		{"TVer", func(h *BTH) { h.TVer = 1 }},
		{"TVer=15", func(h *BTH) { h.TVer = 15 }},
		{"resv6", func(h *BTH) { h.Resv6 = 0x20 }},
		{"resv6 low", func(h *BTH) { h.Resv6 = 0x01 }},
		{"resv7", func(h *BTH) { h.Resv7 = 0x40 }},
		{"resv7 low", func(h *BTH) { h.Resv7 = 0x01 }},
		{"all", func(h *BTH) { h.TVer, h.Resv6, h.Resv7 = 0xF, 0x3F, 0x7F }},
	} {
		for _, encap := range encaps {
			f := &Frame{Encap: encap, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
				Packet: Packet{BTH: BTH{Opcode: SendOnly, DestQP: 0x11, PSN: 7}, Payload: []byte("abc")}}
			tc.set(&f.BTH)
			var g Frame
			if err := g.DecodeEthernet(f.AppendEthernet(nil)); err != nil {
				t.Errorf("%s over %v: %v", tc.name, encap, err)
				continue
			}
			if !g.ReservedBitsSet() {
				t.Errorf("%s over %v: ReservedBitsSet = false", tc.name, encap)
			}
			if g.TVer != f.TVer || g.Resv6 != f.Resv6 || g.Resv7 != f.Resv7 || g.DestQP != 0x11 || g.PSN != 7 {
				t.Errorf("%s over %v: decoded %+v", tc.name, encap, g.BTH)
			}
			if st := g.CheckICRC(); st != ICRCOK {
				t.Errorf("%s over %v: ICRC %v", tc.name, encap, st)
			}
		}
	}
	if (&Packet{}).ReservedBitsSet() {
		t.Error("ReservedBitsSet on a zero packet")
	}
}

func TestMalformedBadICRC(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, encap := range encaps {
		frame := randomFrame(rng, WriteFirst, encap, true, 5).AppendEthernet(nil)
		for i := len(frame) - ICRCLen; i < len(frame); i++ {
			for bit := 0; bit < 8; bit++ {
				b := bytes.Clone(frame)
				b[i] ^= 1 << bit
				var f Frame
				if err := f.DecodeEthernet(b); err != nil {
					t.Fatalf("%v: %v", encap, err)
				}
				if st := f.CheckICRC(); st != ICRCBad {
					t.Errorf("%v: ICRC byte %d bit %d flipped: %v, want bad", encap, i, bit, st)
				}
			}
		}
		// A payload byte.
		b := bytes.Clone(frame)
		b[len(b)-ICRCLen-3] ^= 0x40
		var f Frame
		if err := f.DecodeEthernet(b); err != nil || f.CheckICRC() != ICRCBad {
			t.Errorf("%v: payload byte changed: %v, ICRC %v", encap, err, f.CheckICRC())
		}
		// CheckICRC is idempotent.
		if f.CheckICRC() != ICRCBad {
			t.Errorf("%v: second CheckICRC differs", encap)
		}
	}
}

func TestMalformedNotRoCE(t *testing.T) {
	base := (&Frame{Encap: RoCEv2IPv4, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		SrcPort: 0xC001, Packet: Packet{BTH: BTH{Opcode: SendOnly}, Payload: []byte("data")}}).AppendEthernet(nil)
	base6 := (&Frame{Encap: RoCEv2IPv6, Src: netip.MustParseAddr("fe80::1"), Dst: netip.MustParseAddr("fe80::2"),
		SrcPort: 0xC001, Packet: Packet{BTH: BTH{Opcode: SendOnly}, Payload: []byte("data")}}).AppendEthernet(nil)
	base1 := (&Frame{Encap: RoCEv1, Src: netip.MustParseAddr("fe80::1"), Dst: netip.MustParseAddr("fe80::2"),
		Packet: Packet{BTH: BTH{Opcode: SendOnly}, Payload: []byte("data")}}).AppendEthernet(nil)
	const ip = 14
	tests := []struct {
		name  string
		frame []byte
		edit  func(b []byte)
	}{
		{"ARP EtherType", base, func(b []byte) { b[12], b[13] = 0x08, 0x06 }},
		{"UDP port 4789", base, func(b []byte) { binary.BigEndian.PutUint16(b[ip+22:], 4789) }},
		{"UDP source port 4791 only", base, func(b []byte) {
			binary.BigEndian.PutUint16(b[ip+20:], 4791)
			binary.BigEndian.PutUint16(b[ip+22:], 0xC001)
		}},
		{"TCP", base, func(b []byte) { b[ip+9] = 6 }},
		{"ICMP", base, func(b []byte) { b[ip+9] = 1 }},
		{"more fragments", base, func(b []byte) { b[ip+6] |= 0x20 }},
		{"fragment offset", base, func(b []byte) { b[ip+7] = 0x01 }},
		{"fragment offset high", base, func(b []byte) { b[ip+6] |= 0x10 }},
		{"IPv6 TCP", base6, func(b []byte) { b[ip+6] = 6 }},
		{"IPv6 fragment header", base6, func(b []byte) { b[ip+6] = 44 }},
		{"IPv6 UDP port 53", base6, func(b []byte) { binary.BigEndian.PutUint16(b[ip+42:], 53) }},
		{"GRH next header UDP", base1, func(b []byte) { b[ip+6] = 17 }},
	}
	for _, tc := range tests {
		b := bytes.Clone(tc.frame)
		tc.edit(b)
		var f Frame
		if err := f.DecodeEthernet(b); !errors.Is(err, ErrNotRoCE) {
			t.Errorf("%s: %v, want ErrNotRoCE", tc.name, err)
		}
	}
	// With a VLAN tag, and QinQ, the same frames are RoCE.
	for _, et := range []uint16{0x8100, 0x88A8, 0x9100} {
		b := append(bytes.Clone(base[:12]), byte(et>>8), byte(et), 0x20, 0x05)
		if et != 0x8100 {
			b = append(b, 0x81, 0x00, 0x00, 0x07)
		}
		b = append(b, base[12:]...)
		var f Frame
		if err := f.DecodeEthernet(b); err != nil || !f.HasVLAN || f.VLAN != 0x2005 || f.CheckICRC() != ICRCOK {
			t.Errorf("tag %#04x: %v, VLAN %v %#x, ICRC %v", et, err, f.HasVLAN, f.VLAN, f.CheckICRC())
		}
	}
	// Version mismatches and bad lengths are malformed, not "not RoCE".
	for _, tc := range []struct {
		name string
		edit func(b []byte)
	}{
		{"IPv4 version 6", func(b []byte) { b[ip] = 0x65 }},
		{"IHL 4", func(b []byte) { b[ip] = 0x44 }},
		{"total length < headers", func(b []byte) { binary.BigEndian.PutUint16(b[ip+2:], 27) }},
		{"UDP length 7", func(b []byte) { binary.BigEndian.PutUint16(b[ip+24:], 7) }},
		{"UDP length > IP", func(b []byte) { binary.BigEndian.PutUint16(b[ip+24:], 200) }},
	} {
		b := bytes.Clone(base)
		tc.edit(b)
		var f Frame
		if err := f.DecodeEthernet(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", tc.name, err)
		}
	}
}

// TestTruncated cuts frames at every length: a frame cut inside the
// transport decodes its headers with Truncated set and the ICRC
// unverifiable; one cut before the BTH is ErrShort.
func TestTruncated(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, op := range rcOpcodes {
		for _, encap := range encaps {
			for _, plen := range []int{0, 1, 5, 64} {
				f := randomFrame(rng, op, encap, rng.Intn(2) == 0, plen)
				frame := f.AppendEthernet(nil)
				var whole Frame
				if err := whole.DecodeEthernet(frame); err != nil {
					t.Fatal(err)
				}
				hdrEnd := len(frame) - ICRCLen - len(whole.Payload) - int(whole.PadCnt)
				for n := len(frame) - 1; n >= 0; n-- {
					var g Frame
					err := g.DecodeEthernet(frame[:n])
					name := fmt.Sprintf("%v/%v/len=%d cut at %d of %d", op, encap, plen, n, len(frame))
					if n < hdrEnd {
						if !errors.Is(err, ErrShort) {
							t.Errorf("%s: %v, want ErrShort", name, err)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if !g.Truncated || g.CheckICRC() != ICRCUnverifiable || g.ICRC != 0 {
						t.Errorf("%s: Truncated %v, ICRC %v %#x", name, g.Truncated, g.CheckICRC(), g.ICRC)
					}
					// Every header field as in the whole frame; the payload
					// is what was captured of it.
					wantLen := min(n-hdrEnd, len(whole.Payload))
					if !bytes.Equal(g.Payload, whole.Payload[:wantLen]) {
						t.Errorf("%s: payload %x, want %x", name, g.Payload, whole.Payload[:wantLen])
					}
					w := whole
					w.Truncated, w.ICRC = true, 0
					w.Payload = g.Payload
					if n < len(frame)-ICRCLen {
						w.PadOverride = 0 // the pad is not all there
					}
					if !framesEqual(&g, &w) {
						t.Errorf("%s: decoded\n%+v\nwant\n%+v", name, g, w)
					}
				}
			}
		}
	}
}
