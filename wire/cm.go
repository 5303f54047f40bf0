package wire

import (
	"encoding/binary"
	"fmt"
)

// Communication Management (IBTA Vol 1 chapter 12): the connection manager
// sets up an RC connection with Management Datagrams (MADs) sent as UD
// SEND Only packets to QP 1, the General Services Interface: BTH, DETH
// (Q_Key and source QP), then a 256-byte MAD whose 24-byte common header
// names the management class (0x07 for CM) and the attribute (the CM
// message), followed by the message's fields.

// Opcode and QP of a MAD sent to the General Services Interface.
const (
	UDSendOnly Opcode = 0x64
	// GSIQP is QP 1, where MADs of the general services (CM among them)
	// are sent.
	GSIQP = 1
	// DETHLen is the length of the Datagram Extended Transport Header.
	DETHLen = 8
	// MADHeaderLen is the length of a MAD's common header.
	MADHeaderLen = 24
	// MgmtClassCM is the management class of the communication manager.
	MgmtClassCM = 0x07
)

// CM attribute IDs (the CM message a MAD carries).
const (
	CMAttrREQ  = 0x0010
	CMAttrMRA  = 0x0011
	CMAttrREJ  = 0x0012
	CMAttrREP  = 0x0013
	CMAttrRTU  = 0x0014
	CMAttrDREQ = 0x0015
	CMAttrDREP = 0x0016
)

// DETH is the Datagram Extended Transport Header of a UD packet.
type DETH struct {
	QKey  uint32
	SrcQP uint32
}

// MADHeader is the common header of a Management Datagram.
type MADHeader struct {
	BaseVersion  uint8
	MgmtClass    uint8
	ClassVersion uint8
	Method       uint8 // with the response bit (0x80)
	Status       uint16
	TID          uint64
	AttrID       uint16
	AttrMod      uint32
}

// CMMsg is a CM message: the MAD header, which message it is, and the
// fields rcconform uses. Fields that the message does not carry are zero.
type CMMsg struct {
	MAD  MADHeader
	Kind uint16 // the attribute ID: CMAttrREQ, ...
	// LocalCommID and RemoteCommID tie the messages of one connection
	// together: each side names itself in LocalCommID and its peer in
	// RemoteCommID (0 in a REQ, which has no peer yet).
	LocalCommID  uint32
	RemoteCommID uint32

	// REQ and REP: the sender's QP, the first PSN it will send, and what
	// its responder and initiator can have outstanding (RDMA READ and
	// ATOMIC), end-to-end flow control, and whether it uses an SRQ.
	LocalQPN           uint32
	StartingPSN        PSN
	ResponderResources uint8
	InitiatorDepth     uint8
	E2EFlowControl     bool
	SRQ                bool
	RNRRetryCount      uint8 // REQ: for the passive side; REP: for the active side

	// REQ only.
	ServiceID        uint64
	TransportService uint8 // 0 RC, 1 UC, 3 RD (XRC with an extended type)
	ExtTransport     uint8
	RetryCount       uint8
	PathMTU          int // in bytes (0 when the code is not a valid MTU)
	PathMTUCode      uint8
	LocalACKTimeout  uint8 // primary path, exponent (4.096 µs × 2^n)
	PKey             uint16

	// REP only.
	TargetACKDelay uint8

	// REJ: which message was rejected (0 REQ, 1 REP, 2 other) and why.
	Rejected  uint8
	RejReason uint16

	// DREQ: the QP of the receiver, whose connection ends.
	RemoteQPN uint32
}

// String names the CM message.
func (m *CMMsg) String() string { return CMAttrName(m.Kind) }

// CMAttrName names a CM attribute ID ("REQ", ...).
func CMAttrName(id uint16) string {
	switch id {
	case CMAttrREQ:
		return "REQ"
	case CMAttrMRA:
		return "MRA"
	case CMAttrREJ:
		return "REJ"
	case CMAttrREP:
		return "REP"
	case CMAttrRTU:
		return "RTU"
	case CMAttrDREQ:
		return "DREQ"
	case CMAttrDREP:
		return "DREP"
	}
	return fmt.Sprintf("CM attribute 0x%04x", id)
}

// MTUFromCode returns the MTU in bytes an IBTA MTU code (1 = 256 … 5 =
// 4096) stands for, or 0.
func MTUFromCode(code uint8) int {
	if code >= 1 && code <= 5 {
		return 128 << code
	}
	return 0
}

// cmLen is how many bytes of each CM message's data (after the MAD
// header) DecodeCM needs.
var cmLen = map[uint16]int{
	CMAttrREQ: 96, CMAttrMRA: 10, CMAttrREJ: 12, CMAttrREP: 36,
	CMAttrRTU: 8, CMAttrDREQ: 12, CMAttrDREP: 8,
}

// DecodeDETHMAD splits the payload of a UD SEND Only packet (after the BTH,
// pad included) into its DETH and the MAD.
func DecodeDETHMAD(payload []byte) (DETH, []byte, error) {
	if len(payload) < DETHLen {
		return DETH{}, nil, fmt.Errorf("decoding DETH: %d bytes: %w", len(payload), ErrShort)
	}
	d := DETH{QKey: binary.BigEndian.Uint32(payload), SrcQP: binary.BigEndian.Uint32(payload[4:]) & 0xFFFFFF}
	return d, payload[DETHLen:], nil
}

// DecodeMADHeader decodes the common header of a MAD.
func DecodeMADHeader(b []byte) (MADHeader, error) {
	if len(b) < MADHeaderLen {
		return MADHeader{}, fmt.Errorf("decoding MAD header: %d bytes: %w", len(b), ErrShort)
	}
	be := binary.BigEndian
	return MADHeader{BaseVersion: b[0], MgmtClass: b[1], ClassVersion: b[2], Method: b[3],
		Status: be.Uint16(b[4:]), TID: be.Uint64(b[8:]), AttrID: be.Uint16(b[16:]),
		AttrMod: be.Uint32(b[20:])}, nil
}

// DecodeCM decodes a CM MAD (b starts at the MAD header). It returns an
// error wrapping ErrNotRoCE when the MAD is not of the CM class or not one
// of the messages REQ, MRA, REJ, REP, RTU, DREQ and DREP, and ErrShort
// when it ends before the fields read.
func DecodeCM(b []byte) (CMMsg, error) {
	var m CMMsg
	h, err := DecodeMADHeader(b)
	if err != nil {
		return m, err
	}
	m.MAD, m.Kind = h, h.AttrID
	if h.MgmtClass != MgmtClassCM {
		return m, fmt.Errorf("MAD class 0x%02x is not CM: %w", h.MgmtClass, ErrNotRoCE)
	}
	need, ok := cmLen[h.AttrID]
	if !ok {
		return m, fmt.Errorf("decoding CM MAD: %s: %w", CMAttrName(h.AttrID), ErrNotRoCE)
	}
	d := b[MADHeaderLen:]
	if len(d) < need {
		return m, fmt.Errorf("decoding CM %s: %d bytes of %d: %w", CMAttrName(h.AttrID), len(d), need, ErrShort)
	}
	be := binary.BigEndian
	u24 := func(off int) uint32 { return be.Uint32(d[off:]) >> 8 }
	m.LocalCommID = be.Uint32(d)
	if h.AttrID != CMAttrREQ {
		m.RemoteCommID = be.Uint32(d[4:])
	}
	switch h.AttrID {
	case CMAttrREQ:
		m.ServiceID = be.Uint64(d[8:])
		m.LocalQPN = u24(32)
		m.ResponderResources = d[35]
		m.InitiatorDepth = d[39]
		m.TransportService = d[43] >> 1 & 3
		m.E2EFlowControl = d[43]&1 != 0
		m.StartingPSN = PSN(u24(44))
		m.RetryCount = d[47] & 7
		m.PKey = be.Uint16(d[48:])
		m.PathMTUCode = d[50] >> 4
		m.PathMTU = MTUFromCode(m.PathMTUCode)
		m.RNRRetryCount = d[50] & 7
		m.SRQ = d[51]&0x08 != 0
		m.ExtTransport = d[51] & 7
		m.LocalACKTimeout = d[95] >> 3
	case CMAttrREP:
		m.LocalQPN = u24(12)
		m.StartingPSN = PSN(u24(20))
		m.ResponderResources = d[24]
		m.InitiatorDepth = d[25]
		m.TargetACKDelay = d[26] >> 3
		m.E2EFlowControl = d[26]&1 != 0
		m.RNRRetryCount = d[27] >> 5
		m.SRQ = d[27]&0x10 != 0
	case CMAttrREJ:
		m.Rejected = d[8] >> 6
		m.RejReason = be.Uint16(d[10:])
	case CMAttrDREQ:
		m.RemoteQPN = u24(8)
	}
	return m, nil
}

// DecodeCMPacket decodes the CM message a transport packet carries: a UD
// SEND Only to QP 1 whose payload (after the BTH, as Packet.DecodeTransport
// leaves it for a UD opcode) is a DETH and a CM MAD. It returns an error
// wrapping ErrNotRoCE for packets that are not that.
func DecodeCMPacket(p *Packet) (CMMsg, error) {
	if p.Opcode != UDSendOnly || p.DestQP != GSIQP {
		return CMMsg{}, fmt.Errorf("opcode 0x%02x to QP %d is not a MAD: %w", uint8(p.Opcode), p.DestQP, ErrNotRoCE)
	}
	_, mad, err := DecodeDETHMAD(p.Payload)
	if err != nil {
		return CMMsg{}, err
	}
	return DecodeCM(mad)
}

// AppendCM appends a 256-byte CM MAD carrying m (for tests and stimuli):
// the MAD header from m.MAD with the class set to CM and the attribute to
// m.Kind, and the fields DecodeCM reads.
func AppendCM(b []byte, m *CMMsg) []byte {
	start := len(b)
	b = grow(b, 256)
	mad := b[start:]
	clear(mad)
	be := binary.BigEndian
	h := m.MAD
	mad[0], mad[1], mad[2], mad[3] = h.BaseVersion, MgmtClassCM, h.ClassVersion, h.Method
	be.PutUint16(mad[4:], h.Status)
	be.PutUint64(mad[8:], h.TID)
	be.PutUint16(mad[16:], m.Kind)
	be.PutUint32(mad[20:], h.AttrMod)
	d := mad[MADHeaderLen:]
	put24 := func(off int, v uint32, low uint8) { be.PutUint32(d[off:], v<<8|uint32(low)) }
	be.PutUint32(d, m.LocalCommID)
	if m.Kind != CMAttrREQ {
		be.PutUint32(d[4:], m.RemoteCommID)
	}
	e2e := uint8(0)
	if m.E2EFlowControl {
		e2e = 1
	}
	switch m.Kind {
	case CMAttrREQ:
		be.PutUint64(d[8:], m.ServiceID)
		put24(32, m.LocalQPN, m.ResponderResources)
		put24(36, 0, m.InitiatorDepth)
		put24(40, 0, (m.TransportService&3)<<1|e2e)
		put24(44, uint32(m.StartingPSN), m.RetryCount&7)
		be.PutUint16(d[48:], m.PKey)
		d[50] = m.PathMTUCode<<4 | m.RNRRetryCount&7
		d[51] = m.ExtTransport & 7
		if m.SRQ {
			d[51] |= 0x08
		}
		d[95] = m.LocalACKTimeout << 3
	case CMAttrREP:
		put24(12, m.LocalQPN, 0)
		put24(20, uint32(m.StartingPSN), 0)
		d[24], d[25] = m.ResponderResources, m.InitiatorDepth
		d[26] = m.TargetACKDelay<<3 | e2e
		d[27] = m.RNRRetryCount << 5
		if m.SRQ {
			d[27] |= 0x10
		}
	case CMAttrREJ:
		d[8] = m.Rejected << 6
		be.PutUint16(d[10:], m.RejReason)
	case CMAttrDREQ:
		put24(8, m.RemoteQPN, 0)
	}
	return b
}
