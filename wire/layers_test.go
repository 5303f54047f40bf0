package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// The tests register RoCEv2's UDP port with gopacket as the package
// documentation tells programs to, so that gopacket.NewPacket decodes it.
func init() {
	layers.RegisterUDPPortLayerType(layers.UDPPort(UDPPort), LayerTypeBTH)
}

// layerParser is a DecodingLayerParser for RoCEv2 over IPv4 or IPv6.
type layerParser struct {
	eth     layers.Ethernet
	dot1q   layers.Dot1Q
	ip4     layers.IPv4
	ip6     layers.IPv6
	udp     layers.UDP
	roce    RoCE
	parser  *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
}

func newLayerParser() *layerParser {
	lp := &layerParser{decoded: make([]gopacket.LayerType, 0, 8)}
	lp.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &lp.eth, &lp.dot1q, &lp.ip4, &lp.ip6, &lp.udp, &lp.roce)
	lp.parser.IgnoreUnsupported = true // the RoCE payload
	return lp
}

func (lp *layerParser) decode(data []byte) error { return lp.parser.DecodeLayers(data, &lp.decoded) }

// ipLayer returns the decoded network layer.
func (lp *layerParser) ipLayer() gopacket.Layer {
	if slices.Contains(lp.decoded, layers.LayerTypeIPv6) {
		return &lp.ip6
	}
	return &lp.ip4
}

func TestLayerTypeRegistration(t *testing.T) {
	if got := layers.UDPPort(4791).LayerType(); got != LayerTypeBTH {
		t.Errorf("UDP port 4791 decodes as %v, want %v", got, LayerTypeBTH)
	}
	if LayerTypeBTH.String() != "BTH" {
		t.Errorf("LayerTypeBTH.String() = %q", LayerTypeBTH.String())
	}
	var r RoCE
	var _ gopacket.Layer = &r
	var _ gopacket.DecodingLayer = &r
	var _ gopacket.SerializableLayer = &r
	var _ *BTHLayer = &r
	if r.LayerType() != LayerTypeBTH || !r.CanDecode().Contains(LayerTypeBTH) {
		t.Error("LayerType or CanDecode is not LayerTypeBTH")
	}
}

func TestDecodingLayerParserVectors(t *testing.T) {
	lp := newLayerParser()
	for _, v := range loadVectors(t) {
		if err := lp.decode(v.Frame); err != nil {
			t.Errorf("%s: DecodeLayers: %v", v.Name, err)
			continue
		}
		want := []gopacket.LayerType{layers.LayerTypeEthernet, layers.LayerTypeIPv4, layers.LayerTypeUDP, LayerTypeBTH}
		if !slices.Equal(lp.decoded, want) {
			t.Errorf("%s: decoded %v, want %v", v.Name, lp.decoded, want)
		}
		var f Frame
		if err := f.DecodeEthernet(v.Frame); err != nil {
			t.Fatal(err)
		}
		if !packetsEqual(&lp.roce.Packet, &f.Packet) || lp.roce.ICRC != f.ICRC {
			t.Errorf("%s: RoCE layer %v ICRC %#x, Frame %v ICRC %#x", v.Name, &lp.roce.Packet, lp.roce.ICRC, &f.Packet, f.ICRC)
		}
		if st := lp.roce.VerifyICRC(&lp.ip4, &lp.udp); st != ICRCOK {
			t.Errorf("%s: VerifyICRC = %v", v.Name, st)
		}
		if got := lp.roce.LayerContents(); len(got) != HeadersLen(f.Opcode) {
			t.Errorf("%s: LayerContents is %d bytes, want %d", v.Name, len(got), HeadersLen(f.Opcode))
		}
		if !bytes.Equal(lp.roce.LayerPayload(), f.Payload) {
			t.Errorf("%s: LayerPayload differs", v.Name)
		}
		wantNext := gopacket.LayerTypeZero
		if len(f.Payload) > 0 {
			wantNext = gopacket.LayerTypePayload
		}
		if lp.roce.NextLayerType() != wantNext {
			t.Errorf("%s: NextLayerType = %v, want %v", v.Name, lp.roce.NextLayerType(), wantNext)
		}
		// A network layer whose version is neither 4 nor 6 is not
		// checked, and neither is a missing one.
		if st := lp.roce.VerifyICRC(gopacket.Payload{0x55, 0, 0, 0}, &lp.udp); st != ICRCUnchecked {
			t.Errorf("%s: VerifyICRC with a version 5 header = %v", v.Name, st)
		}
		if st := lp.roce.VerifyICRC((*layers.IPv4)(nil), &lp.udp); st != ICRCUnchecked {
			t.Errorf("%s: VerifyICRC with a nil IPv4 layer = %v", v.Name, st)
		}
		// A changed covered byte fails VerifyICRC.
		b := bytes.Clone(v.Frame)
		b[len(b)-5] ^= 1
		if err := lp.decode(b); err == nil {
			if st := lp.roce.VerifyICRC(&lp.ip4, &lp.udp); st != ICRCBad {
				t.Errorf("%s: VerifyICRC after a change = %v", v.Name, st)
			}
		}
		// Decoding allocates nothing.
		allocs := testing.AllocsPerRun(200, func() {
			if err := lp.decode(v.Frame); err != nil {
				t.Fatal(err)
			}
			if lp.roce.VerifyICRC(&lp.ip4, &lp.udp) != ICRCOK {
				t.Fatal("ICRC")
			}
		})
		if allocs != 0 {
			t.Errorf("%s: DecodeLayers + VerifyICRC: %v allocations per frame", v.Name, allocs)
		}
	}
	// With a gopacket.Payload after the RoCE layer, nothing is left over.
	var (
		eth  layers.Ethernet
		ip4  layers.IPv4
		ip6  layers.IPv6
		udp  layers.UDP
		roce RoCE
		pl   gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp, &roce, &pl)
	decoded := make([]gopacket.LayerType, 0, 8)
	for _, v := range loadVectors(t) {
		if err := parser.DecodeLayers(v.Frame, &decoded); err != nil {
			t.Errorf("%s: with Payload: %v", v.Name, err)
		}
		if len(roce.Payload) > 0 && (decoded[len(decoded)-1] != gopacket.LayerTypePayload || !bytes.Equal(pl, roce.Payload)) {
			t.Errorf("%s: with Payload: decoded %v", v.Name, decoded)
		}
		allocs := testing.AllocsPerRun(100, func() { _ = parser.DecodeLayers(v.Frame, &decoded) })
		if allocs != 0 {
			t.Errorf("%s: with Payload: %v allocations", v.Name, allocs)
		}
	}
}

// TestDecodingLayerParserCaptures decodes RoCEv2 frames through
// gopacket and compares with Frame: frames built here (every RC opcode,
// IPv4 and IPv6, with and without a VLAN tag, several payload lengths)
// and, when the shared captures are beside the repository, every RoCEv2
// frame of the rxe captures.
func TestDecodingLayerParserCaptures(t *testing.T) {
	lp := newLayerParser()
	rng := rand.New(rand.NewSource(11))
	n := 0
	for _, op := range rcOpcodes {
		for _, encap := range []Encap{RoCEv2IPv4, RoCEv2IPv6} {
			for _, plen := range []int{0, 3, 64, 1024} {
				f := randomFrame(rng, op, encap, rng.Intn(2) == 0, plen)
				layerParserAgrees(t, lp, "built", f.AppendEthernet(nil))
				n++
			}
		}
	}
	t.Logf("built: %d RoCE frames agree", n)
	files, _ := filepath.Glob(filepath.Join(capturesDir, "rxe", "*.pcap"))
	if len(files) == 0 {
		t.Logf("no rxe captures in %s: built frames only", capturesDir)
	}
	for _, path := range files {
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pcapgo.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		n, v6 := 0, 0
		for {
			data, _, err := r.ZeroCopyReadPacketData()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if f := layerParserAgrees(t, lp, path, data); f != nil {
				n++
				if f.IsIPv6() {
					v6++
				}
			}
		}
		fh.Close()
		t.Logf("%s: %d RoCE frames (%d IPv6) agree", filepath.Base(path), n, v6)
	}
}

// layerParserAgrees decodes data with Frame and, where that finds RoCE,
// with lp, and reports a difference between them or a bad ICRC as seen
// through the layers; it returns the frame (nil: not RoCE).
func layerParserAgrees(t *testing.T, lp *layerParser, name string, data []byte) *Frame {
	t.Helper()
	var f Frame
	if f.DecodeEthernet(data) != nil {
		return nil
	}
	if err := lp.decode(data); err != nil || lp.decoded[len(lp.decoded)-1] != LayerTypeBTH {
		t.Errorf("%s: frame %v: %v, decoded %v", name, &f.Packet, err, lp.decoded)
		return &f
	}
	if !packetsEqual(&lp.roce.Packet, &f.Packet) || lp.roce.ICRC != f.ICRC {
		t.Errorf("%s: RoCE layer %v, Frame %v", name, &lp.roce.Packet, &f.Packet)
	}
	if st := lp.roce.VerifyICRC(lp.ipLayer(), &lp.udp); st != ICRCOK {
		t.Errorf("%s: %v: VerifyICRC = %v", name, &f.Packet, st)
	}
	return &f
}

func TestNewPacketVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		pkt := gopacket.NewPacket(v.Frame, layers.LayerTypeEthernet, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Errorf("%s: %v", v.Name, el.Error())
			continue
		}
		l := pkt.Layer(LayerTypeBTH)
		if l == nil {
			t.Errorf("%s: no BTH layer in %v", v.Name, pkt)
			continue
		}
		roce := l.(*RoCE)
		if s := pkt.String() + pkt.Dump() + gopacket.LayerString(roce); len(s) == 0 {
			t.Errorf("%s: empty packet dump", v.Name)
		}
		var f Frame
		if err := f.DecodeEthernet(v.Frame); err != nil {
			t.Fatal(err)
		}
		if !packetsEqual(&roce.Packet, &f.Packet) || roce.ICRC != f.ICRC {
			t.Errorf("%s: NewPacket %v, Frame %v", v.Name, &roce.Packet, &f.Packet)
		}
		ip := pkt.Layer(layers.LayerTypeIPv4)
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if st := roce.VerifyICRC(ip, udp); st != ICRCOK {
			t.Errorf("%s: VerifyICRC = %v", v.Name, st)
		}
		if len(f.Payload) > 0 {
			app := pkt.ApplicationLayer()
			if app == nil || !bytes.Equal(app.Payload(), f.Payload) {
				t.Errorf("%s: application layer %v", v.Name, app)
			}
		}
	}
	// A datagram to 4791 too short for a BTH is a decode failure, not a panic.
	f := &Frame{Encap: RoCEv2IPv4, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		Packet: Packet{BTH: BTH{Opcode: SendOnly}}}
	b := f.AppendEthernet(nil)
	b = b[:len(b)-10]
	binary.BigEndian.PutUint16(b[14+2:], uint16(len(b)-14))
	binary.BigEndian.PutUint16(b[14+24:], uint16(len(b)-14-20))
	pkt := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el == nil || !errors.Is(el.Error(), ErrShort) {
		t.Errorf("short RoCE datagram: error layer %v", el)
	}
}

// vectorLayers decodes a vector into gopacket layers for serializing.
func vectorLayers(t *testing.T, frame []byte) (*layers.Ethernet, *layers.IPv4, *layers.UDP, *RoCE) {
	t.Helper()
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el != nil {
		t.Fatal(el.Error())
	}
	roce := *pkt.Layer(LayerTypeBTH).(*RoCE)
	roce.Payload = bytes.Clone(roce.Payload)
	return pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet), pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4),
		pkt.Layer(layers.LayerTypeUDP).(*layers.UDP), &roce
}

func TestSerializeVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		eth, ip4, udp, roce := vectorLayers(t, v.Frame)
		wantICRC := roce.ICRC

		// SerializeTo with the decoded ICRC as placeholder gives the vector.
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, eth, ip4, udp, roce); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if !bytes.Equal(buf.Bytes(), v.Frame) {
			t.Errorf("%s: SerializeLayers:\n got %x\nwant %x", v.Name, buf.Bytes(), v.Frame)
		}

		// SerializeFrame computes the ICRC (and lengths, with FixLengths).
		roce.ICRC = 0xDEADBEEF
		ip4.Length, udp.Length = 0, 0
		opts := gopacket.SerializeOptions{FixLengths: true}
		if err := SerializeFrame(buf, opts, eth, ip4, udp, roce); err != nil {
			t.Fatalf("%s: SerializeFrame: %v", v.Name, err)
		}
		if !bytes.Equal(buf.Bytes(), v.Frame) {
			t.Errorf("%s: SerializeFrame:\n got %x\nwant %x", v.Name, buf.Bytes(), v.Frame)
		}
		if roce.ICRC != wantICRC {
			t.Errorf("%s: SerializeFrame set ICRC %#x, want %#x", v.Name, roce.ICRC, wantICRC)
		}
		if got := buf.Layers(); !slices.Equal(got, []gopacket.LayerType{LayerTypeBTH, layers.LayerTypeUDP, layers.LayerTypeIPv4, layers.LayerTypeEthernet}) {
			t.Errorf("%s: buffer layers %v", v.Name, got)
		}

		// With checksums: the IPv4 checksum is the vector's, the UDP
		// checksum is computed over the final ICRC, and the ICRC (which
		// masks the UDP checksum) is unchanged.
		roce.ICRC = 0
		ip4.Checksum = 0
		opts.ComputeChecksums = true
		if err := SerializeFrame(buf, opts, eth, ip4, udp, roce); err != nil {
			t.Fatalf("%s: SerializeFrame with checksums: %v", v.Name, err)
		}
		out := buf.Bytes()
		var f Frame
		if err := f.DecodeEthernet(out); err != nil || f.CheckICRC() != ICRCOK {
			t.Fatalf("%s: with checksums: %v, ICRC %v", v.Name, err, f.CheckICRC())
		}
		if f.ICRC != wantICRC || !bytes.Equal(out[:14+10], v.Frame[:14+10]) || !bytes.Equal(out[14+12:14+26], v.Frame[14+12:14+26]) {
			t.Errorf("%s: with checksums:\n got %x\nwant %x", v.Name, out, v.Frame)
		}
		if f.UDPChecksum == 0 || udpChecksum(out[14:]) != 0 {
			t.Errorf("%s: UDP checksum %#04x does not verify", v.Name, f.UDPChecksum)
		}
		if ipv4Checksum(out[14:34]) != 0 {
			t.Errorf("%s: IPv4 checksum does not verify", v.Name)
		}
	}
}

// udpChecksum returns the ones'-complement sum over the IPv4 pseudo-header
// and the UDP datagram of an IPv4 packet: 0 when the checksum verifies.
func udpChecksum(ip []byte) uint16 {
	ihl := int(ip[0]&0x0F) * 4
	udp := ip[ihl:binary.BigEndian.Uint16(ip[2:])]
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	sum += 17 + uint32(len(udp))
	add(udp)
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

// TestSerializeFrameEncaps builds frames from gopacket layers for each
// encapsulation and compares them with Frame.AppendEthernet.
func TestSerializeFrameEncaps(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	for _, op := range rcOpcodes {
		for _, encap := range encaps {
			for _, vlan := range []bool{false, true} {
				for _, plen := range []int{0, 1, 2, 3, 4, 33} {
					f := randomFrame(rng, op, encap, vlan, plen)
					f.UDPChecksum = 0
					f.Resv6 = 0
					want := f.AppendEthernet(nil)

					eth := &layers.Ethernet{SrcMAC: net.HardwareAddr(f.SrcMAC[:]), DstMAC: net.HardwareAddr(f.DstMAC[:])}
					var ip gopacket.SerializableLayer
					var udp *layers.UDP
					switch encap {
					case RoCEv2IPv4:
						eth.EthernetType = layers.EthernetTypeIPv4
						var flags layers.IPv4Flag
						if f.DF {
							flags = layers.IPv4DontFragment
						}
						ip = &layers.IPv4{Version: 4, TOS: f.TOS, Id: f.IPID, Flags: flags, TTL: f.TTL,
							Protocol: layers.IPProtocolUDP, SrcIP: f.Src.AsSlice(), DstIP: f.Dst.AsSlice()}
					default:
						eth.EthernetType = layers.EthernetTypeIPv6
						next := layers.IPProtocolUDP
						if encap == RoCEv1 {
							eth.EthernetType = layers.EthernetType(EtherTypeRoCEv1)
							next = layers.IPProtocol(GRHNextHeaderIBA)
						}
						ip = &layers.IPv6{Version: 6, TrafficClass: f.TOS, FlowLabel: f.FlowLabel, NextHeader: next,
							HopLimit: f.TTL, SrcIP: f.Src.AsSlice(), DstIP: f.Dst.AsSlice()}
					}
					if encap != RoCEv1 {
						udp = &layers.UDP{SrcPort: layers.UDPPort(f.SrcPort), DstPort: layers.UDPPort(f.DstPort)}
					}
					roce := &RoCE{Packet: f.Packet}
					buf := gopacket.NewSerializeBuffer()
					ethArg := eth
					if vlan {
						ethArg = nil
					}
					// UDP checksums only where the frame wants 0: none.
					o := opts
					o.ComputeChecksums = false
					if encap == RoCEv2IPv4 {
						ip.(*layers.IPv4).Checksum = 0
					}
					if err := SerializeFrame(buf, o, ethArg, ip, udp, roce); err != nil {
						t.Fatalf("%v/%v: %v", op, encap, err)
					}
					if vlan {
						inner := eth.EthernetType
						dot1q := &layers.Dot1Q{Priority: uint8(f.VLAN >> 13), DropEligible: f.VLAN&0x1000 != 0,
							VLANIdentifier: f.VLAN & 0xFFF, Type: inner}
						eth.EthernetType = layers.EthernetTypeDot1Q
						if err := dot1q.SerializeTo(buf, o); err != nil {
							t.Fatal(err)
						}
						if err := eth.SerializeTo(buf, o); err != nil {
							t.Fatal(err)
						}
					}
					got := bytes.Clone(buf.Bytes())
					if encap == RoCEv2IPv4 {
						// gopacket computes no IPv4 checksum without
						// ComputeChecksums (which would also compute a
						// UDP checksum): take Frame's.
						ip := 14
						if vlan {
							ip += 4
						}
						copy(got[ip+10:ip+12], want[ip+10:ip+12])
					}
					if len(got) > len(want) {
						// Ethernet padding to 60 bytes.
						if !bytes.Equal(got[len(want):], make([]byte, len(got)-len(want))) {
							t.Errorf("%v/%v: padding %x", op, encap, got[len(want):])
						}
						got = got[:len(want)]
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%v/%v/vlan=%v/len=%d: SerializeFrame\n got %x\nwant %x", op, encap, vlan, plen, got, want)
					}
					if roce.ICRC != binary.LittleEndian.Uint32(want[len(want)-4:]) {
						t.Errorf("%v/%v: roce.ICRC %#x", op, encap, roce.ICRC)
					}
				}
			}
		}
	}
}

// TestSerializeToFollowingPayload: a RoCE layer followed by a
// gopacket.Payload takes it as its payload, pads it and appends the ICRC.
func TestSerializeToFollowingPayload(t *testing.T) {
	for plen := 0; plen < 9; plen++ {
		payload := bytes.Repeat([]byte{0xA5}, plen)
		roce := &RoCE{Packet: Packet{BTH: BTH{Opcode: WriteOnlyImm, DestQP: 0x11, PSN: 9}, RETH: RETH{VA: 1, RKey: 2, Length: uint32(plen)}, Imm: 7}, ICRC: 0x01020304}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, roce, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		p := roce.Packet
		p.Payload = payload
		want := binary.LittleEndian.AppendUint32(p.AppendTransport(nil), 0x01020304)
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("len %d:\n got %x\nwant %x", plen, buf.Bytes(), want)
		}
		var back RoCE
		if err := back.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil || !bytes.Equal(back.Payload, payload) || back.ICRC != 0x01020304 {
			t.Errorf("len %d: decoded %v, %x", plen, err, back.Payload)
		}
	}
	roce := &RoCE{Packet: Packet{BTH: BTH{Opcode: SendOnly}, Payload: []byte{1}}}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, roce, gopacket.Payload{2}); err == nil {
		t.Error("a payload in both the RoCE layer and a following layer: no error")
	}
}

func TestRoCEDecodeErrors(t *testing.T) {
	var r RoCE
	for n := 0; n < BTHLen+ICRCLen; n++ {
		if err := r.DecodeFromBytes(make([]byte, n), gopacket.NilDecodeFeedback); !errors.Is(err, ErrShort) {
			t.Errorf("%d bytes: %v", n, err)
		}
		if r.VerifyICRC(&layers.IPv4{}, &layers.UDP{}) != ICRCUnchecked {
			t.Errorf("%d bytes: VerifyICRC after a failed decode", n)
		}
	}
	b := make([]byte, 16)
	b[0] = 0x15
	if err := r.DecodeFromBytes(b, gopacket.NilDecodeFeedback); !errors.Is(err, ErrUnknownOpcode) {
		t.Errorf("opcode 0x15: %v", err)
	}
	b[0], b[1] = byte(Acknowledge), 0x10
	b = append(b, 0, 0, 0, 0)
	if err := r.DecodeFromBytes(b, gopacket.NilDecodeFeedback); !errors.Is(err, ErrPad) {
		t.Errorf("ACK with pad 1: %v", err)
	}
}

// TestVerifyICRCTruncated: a datagram cut short by the capture is
// unverifiable through the gopacket layers too.
func TestVerifyICRCTruncated(t *testing.T) {
	v := loadVectors(t)[4] // READ response First, 64-byte payload
	lp := newLayerParser()
	if err := lp.decode(v.Frame[:len(v.Frame)-20]); err != nil {
		t.Fatal(err)
	}
	if !lp.parser.Truncated {
		t.Error("parser did not notice the truncation")
	}
	if st := lp.roce.VerifyICRC(&lp.ip4, &lp.udp); st != ICRCUnverifiable {
		t.Errorf("VerifyICRC = %v, want unverifiable", st)
	}
}
