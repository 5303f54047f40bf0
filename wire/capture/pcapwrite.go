package capture

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// PcapWriter writes a classic pcap file with nanosecond timestamps (magic
// a1b23c4d), little endian, as tcpdump --time-stamp-precision=nano does.
// It does not buffer: give it a bufio.Writer. It is not safe for
// concurrent use.
type PcapWriter struct {
	w      io.Writer
	frames int
	hdr    [16]byte
}

// maxPcapSeconds is the last second a pcap record's unsigned 32-bit
// seconds field holds (2106).
const maxPcapSeconds = 1<<32 - 1

// NewPcapWriter writes the file header to w (version 2.4, snapshot length
// snaplen, link type linkType) and returns the writer.
func NewPcapWriter(w io.Writer, snaplen int, linkType uint32) (*PcapWriter, error) {
	var h [24]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], 0xa1b23c4d) // nanosecond timestamps
	le.PutUint16(h[4:], 2)
	le.PutUint16(h[6:], 4)
	le.PutUint32(h[16:], uint32(snaplen))
	le.PutUint32(h[20:], linkType)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("writing the pcap file header: %w", err)
	}
	return &PcapWriter{w: w}, nil
}

// WritePacket writes one frame: its timestamp (to the nanosecond), its
// bytes, and its length on the wire, origLen (len(data) when 0). A frame
// pcap cannot hold (a timestamp before 1970 or after 2106, a captured
// length above MaxCaptureLen or above origLen) is refused with an error,
// and nothing is written.
func (w *PcapWriter) WritePacket(t time.Time, data []byte, origLen int) error {
	if origLen == 0 {
		origLen = len(data)
	}
	switch {
	case t.Unix() < 0 || t.Unix() > maxPcapSeconds:
		return fmt.Errorf("timestamp %s is outside what pcap holds (1970 to 2106)", t.UTC().Format(time.RFC3339Nano))
	case len(data) > MaxCaptureLen || len(data) > origLen || int64(origLen) > 1<<32-1:
		return fmt.Errorf("pcap cannot hold a frame of %d bytes captured, %d on the wire (at most %d captured, no more than on the wire)", len(data), origLen, MaxCaptureLen)
	}
	le := binary.LittleEndian
	le.PutUint32(w.hdr[0:], uint32(t.Unix()))
	le.PutUint32(w.hdr[4:], uint32(t.Nanosecond()))
	le.PutUint32(w.hdr[8:], uint32(len(data)))
	le.PutUint32(w.hdr[12:], uint32(origLen))
	if _, err := w.w.Write(w.hdr[:]); err != nil {
		return fmt.Errorf("writing pcap frame %d: %w", w.frames+1, err)
	}
	if _, err := w.w.Write(data); err != nil {
		return fmt.Errorf("writing pcap frame %d: %w", w.frames+1, err)
	}
	w.frames++
	return nil
}
