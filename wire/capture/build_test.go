package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"time"
)

// This file builds small capture files in memory for the tests, the fuzz
// seeds and the benchmark.

// order is a byte order that can both read and append.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

var (
	le order = binary.LittleEndian
	be order = binary.BigEndian
)

// pkt is one frame to write.
type pkt struct {
	ts   time.Time
	data []byte
	orig int // original length; 0 means len(data)
}

func (p pkt) origLen() int {
	if p.orig == 0 {
		return len(p.data)
	}
	return p.orig
}

// buildPcap writes a classic pcap file.
func buildPcap(o order, nano bool, linkType uint32, pkts []pkt) []byte {
	var b []byte
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	b = o.AppendUint32(b, magic)
	b = o.AppendUint16(b, 2)
	b = o.AppendUint16(b, 4)
	b = o.AppendUint32(b, 0)      // thiszone
	b = o.AppendUint32(b, 0)      // sigfigs
	b = o.AppendUint32(b, 262144) // snaplen
	b = o.AppendUint32(b, linkType)
	for _, p := range pkts {
		b = appendPcapRecord(b, o, nano, p)
	}
	return b
}

func appendPcapRecord(b []byte, o order, nano bool, p pkt) []byte {
	frac := uint32(p.ts.Nanosecond() / 1000)
	if nano {
		frac = uint32(p.ts.Nanosecond())
	}
	b = o.AppendUint32(b, uint32(p.ts.Unix()))
	b = o.AppendUint32(b, frac)
	b = o.AppendUint32(b, uint32(len(p.data)))
	b = o.AppendUint32(b, uint32(p.origLen()))
	return append(b, p.data...)
}

// ngWriter writes a pcapng file block by block.
type ngWriter struct {
	o order
	b []byte
}

type ngOpt struct {
	code uint16
	val  []byte
}

func (w *ngWriter) block(typ uint32, body []byte) *ngWriter {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	w.b = w.o.AppendUint32(w.b, typ)
	w.b = w.o.AppendUint32(w.b, n)
	w.b = append(w.b, body...)
	w.b = w.o.AppendUint32(w.b, n)
	return w
}

func (w *ngWriter) opts(body []byte, opts []ngOpt) []byte {
	if len(opts) == 0 {
		return body
	}
	for _, op := range opts {
		body = w.o.AppendUint16(body, op.code)
		body = w.o.AppendUint16(body, uint16(len(op.val)))
		body = append(body, op.val...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
	}
	return append(body, 0, 0, 0, 0) // opt_endofopt
}

// shb starts a section in byte order o.
func (w *ngWriter) shb(o order, opts ...ngOpt) *ngWriter {
	w.o = o
	var body []byte
	body = o.AppendUint32(body, byteOrderMagic)
	body = o.AppendUint16(body, 1)
	body = o.AppendUint16(body, 0)
	body = o.AppendUint64(body, ^uint64(0)) // section length unknown
	return w.block(blockSHB, w.opts(body, opts))
}

func (w *ngWriter) idb(linkType uint16, snapLen uint32, opts ...ngOpt) *ngWriter {
	var body []byte
	body = w.o.AppendUint16(body, linkType)
	body = w.o.AppendUint16(body, 0)
	body = w.o.AppendUint32(body, snapLen)
	return w.block(blockIDB, w.opts(body, opts))
}

func (w *ngWriter) epb(ifIndex uint32, ts uint64, data []byte, orig int, opts ...ngOpt) *ngWriter {
	if orig == 0 {
		orig = len(data)
	}
	var body []byte
	body = w.o.AppendUint32(body, ifIndex)
	body = w.o.AppendUint32(body, uint32(ts>>32))
	body = w.o.AppendUint32(body, uint32(ts))
	body = w.o.AppendUint32(body, uint32(len(data)))
	body = w.o.AppendUint32(body, uint32(orig))
	body = append(body, data...)
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	return w.block(blockEPB, w.opts(body, opts))
}

func (w *ngWriter) opb(ifIndex, drops uint16, ts uint64, data []byte, orig int) *ngWriter {
	if orig == 0 {
		orig = len(data)
	}
	var body []byte
	body = w.o.AppendUint16(body, ifIndex)
	body = w.o.AppendUint16(body, drops)
	body = w.o.AppendUint32(body, uint32(ts>>32))
	body = w.o.AppendUint32(body, uint32(ts))
	body = w.o.AppendUint32(body, uint32(len(data)))
	body = w.o.AppendUint32(body, uint32(orig))
	body = append(body, data...)
	return w.block(blockOPB, body)
}

// isb writes an interface statistics block.
func (w *ngWriter) isb(ifIndex uint32, ts uint64, opts ...ngOpt) *ngWriter {
	body := w.o.AppendUint32(nil, ifIndex)
	body = w.tsVal(body, ts)
	return w.block(blockISB, w.opts(body, opts))
}

// tsVal appends a pcapng timestamp, its high 32 bits first.
func (w *ngWriter) tsVal(b []byte, ts uint64) []byte {
	return w.o.AppendUint32(w.o.AppendUint32(b, uint32(ts>>32)), uint32(ts))
}

func (w *ngWriter) spb(orig int, data []byte) *ngWriter {
	var body []byte
	body = w.o.AppendUint32(body, uint32(orig))
	body = append(body, data...)
	return w.block(blockSPB, body)
}

func u8(v uint8) []byte { return []byte{v} }

func (w *ngWriter) u64(v int64) []byte { return w.o.AppendUint64(nil, uint64(v)) }

// erfRecord is an ERF record of type typ (variable length) whose loss
// counter field holds lctr, around payload.
func erfRecord(typ byte, lctr uint16, payload []byte) []byte {
	h := make([]byte, erfHeaderLen, erfHeaderLen+len(payload))
	h[8], h[9] = typ, 0x04
	be.PutUint16(h[10:], uint16(erfHeaderLen+len(payload)))
	be.PutUint16(h[12:], lctr)
	be.PutUint16(h[14:], uint16(len(payload)))
	return append(h, payload...)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// Frame bodies.

// etherFrame builds an Ethernet frame with the given VLAN tags (TPID,
// VID pairs), EtherType and payload.
func etherFrame(etherType uint16, payload []byte, tags ...uint16) []byte {
	b := []byte{0x52, 0x54, 0, 0, 0, 1, 0x52, 0x54, 0, 0, 0, 2}
	for i := 0; i+1 < len(tags); i += 2 {
		b = binary.BigEndian.AppendUint16(b, tags[i])
		b = binary.BigEndian.AppendUint16(b, tags[i+1])
	}
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// ipv4Packet is a minimal IPv4/UDP packet to port 4791 with n payload
// bytes.
func ipv4Packet(n int) []byte {
	b := []byte{0x45, 0x02, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
		0xc0, 0x00, 0x12, 0xb7, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(28+n))
	binary.BigEndian.PutUint16(b[24:], uint16(8+n))
	for i := range n {
		b = append(b, byte(i))
	}
	return b
}

func ipv6Packet(n int) []byte {
	b := make([]byte, 40, 48+n)
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(8+n))
	b[6], b[7] = 17, 64
	b = append(b, 0xc0, 0x00, 0x12, 0xb7, 0, 0, 0, 0)
	for i := range n {
		b = append(b, byte(i))
	}
	return b
}
