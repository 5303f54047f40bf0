package capture

import (
	"io"
	"math/bits"
	"time"
)

// pcapng (https://datatracker.ietf.org/doc/draft-ietf-opsawg-pcapng/):
// a sequence of blocks, each "type, total length, body, total length".
const (
	blockSHB = 0x0a0d0d0a // section header
	blockIDB = 0x00000001 // interface description
	blockOPB = 0x00000002 // packet (obsolete)
	blockSPB = 0x00000003 // simple packet
	blockEPB = 0x00000006 // enhanced packet

	byteOrderMagic = 0x1a2b3c4d

	// maxBlockLen bounds any block; a larger length is taken as damage.
	maxBlockLen = 16 << 20
	// maxIDBLen bounds an interface description or statistics block,
	// which is buffered whole to read its options.
	maxIDBLen = 1 << 20

	optEndOfOpt = 0
	optTSResol  = 9
	optTSOffset = 14
)

// iface is an interface of the current pcapng section.
type iface struct {
	linkType uint32
	snapLen  uint32
	binary   bool   // resolution is 2^-exp seconds, else 10^-exp
	exp      uint8  // resolution exponent
	unit     uint64 // units per second, for decimal resolutions
	offset   int64  // if_tsoffset, seconds
}

var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// time converts a timestamp in the interface's units to a time.
func (i *iface) time(ts uint64) time.Time {
	var sec, ns uint64
	if i.binary {
		if i.exp == 0 {
			sec = ts
		} else {
			sec = ts >> i.exp
			rem := ts & (1<<i.exp - 1)
			hi, lo := bits.Mul64(rem, 1e9)
			ns = hi<<(64-i.exp) | lo>>i.exp
		}
	} else {
		sec, ns = ts/i.unit, ts%i.unit
		if i.exp <= 9 {
			ns *= pow10[9-i.exp]
		} else {
			ns /= pow10[i.exp-9]
		}
	}
	return time.Unix(int64(sec)+i.offset, int64(ns)).UTC()
}

// startPcapng reads the first section header block.
func (r *Reader) startPcapng() error {
	if err := r.readFull(r.hdr[:8]); err != nil {
		return r.readHeaderErr("section header block", err)
	}
	if err := r.sectionHeader(); err != nil {
		return err
	}
	return nil
}

// sectionHeader reads the rest of a section header block whose first 8
// bytes are in r.hdr.
func (r *Reader) sectionHeader() error {
	b := r.hdr[8:24] // byte-order magic, version, section length
	if err := r.readFull(b[:4]); err != nil {
		return r.readErr("section header block", err)
	}
	switch {
	case bigEndian.u32(b) == byteOrderMagic:
		r.order = bigEndian
	case littleEndian.u32(b) == byteOrderMagic:
		r.order = littleEndian
	default:
		if !r.started {
			return r.headerErr(ErrBadMagic, "section header block: bad byte-order magic % x", b[:4])
		}
		return r.frameErr(ErrCorrupt, "section header block: bad byte-order magic % x", b[:4])
	}
	blen := r.order.u32(r.hdr[4:])
	if err := r.checkBlockLen(blen, 28, "section header"); err != nil {
		return err
	}
	if err := r.readFull(b[4:16]); err != nil {
		return r.readErr("section header block", err)
	}
	if major := r.order.u16(b[4:]); major != 1 {
		return r.frameErr(ErrCorrupt, "unsupported pcapng version %d.%d", major, r.order.u16(b[6:]))
	}
	if err := r.skip(int(blen) - 28); err != nil {
		return r.readErr("section header block", err)
	}
	if err := r.blockTrailer(blen); err != nil {
		return err
	}
	if r.ifaces == nil {
		r.ifaces = make([]iface, 0, 4)
	}
	r.ifaces = r.ifaces[:0]
	r.sections++
	r.ifBase = len(r.counters.Interfaces)
	return nil
}

// checkBlockLen checks a block's total length against the minimum for its
// type.
func (r *Reader) checkBlockLen(blen, min uint32, what string) error {
	switch {
	case blen < min:
		return r.frameErr(ErrCorrupt, "%s block: block length %d below minimum %d", what, blen, min)
	case blen%4 != 0:
		return r.frameErr(ErrCorrupt, "%s block: block length %d not a multiple of 4", what, blen)
	case blen > maxBlockLen:
		return r.frameErr(ErrCorrupt, "%s block: block length %d exceeds %d", what, blen, maxBlockLen)
	}
	return nil
}

// blockTrailer reads the total length repeated at the end of a block.
func (r *Reader) blockTrailer(blen uint32) error {
	t := r.hdr[28:32]
	if err := r.readFull(t); err != nil {
		return r.readErr("block trailer", err)
	}
	if end := r.order.u32(t); end != blen {
		return r.frameErr(ErrCorrupt, "block length mismatch (%d at start, %d at end)", blen, end)
	}
	return nil
}

func (r *Reader) nextPcapng() (*Frame, error) {
	for {
		h := r.hdr[:8]
		if err := r.readFull(h); err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, r.readErr("block header", err)
		}
		if h[0] == 0x0a && h[1] == 0x0d && h[2] == 0x0d && h[3] == 0x0a {
			if err := r.sectionHeader(); err != nil {
				return nil, err
			}
			continue
		}
		btype, blen := r.order.u32(h), r.order.u32(h[4:])
		switch btype {
		case blockIDB:
			if err := r.interfaceDescription(blen); err != nil {
				return nil, err
			}
		case blockISB:
			if err := r.interfaceStatistics(blen); err != nil {
				return nil, err
			}
		case blockEPB, blockOPB:
			return r.packet(btype, blen)
		case blockSPB:
			return r.simplePacket(blen)
		default:
			if err := r.checkBlockLen(blen, 12, "unknown"); err != nil {
				return nil, err
			}
			if err := r.skip(int(blen) - 12); err != nil {
				return nil, r.readErr("block body", err)
			}
			if err := r.blockTrailer(blen); err != nil {
				return nil, err
			}
		}
	}
}

func (r *Reader) interfaceDescription(blen uint32) error {
	b, err := r.bufferedBlock(blen, 20, "interface description")
	if err != nil {
		return err
	}
	in := iface{
		linkType: uint32(r.order.u16(b)),
		snapLen:  r.order.u32(b[4:]),
		exp:      6,
		unit:     1e6,
	}
	tsresol := uint8(6)
	err = r.options(b[8:len(b)-4], "interface description", func(code uint16, val []byte) error {
		switch {
		case code == optTSResol && len(val) == 1:
			v := val[0]
			in.binary, in.exp = v&0x80 != 0, v&0x7f
			if in.binary && in.exp > 63 || !in.binary && in.exp > 19 {
				return r.frameErr(ErrCorrupt, "interface description block: unsupported if_tsresol %#02x", v)
			}
			if !in.binary {
				in.unit = pow10[in.exp]
			}
			tsresol = v
		case code == optTSOffset && len(val) == 8:
			in.offset = int64(r.order.u64(val))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(r.ifaces) >= 1<<16 {
		return r.frameErr(ErrCorrupt, "more than %d interfaces", 1<<16)
	}
	r.counters.Interfaces = append(r.counters.Interfaces, Interface{Section: r.sections - 1, Index: len(r.ifaces),
		LinkType: in.linkType, TSResol: tsresol})
	r.ifaces = append(r.ifaces, in)
	return nil
}

// bufferedBlock reads the rest of a block that is read whole to parse its
// options (an interface description or statistics block), of total length
// blen and at least min bytes, checking its trailer: it returns the block
// from its body on (the trailer included), valid until the next read.
func (r *Reader) bufferedBlock(blen, min uint32, what string) ([]byte, error) {
	if err := r.checkBlockLen(blen, min, what); err != nil {
		return nil, err
	}
	if blen > maxIDBLen {
		return nil, r.frameErr(ErrCorrupt, "%s block: block length %d exceeds %d", what, blen, maxIDBLen)
	}
	b := r.data(int(blen) - 8)
	if err := r.readFull(b); err != nil {
		return nil, r.readErr(what+" block", err)
	}
	if end := r.order.u32(b[len(b)-4:]); end != blen {
		return nil, r.frameErr(ErrCorrupt, "block length mismatch (%d at start, %d at end)", blen, end)
	}
	return b, nil
}

// options calls f with each option of a block's options, up to
// opt_endofopt; an option that overruns the block is damage (the padding
// of the last one may be missing).
func (r *Reader) options(opts []byte, what string, f func(code uint16, val []byte) error) error {
	for len(opts) >= 4 {
		code, olen := r.order.u16(opts), int(r.order.u16(opts[2:]))
		if code == optEndOfOpt {
			break
		}
		if 4+olen > len(opts) {
			return r.frameErr(ErrCorrupt, "%s block: option %d overruns the block", what, code)
		}
		if err := f(code, opts[4:4+olen]); err != nil {
			return err
		}
		olen = (olen + 3) &^ 3
		if 4+olen > len(opts) {
			break // padding of the last option missing: tolerated
		}
		opts = opts[4+olen:]
	}
	return nil
}

// interfaceStatistics reads an interface statistics block into the
// counters of the interface it names.
func (r *Reader) interfaceStatistics(blen uint32) error {
	const what = "interface statistics"
	b, err := r.bufferedBlock(blen, 24, what)
	if err != nil {
		return err
	}
	id := r.order.u32(b)
	if id >= uint32(len(r.ifaces)) {
		return r.frameErr(ErrCorrupt, "%s block: interface %d not defined", what, id)
	}
	st := Interface{Stats: true}
	err = r.options(b[12:len(b)-4], what, func(code uint16, val []byte) error {
		var name string
		switch code {
		case optISBStartTime:
			name = "isb_starttime"
		case optISBEndTime:
			name = "isb_endtime"
		case optISBIfDrop:
			name = "isb_ifdrop"
		case optISBOSDrop:
			name = "isb_osdrop"
		default:
			return nil
		}
		if len(val) != 8 {
			return r.frameErr(ErrCorrupt, "%s block: %s of %d bytes, want 8", what, name, len(val))
		}
		switch code {
		case optISBStartTime:
			st.Start = r.ifaces[id].time(r.order.ts(val))
		case optISBEndTime:
			st.End = r.ifaces[id].time(r.order.ts(val))
		case optISBIfDrop:
			st.IfDrop = Count{N: r.order.u64(val), Known: true}
		case optISBOSDrop:
			st.OSDrop = Count{N: r.order.u64(val), Known: true}
		}
		return nil
	})
	if err != nil {
		return err
	}
	in := &r.counters.Interfaces[r.ifBase+int(id)]
	in.Stats, in.IfDrop, in.OSDrop, in.Start, in.End = true, st.IfDrop, st.OSDrop, st.Start, st.End
	return nil
}

// packet reads an enhanced or obsolete packet block.
func (r *Reader) packet(btype, blen uint32) (*Frame, error) {
	what := "enhanced packet"
	if btype == blockOPB {
		what = "packet"
	}
	if err := r.checkBlockLen(blen, 32, what); err != nil {
		return nil, err
	}
	h := r.hdr[8:28]
	if err := r.readFull(h); err != nil {
		return nil, r.readErr(what+" block", err)
	}
	var ifIndex uint32
	if btype == blockOPB {
		ifIndex = uint32(r.order.u16(h))
	} else {
		ifIndex = r.order.u32(h)
	}
	ts := r.order.ts(h[4:])
	capLen, origLen := r.order.u32(h[12:]), r.order.u32(h[16:])
	if ifIndex >= uint32(len(r.ifaces)) {
		return nil, r.frameErr(ErrCorrupt, "%s block: interface %d not defined", what, ifIndex)
	}
	if capLen > MaxCaptureLen {
		return nil, r.frameErr(ErrCorrupt, "captured length %d exceeds %d", capLen, MaxCaptureLen)
	}
	padded := (capLen + 3) &^ 3
	if padded > blen-32 {
		return nil, r.frameErr(ErrCorrupt, "%s block: captured length %d exceeds block length %d", what, capLen, blen)
	}
	in := &r.ifaces[ifIndex]
	// The data and its padding, then options: the comments and the drop
	// count are kept.
	data, err := r.packetData(in, capLen, padded-capLen, what)
	if err != nil {
		return nil, err
	}
	var drops uint64
	var comments []string
	if n := int(blen - 32 - padded); n > 0 {
		opts, err := r.optionBytes(n)
		if err != nil {
			return nil, r.readErr(what+" block", err)
		}
		var badDrop int
		comments, drops, badDrop = r.packetOptions(opts, btype == blockEPB)
		if badDrop >= 0 {
			return nil, r.frameErr(ErrCorrupt, "%s block: epb_dropcount of %d bytes, want 8", what, badDrop)
		}
	}
	if btype == blockOPB {
		if d := r.order.u16(h[2:]); d != opbDropsUnknown {
			drops = uint64(d)
		}
	}
	if err := r.blockTrailer(blen); err != nil {
		return nil, err
	}
	f := &r.frame
	f.Num++
	f.Time = in.time(ts)
	f.LinkType = in.linkType
	f.Data = data
	f.OrigLen = int(origLen)
	f.Interface = int(ifIndex)
	f.Comments = comments
	if drops > 0 {
		source := "epb_dropcount"
		if btype == blockOPB {
			source = "drops count"
		}
		r.loss(f, drops, source)
	}
	if f.LinkType == LinkTypeERF {
		r.erfLoss(f)
	}
	return f, nil
}

// packetData reads the n bytes a packet block captured on interface in,
// then skips pad bytes; what names the block in errors. A scan
// (ScanCounters) skips the packet's bytes too, but an ERF record's (its
// loss counter is in it), and returns no data.
func (r *Reader) packetData(in *iface, n, pad uint32, what string) ([]byte, error) {
	var data []byte
	if r.scan && in.linkType != LinkTypeERF {
		pad += n
	} else {
		data = r.data(int(n))
		if err := r.readFull(data); err != nil {
			return nil, r.readErr(what+" block", err)
		}
	}
	if err := r.skip(int(pad)); err != nil {
		return nil, r.readErr(what+" block", err)
	}
	return data, nil
}

// optionBytes reads the n bytes of a packet block's options, into a
// buffer reused from frame to frame.
func (r *Reader) optionBytes(n int) ([]byte, error) {
	if cap(r.opts) < n {
		r.opts = make([]byte, n)
	}
	opts := r.opts[:n]
	return opts, r.readFull(opts)
}

// packetOptions reads a packet block's options: its comments
// (opt_comment), in a slice reused from frame to frame (nil when it has
// none), and, for an enhanced packet block (epb), its epb_dropcount (0
// when it has none). badDrop is the length of an epb_dropcount that is not
// 8 bytes long, else -1. Options that overrun the block end the list
// without an error, as packet blocks are written by many tools and the
// reader needs nothing else of them.
func (r *Reader) packetOptions(opts []byte, epb bool) (comments []string, drops uint64, badDrop int) {
	out := r.comments[:0]
	badDrop = -1
	for len(opts) >= 4 {
		code, olen := r.order.u16(opts), int(r.order.u16(opts[2:]))
		if code == optEndOfOpt || 4+olen > len(opts) {
			break
		}
		switch {
		case code == optComment:
			out = append(out, string(opts[4:4+olen]))
		case code == optEPBDropCount && epb:
			if olen != 8 {
				return nil, 0, olen
			}
			drops = r.order.u64(opts[4:])
		}
		opts = opts[min(len(opts), 4+(olen+3)&^3):]
	}
	r.comments = out
	if len(out) == 0 {
		out = nil
	}
	return out, drops, badDrop
}

// simplePacket reads a simple packet block, which belongs to interface 0
// and has no timestamp.
func (r *Reader) simplePacket(blen uint32) (*Frame, error) {
	if err := r.checkBlockLen(blen, 16, "simple packet"); err != nil {
		return nil, err
	}
	if len(r.ifaces) == 0 {
		return nil, r.frameErr(ErrCorrupt, "simple packet block: interface 0 not defined")
	}
	in := &r.ifaces[0]
	h := r.hdr[8:12]
	if err := r.readFull(h); err != nil {
		return nil, r.readErr("simple packet block", err)
	}
	origLen := r.order.u32(h)
	room := blen - 16
	if room > MaxCaptureLen+3 {
		return nil, r.frameErr(ErrCorrupt, "simple packet block: block length %d too large for a frame", blen)
	}
	capLen := origLen
	if in.snapLen != 0 && capLen > in.snapLen {
		capLen = in.snapLen
	}
	if capLen > room {
		capLen = room
	}
	if capLen > MaxCaptureLen {
		capLen = MaxCaptureLen
	}
	data, err := r.packetData(in, capLen, room-capLen, "simple packet")
	if err != nil {
		return nil, err
	}
	if err := r.blockTrailer(blen); err != nil {
		return nil, err
	}
	f := &r.frame
	f.Num++
	f.Time = time.Time{}
	f.LinkType = in.linkType
	f.Data = data
	f.OrigLen = int(origLen)
	f.Interface = 0
	f.Comments = nil
	if f.LinkType == LinkTypeERF {
		r.erfLoss(f)
	}
	return f, nil
}
