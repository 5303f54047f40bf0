package capture

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"testing"
)

// fuzzSeeds are small generated files in every format and some damaged
// ones.
func fuzzSeeds() [][]byte {
	pkts := []pkt{
		{ts: t0, data: etherFrame(EtherTypeIPv4, ipv4Packet(8), 0x8100, 3)},
		{ts: t0, data: etherFrame(EtherTypeIPv6, ipv6Packet(2))[:30], orig: 64},
	}
	ng1, _ := ngFile(le, be)
	small := &ngWriter{}
	small.shb(be).idb(LinkTypeRaw, 64, ngOpt{9, u8(0x8a)}).epb(0, 5, ipv4Packet(1), 0).spb(3, []byte{0x60, 0, 0})
	var annotated bytes.Buffer // packet comments, as NgWriter writes them
	if w, err := NewNgWriter(&annotated, "s"); err == nil {
		w.AddInterface(LinkTypeRaw, "a", "b")
		w.WritePacket(0, t0, ipv4Packet(2), 40, []string{"C9-95 fail", "second"})
		w.Flush()
	}
	counters, _ := countersFile()
	seeds := [][]byte{
		counters,
		annotated.Bytes(),
		buildPcap(le, false, LinkTypeEthernet, pkts),
		buildPcap(be, true, LinkTypeLinuxSLL2, pkts),
		small.b,
		ng1,
		gzipped(buildPcap(le, true, LinkTypeNull, pkts)),
		gzipped(small.b),
	}
	for _, d := range damages() {
		if len(d.file) < 300 {
			seeds = append(seeds, d.file)
		}
	}
	return seeds
}

func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewReader(bytes.NewReader(file), "fuzz")
		if err != nil {
			if r != nil {
				t.Fatal("reader and error")
			}
			if !errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		var readErr error
		for n := 1; ; n++ {
			fr, err := r.Next()
			if err != nil {
				readErr = err
				if err != io.EOF && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("unclassified error %v", err)
				}
				if _, again := r.Next(); again != err {
					t.Fatalf("error not sticky: %v, then %v", err, again)
				}
				break
			}
			if fr.Num != n {
				t.Fatalf("frame %d numbered %d", n, fr.Num)
			}
			if len(fr.Data) > MaxCaptureLen {
				t.Fatalf("frame of %d bytes", len(fr.Data))
			}
			if r.gz == nil && len(fr.Data) > len(file) {
				t.Fatalf("frame of %d bytes in a file of %d", len(fr.Data), len(file))
			}
			fr.Network()
			fr.Truncated()
		}
		c := r.Counters()
		if c.Dropped() != (c.DropSummary() != "") || len(c.Losses) > c.LossReports {
			t.Fatalf("counters %+v inconsistent", c)
		}
		// ScanCounters' pass, which skips packets' bytes, finds the same
		// counters and the same damage.
		// (A classic pcap of another link type is not scanned.)
		if r.format == formatPcapng || r.linkType == LinkTypeERF {
			sr, err := NewReader(bytes.NewReader(file), "fuzz")
			if err != nil {
				t.Fatalf("the file read, then failed to open: %v", err)
			}
			sc, err := sr.scanCounters()
			sr.Close()
			if readErr == io.EOF {
				readErr = nil
			}
			if (err == nil) != (readErr == nil) || err != nil && err.Error() != readErr.Error() {
				t.Fatalf("scanning ended with %v, reading with %v", err, readErr)
			}
			if !reflect.DeepEqual(sc, c) {
				t.Fatalf("scanning found %+v, reading %+v", sc, c)
			}
		}
		if r.BytesRead() > int64(len(file)) {
			t.Fatalf("BytesRead() = %d for a file of %d", r.BytesRead(), len(file))
		}
		r.Close()
	})
}

func FuzzNetwork(f *testing.F) {
	for _, lt := range []uint32{0, 1, 12, 14, 101, 108, 113, 228, 229, 242, 276, 197, 247} {
		f.Add(lt, etherFrame(EtherTypeIPv4, ipv4Packet(2), 0x88a8, 1, 0x8100, 2))
		f.Add(lt, append([]byte{0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x81, 0x00, 0, 5, 0x08, 0x00}, ipv4Packet(0)...))
		f.Add(lt, ipv6Packet(0))
		f.Add(lt, []byte{2, 0, 0, 0, 0x45})
	}
	erf := func(typ byte, rest ...byte) []byte {
		return append([]byte{0, 0, 0, 0, 0, 0, 0, 0, typ, 4, 0, 40, 0, 0, 0, 24}, rest...)
	}
	f.Add(uint32(197), erf(21, 0, 2, 0, 12, 0, 6, 0, 18))
	f.Add(uint32(197), erf(21|0x80, 0x81, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2))
	f.Add(uint32(197), erf(2, 0, 0, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 0x08, 0x00, 0x45))
	// Mirror and overlay tunnels (tunnel.go).
	inner := etherFrame(EtherTypeIPv4, ipv4Packet(2), 0x8100, 3)
	f.Add(uint32(1), etherFrame(EtherTypeIPv4, outerIPv4(ipProtoGRE, 0, slices.Concat(greHeader(0x1000, 0x88be), erspan2, inner))))
	f.Add(uint32(1), etherFrame(EtherTypeIPv4, outerIPv4(ipProtoGRE, 0, slices.Concat(greHeader(0xb000, 0x22eb), erspan3(0, true), inner))))
	f.Add(uint32(101), outerIPv4(ipProtoUDP, 0, vxlan(0x08, inner)))
	f.Add(uint32(229), outerIPv6(ipProtoGRE, slices.Concat(greHeader(0, 0x6558), inner)))
	f.Fuzz(func(t *testing.T, linkType uint32, data []byte) {
		proto, off, err := Network(linkType, data)
		proto2, off2, vlans, err2 := NetworkVLAN(linkType, data, nil)
		if proto != proto2 || off != off2 || (err == nil) != (err2 == nil) {
			t.Fatalf("Network = %#x, %d, %v; NetworkVLAN = %#x, %d, %v", proto, off, err, proto2, off2, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrShortFrame) && !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrUnsupportedLinkType) {
				t.Fatalf("unclassified error %v", err)
			}
			if errors.Is(err, ErrUnsupportedLinkType) == LinkTypeSupported(linkType) {
				t.Fatalf("LinkTypeSupported(%d) disagrees with %v", linkType, err)
			}
			return
		}
		if off < 0 || off >= len(data) {
			t.Fatalf("offset %d in a frame of %d bytes", off, len(data))
		}
		if 4*len(vlans) > off {
			t.Fatalf("%d VLAN tags before offset %d", len(vlans), off)
		}
	})
}
