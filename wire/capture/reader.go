package capture

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// Sentinel errors. Errors returned by this package wrap them with %w, so
// test for them with errors.Is.
var (
	// ErrBadMagic means the file is neither pcap nor pcapng (nor a gzip
	// of one of them).
	ErrBadMagic = errors.New("capture: bad magic")
	// ErrTruncated means the file ends inside a header or a record.
	ErrTruncated = errors.New("capture: truncated")
	// ErrCorrupt means a header holds an impossible value: a block length
	// that is too small, not a multiple of 4 or not the same at both ends
	// of the block, a captured length above MaxCaptureLen, an undefined
	// interface, a damaged gzip stream, and the like.
	ErrCorrupt = errors.New("capture: corrupt")
)

// MaxCaptureLen is the largest captured length of a frame that the reader
// accepts (256 KiB, the largest snapshot length tcpdump and Wireshark use).
// A record claiming more is taken as corrupt.
const MaxCaptureLen = 256 << 10

// Frame is one record of a capture. Data is only valid until the next call
// to Next (buffers are reused). A pcapng simple packet block has no
// timestamp: its Time is the zero time.
type Frame struct {
	Num       int       // 1-based frame number, as Wireshark shows it
	Time      time.Time // capture timestamp (ns precision where the file has it)
	LinkType  uint32    // pcap LINKTYPE_* value of the record's interface
	Data      []byte    // captured bytes
	OrigLen   int       // original length on the wire (> len(Data) when cut by snaplen)
	Interface int       // pcapng interface index (0 for pcap)
	// Comments are the packet's comments (pcapng opt_comment), as
	// Wireshark shows them; like Data, valid until the next call to Next.
	Comments []string
}

// Truncated reports whether the frame was cut short by the capture's
// snapshot length, that is whether fewer bytes were captured than were on
// the wire.
func (f *Frame) Truncated() bool { return f.OrigLen > len(f.Data) }

// Network locates the network layer of the frame; see the function Network.
func (f *Frame) Network() (proto uint16, off int, err error) {
	return Network(f.LinkType, f.Data)
}

type format uint8

const (
	formatPcap format = iota + 1
	formatPcapNs
	formatPcapng
)

// bufSize is the size of the read-ahead buffer: large enough for a record
// header and the largest frame (MaxCaptureLen), so that every record can
// be handed out from it without a copy (see view).
const bufSize = 1 << 20

// Reader reads the frames of one capture file in order. It is not safe for
// concurrent use.
type Reader struct {
	name    string
	file    io.Closer // closed by Close; nil for NewReader
	count   countingReader
	gz      *gzip.Reader
	ahead   *aheadReader // decompresses gz ahead of the caller
	gzipped bool
	br      *bufio.Reader
	format  format

	started  bool  // the file header has been read
	err      error // sticky: returned by every Next after the first error
	frame    Frame
	buf      []byte   // frame data, reused
	opts     []byte   // a packet block's options, reused
	comments []string // a packet block's comments, reused
	hdr      [32]byte // record / block header scratch

	// pcap
	order    byteOrder
	linkType uint32
	fracMul  int64 // nanoseconds per unit of the sub-second field

	// pcapng
	ifaces   []iface
	sections int // section header blocks read
	ifBase   int // the current section's first interface in counters.Interfaces

	counters Counters // what the file says of its own completeness (counters.go)
	// scan (ScanCounters) skips the bytes of packets, but ERF records'
	// (their loss counter is in them): frames come with no Data.
	scan bool
}

// Open opens the capture file at path. It detects gzip compression (magic
// 1f 8b) and then pcap or pcapng by the magic at the start of the file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// OpenHashed is Open, also taking the SHA-256 of the file's bytes as they
// are read (the compressed bytes of a gzip file): SHA256 returns it.
func OpenHashed(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	r, err := newReader(f, path, sha256.New())
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// SHA256 returns the SHA-256 of the whole file, in hex, for a reader
// OpenHashed made ("" for any other): the bytes read so far and the rest
// of the file, which it reads to the end (so a capture damaged part-way
// has its hash too). Call it when done with the frames: Next fails
// afterwards.
func (r *Reader) SHA256() (string, error) {
	if r.count.h == nil {
		return "", nil
	}
	if r.ahead != nil {
		r.ahead.Close() // no more reads of the file on its goroutine
		r.ahead = nil
	}
	if r.err == nil || r.err == io.EOF {
		r.err = fmt.Errorf("reading %q: the file was hashed to its end: %w", r.name, os.ErrClosed)
	}
	if _, err := io.Copy(io.Discard, &r.count); err != nil {
		return "", fmt.Errorf("hashing %q: %w", r.name, err)
	}
	return hex.EncodeToString(r.count.h.Sum(nil)), nil
}

// NewReader reads a capture from r; name is used in error messages. Like
// Open it detects gzip, then pcap or pcapng. It reads the file header (and
// the first section header of a pcapng file) before it returns. Close does
// not close r.
func NewReader(r io.Reader, name string) (*Reader, error) {
	return newReader(r, name, nil)
}

// newReader is NewReader, writing every byte read from r to h when h is
// not nil.
func newReader(r io.Reader, name string, h hash.Hash) (*Reader, error) {
	rd := &Reader{name: name}
	rd.count.h = h
	ok := false
	defer func() {
		if !ok && rd.ahead != nil {
			rd.ahead.Close()
		}
	}()
	rd.count.r = r
	br := bufio.NewReaderSize(&rd.count, bufSize)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, rd.readHeaderErr("gzip header", err)
		}
		rd.gz = gz
		rd.gzipped = true
		// Decompress on a goroutine of its own, ahead of the parsing.
		rd.ahead = newAheadReader(gz)
		br = bufio.NewReaderSize(rd.ahead, bufSize)
	}
	rd.br = br
	magic, err = br.Peek(4)
	if err != nil {
		switch {
		case len(magic) == 0 && err == io.EOF && rd.gzipped:
			return nil, rd.headerErr(ErrTruncated, "empty gzip stream")
		case len(magic) == 0 && err == io.EOF:
			return nil, rd.headerErr(ErrTruncated, "empty file")
		}
		return nil, rd.readHeaderErr("file header", err)
	}
	switch {
	case magic[0] == 0x0a && magic[1] == 0x0d && magic[2] == 0x0d && magic[3] == 0x0a:
		rd.format = formatPcapng
		err = rd.startPcapng()
	default:
		err = rd.startPcap(magic)
	}
	if err != nil {
		return nil, err
	}
	rd.started = true
	ok = true
	return rd, nil
}

// Next returns the next frame. It returns io.EOF at a clean end of the
// file. After any error, Next keeps returning that error. The frame and its
// Data are only valid until the next call to Next.
func (r *Reader) Next() (*Frame, error) {
	if r.err != nil {
		return nil, r.err
	}
	var f *Frame
	var err error
	if r.format == formatPcapng {
		f, err = r.nextPcapng()
	} else {
		f, err = r.nextPcap()
	}
	if err != nil {
		r.err = err
		return nil, err
	}
	return f, nil
}

// Close releases the reader. It closes the file opened by Open; it does
// not close the io.Reader given to NewReader. After Close, Next returns an
// error.
func (r *Reader) Close() error {
	if r.err == nil || r.err == io.EOF {
		r.err = fmt.Errorf("reading %q: %w", r.name, os.ErrClosed)
	}
	var err error
	if r.ahead != nil {
		r.ahead.Close()
		r.ahead = nil
	}
	if r.gz != nil {
		err = r.gz.Close()
		r.gz = nil
	}
	if r.file != nil {
		if cerr := r.file.Close(); err == nil {
			err = cerr
		}
		r.file = nil
	}
	return err
}

// Format returns the file format: "pcap", "pcap-ns" (nanosecond pcap) or
// "pcapng", followed by "+gzip" when the file is compressed.
func (r *Reader) Format() string {
	var s string
	switch r.format {
	case formatPcap:
		s = "pcap"
	case formatPcapNs:
		s = "pcap-ns"
	case formatPcapng:
		s = "pcapng"
	}
	if r.gzipped {
		return s + "+gzip"
	}
	return s
}

// BytesRead returns the number of bytes consumed so far from the underlying
// file (compressed bytes for a gzip file), for a progress bar. It runs ahead
// of the frames returned by up to the size of the read-ahead buffers.
func (r *Reader) BytesRead() int64 { return r.count.n.Load() }

// Name returns the name given to Open or NewReader.
func (r *Reader) Name() string { return r.name }

type countingReader struct {
	r io.Reader
	n atomic.Int64 // read by BytesRead while a gzip file is read ahead
	h hash.Hash    // when not nil, takes every byte read (OpenHashed)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n.Add(int64(n))
		if c.h != nil {
			c.h.Write(p[:n])
		}
	}
	return n, err
}

// headerErr reports damage in the file header; kind is a sentinel or an
// I/O error.
func (r *Reader) headerErr(kind error, format string, args ...any) error {
	return fmt.Errorf("reading %q: %s: %w", r.name, fmt.Sprintf(format, args...), kind)
}

// frameErr reports damage while reading the next frame; kind is a sentinel
// or an I/O error.
func (r *Reader) frameErr(kind error, format string, args ...any) error {
	if !r.started {
		return r.headerErr(kind, format, args...)
	}
	return fmt.Errorf("reading %q: frame %d: %s: %w", r.name, r.frame.Num+1, fmt.Sprintf(format, args...), kind)
}

// readErr turns an error from io.ReadFull while reading what into a frame
// error.
func (r *Reader) readErr(what string, err error) error {
	kind := classify(err)
	if kind == ErrTruncated {
		return r.frameErr(kind, "%s truncated", what)
	}
	return r.frameErr(kind, "%s", what)
}

// readHeaderErr is readErr for the file header.
func (r *Reader) readHeaderErr(what string, err error) error {
	kind := classify(err)
	if kind == ErrTruncated {
		return r.headerErr(kind, "%s truncated", what)
	}
	return r.headerErr(kind, "%s", what)
}

// classify maps end-of-file to ErrTruncated and a damaged gzip stream to
// ErrCorrupt (keeping the original error in the chain); other errors (I/O)
// are returned as they are.
func classify(err error) error {
	var ce flate.CorruptInputError
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return ErrTruncated
	case errors.Is(err, ErrTruncated), errors.Is(err, ErrCorrupt), errors.Is(err, ErrBadMagic):
		return err
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.As(err, &ce):
		return fmt.Errorf("%w: %w", err, ErrCorrupt)
	}
	return err
}

// readFull reads exactly len(p) bytes; io.EOF only when nothing was read.
func (r *Reader) readFull(p []byte) error {
	_, err := io.ReadFull(r.br, p)
	return err
}

// view consumes the next n bytes and returns them: a slice of the
// read-ahead buffer when it can hold them (no copy), valid until the next
// read; otherwise scratch, or the reusable data buffer when scratch is too
// small, filled by readFull (with its errors).
func (r *Reader) view(n int, scratch []byte) ([]byte, error) {
	if b, err := r.br.Peek(n); err == nil {
		r.br.Discard(n) // buffered: cannot fail
		return b, nil
	}
	// Fewer than n bytes left (or more than the buffer holds): read what
	// there is, as readFull reports it. Peek consumed nothing.
	var b []byte
	if n <= len(scratch) {
		b = scratch[:n]
	} else {
		b = r.data(n)
	}
	return b, r.readFull(b)
}

// data returns the reusable buffer resized to n bytes.
func (r *Reader) data(n int) []byte {
	if cap(r.buf) < n {
		c := 2 * cap(r.buf)
		if c < n {
			c = n
		}
		if c < 2048 {
			c = 2048
		}
		r.buf = make([]byte, c)
	}
	return r.buf[:n]
}

// skip discards n bytes.
func (r *Reader) skip(n int) error {
	m, err := r.br.Discard(n)
	if m < n && err == nil {
		err = io.ErrUnexpectedEOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// byteOrder is a small non-interface byte order, so that decoding a header
// involves no interface call.
type byteOrder bool

const (
	littleEndian byteOrder = false
	bigEndian    byteOrder = true
)

func (o byteOrder) u16(b []byte) uint16 {
	_ = b[1]
	if o == bigEndian {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return uint16(b[1])<<8 | uint16(b[0])
}

func (o byteOrder) u32(b []byte) uint32 {
	_ = b[3]
	if o == bigEndian {
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}
	return uint32(b[3])<<24 | uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
}

// ts reads a pcapng timestamp: its high 32 bits, then its low 32 bits.
func (o byteOrder) ts(b []byte) uint64 { return uint64(o.u32(b))<<32 | uint64(o.u32(b[4:])) }

func (o byteOrder) u64(b []byte) uint64 {
	_ = b[7]
	if o == bigEndian {
		return uint64(o.u32(b))<<32 | uint64(o.u32(b[4:]))
	}
	return uint64(o.u32(b[4:]))<<32 | uint64(o.u32(b))
}
