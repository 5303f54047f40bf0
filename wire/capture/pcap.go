package capture

import (
	"io"
	"time"
)

// Classic pcap (https://datatracker.ietf.org/doc/draft-ietf-opsawg-pcap/):
// a 24-byte file header, then records of a 16-byte header and the data.
const (
	pcapFileHeaderLen   = 24
	pcapRecordHeaderLen = 16
)

// startPcap reads the file header; magic holds its first 4 bytes.
func (r *Reader) startPcap(magic []byte) error {
	switch {
	case magic[0] == 0xa1 && magic[1] == 0xb2 && magic[2] == 0xc3 && magic[3] == 0xd4:
		r.format, r.order, r.fracMul = formatPcap, bigEndian, 1000
	case magic[0] == 0xd4 && magic[1] == 0xc3 && magic[2] == 0xb2 && magic[3] == 0xa1:
		r.format, r.order, r.fracMul = formatPcap, littleEndian, 1000
	case magic[0] == 0xa1 && magic[1] == 0xb2 && magic[2] == 0x3c && magic[3] == 0x4d:
		r.format, r.order, r.fracMul = formatPcapNs, bigEndian, 1
	case magic[0] == 0x4d && magic[1] == 0x3c && magic[2] == 0xb2 && magic[3] == 0xa1:
		r.format, r.order, r.fracMul = formatPcapNs, littleEndian, 1
	default:
		return r.headerErr(ErrBadMagic, "not a pcap or pcapng file (magic % x)", magic[:4])
	}
	h := r.hdr[:pcapFileHeaderLen]
	if err := r.readFull(h); err != nil {
		return r.readHeaderErr("file header", err)
	}
	major, minor := r.order.u16(h[4:]), r.order.u16(h[6:])
	if major != 2 {
		return r.headerErr(ErrCorrupt, "unsupported pcap version %d.%d", major, minor)
	}
	// The low 16 bits are the link type; the upper bits may hold the
	// FCS length (draft-ietf-opsawg-pcap §4).
	r.linkType = r.order.u32(h[20:]) & 0xffff
	return nil
}

func (r *Reader) nextPcap() (*Frame, error) {
	h, err := r.view(pcapRecordHeaderLen, r.hdr[:])
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, r.readErr("record header", err)
	}
	sec := r.order.u32(h[0:])
	frac := r.order.u32(h[4:])
	capLen := r.order.u32(h[8:])
	origLen := r.order.u32(h[12:])
	if capLen > MaxCaptureLen {
		return nil, r.frameErr(ErrCorrupt, "captured length %d exceeds %d", capLen, MaxCaptureLen)
	}
	data, err := r.view(int(capLen), nil)
	if err != nil {
		return nil, r.readErr("record data", err)
	}
	f := &r.frame
	f.Num++
	f.Time = time.Unix(int64(sec), int64(frac)*r.fracMul).UTC()
	f.LinkType = r.linkType
	f.Data = data
	f.OrigLen = int(origLen)
	f.Interface = 0
	if f.LinkType == LinkTypeERF {
		r.erfLoss(f)
	}
	return f, nil
}
