package wire

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// fuzzSeedFrames returns Ethernet frames to seed the fuzzers: the scapy
// vectors, round-trip outputs for every opcode and encapsulation, cut
// and odd variants, and a few frames of the rxe IPv6 capture.
func fuzzSeedFrames(tb testing.TB) [][]byte {
	var seeds [][]byte
	if data, err := os.ReadFile(vectorsPath); err == nil && len(data) > 0 {
		for _, v := range loadVectors(tb) {
			seeds = append(seeds, v.Frame)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for _, op := range rcOpcodes {
		for i, encap := range encaps {
			f := randomFrame(rng, op, encap, i == 1, rng.Intn(8))
			fr := f.AppendEthernet(nil)
			seeds = append(seeds, fr, fr[:len(fr)-3])
		}
	}
	// A wrong pad, a UC opcode, QinQ.
	f := randomFrame(rng, SendLast, RoCEv2IPv4, false, 3)
	f.PadOverride = 1
	seeds = append(seeds, f.AppendEthernet(nil))
	f.Opcode = 0x24
	seeds = append(seeds, f.AppendEthernet(nil))
	qinq := f.AppendEthernet(nil)
	qinq = append(append(bytes.Clone(qinq[:12]), 0x88, 0xA8, 0, 5, 0x81, 0, 0, 6), qinq[12:]...)
	seeds = append(seeds, qinq)

	if fh, err := os.Open(filepath.Join(capturesDir, "rxe", "mix-ipv6-mtu1024.pcap")); err == nil {
		defer fh.Close()
		if r, err := pcapgo.NewReader(fh); err == nil {
			seen := map[Opcode]bool{}
			var g Frame
			for {
				data, _, err := r.ReadPacketData()
				if err == io.EOF || err != nil {
					break
				}
				if g.DecodeEthernet(data) == nil && !seen[g.Opcode] && len(data) < 300 {
					seen[g.Opcode] = true
					seeds = append(seeds, data)
				}
			}
		}
	}
	return seeds
}

func FuzzDecodeEthernet(f *testing.F) {
	for _, s := range fuzzSeedFrames(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fr Frame
		err := fr.DecodeEthernet(data)
		st := fr.CheckICRC()
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrNotRoCE) && !errors.Is(err, ErrMalformed) &&
				!errors.Is(err, ErrUnknownOpcode) && !errors.Is(err, ErrPad) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if fr.Truncated != (st == ICRCUnverifiable) || st == ICRCUnchecked {
			t.Fatalf("Truncated %v with ICRC %v", fr.Truncated, st)
		}
		out := fr.AppendEthernet(nil)
		var g Frame
		if err := g.DecodeEthernet(out); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v\n%x", err, out)
		}
		if g.CheckICRC() != ICRCOK {
			t.Fatalf("re-encoded frame: ICRC %v", g.CheckICRC())
		}
		want := fr
		want.ICRC, want.Truncated = g.ICRC, false
		if fr.Truncated {
			// Cut inside the payload, the pad count on the wire belongs to
			// the whole packet; re-encoding pads what was captured.
			want.PadCnt = uint8(fr.Pad())
		}
		if !framesEqual(&g, &want) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", g, want)
		}
		// The layout Frame reports matches what it decoded.
		if !fr.Truncated {
			hl := HeadersLen(fr.Opcode)
			if n := len(fr.Network()); n < hl+len(fr.Payload)+int(fr.PadCnt)+ICRCLen {
				t.Fatalf("Network() is %d bytes for %d+%d+%d+4", n, hl, len(fr.Payload), fr.PadCnt)
			}
		}
	})
}

func FuzzDecodeTransport(f *testing.F) {
	for _, s := range fuzzSeedFrames(f) {
		var fr Frame
		if fr.DecodeEthernet(s) == nil && !fr.Truncated {
			net := fr.Network()
			f.Add(fr.Packet.AppendTransport(nil))
			f.Add(net[len(net)-ICRCLen-fr.TransportLen() : len(net)-ICRCLen])
		}
	}
	f.Add([]byte{0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x11, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Packet
		err := p.DecodeTransport(data)
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrUnknownOpcode) && !errors.Is(err, ErrPad) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if p.TransportLen() != len(data) {
			t.Fatalf("TransportLen %d for %d bytes", p.TransportLen(), len(data))
		}
		out := p.AppendTransport(nil)
		// Equal but for the pad bytes, which encode as zero.
		pad := int(p.PadCnt)
		if !bytes.Equal(out[:len(out)-pad], data[:len(data)-pad]) || !bytes.Equal(out[len(out)-pad:], make([]byte, pad)) {
			t.Fatalf("re-encoded\n%x\nfrom\n%x", out, data)
		}
		var q Packet
		if err := q.DecodeTransport(out); err != nil {
			t.Fatalf("re-encoded packet: %v", err)
		}
		if !packetsEqual(&p, &q) {
			t.Fatalf("round trip differs:\n%+v\n%+v", p, q)
		}
		// Decoding into a used Packet gives the same result.
		q.RETH, q.Imm, q.AtomicAck = RETH{VA: 1}, 2, 3
		if err := q.DecodeTransport(data); err != nil || !packetsEqual(&p, &q) {
			t.Fatalf("decoding into a used Packet: %v\n%+v\n%+v", err, p, q)
		}
	})
}

// refICRC is ComputeICRC written the slow, obvious way: mask a copy of the
// packet and run crc32.ChecksumIEEE over eight 0xFF bytes and the copy.
func refICRC(pkt []byte, encap Encap) uint32 {
	if encap == NativeIB {
		// The LRH's VL and the BTH's byte 4 masked, nothing before; a
		// GRH's packet is covered as RoCEv1's from the GRH on.
		switch {
		case len(pkt) < LRHLen:
			return crc32.ChecksumIEEE(pkt)
		case pkt[1]&3 == LNHIBAGlobal:
			return refICRC(pkt[LRHLen:], RoCEv1)
		}
		m := append([]byte(nil), pkt...)
		m[0] |= 0xF0
		if len(m) >= LRHLen+BTHLen {
			m[LRHLen+4] = 0xFF
		}
		return crc32.ChecksumIEEE(m)
	}
	m := append([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, pkt...)
	h := m[8:]
	n := 0
	switch encap {
	case RoCEv2IPv4:
		if len(h) < 20 {
			return crc32.ChecksumIEEE(m)
		}
		n = int(h[0]&0x0F) * 4
		if n < 20 || len(h) < n {
			n = 20
		}
		h[1], h[8], h[10], h[11] = 0xFF, 0xFF, 0xFF, 0xFF
	default:
		if len(h) < 40 {
			return crc32.ChecksumIEEE(m)
		}
		n = 40
		h[0] |= 0x0F
		h[1], h[2], h[3], h[7] = 0xFF, 0xFF, 0xFF, 0xFF
	}
	if encap != RoCEv1 {
		if len(h) < n+8 {
			return crc32.ChecksumIEEE(m)
		}
		h[n+6], h[n+7] = 0xFF, 0xFF
		n += 8
	}
	if len(h) >= n+BTHLen {
		h[n+4] = 0xFF
	}
	return crc32.ChecksumIEEE(m)
}

func FuzzComputeICRC(f *testing.F) {
	for _, s := range fuzzSeedFrames(f) {
		var fr Frame
		if fr.DecodeEthernet(s) == nil && !fr.Truncated {
			net := fr.Network()
			f.Add(net[:len(net)-ICRCLen], uint8(fr.Encap))
		}
	}
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{0x4F}, uint8(7))
	f.Add([]byte{0x30}, uint8(NativeIB)) // found by the fuzzer: native packets had no reference
	f.Add(make([]byte, LRHLen+BTHLen+4), uint8(NativeIB))
	f.Fuzz(func(t *testing.T, pkt []byte, encap uint8) {
		e := Encap(encap)
		got := ComputeICRC(pkt, e)
		if want := refICRC(pkt, e); got != want {
			t.Fatalf("ComputeICRC(%x, %v) = %#08x, reference %#08x", pkt, e, got, want)
		}
		seed := crc32.ChecksumIEEE(pkt)
		if len(pkt) <= maxMaskedLen {
			if a, b := crcSmall(seed, pkt), crc32.Update(seed, crc32.IEEETable, pkt); a != b {
				t.Fatalf("crcSmall = %#08x, crc32.Update = %#08x", a, b)
			}
		}
	})
}

func FuzzRoCELayer(f *testing.F) {
	for _, s := range fuzzSeedFrames(f) {
		f.Add(s)
		var fr Frame
		if fr.DecodeEthernet(s) == nil && !fr.Truncated && fr.Encap != RoCEv1 {
			net := fr.Network()
			f.Add(net[len(net)-ICRCLen-fr.TransportLen():]) // a UDP payload
		}
	}
	lp := newLayerParser()
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a UDP payload.
		var r RoCE
		if err := r.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err == nil {
			buf := gopacket.NewSerializeBuffer()
			if err := r.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
				t.Fatalf("SerializeTo: %v", err)
			}
			var back RoCE
			if err := back.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
				t.Fatalf("re-serialized layer: %v", err)
			}
			if !packetsEqual(&back.Packet, &r.Packet) || back.ICRC != r.ICRC || len(buf.Bytes()) != len(data) {
				t.Fatalf("round trip differs:\n%+v\n%+v", back, r)
			}
			if r.NextLayerType() != gopacket.LayerTypeZero && len(r.LayerPayload()) == 0 {
				t.Fatal("NextLayerType says payload, LayerPayload is empty")
			}
		}
		// As an Ethernet frame, through a DecodingLayerParser and
		// gopacket.NewPacket: where Frame decodes a whole RoCEv2 frame,
		// the layers agree with it.
		var fr Frame
		ferr := fr.DecodeEthernet(data)
		perr := lp.decode(data)
		pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.NoCopy)
		if ferr != nil || fr.Truncated || fr.Encap == RoCEv1 || fr.HasVLAN {
			return
		}
		if perr != nil || len(lp.decoded) == 0 || lp.decoded[len(lp.decoded)-1] != LayerTypeBTH {
			// gopacket is stricter in places (IPv4 options, lengths).
			return
		}
		if !packetsEqual(&lp.roce.Packet, &fr.Packet) || lp.roce.ICRC != fr.ICRC {
			t.Fatalf("parser %+v, Frame %+v", lp.roce.Packet, fr.Packet)
		}
		if a, b := lp.roce.VerifyICRC(lp.ipLayer(), &lp.udp), fr.CheckICRC(); a != b {
			t.Fatalf("VerifyICRC %v, CheckICRC %v", a, b)
		}
		if l, ok := pkt.Layer(LayerTypeBTH).(*RoCE); ok && !packetsEqual(&l.Packet, &fr.Packet) {
			t.Fatalf("NewPacket %+v, Frame %+v", l.Packet, fr.Packet)
		}
	})
}
