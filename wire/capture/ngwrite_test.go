package capture

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// written is one frame NgWriter was given.
type written struct {
	iface    int
	ts       time.Time
	data     []byte
	orig     int
	comments []string
}

// writeNg writes frames through NgWriter, with interfaces of the given
// link types.
func writeNg(t *testing.T, linkTypes []uint32, frames []written) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewNgWriter(&buf, "section comment")
	if err != nil {
		t.Fatal(err)
	}
	for i, lt := range linkTypes {
		id, err := w.AddInterface(lt, "if"+string(rune('a'+i)), "interface\nof the test")
		if err != nil || id != i {
			t.Fatalf("AddInterface: %d, %v", id, err)
		}
	}
	for _, f := range frames {
		if err := w.WritePacket(f.iface, f.ts, f.data, f.orig, f.comments); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestNgWriterRoundTrip: what NgWriter writes reads back, through this
// package's reader and through gopacket's, with every frame's interface
// and link type, its timestamp to the nanosecond, its bytes, its original
// length and its comments.
func TestNgWriterRoundTrip(t *testing.T) {
	frames := []written{
		{0, t0, etherFrame(EtherTypeIPv4, ipv4Packet(5)), 0, []string{"first", "C9-95 fail: expected ACK PSN 11; seen ACK PSN 10"}},
		{1, t0.Add(1), ipv4Packet(3), 0, nil},
		{0, t0.Add(time.Hour + 7), etherFrame(EtherTypeIPv4, ipv4Packet(1))[:20], 64, []string{"cut\nshort"}},
		{0, time.Unix(0, 1), ipv4Packet(0), 0, []string{""}},
	}
	for i := range frames {
		if frames[i].orig == 0 {
			frames[i].orig = len(frames[i].data)
		}
	}
	file := writeNg(t, []uint32{LinkTypeEthernet, LinkTypeRaw}, frames)

	r, err := NewReader(bytes.NewReader(file), "round.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	wantLink := []uint32{LinkTypeEthernet, LinkTypeRaw}
	for i, want := range frames {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		wantComments := want.comments
		if i == 2 {
			wantComments = []string{"cut short"} // one line
		}
		if f.Num != i+1 || f.Interface != want.iface || f.LinkType != wantLink[want.iface] || !f.Time.Equal(want.ts) ||
			!bytes.Equal(f.Data, want.data) || f.OrigLen != want.orig || !slices.Equal(f.Comments, wantComments) {
			t.Errorf("frame %d read back as %+v, want %+v", i+1, f, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the frames: %v, want EOF", err)
	}

	// gopacket's reader knows no packet comments (v1.1.19), but checks
	// the blocks, the interfaces and the lengths independently (it reads
	// an interface when it meets it).
	g, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range frames {
		data, ci, err := g.ReadPacketData()
		if err != nil {
			t.Fatalf("gopacket, frame %d: %v", i+1, err)
		}
		if ci.InterfaceIndex != want.iface || !ci.Timestamp.Equal(want.ts) || !bytes.Equal(data, want.data) || ci.Length != want.orig {
			t.Errorf("gopacket reads frame %d as %+v, want %+v", i+1, ci, want)
		}
	}
	if n := g.NInterfaces(); n != 2 {
		t.Fatalf("gopacket sees %d interfaces", n)
	}
	for i, lt := range []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeRaw} {
		in, err := g.Interface(i)
		if err != nil || in.LinkType != lt || in.Name != "if"+string(rune('a'+i)) || in.Description != "interface of the test" || in.TimestampResolution != 9 {
			t.Errorf("interface %d: %+v, %v", i, in, err)
		}
	}
}

// TestNgWriterRefuses: what pcapng cannot hold is refused with
// ErrUnwritable, and the writer goes on with the next frame.
func TestNgWriterRefuses(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewNgWriter(&buf, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(1<<16, "", ""); !errors.Is(err, ErrUnwritable) || !strings.Contains(err.Error(), "link type 65536") {
		t.Errorf("link type 65536: %v", err)
	}
	if _, err := w.AddInterface(LinkTypeRaw, "", ""); err != nil {
		t.Fatal(err)
	}
	data := ipv4Packet(1)
	for _, tc := range []struct {
		name  string
		iface int
		ts    time.Time
		data  []byte
		want  string
	}{
		{"no timestamp", 0, time.Time{}, data, "no timestamp"},
		{"before 1970", 0, time.Unix(-1, 0), data, "1969-12-31T23:59:59Z is outside"},
		{"after 2554", 0, time.Unix(maxNgSeconds+1, 0), data, "is outside"},
		{"no interface", 1, t0, data, "interface 1 not added"},
		{"too long", 0, t0, make([]byte, MaxCaptureLen+1), "captured length"},
	} {
		n := buf.Len()
		err := w.WritePacket(tc.iface, tc.ts, tc.data, len(tc.data), nil)
		if !errors.Is(err, ErrUnwritable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrUnwritable saying %q", tc.name, err, tc.want)
		}
		if buf.Len() != n {
			t.Errorf("%s: something was written", tc.name)
		}
	}
	last := time.Unix(maxNgSeconds, 999999999)
	if err := w.WritePacket(0, last, data, len(data), nil); err != nil {
		t.Fatalf("the last time pcapng holds: %v", err)
	}
	w.Flush()
	r, err := NewReader(&buf, "edge.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := r.Next(); err != nil || !f.Time.Equal(last) {
		t.Errorf("read back %v, %v; want %v", f, err, last)
	}
}

// TestOptionText: a comment is one line of valid UTF-8 within
// MaxCommentLen bytes.
func TestOptionText(t *testing.T) {
	long := strings.Repeat("é", MaxCommentLen)
	for _, tc := range []struct{ in, want string }{
		{"a\nb\r\tc", "a b  c"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"", ""},
	} {
		if got := optionText(tc.in); got != tc.want {
			t.Errorf("optionText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := optionText(long)
	if len(got) > MaxCommentLen || !utf8.ValidString(got) || !strings.HasSuffix(got, "é…") {
		t.Errorf("a long comment: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-8:])
	}
}

// TestPacketComments: the reader keeps a packet block's comments and
// skips its other options; options that overrun the block end the list
// without an error.
func TestPacketComments(t *testing.T) {
	w := &ngWriter{}
	w.shb(le).idb(LinkTypeRaw, 0).
		epb(0, 1, ipv4Packet(1), 0, ngOpt{2, []byte("flags")}, ngOpt{1, []byte("one")}, ngOpt{1, []byte("two")}).
		epb(0, 2, ipv4Packet(1), 0).
		epb(0, 3, ipv4Packet(1), 0, ngOpt{1, []byte("kept")}, ngOpt{1, make([]byte, 200)[:0]})
	file := w.b
	// The last option of frame 3 claims 200 bytes the block has not.
	i := bytes.LastIndex(file, []byte("kept")) + 4
	file[i+2] = 200
	r, err := NewReader(bytes.NewReader(file), "comments.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range [][]string{{"one", "two"}, nil, {"kept"}} {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", n+1, err)
		}
		if !slices.Equal(f.Comments, want) {
			t.Errorf("frame %d: comments %q, want %q", n+1, f.Comments, want)
		}
	}
}
