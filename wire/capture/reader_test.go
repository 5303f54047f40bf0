package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// want is an expected frame.
type want struct {
	time     time.Time
	linkType uint32
	data     []byte
	orig     int
	iface    int
}

// readAll reads every frame, copying them, until an error.
func readAll(t *testing.T, r *Reader) ([]Frame, error) {
	t.Helper()
	var frames []Frame
	for {
		f, err := r.Next()
		if err != nil {
			return frames, err
		}
		c := *f
		c.Data = bytes.Clone(f.Data)
		frames = append(frames, c)
		if len(frames) > 1e6 {
			t.Fatal("runaway reader")
		}
	}
}

func checkFrames(t *testing.T, got []Frame, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d frames, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		g := got[i]
		if g.Num != i+1 {
			t.Errorf("frame %d: Num = %d", i+1, g.Num)
		}
		if !g.Time.Equal(w.time) {
			t.Errorf("frame %d: Time = %v, want %v", i+1, g.Time, w.time)
		}
		if g.LinkType != w.linkType {
			t.Errorf("frame %d: LinkType = %d, want %d", i+1, g.LinkType, w.linkType)
		}
		if !bytes.Equal(g.Data, w.data) {
			t.Errorf("frame %d: Data = % x, want % x", i+1, g.Data, w.data)
		}
		orig := w.orig
		if orig == 0 {
			orig = len(w.data)
		}
		if g.OrigLen != orig {
			t.Errorf("frame %d: OrigLen = %d, want %d", i+1, g.OrigLen, orig)
		}
		if g.Truncated() != (orig > len(w.data)) {
			t.Errorf("frame %d: Truncated() = %v", i+1, g.Truncated())
		}
		if g.Interface != w.iface {
			t.Errorf("frame %d: Interface = %d, want %d", i+1, g.Interface, w.iface)
		}
	}
}

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

func TestPcapVariants(t *testing.T) {
	f1 := etherFrame(EtherTypeIPv4, ipv4Packet(16))
	f2 := etherFrame(EtherTypeIPv6, ipv6Packet(3), EtherTypeVLAN, 7)
	f3 := etherFrame(EtherTypeIPv4, ipv4Packet(100))[:60] // cut by snaplen
	pkts := []pkt{
		{ts: t0, data: f1},
		{ts: t0.Add(1234567 * time.Nanosecond), data: f2},
		{ts: t0.Add(time.Hour), data: f3, orig: 14 + 28 + 100},
		{ts: time.Unix(0, 999999999), data: []byte{}}, // empty record
	}
	for _, tc := range []struct {
		name   string
		o      order
		nano   bool
		gz     bool
		format string
	}{
		{"us-le", le, false, false, "pcap"},
		{"us-be", be, false, false, "pcap"},
		{"ns-le", le, true, false, "pcap-ns"},
		{"ns-be", be, true, false, "pcap-ns"},
		{"us-le-gzip", le, false, true, "pcap+gzip"},
		{"ns-be-gzip", be, true, true, "pcap-ns+gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := buildPcap(tc.o, tc.nano, LinkTypeEthernet, pkts)
			if tc.gz {
				file = gzipped(file)
			}
			r, err := NewReader(bytes.NewReader(file), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Format(); got != tc.format {
				t.Errorf("Format() = %q, want %q", got, tc.format)
			}
			got, err := readAll(t, r)
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			var wants []want
			for _, p := range pkts {
				ts := p.ts
				if !tc.nano {
					ts = ts.Truncate(time.Microsecond)
				}
				wants = append(wants, want{time: ts, linkType: LinkTypeEthernet, data: p.data, orig: p.orig})
			}
			checkFrames(t, got, wants)
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("Next after EOF: %v", err)
			}
			if got := r.BytesRead(); got != int64(len(file)) {
				t.Errorf("BytesRead() = %d, want %d", got, len(file))
			}
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, err := r.Next(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("Next after Close: %v", err)
			}
		})
	}
}

func TestPcapLinkTypeFCSBits(t *testing.T) {
	// The upper bits of the link-type field may carry the FCS length.
	file := buildPcap(le, false, 0x1000_0000|LinkTypeLinuxSLL, []pkt{{ts: t0, data: make([]byte, 20)}})
	r, err := NewReader(bytes.NewReader(file), "fcs")
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if f.LinkType != LinkTypeLinuxSLL {
		t.Errorf("LinkType = %d", f.LinkType)
	}
}

// ngFile builds a pcapng file with two sections in opposite byte orders,
// several interfaces with different link types and timestamp resolutions,
// every packet block type and skipped blocks in between, and returns the
// frames it holds.
func ngFile(first, second order) ([]byte, []want) {
	eth := etherFrame(EtherTypeRoCEv1, make([]byte, 40))
	v4 := ipv4Packet(8)
	v6 := ipv6Packet(5)
	sll := append([]byte{0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00}, v4...)
	base := t0.Unix() // whole seconds

	w := &ngWriter{}
	w.shb(first, ngOpt{code: 4, val: []byte("rcconform test")})
	w.idb(LinkTypeEthernet, 0)                                         // 0: default us
	w.idb(LinkTypeIPv4, 65535, ngOpt{9, u8(9)})                        // 1: ns
	w.idb(LinkTypeRaw, 128, ngOpt{2, []byte("eth1")}, ngOpt{9, u8(3)}) // 2: ms
	w.block(0x00000004, []byte{0, 0, 0, 0})                            // name resolution
	w.epb(0, uint64(base)*1e6+123456, eth, 0, ngOpt{2, []byte{1, 0, 0, 0}})
	w.epb(1, uint64(base)*1e9+123456789, v4, 0)
	w.block(0x00000005, make([]byte, 24)) // interface statistics
	w.block(0x00000bad, []byte{1, 2, 3})  // custom
	w.block(0x40000bad, nil)              // custom, empty
	w.epb(2, uint64(base)*1e3+7, v6[:20], len(v6))
	w.opb(0, 0, uint64(base)*1e6+1, eth[:16], len(eth))
	wants := []want{
		{time.Unix(base, 123456000).UTC(), LinkTypeEthernet, eth, 0, 0},
		{time.Unix(base, 123456789).UTC(), LinkTypeIPv4, v4, 0, 1},
		{time.Unix(base, 7000000).UTC(), LinkTypeRaw, v6[:20], len(v6), 2},
		{time.Unix(base, 1000).UTC(), LinkTypeEthernet, eth[:16], len(eth), 0},
	}

	w.shb(second)
	w.idb(LinkTypeLinuxSLL, 0, ngOpt{9, u8(0x80 | 20)}, ngOpt{14, w.u64(1000)}) // 0: 2^-20 s, +1000 s
	w.idb(LinkTypeLinuxSLL2, 0, ngOpt{9, u8(12)})                               // 1: ps
	w.spb(len(sll), sll)
	w.epb(0, uint64(base)<<20|1<<19, sll, 0)
	w.epb(1, 5*1e12+1999, v4[:1], 99)
	wants = append(wants,
		want{time.Time{}, LinkTypeLinuxSLL, sll, 0, 0},
		want{time.Unix(base+1000, 5e8).UTC(), LinkTypeLinuxSLL, sll, 0, 0},
		want{time.Unix(5, 1).UTC(), LinkTypeLinuxSLL2, v4[:1], 99, 1},
	)
	// A third section with only an interface and no packets.
	w.shb(first).idb(LinkTypeEthernet, 0)
	return w.b, wants
}

func TestPcapng(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second order
		gz            bool
	}{
		{"le-be", le, be, false},
		{"be-le", be, le, false},
		{"le-le", le, le, false},
		{"le-be-gzip", le, be, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, wants := ngFile(tc.first, tc.second)
			format := "pcapng"
			if tc.gz {
				file = gzipped(file)
				format += "+gzip"
			}
			r, err := NewReader(bytes.NewReader(file), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Format(); got != format {
				t.Errorf("Format() = %q, want %q", got, format)
			}
			got, err := readAll(t, r)
			if err != io.EOF {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			checkFrames(t, got, wants)
			if got := r.BytesRead(); got != int64(len(file)) {
				t.Errorf("BytesRead() = %d, want %d", got, len(file))
			}
		})
	}
}

func TestTimestampResolution(t *testing.T) {
	for _, tc := range []struct {
		tsresol uint8
		ts      uint64
		want    time.Time
	}{
		{0, 1700000000, time.Unix(1700000000, 0)},
		{1, 17000000005, time.Unix(1700000000, 5e8)},
		{6, 1700000000_000001, time.Unix(1700000000, 1000)},
		{9, 1700000000_123456789, time.Unix(1700000000, 123456789)},
		{10, 1700000000_1234567891, time.Unix(1700000000, 123456789)},
		{19, 1_2345678912345678912, time.Unix(1, 234567891)},
		{0x80, 1700000000, time.Unix(1700000000, 0)},
		{0x80 | 1, 3, time.Unix(1, 5e8)},
		{0x80 | 10, 1024*5 + 256, time.Unix(5, 25e7)},
		{0x80 | 30, 1<<30 | 1<<29 | 1<<28, time.Unix(1, 75e7)},
		{0x80 | 63, 1 << 62, time.Unix(0, 5e8)},
	} {
		w := &ngWriter{}
		w.shb(le).idb(LinkTypeEthernet, 0, ngOpt{9, u8(tc.tsresol)}).epb(0, tc.ts, []byte{1}, 0)
		r, err := NewReader(bytes.NewReader(w.b), "tsresol")
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.Next()
		if err != nil {
			t.Fatalf("tsresol %#x: %v", tc.tsresol, err)
		}
		if !f.Time.Equal(tc.want) {
			t.Errorf("tsresol %#x, ts %d: Time = %v, want %v", tc.tsresol, tc.ts, f.Time, tc.want.UTC())
		}
	}
}

// damage describes a damaged file: the frames that read before the error
// and the error.
type damage struct {
	name    string
	file    []byte
	frames  int    // frames returned before the error (-1: NewReader fails)
	wantErr error  // sentinel
	msg     string // substring of the message
}

func damages() []damage {
	ok := buildPcap(le, false, LinkTypeEthernet, []pkt{
		{ts: t0, data: etherFrame(EtherTypeIPv4, ipv4Packet(10))},
		{ts: t0, data: etherFrame(EtherTypeIPv4, ipv4Packet(20))},
	})
	rec := appendPcapRecord(nil, le, false, pkt{ts: t0, data: make([]byte, 100)})
	huge := appendPcapRecord(nil, le, false, pkt{ts: t0, data: nil})
	le.PutUint32(huge[8:], MaxCaptureLen+1)
	badVersion := bytes.Clone(ok)
	le.PutUint16(badVersion[4:], 3)

	ng := func(build func(w *ngWriter)) []byte {
		w := &ngWriter{}
		w.shb(le).idb(LinkTypeEthernet, 0).epb(0, 1, []byte{1, 2, 3, 4, 5}, 0)
		build(w)
		return w.b
	}
	ngOK := ng(func(*ngWriter) {})
	n := len(ngOK)
	set32 := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		le.PutUint32(b[off:], v)
		return b
	}
	badBOM := set32(ngOK, 8, 0x11223344)
	ngVersion := bytes.Clone(ngOK)
	le.PutUint16(ngVersion[12:], 2)
	gz := gzipped(ok)
	gzBadCRC := bytes.Clone(gz)
	gzBadCRC[len(gzBadCRC)-8] ^= 0xff

	return []damage{
		{"empty file", nil, -1, ErrTruncated, `reading "empty file": empty file: capture: truncated`},
		{"three bytes", []byte{0xd4, 0xc3, 0xb2}, -1, ErrTruncated, "file header truncated"},
		{"wrong magic", []byte("GIF89a, not a capture at all"), -1, ErrBadMagic, "magic 47 49 46 38"},
		{"wrong magic short", []byte{0, 0, 0, 0}, -1, ErrBadMagic, "not a pcap"},
		{"pcap header truncated", ok[:20], -1, ErrTruncated, "file header truncated"},
		{"pcap bad version", badVersion, -1, ErrCorrupt, "version 3.4"},
		{"pcap record header truncated", append(bytes.Clone(ok), rec[:10]...), 2, ErrTruncated,
			`reading "pcap record header truncated": frame 3: record header truncated: capture: truncated`},
		{"pcap record data truncated", append(bytes.Clone(ok), rec[:50]...), 2, ErrTruncated, "frame 3: record data truncated"},
		{"pcap caplen too large", append(bytes.Clone(ok), huge...), 2, ErrCorrupt, "frame 3: captured length 262145 exceeds 262144"},
		{"pcap no records", ok[:24], 0, io.EOF, ""},
		{"gzip empty", gzipped(nil), -1, ErrTruncated, "empty gzip stream"},
		{"gzip truncated stream", gz[:len(gz)-12], 2, ErrTruncated, "frame 3: record header truncated"},
		{"gzip bad checksum", gzBadCRC, 2, ErrCorrupt, "gzip: invalid checksum"},
		{"gzip header truncated", []byte{0x1f, 0x8b, 8}, -1, ErrTruncated, "gzip header"},
		{"pcapng shb only", ngOK[:28], 0, io.EOF, ""},
		{"pcapng shb truncated", ngOK[:20], -1, ErrTruncated, "section header block truncated"},
		{"pcapng bad byte-order magic", badBOM, -1, ErrBadMagic, "byte-order magic 44 33 22 11"},
		{"pcapng bad version", ngVersion, -1, ErrCorrupt, "unsupported pcapng version 2.0"},
		{"pcapng block header truncated", append(bytes.Clone(ngOK), 6, 0, 0), 1, ErrTruncated, "frame 2: block header truncated"},
		{"pcapng block cut", ngOK[:n-6], 0, ErrTruncated, "frame 1: enhanced packet block truncated"},
		{"pcapng trailer cut", ngOK[:n-2], 0, ErrTruncated, "frame 1: block trailer truncated"},
		{"pcapng block length odd", set32(ngOK, n-40+4, 42), 0, ErrCorrupt, "block length 42 not a multiple of 4"},
		{"pcapng block length small", set32(ngOK, n-40+4, 8), 0, ErrCorrupt, "block length 8 below minimum 32"},
		{"pcapng block length huge", set32(ngOK, n-40+4, 0x7ffffff0), 0, ErrCorrupt, "exceeds"},
		{"pcapng block length mismatch", set32(ngOK, n-4, 44), 0, ErrCorrupt, "block length mismatch (40 at start, 44 at end)"},
		{"pcapng caplen beyond block", set32(ngOK, n-40+20, 9), 0, ErrCorrupt, "captured length 9 exceeds block length 40"},
		{"pcapng caplen huge", set32(ngOK, n-40+20, 1<<20), 0, ErrCorrupt, "captured length 1048576 exceeds 262144"},
		{"pcapng undefined interface", set32(ngOK, n-40+8, 1), 0, ErrCorrupt, "interface 1 not defined"},
		{"pcapng second frame corrupt", ng(func(w *ngWriter) {
			w.epb(0, 2, []byte{6}, 0)
			w.b = set32(w.b, len(w.b)-4, 0)
		}), 1, ErrCorrupt, "frame 2: block length mismatch"},
		{"pcapng simple packet without interface", (&ngWriter{}).shb(be).spb(4, []byte{1, 2, 3, 4}).b, 0, ErrCorrupt, "interface 0 not defined"},
		{"pcapng packet after new section", ng(func(w *ngWriter) {
			w.shb(be).epb(0, 1, []byte{1}, 0) // the new section has no interface yet
		}), 1, ErrCorrupt, "frame 2: enhanced packet block: interface 0 not defined"},
		{"pcapng option overruns", (&ngWriter{}).shb(le).block(blockIDB, []byte{1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 8, 0, 6, 0, 0, 0}).b,
			0, ErrCorrupt, "option 9 overruns"},
		{"pcapng bad tsresol", (&ngWriter{}).shb(le).idb(1, 0, ngOpt{9, u8(20)}).b, 0, ErrCorrupt, "if_tsresol 0x14"},
		{"pcapng statistics count short", ng(func(w *ngWriter) { w.isb(0, 1, ngOpt{optISBIfDrop, []byte{1, 0, 0, 0}}) }),
			1, ErrCorrupt, "frame 2: interface statistics block: isb_ifdrop of 4 bytes, want 8"},
		{"pcapng statistics time short", ng(func(w *ngWriter) { w.isb(0, 1, ngOpt{optISBEndTime, []byte{1}}) }),
			1, ErrCorrupt, "isb_endtime of 1 bytes, want 8"},
		{"pcapng statistics undefined interface", ng(func(w *ngWriter) { w.isb(3, 1) }),
			1, ErrCorrupt, "frame 2: interface statistics block: interface 3 not defined"},
		{"pcapng statistics option overruns", ng(func(w *ngWriter) {
			w.block(blockISB, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0, 6, 0, 0, 0})
		}), 1, ErrCorrupt, "interface statistics block: option 7 overruns"},
		{"pcapng statistics block small", ng(func(w *ngWriter) { w.block(blockISB, []byte{0, 0, 0, 0, 0, 0, 0, 0}) }),
			1, ErrCorrupt, "block length 20 below minimum 24"},
		{"pcapng drop count short", ng(func(w *ngWriter) { w.epb(0, 2, []byte{6}, 0, ngOpt{optEPBDropCount, []byte{1, 2}}) }),
			1, ErrCorrupt, "frame 2: enhanced packet block: epb_dropcount of 2 bytes, want 8"},
		{"pcapng bad byte-order magic later", append(bytes.Clone(ngOK), badBOM[:12]...), 1, ErrCorrupt, "frame 2: section header block: bad byte-order magic"},
	}
}

func TestDamagedFiles(t *testing.T) {
	for _, tc := range damages() {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.file), tc.name)
			if tc.frames < 0 {
				if r != nil {
					t.Fatalf("NewReader succeeded, want %v", tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("NewReader: %v", err)
				}
				var frames []Frame
				frames, err = readAll(t, r)
				if len(frames) != tc.frames {
					t.Errorf("read %d frames before the error, want %d", len(frames), tc.frames)
				}
				if _, again := r.Next(); again != err {
					t.Errorf("error not sticky: %v, then %v", err, again)
				}
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("err = %q, want it to contain %q", msg, tc.msg)
			}
			if err != io.EOF && !strings.HasPrefix(msg, `reading "`+tc.name+`": `) {
				t.Errorf("err = %q does not name the file", msg)
			}
			if err != io.EOF && msg != strings.ToLower(msg[:1])+msg[1:] {
				t.Errorf("err = %q not lower case", msg)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	pkts := []pkt{{ts: t0, data: etherFrame(EtherTypeIPv4, ipv4Packet(4))}}
	plain := filepath.Join(dir, "a.pcap")
	gz := filepath.Join(dir, "a.pcap.gz")
	ng := filepath.Join(dir, "a.pcapng")
	ngFileBytes, _ := ngFile(le, be)
	for path, b := range map[string][]byte{
		plain: buildPcap(le, true, 1, pkts),
		gz:    gzipped(buildPcap(be, false, 1, pkts)),
		ng:    gzipped(ngFileBytes),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path   string
		format string
		frames int
	}{
		{plain, "pcap-ns", 1},
		{gz, "pcap+gzip", 1},
		{ng, "pcapng+gzip", 7},
	} {
		r, err := Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if r.Format() != tc.format {
			t.Errorf("%s: Format() = %q, want %q", tc.path, r.Format(), tc.format)
		}
		frames, err := readAll(t, r)
		if err != io.EOF || len(frames) != tc.frames {
			t.Errorf("%s: %d frames, %v", tc.path, len(frames), err)
		}
		st, _ := os.Stat(tc.path)
		if r.BytesRead() != st.Size() {
			t.Errorf("%s: BytesRead() = %d, want %d", tc.path, r.BytesRead(), st.Size())
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: Close: %v", tc.path, err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: second Close: %v", tc.path, err)
		}
	}

	missing := filepath.Join(dir, "missing.pcap")
	if _, err := Open(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(missing) = %v", err)
	}
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), empty) {
		t.Errorf("Open(empty) = %v", err)
	}
}

// errReader fails after n bytes.
type errReader struct {
	b   []byte
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.b) == 0 {
		return 0, e.err
	}
	n := copy(p, e.b)
	e.b = e.b[n:]
	return n, nil
}

func TestIOError(t *testing.T) {
	file := buildPcap(le, false, 1, []pkt{{ts: t0, data: make([]byte, 100)}})
	boom := errors.New("disk on fire")
	r, err := NewReader(&errReader{b: file[:60], err: boom}, "io")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `reading "io": frame 1: record data`) {
		t.Errorf("err = %v", err)
	}
}

// TestZeroAlloc checks that reading a frame allocates nothing in steady
// state.
func TestZeroAlloc(t *testing.T) {
	const n = 3000
	var pkts []pkt
	for i := range n {
		pkts = append(pkts, pkt{ts: t0.Add(time.Duration(i) * time.Microsecond), data: etherFrame(EtherTypeIPv4, ipv4Packet(i%1500))})
	}
	w := &ngWriter{}
	w.shb(le).idb(LinkTypeEthernet, 0).idb(LinkTypeRaw, 0, ngOpt{9, u8(9)})
	for i, p := range pkts {
		if i%2 == 1 {
			w.epb(1, uint64(i), p.data[14:], 0) // raw IP
		} else {
			w.epb(0, uint64(i), p.data, 0)
		}
	}
	for name, file := range map[string][]byte{
		"pcap":        buildPcap(le, false, 1, pkts),
		"pcapng":      w.b,
		"pcap+gzip":   gzipped(buildPcap(be, true, 1, pkts)),
		"pcapng+gzip": gzipped(w.b),
	} {
		r, err := NewReader(bytes.NewReader(file), name)
		if err != nil {
			t.Fatal(err)
		}
		for range 100 { // warm up: grow the buffers
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(n-200, func() {
			f, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := f.Network(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per frame, want 0", name, allocs)
		}
	}
}

func TestDamagedGzip(t *testing.T) {
	var pkts []pkt
	for i := range 2000 {
		pkts = append(pkts, pkt{ts: t0.Add(time.Duration(i) * time.Millisecond), data: etherFrame(EtherTypeIPv4, ipv4Packet(i%700))})
	}
	gz := gzipped(buildPcap(le, false, 1, pkts))
	// gzip header, then a deflate block of the reserved type 3.
	badDeflate := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x07, 0, 0, 0}

	for _, tc := range []struct {
		name    string
		file    []byte
		header  bool // NewReader fails
		wantErr error
		msg     string
	}{
		{"cut in the middle", gz[:len(gz)/2], false, ErrTruncated, " truncated: capture: truncated"},
		{"bad deflate", badDeflate, true, ErrCorrupt, "file header: flate: corrupt input"},
		{"gzip header only", gz[:10], true, ErrTruncated, "file header truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.file), tc.name)
			if (err != nil) != tc.header {
				t.Fatalf("NewReader: %v", err)
			}
			if err == nil {
				var frames []Frame
				frames, err = readAll(t, r)
				if len(frames) == 0 || len(frames) >= len(pkts) {
					t.Errorf("read %d frames", len(frames))
				}
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v containing %q", err, tc.wantErr, tc.msg)
			}
		})
	}
}

// TestOpenHashed: SHA256 gives the whole file's SHA-256, gzipped or not,
// read to its end, part of the way or damaged; a reader Open made gives "".
func TestOpenHashed(t *testing.T) {
	pkts := []pkt{{ts: t0, data: ipv4Packet(300)}, {ts: t0, data: ipv4Packet(20)}, {ts: t0, data: ipv4Packet(7)}}
	plain := buildPcap(le, true, LinkTypeRaw, pkts)
	big := buildPcap(le, true, LinkTypeRaw, slices.Repeat(pkts, 5000)) // past the read-ahead buffers
	for _, tc := range []struct {
		name  string
		file  []byte
		reads int // frames read before SHA256 (-1: all)
	}{
		{"pcap", plain, -1},
		{"gzip", gzipped(plain), -1},
		{"big gzip, one frame read", gzipped(big), 1},
		{"big, none read", big, 0},
		{"damaged", plain[:len(plain)-3], -1},
	} {
		path := filepath.Join(t.TempDir(), "c.pcap")
		if err := os.WriteFile(path, tc.file, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenHashed(path)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; tc.reads < 0 || n < tc.reads; n++ {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		got, err := r.SHA256()
		r.Close()
		want := sha256.Sum256(tc.file)
		if err != nil || got != hex.EncodeToString(want[:]) {
			t.Errorf("%s: SHA256 %q, %v; want %x", tc.name, got, err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "c.pcap")
	os.WriteFile(path, plain, 0o644)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.SHA256(); got != "" || err != nil {
		t.Errorf("Open's reader: SHA256 %q, %v", got, err)
	}
}
