package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// BTH is the Base Transport Header (IBTA Vol 1 §9.2).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad| TVer  |            P_Key              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|F|B|  resv6    |                 DestQP                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|   resv7     |                  PSN                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type BTH struct {
	Opcode Opcode
	SE     bool  // solicited event
	M      bool  // MigReq
	PadCnt uint8 // 0–3 pad bytes after the payload
	TVer   uint8 // transport header version, 0
	PKey   uint16
	FECN   bool
	BECN   bool
	Resv6  uint8 // 6 reserved bits after FECN/BECN
	DestQP uint32
	AckReq bool
	Resv7  uint8 // 7 reserved bits after AckReq
	PSN    PSN
}

// RETH is the RDMA Extended Transport Header (16 bytes).
type RETH struct {
	VA     uint64
	RKey   uint32
	Length uint32
}

// AtomicETH is the ATOMIC Extended Transport Header (28 bytes, packed).
type AtomicETH struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64 // swap data (CmpSwap) or add data (FetchAdd)
	Compare uint64
}

// Packet is one InfiniBand transport packet: BTH, the extension headers
// its opcode carries, and the payload (without pad and ICRC). Fields of
// headers the opcode does not carry are ignored when encoding and zero
// after decoding.
type Packet struct {
	BTH
	RETH      RETH
	AETH      AETH
	Atomic    AtomicETH
	AtomicAck uint64 // AtomicAckETH: the original remote value
	Imm       uint32 // ImmDt
	IETH      uint32 // R_Key to invalidate
	FETH      uint32 // FLUSH extension header, raw
	Payload   []byte // after decoding: a sub-slice of the input, valid while it is
	// PadOverride, when non-zero, forces the pad count written on encode
	// (and the number of pad bytes) to PadOverride-1 instead of
	// (-len(Payload))&3, so stimuli can carry a wrong pad on purpose.
	// Decoding sets it when the wire's pad count is not (-len(Payload))&3,
	// so that re-encoding a decoded packet gives the same bytes.
	PadOverride uint8
}

// Decoding errors. Each is wrapped with the header and offsets involved.
var (
	ErrShort         = errors.New("packet too short")
	ErrUnknownOpcode = errors.New("unknown or reserved opcode")
	ErrPad           = errors.New("pad count larger than the payload")
	ErrNotRoCE       = errors.New("not a RoCE packet")
	ErrMalformed     = errors.New("malformed header")
)

// HeadersLen returns the length of the BTH plus the extension headers the
// opcode carries, or -1 for an unknown opcode.
func HeadersLen(op Opcode) int { return int(headersLens[op]) }

// headersLens holds HeadersLen for every opcode value (decoding asks it
// for every packet).
var headersLens = func() (t [256]int8) {
	for i := range t {
		t[i] = int8(headersLen(Opcode(i)))
	}
	return t
}()

// headersLen computes HeadersLen.
func headersLen(op Opcode) int {
	info, ok := op.Info()
	if !ok {
		return -1
	}
	n := BTHLen
	h := info.Headers
	if h&HdrFETH != 0 {
		n += FETHLen
	}
	if h&HdrRETH != 0 {
		n += RETHLen
	}
	if h&HdrAtomicETH != 0 {
		n += AtomicETHLen
	}
	if h&HdrAETH != 0 {
		n += AETHLen
	}
	if h&HdrAtomicAckETH != 0 {
		n += AtomicAckETHLen
	}
	if h&HdrImmDt != 0 {
		n += ImmDtLen
	}
	if h&HdrIETH != 0 {
		n += IETHLen
	}
	return n
}

// Pad returns the pad count the packet will carry on the wire.
func (p *Packet) Pad() int {
	if p.PadOverride != 0 {
		return int(p.PadOverride-1) & 3
	}
	return (-len(p.Payload)) & 3
}

// TransportLen returns the encoded length from the BTH to the end of the
// pad (the ICRC excluded).
func (p *Packet) TransportLen() int {
	h := HeadersLen(p.Opcode)
	if h < 0 {
		h = BTHLen
	}
	return h + len(p.Payload) + p.Pad()
}

// ReservedBitsSet reports whether any BTH field that must be zero on RC
// is not: resv6, resv7 or TVer.
func (p *Packet) ReservedBitsSet() bool {
	return p.Resv6 != 0 || p.Resv7 != 0 || p.TVer != 0
}

func putBTH(b []byte, h *BTH, pad int) {
	b[0] = byte(h.Opcode)
	b1 := byte(pad&3)<<4 | h.TVer&0x0F
	if h.SE {
		b1 |= 0x80
	}
	if h.M {
		b1 |= 0x40
	}
	b[1] = b1
	binary.BigEndian.PutUint16(b[2:], h.PKey)
	w := h.DestQP & 0xFFFFFF
	w |= uint32(h.Resv6&0x3F) << 24
	if h.FECN {
		w |= 1 << 31
	}
	if h.BECN {
		w |= 1 << 30
	}
	binary.BigEndian.PutUint32(b[4:], w)
	w = uint32(h.PSN) & PSNMask
	w |= uint32(h.Resv7&0x7F) << 24
	if h.AckReq {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(b[8:], w)
}

// DecodeBTH fills h from the first 12 bytes of b.
func DecodeBTH(b []byte, h *BTH) error {
	if len(b) < BTHLen {
		return fmt.Errorf("decoding BTH: %d bytes, need %d: %w", len(b), BTHLen, ErrShort)
	}
	h.Opcode = Opcode(b[0])
	h.SE = b[1]&0x80 != 0
	h.M = b[1]&0x40 != 0
	h.PadCnt = b[1] >> 4 & 3
	h.TVer = b[1] & 0x0F
	h.PKey = binary.BigEndian.Uint16(b[2:])
	w := binary.BigEndian.Uint32(b[4:])
	h.FECN = w&(1<<31) != 0
	h.BECN = w&(1<<30) != 0
	h.Resv6 = uint8(w>>24) & 0x3F
	h.DestQP = w & 0xFFFFFF
	w = binary.BigEndian.Uint32(b[8:])
	h.AckReq = w&(1<<31) != 0
	h.Resv7 = uint8(w>>24) & 0x7F
	h.PSN = PSN(w & PSNMask)
	return nil
}

// AppendTransport appends the encoded packet, BTH through pad (zero
// bytes), without the ICRC, and returns the extended slice. An unknown
// opcode is encoded with a bare BTH followed by the payload.
func (p *Packet) AppendTransport(b []byte) []byte {
	start := len(b)
	n := p.TransportLen()
	b = grow(b, n)
	out := b[start : start+n]
	off := p.putHeaders(out, p.Pad())
	off += copy(out[off:], p.Payload)
	clear(out[off:])
	return b
}

// putHeaders writes the BTH, with pad count pad, and the extension headers
// the opcode carries into out, which must be long enough, and returns
// their length.
func (p *Packet) putHeaders(out []byte, pad int) int {
	putBTH(out, &p.BTH, pad)
	off := BTHLen
	info, _ := p.Opcode.Info()
	h := info.Headers
	be := binary.BigEndian
	if h&HdrFETH != 0 {
		be.PutUint32(out[off:], p.FETH)
		off += FETHLen
	}
	if h&HdrRETH != 0 {
		be.PutUint64(out[off:], p.RETH.VA)
		be.PutUint32(out[off+8:], p.RETH.RKey)
		be.PutUint32(out[off+12:], p.RETH.Length)
		off += RETHLen
	}
	if h&HdrAtomicETH != 0 {
		be.PutUint64(out[off:], p.Atomic.VA)
		be.PutUint32(out[off+8:], p.Atomic.RKey)
		be.PutUint64(out[off+12:], p.Atomic.SwapAdd)
		be.PutUint64(out[off+20:], p.Atomic.Compare)
		off += AtomicETHLen
	}
	if h&HdrAETH != 0 {
		be.PutUint32(out[off:], uint32(p.AETH.Syndrome)<<24|p.AETH.MSN&0xFFFFFF)
		off += AETHLen
	}
	if h&HdrAtomicAckETH != 0 {
		be.PutUint64(out[off:], p.AtomicAck)
		off += AtomicAckETHLen
	}
	if h&HdrImmDt != 0 {
		be.PutUint32(out[off:], p.Imm)
		off += ImmDtLen
	}
	if h&HdrIETH != 0 {
		be.PutUint32(out[off:], p.IETH)
		off += IETHLen
	}
	return off
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*len(b)+n)
	copy(nb, b)
	return nb
}

// DecodeTransport decodes b, which runs from the BTH to the end of the pad
// (the ICRC already removed). The payload is a sub-slice of b; nothing is
// allocated. An unknown opcode decodes the BTH and returns ErrUnknownOpcode
// with the rest of b as the payload.
//
// When the pad count on the wire is not the one the payload length calls
// for ((-len(Payload))&3), DecodeTransport sets PadOverride to PadCnt+1,
// so that encoding the decoded packet reproduces it; otherwise it clears
// PadOverride.
func (p *Packet) DecodeTransport(b []byte) error {
	return p.decodeTransport(b, false)
}

// decodeTransport is DecodeTransport; cut says that b was cut short by a
// capture's snaplen, so its end is not the end of the pad: the payload is
// then everything after the headers, and the pad is not checked.
func (p *Packet) decodeTransport(b []byte, cut bool) error {
	var bth BTH
	if err := DecodeBTH(b, &bth); err != nil {
		return err
	}
	// Every field is set: the headers the opcode does not carry are
	// zero, whatever a reused Packet held before.
	*p = Packet{BTH: bth}
	info, ok := p.Opcode.Info()
	if !ok {
		p.Payload = b[BTHLen:]
		return fmt.Errorf("decoding BTH: opcode 0x%02x: %w", uint8(p.Opcode), ErrUnknownOpcode)
	}
	hl := HeadersLen(p.Opcode)
	if len(b) < hl {
		p.Payload = nil
		return fmt.Errorf("decoding %s headers: %d bytes after the BTH, need %d: %w",
			info.Name, len(b)-BTHLen, hl-BTHLen, ErrShort)
	}
	off := BTHLen
	be := binary.BigEndian
	h := info.Headers
	if h&HdrFETH != 0 {
		p.FETH = be.Uint32(b[off:])
		off += FETHLen
	}
	if h&HdrRETH != 0 {
		p.RETH = RETH{VA: be.Uint64(b[off:]), RKey: be.Uint32(b[off+8:]), Length: be.Uint32(b[off+12:])}
		off += RETHLen
	}
	if h&HdrAtomicETH != 0 {
		p.Atomic = AtomicETH{VA: be.Uint64(b[off:]), RKey: be.Uint32(b[off+8:]),
			SwapAdd: be.Uint64(b[off+12:]), Compare: be.Uint64(b[off+20:])}
		off += AtomicETHLen
	}
	if h&HdrAETH != 0 {
		w := be.Uint32(b[off:])
		p.AETH = AETH{Syndrome: uint8(w >> 24), MSN: w & 0xFFFFFF}
		off += AETHLen
	}
	if h&HdrAtomicAckETH != 0 {
		p.AtomicAck = be.Uint64(b[off:])
		off += AtomicAckETHLen
	}
	if h&HdrImmDt != 0 {
		p.Imm = be.Uint32(b[off:])
		off += ImmDtLen
	}
	if h&HdrIETH != 0 {
		p.IETH = be.Uint32(b[off:])
		off += IETHLen
	}
	rest := b[off:]
	if cut {
		p.Payload = rest
		return nil
	}
	pad := int(p.PadCnt)
	if pad > len(rest) {
		p.Payload = rest[:0]
		return fmt.Errorf("decoding %s: pad count %d with %d payload bytes: %w", info.Name, pad, len(rest), ErrPad)
	}
	p.Payload = rest[:len(rest)-pad]
	if pad != (-len(p.Payload))&3 {
		p.PadOverride = uint8(pad) + 1
	}
	return nil
}

// Clone returns a copy of p whose payload no longer aliases the decode buffer.
func (p *Packet) Clone() *Packet {
	q := *p
	if p.Payload != nil {
		q.Payload = append([]byte(nil), p.Payload...)
	}
	return &q
}

// String renders a one-line summary for logs and ladders.
func (p *Packet) String() string {
	s := fmt.Sprintf("%s qp=0x%06x psn=%d", p.Opcode.ShortName(), p.DestQP, p.PSN)
	if p.AckReq {
		s += " A"
	}
	if p.Opcode.Has(HdrRETH) {
		s += fmt.Sprintf(" va=0x%x rkey=0x%x len=%d", p.RETH.VA, p.RETH.RKey, p.RETH.Length)
	}
	if p.Opcode.Has(HdrAETH) {
		s += fmt.Sprintf(" %s msn=%d", p.AETH, p.AETH.MSN)
	}
	if p.Opcode.Has(HdrAtomicAckETH) {
		s += fmt.Sprintf(" orig=0x%x", p.AtomicAck)
	}
	if n := len(p.Payload); n > 0 {
		s += fmt.Sprintf(" len=%d", n)
	}
	return s
}
