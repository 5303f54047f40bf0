package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// ErrUnwritable means a frame or an interface cannot be held in a pcapng
// file as NgWriter writes it: a link type above 65535, a frame without a
// timestamp (a simple packet block's) or one before 1970 or after 2554
// (an enhanced packet block counts nanoseconds from 1970 in 64 bits), a
// captured length above MaxCaptureLen.
var ErrUnwritable = errors.New("capture: cannot be written as pcapng")

// Option codes NgWriter writes (pcapng §3.5, §4.2).
const (
	optComment = 1 // opt_comment: UTF-8 text, in any block
	optIfName  = 2 // if_name
	optIfDesc  = 3 // if_description
)

// MaxCommentLen is the longest comment NgWriter writes, in bytes: a
// longer one is cut at a character boundary and ends with "…".
const MaxCommentLen = 4096

// NgWriter writes a pcapng file: one section (little endian), its
// interfaces (each with nanosecond timestamps) and enhanced packet blocks,
// each with any number of comments (opt_comment), as Wireshark shows them
// in the packet details (frame.comment). It buffers: call Flush at the
// end. It is not safe for concurrent use.
type NgWriter struct {
	w      *bufio.Writer
	ifaces int
	frames int
	buf    []byte
}

// NewNgWriter writes the section header block to w and returns the
// writer; comment, if not empty, is the section's comment.
func NewNgWriter(w io.Writer, comment string) (*NgWriter, error) {
	nw := &NgWriter{w: bufio.NewWriterSize(w, 1<<16)}
	b := nw.start(blockSHB)
	b = binary.LittleEndian.AppendUint32(b, byteOrderMagic)
	b = binary.LittleEndian.AppendUint16(b, 1) // version 1.0
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0)) // section length not given
	if comment != "" {
		b = appendOption(b, optComment, optionText(comment))
	}
	if err := nw.finish(b, comment != ""); err != nil {
		return nil, fmt.Errorf("writing the pcapng section header: %w", err)
	}
	return nw, nil
}

// AddInterface writes an interface description block for frames of
// linkType, with nanosecond timestamps and no snapshot length, and returns
// its index for WritePacket. name and description (if_name,
// if_description; either may be empty) are what Wireshark shows as the
// frame's interface.
func (w *NgWriter) AddInterface(linkType uint32, name, description string) (int, error) {
	if linkType > 0xffff {
		return 0, fmt.Errorf("link type %d: pcapng holds link types up to 65535: %w", linkType, ErrUnwritable)
	}
	b := w.start(blockIDB)
	b = binary.LittleEndian.AppendUint16(b, uint16(linkType))
	b = binary.LittleEndian.AppendUint16(b, 0) // reserved
	b = binary.LittleEndian.AppendUint32(b, 0) // snaplen: none
	if name != "" {
		b = appendOption(b, optIfName, optionText(name))
	}
	if description != "" {
		b = appendOption(b, optIfDesc, optionText(description))
	}
	b = appendOption(b, optTSResol, "\x09") // nanoseconds
	if err := w.finish(b, true); err != nil {
		return 0, fmt.Errorf("writing a pcapng interface description: %w", err)
	}
	w.ifaces++
	return w.ifaces - 1, nil
}

// maxNgSeconds bounds the seconds since 1970 of a timestamp NgWriter
// writes: nanoseconds since 1970 must fit 64 bits (until 2554).
const maxNgSeconds = (1<<64-1)/1_000_000_000 - 1

// WritePacket writes one frame as an enhanced packet block of interface
// iface: its timestamp (to the nanosecond), captured bytes, original
// length and comments (each made one line: line breaks become spaces). A
// frame pcapng cannot hold is refused with an error wrapping
// ErrUnwritable, and nothing is written.
func (w *NgWriter) WritePacket(iface int, t time.Time, data []byte, origLen int, comments []string) error {
	switch {
	case iface < 0 || iface >= w.ifaces:
		return fmt.Errorf("interface %d not added (%d are): %w", iface, w.ifaces, ErrUnwritable)
	case t.IsZero():
		return fmt.Errorf("the frame has no timestamp (a simple packet block's), which an enhanced packet block must have: %w", ErrUnwritable)
	case t.Unix() < 0 || t.Unix() > maxNgSeconds:
		return fmt.Errorf("timestamp %s is outside what pcapng holds in nanoseconds (1970 to 2554): %w", t.UTC().Format(time.RFC3339Nano), ErrUnwritable)
	case len(data) > MaxCaptureLen:
		return fmt.Errorf("captured length %d exceeds %d: %w", len(data), MaxCaptureLen, ErrUnwritable)
	case origLen < 0 || int64(origLen) > 1<<32-1:
		return fmt.Errorf("original length %d does not fit 32 bits: %w", origLen, ErrUnwritable)
	}
	ns := uint64(t.Unix())*1e9 + uint64(t.Nanosecond())
	b := w.start(blockEPB)
	b = binary.LittleEndian.AppendUint32(b, uint32(iface))
	b = binary.LittleEndian.AppendUint32(b, uint32(ns>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ns))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(origLen))
	b = append(b, data...)
	b = pad4(b)
	for _, c := range comments {
		b = appendOption(b, optComment, optionText(c))
	}
	if err := w.finish(b, len(comments) > 0); err != nil {
		return fmt.Errorf("writing pcapng frame %d: %w", w.frames+1, err)
	}
	w.frames++
	return nil
}

// Flush writes what is buffered.
func (w *NgWriter) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("writing pcapng: %w", err)
	}
	return nil
}

// start begins a block of type typ in w's scratch buffer, its length to
// be filled by finish.
func (w *NgWriter) start(typ uint32) []byte {
	b := binary.LittleEndian.AppendUint32(w.buf[:0], typ)
	return binary.LittleEndian.AppendUint32(b, 0)
}

// finish ends the options (when opts says there are any), sets the
// block's length at both ends and writes the block.
func (w *NgWriter) finish(b []byte, opts bool) error {
	if opts {
		b = binary.LittleEndian.AppendUint32(b, optEndOfOpt) // opt_endofopt, length 0
	}
	n := uint32(len(b) + 4)
	binary.LittleEndian.PutUint32(b[4:], n)
	b = binary.LittleEndian.AppendUint32(b, n)
	w.buf = b
	_, err := w.w.Write(b)
	return err
}

// appendOption appends one option, padded to 4 bytes.
func appendOption(b []byte, code uint16, val string) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	return pad4(b)
}

// pad4 pads b with zeros to a multiple of 4 bytes.
func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// optionText makes s, a comment or a name, one line of valid UTF-8 of at
// most MaxCommentLen bytes.
func optionText(s string) string {
	s = string([]rune(s)) // invalid bytes become U+FFFD
	out := make([]byte, 0, min(len(s), MaxCommentLen))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		if len(out)+utf8.RuneLen(r) > MaxCommentLen-len("…") {
			return string(append(out, "…"...))
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}
