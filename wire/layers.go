package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/gopacket"
)

// gopacket integration: the InfiniBand transport that RoCEv2 carries on UDP
// destination port 4791 (Annex A17), from the BTH through the ICRC, as
// one gopacket layer.
//
//	+--------------------+--------------------+---------+-----+------+
//	| BTH (12 bytes)     | extension headers  | payload | pad | ICRC |
//	| opcode, PSN, QP …  | per opcode (§3.3)  |         | 0–3 | 4 LE |
//	+--------------------+--------------------+---------+-----+------+
//	 \_____________ LayerContents ____________/\_Payload_/
//
// Decoding goes through the same code as Frame, so a DecodingLayerParser
// that reuses a RoCE allocates nothing (once UDP port 4791 is registered,
// below):
//
//	var (
//		eth  layers.Ethernet
//		ip4  layers.IPv4
//		ip6  layers.IPv6
//		udp  layers.UDP
//		roce wire.RoCE
//		pl   gopacket.Payload
//	)
//	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &udp, &roce, &pl)
//	decoded := make([]gopacket.LayerType, 0, 8)
//	err := parser.DecodeLayers(frame, &decoded)
//
// After a RoCE layer with a payload, NextLayerType is
// gopacket.LayerTypePayload: give the parser a gopacket.Payload (as above)
// or set its IgnoreUnsupported. VerifyICRC checks the ICRC against the IP
// and UDP layers decoded with it.
//
// For building frames, RoCE.SerializeTo writes the transport with a
// placeholder ICRC (the ICRC field as it is), because the ICRC covers the
// IP and UDP headers that gopacket serializes after it; SerializeFrame
// serializes a whole frame and writes the right ICRC.
//
// RoCEv1 (EtherType 0x8915, a GRH) is not registered with gopacket: decode
// it with Frame, or decode the GRH with layers.IPv6 yourself and hand its
// payload to RoCE.DecodeFromBytes.
//
// For gopacket to decode a UDP datagram to port 4791 as RoCE (NewPacket,
// and a DecodingLayerParser, which asks the UDP layer what comes next),
// register the port once in your program:
//
//	layers.RegisterUDPPortLayerType(layers.UDPPort(wire.UDPPort), wire.LayerTypeBTH)
//
// This package does not do it, and takes nothing from gopacket/layers:
// that package's tables (7 MB with pointers) would be in every program
// importing wire, and the garbage collector scans them in each cycle (of
// the capture audit, they took 3–4 % of one core's time).

// LayerTypeBTH is the gopacket layer type of RoCE. Number 1791 lies in the
// range gopacket leaves to applications (1000–1999).
var LayerTypeBTH = gopacket.RegisterLayerType(1791, gopacket.LayerTypeMetadata{
	Name:    "BTH",
	Decoder: gopacket.DecodeFunc(decodeRoCE),
})

// layerClassBTH is LayerTypeBTH as a gopacket.LayerClass, converted once.
var layerClassBTH gopacket.LayerClass = LayerTypeBTH

// RoCE is the InfiniBand transport packet a RoCEv2 UDP datagram carries:
// the decoded Packet (BTH, extension headers, payload without the pad) and
// the ICRC. It implements gopacket.Layer, gopacket.DecodingLayer and
// gopacket.SerializableLayer.
type RoCE struct {
	Packet
	// ICRC is the ICRC as read from the wire (least-significant byte
	// first). SerializeTo writes it as it is; SerializeFrame sets it to
	// the computed value.
	ICRC uint32

	contents  []byte // BTH and extension headers
	transport []byte // BTH through pad, for VerifyICRC
}

// BTHLayer is another name for RoCE, the layer LayerTypeBTH stands for.
type BTHLayer = RoCE

// LayerType returns LayerTypeBTH.
func (r *RoCE) LayerType() gopacket.LayerType { return LayerTypeBTH }

// CanDecode returns LayerTypeBTH.
func (r *RoCE) CanDecode() gopacket.LayerClass { return layerClassBTH }

// NextLayerType returns gopacket.LayerTypePayload when the packet carries
// a payload and gopacket.LayerTypeZero when it does not.
func (r *RoCE) NextLayerType() gopacket.LayerType {
	if len(r.Packet.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes data, a UDP payload that runs from the BTH
// through the ICRC. Its errors are Packet.DecodeTransport's (ErrShort,
// ErrUnknownOpcode, ErrPad). It allocates nothing on success; the payload
// and contents alias data.
func (r *RoCE) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	r.contents, r.transport = nil, nil
	if len(data) < BTHLen+ICRCLen {
		df.SetTruncated()
		r.Packet.Payload = nil
		return fmt.Errorf("decoding RoCE transport: %d bytes for BTH and ICRC: %w", len(data), ErrShort)
	}
	t := data[:len(data)-ICRCLen]
	r.ICRC = binary.LittleEndian.Uint32(data[len(t):])
	if err := r.Packet.DecodeTransport(t); err != nil {
		return err
	}
	r.contents = t[:HeadersLen(r.Opcode)]
	r.transport = t
	return nil
}

// SerializeTo writes the BTH, the extension headers, the payload, the pad
// and the ICRC field as a placeholder ICRC (see SerializeFrame). The
// payload is Packet.Payload or, when that is empty, what b already holds
// (a gopacket.Payload serialized after this layer); giving both is an
// error. The pad count is derived from the payload length unless
// PadOverride says otherwise, whatever opts.FixLengths says.
func (r *RoCE) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	have := len(b.Bytes())
	if have == 0 {
		n := r.Packet.TransportLen()
		out, err := b.PrependBytes(n + ICRCLen)
		if err != nil {
			return err
		}
		r.Packet.AppendTransport(out[:0])
		binary.LittleEndian.PutUint32(out[n:], r.ICRC)
		return nil
	}
	if len(r.Packet.Payload) != 0 {
		return errors.New("serializing RoCE: both Packet.Payload and a following layer carry a payload")
	}
	pad := (-have) & 3
	if r.PadOverride != 0 {
		pad = int(r.PadOverride-1) & 3
	}
	hl := HeadersLen(r.Opcode)
	if hl < 0 {
		hl = BTHLen
	}
	hdr, err := b.PrependBytes(hl)
	if err != nil {
		return err
	}
	r.Packet.putHeaders(hdr, pad)
	tail, err := b.AppendBytes(pad + ICRCLen)
	if err != nil {
		return err
	}
	clear(tail[:pad])
	binary.LittleEndian.PutUint32(tail[pad:], r.ICRC)
	return nil
}

// VerifyICRC checks the ICRC of the packet r was last decoded from against
// ip, the IPv4 or IPv6 layer (a *layers.IPv4 or *layers.IPv6), and udp,
// the UDP layer (a *layers.UDP), decoded with it from the same frame (udp
// nil and ip a GRH decoded as IPv6 for RoCEv1). It returns ICRCOK or
// ICRCBad; ICRCUnverifiable when the UDP length says the datagram was
// longer than what was decoded (a capture's snaplen cut it);
// ICRCUnchecked when r holds no decoded packet or ip holds neither an
// IPv4 nor an IPv6 header (its version field tells). It allocates nothing.
func (r *RoCE) VerifyICRC(ip, udp gopacket.Layer) ICRCStatus {
	if r.transport == nil || isNil(ip) {
		return ICRCUnchecked
	}
	ipHdr := ip.LayerContents()
	if len(ipHdr) == 0 {
		return ICRCUnchecked
	}
	var encap Encap
	switch ipHdr[0] >> 4 {
	case 4:
		encap = RoCEv2IPv4
	case 6:
		encap = RoCEv2IPv6
		if isNil(udp) {
			encap = RoCEv1
		}
	default:
		return ICRCUnchecked
	}
	var udpHdr []byte
	if encap != RoCEv1 {
		udpHdr = udp.LayerContents()
		if len(udpHdr) >= 8 {
			if n := int(binary.BigEndian.Uint16(udpHdr[4:])); n != 0 && n > 8+len(r.transport)+ICRCLen {
				return ICRCUnverifiable
			}
		}
	}
	if icrcTransport(ipHdr, udpHdr, r.transport, encap) == r.ICRC {
		return ICRCOK
	}
	return ICRCBad
}

// isNil reports whether a layer given as an interface is none: nil, or a
// nil pointer (a *layers.UDP that is nil, say).
func isNil(l any) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// LayerContents returns the BTH and extension headers.
func (r *RoCE) LayerContents() []byte { return r.contents }

// LayerPayload returns the payload, without pad and ICRC.
func (r *RoCE) LayerPayload() []byte { return r.Packet.Payload }

func decodeRoCE(data []byte, p gopacket.PacketBuilder) error {
	r := &RoCE{}
	if err := r.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(r)
	return p.NextDecoder(r.NextLayerType())
}

// UDPLayer is what SerializeFrame needs of its UDP layer: a *layers.UDP.
type UDPLayer interface {
	gopacket.SerializableLayer
	SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
}

// SerializeFrame serializes a RoCE frame into buf: eth (a *layers.Ethernet,
// nil for none), ip (a *layers.IPv4 or *layers.IPv6; for RoCEv1, a
// *layers.IPv6 standing for the GRH, with NextHeader 0x1B), udp (a
// *layers.UDP, nil for RoCEv1) and roce, and
// writes the ICRC (§7.8.1, §A17.4.3.4) over what was serialized, setting
// roce.ICRC to it.
//
// With opts.ComputeChecksums, SerializeFrame points udp's checksum at ip
// (udp.SetNetworkLayerForChecksum) and serializes twice, so that the UDP
// checksum covers the final ICRC; without it, udp.Checksum is written as
// it is (0, as rxe sends, is "no checksum"). With opts.FixLengths, the IP
// and UDP lengths cover the ICRC.
//
// For an 802.1Q tag, pass eth as nil and serialize the tag and the
// Ethernet header onto buf afterwards (layers.Dot1Q.SerializeTo, then
// layers.Ethernet.SerializeTo): the ICRC does not cover them.
func SerializeFrame(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions, eth, ip gopacket.SerializableLayer, udp UDPLayer, roce *RoCE) error {
	if isNil(ip) || roce == nil {
		return errors.New("serializing RoCE frame: ip and roce are required")
	}
	noUDP := isNil(udp)
	ls := []gopacket.SerializableLayer{ip, roce}
	if !noUDP {
		ls = []gopacket.SerializableLayer{ip, udp, roce}
		if opts.ComputeChecksums {
			nl, ok := ip.(gopacket.NetworkLayer)
			if !ok {
				return fmt.Errorf("serializing RoCE frame: UDP checksum over %v: not a network layer", ip.LayerType())
			}
			if err := udp.SetNetworkLayerForChecksum(nl); err != nil {
				return fmt.Errorf("serializing RoCE frame: %w", err)
			}
		}
	}
	for pass := 0; ; pass++ {
		if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
			return err
		}
		pkt := buf.Bytes()
		if len(pkt) < ICRCLen+BTHLen {
			return fmt.Errorf("serializing RoCE frame: %d bytes: %w", len(pkt), ErrShort)
		}
		encap := RoCEv2IPv4
		if pkt[0]>>4 == 6 {
			encap = RoCEv2IPv6
			if noUDP {
				encap = RoCEv1
			}
		}
		n := len(pkt) - ICRCLen
		icrc := ComputeICRC(pkt[:n], encap)
		binary.LittleEndian.PutUint32(pkt[n:], icrc)
		old := roce.ICRC
		roce.ICRC = icrc
		// The UDP checksum covers the ICRC, which covers the UDP header
		// with its checksum masked: one more pass settles both.
		if noUDP || !opts.ComputeChecksums || old == icrc || pass > 0 {
			break
		}
	}
	if !isNil(eth) {
		if err := eth.SerializeTo(buf, opts); err != nil {
			return err
		}
		buf.PushLayer(eth.LayerType())
	}
	return nil
}
