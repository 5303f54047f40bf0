package capture

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// TestPcapWriterRoundTrip: what PcapWriter writes reads back, through
// this package's reader and through gopacket's, with the link type, each
// frame's timestamp to the nanosecond, its bytes and its original length.
func TestPcapWriterRoundTrip(t *testing.T) {
	frames := []written{
		{0, t0, etherFrame(EtherTypeIPv4, ipv4Packet(5)), 0, nil},
		{0, t0.Add(time.Hour + 7), etherFrame(EtherTypeIPv4, ipv4Packet(1))[:20], 64, nil},
		{0, time.Unix(0, 1), ipv4Packet(0), 0, nil},
	}
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, 65535, LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(f.ts, f.data, f.orig); err != nil {
			t.Fatal(err)
		}
		if f.orig == 0 {
			frames[i].orig = len(f.data)
		}
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "round.pcap")
	if err != nil {
		t.Fatal(err)
	}
	if r.Format() != "pcap-ns" {
		t.Errorf("format %s, want pcap-ns", r.Format())
	}
	for i, want := range frames {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		if f.LinkType != LinkTypeEthernet || !f.Time.Equal(want.ts) || !bytes.Equal(f.Data, want.data) || f.OrigLen != want.orig {
			t.Errorf("frame %d read back as %+v, want %+v", i+1, f, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the frames: %v, want EOF", err)
	}
	g, err := pcapgo.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if g.LinkType() != layers.LinkTypeEthernet || g.Snaplen() != 65535 {
		t.Errorf("gopacket reads link type %v, snaplen %d", g.LinkType(), g.Snaplen())
	}
	for i, want := range frames {
		data, ci, err := g.ReadPacketData()
		if err != nil {
			t.Fatalf("gopacket, frame %d: %v", i+1, err)
		}
		if !ci.Timestamp.Equal(want.ts) || !bytes.Equal(data, want.data) || ci.Length != want.orig {
			t.Errorf("gopacket reads frame %d as %+v, want %+v", i+1, ci, want)
		}
	}
}

// TestPcapWriterRefuses: a frame pcap cannot hold is refused with an
// error saying why, and nothing of it is written.
func TestPcapWriterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   time.Time
		data []byte
		orig int
		want string
	}{
		{"before 1970", time.Unix(-1, 0), []byte{1}, 0, "outside what pcap holds"},
		{"after 2106", time.Unix(1<<32, 0), []byte{1}, 0, "outside what pcap holds"},
		{"too long", t0, make([]byte, MaxCaptureLen+1), 0, "cannot hold a frame"},
		{"longer than on the wire", t0, []byte{1, 2}, 1, "cannot hold a frame"},
	} {
		var buf bytes.Buffer
		w, err := NewPcapWriter(&buf, 65535, LinkTypeEthernet)
		if err != nil {
			t.Fatal(err)
		}
		n := buf.Len()
		err = w.WritePacket(tc.ts, tc.data, tc.orig)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
		if buf.Len() != n {
			t.Errorf("%s: %d bytes written", tc.name, buf.Len()-n)
		}
	}
}
