package wire

import "fmt"

// Opcode is the BTH OpCode byte: bits 7:5 select the transport (000 RC,
// 001 UC, 010 RD, 011 UD, 100 CNP), bits 4:0 the operation (IBTA Vol 1
// §9.2.1, Table 34).
type Opcode uint8

// RC opcodes (transport 000), IBTA Vol 1 Table 34.
const (
	SendFirst          Opcode = 0x00
	SendMiddle         Opcode = 0x01
	SendLast           Opcode = 0x02
	SendLastImm        Opcode = 0x03
	SendOnly           Opcode = 0x04
	SendOnlyImm        Opcode = 0x05
	WriteFirst         Opcode = 0x06
	WriteMiddle        Opcode = 0x07
	WriteLast          Opcode = 0x08
	WriteLastImm       Opcode = 0x09
	WriteOnly          Opcode = 0x0A
	WriteOnlyImm       Opcode = 0x0B
	ReadRequest        Opcode = 0x0C
	ReadResponseFirst  Opcode = 0x0D
	ReadResponseMiddle Opcode = 0x0E
	ReadResponseLast   Opcode = 0x0F
	ReadResponseOnly   Opcode = 0x10
	Acknowledge        Opcode = 0x11
	AtomicAcknowledge  Opcode = 0x12
	CompareSwap        Opcode = 0x13
	FetchAdd           Opcode = 0x14
	SendLastInvalidate Opcode = 0x16
	SendOnlyInvalidate Opcode = 0x17
	Flush              Opcode = 0x1C // later extension (IBTA 1.5), recognised by name only
	AtomicWrite        Opcode = 0x1D // later extension (IBTA 1.5), recognised by name only
	CNP                Opcode = 0x81 // RoCEv2 congestion notification packet (Annex A17)
	transportMask      Opcode = 0xE0
	TransportRC        Opcode = 0x00
	TransportUC        Opcode = 0x20
	TransportRD        Opcode = 0x40
	TransportUD        Opcode = 0x60
	TransportCNP       Opcode = 0x80
)

// Header is a bit set of the extension headers a packet carries after its BTH.
type Header uint8

// Extension headers, in the order they follow the BTH.
const (
	HdrRETH         Header = 1 << iota // 16 bytes: VA, R_Key, DMA length
	HdrAtomicETH                       // 28 bytes: VA, R_Key, swap/add, compare
	HdrAETH                            // 4 bytes: syndrome, MSN
	HdrAtomicAckETH                    // 8 bytes: original remote value
	HdrImmDt                           // 4 bytes: immediate data
	HdrIETH                            // 4 bytes: R_Key to invalidate
	HdrFETH                            // 4 bytes: FLUSH extended header (extension)
)

// Header sizes in bytes (§9.2 and the extension headers' layouts;
// docs/interpretations.md, "Wire formats").
const (
	BTHLen          = 12
	RETHLen         = 16
	AETHLen         = 4
	AtomicETHLen    = 28
	AtomicAckETHLen = 8
	ImmDtLen        = 4
	IETHLen         = 4
	FETHLen         = 4
	ICRCLen         = 4
)

// Class groups opcodes by the operation they belong to.
type Class uint8

// Opcode classes.
const (
	ClassUnknown Class = iota
	ClassSend
	ClassWrite
	ClassReadRequest
	ClassReadResponse
	ClassAck
	ClassAtomicAck
	ClassAtomic
	ClassFlush
	ClassAtomicWrite
)

// Position says where in a multi-packet message an opcode sits.
type Position uint8

// Positions within a message.
const (
	PosNone Position = iota
	PosFirst
	PosMiddle
	PosLast
	PosOnly
)

// OpInfo describes one opcode: its name, the headers it carries after the
// BTH in order, and whether it carries a payload.
type OpInfo struct {
	Name     string
	Headers  Header
	Payload  bool
	Class    Class
	Position Position
	// Extension marks opcodes defined after Release 1.2.1 (FLUSH, ATOMIC
	// WRITE); they are recognised by name and decoded, never generated.
	Extension bool
}

// rcOps is the RC opcode table (IBTA Vol 1 Table 34 and the per-opcode
// header layout of §9.2).
var rcOps = [32]OpInfo{
	0x00: {"SEND First", 0, true, ClassSend, PosFirst, false},
	0x01: {"SEND Middle", 0, true, ClassSend, PosMiddle, false},
	0x02: {"SEND Last", 0, true, ClassSend, PosLast, false},
	0x03: {"SEND Last with Immediate", HdrImmDt, true, ClassSend, PosLast, false},
	0x04: {"SEND Only", 0, true, ClassSend, PosOnly, false},
	0x05: {"SEND Only with Immediate", HdrImmDt, true, ClassSend, PosOnly, false},
	0x06: {"RDMA WRITE First", HdrRETH, true, ClassWrite, PosFirst, false},
	0x07: {"RDMA WRITE Middle", 0, true, ClassWrite, PosMiddle, false},
	0x08: {"RDMA WRITE Last", 0, true, ClassWrite, PosLast, false},
	0x09: {"RDMA WRITE Last with Immediate", HdrImmDt, true, ClassWrite, PosLast, false},
	0x0A: {"RDMA WRITE Only", HdrRETH, true, ClassWrite, PosOnly, false},
	0x0B: {"RDMA WRITE Only with Immediate", HdrRETH | HdrImmDt, true, ClassWrite, PosOnly, false},
	0x0C: {"RDMA READ Request", HdrRETH, false, ClassReadRequest, PosOnly, false},
	0x0D: {"RDMA READ Response First", HdrAETH, true, ClassReadResponse, PosFirst, false},
	0x0E: {"RDMA READ Response Middle", 0, true, ClassReadResponse, PosMiddle, false},
	0x0F: {"RDMA READ Response Last", HdrAETH, true, ClassReadResponse, PosLast, false},
	0x10: {"RDMA READ Response Only", HdrAETH, true, ClassReadResponse, PosOnly, false},
	0x11: {"Acknowledge", HdrAETH, false, ClassAck, PosOnly, false},
	0x12: {"ATOMIC Acknowledge", HdrAETH | HdrAtomicAckETH, false, ClassAtomicAck, PosOnly, false},
	0x13: {"CmpSwap", HdrAtomicETH, false, ClassAtomic, PosOnly, false},
	0x14: {"FetchAdd", HdrAtomicETH, false, ClassAtomic, PosOnly, false},
	0x16: {"SEND Last with Invalidate", HdrIETH, true, ClassSend, PosLast, false},
	0x17: {"SEND Only with Invalidate", HdrIETH, true, ClassSend, PosOnly, false},
	0x1C: {"FLUSH", HdrFETH | HdrRETH, false, ClassFlush, PosOnly, true},
	0x1D: {"ATOMIC WRITE", HdrRETH, true, ClassAtomicWrite, PosOnly, true},
}

// Info returns the opcode's description; ok is false for opcodes that are
// not RC opcodes this package knows (including reserved RC opcodes).
func (o Opcode) Info() (info OpInfo, ok bool) {
	if o&transportMask != TransportRC {
		return OpInfo{}, false
	}
	info = rcOps[o&0x1F]
	return info, info.Name != ""
}

// Known reports whether o is a defined RC opcode.
func (o Opcode) Known() bool { _, ok := o.Info(); return ok }

// ReservedRC reports whether o is an RC opcode that Release 1.2.1
// reserves and no later release this package knows defines (0x15,
// 0x18–0x1B, 0x1E, 0x1F): a request no responder can execute.
func (o Opcode) ReservedRC() bool { return o.Transport() == TransportRC && !o.Known() }

// Transport returns the transport bits (7:5) of the opcode.
func (o Opcode) Transport() Opcode { return o & transportMask }

// IsRequest reports whether o is sent by a requester (SEND, WRITE, READ
// request, ATOMIC, and the extensions).
func (o Opcode) IsRequest() bool {
	info, ok := o.Info()
	if !ok {
		return false
	}
	switch info.Class {
	case ClassSend, ClassWrite, ClassReadRequest, ClassAtomic, ClassFlush, ClassAtomicWrite:
		return true
	}
	return false
}

// IsResponse reports whether o is sent by a responder (READ responses,
// Acknowledge, ATOMIC Acknowledge).
func (o Opcode) IsResponse() bool {
	info, ok := o.Info()
	return ok && (info.Class == ClassReadResponse || info.Class == ClassAck || info.Class == ClassAtomicAck)
}

// Class returns the opcode's class (ClassUnknown for unknown opcodes).
func (o Opcode) Class() Class { info, _ := o.Info(); return info.Class }

// Position returns where in a message the opcode sits.
func (o Opcode) Position() Position { info, _ := o.Info(); return info.Position }

// Has reports whether packets with this opcode carry header h.
func (o Opcode) Has(h Header) bool { info, _ := o.Info(); return info.Headers&h != 0 }

// ConsumesRWQE reports whether a message with this opcode needs a receive
// WQE at the responder: every SEND, and RDMA WRITE with immediate
// (C9-113; docs/interpretations.md, "RNR NAK for a multi-packet SEND").
func (o Opcode) ConsumesRWQE() bool {
	switch o {
	case WriteLastImm, WriteOnlyImm:
		return true
	}
	return o.Class() == ClassSend
}

// StartsMessage reports whether o is the first packet of a message
// (First or Only).
func (o Opcode) StartsMessage() bool {
	p := o.Position()
	return p == PosFirst || p == PosOnly
}

// EndsMessage reports whether o is the last packet of a message (Last or Only).
func (o Opcode) EndsMessage() bool {
	p := o.Position()
	return p == PosLast || p == PosOnly
}

// String returns the opcode's name, or its number for unknown opcodes.
func (o Opcode) String() string {
	if info, ok := o.Info(); ok {
		return info.Name
	}
	switch o {
	case CNP:
		return "CNP"
	}
	if o.Transport() == TransportUC {
		return fmt.Sprintf("UC opcode 0x%02x", uint8(o))
	}
	return fmt.Sprintf("opcode 0x%02x", uint8(o))
}

// ShortName returns a compact name for ladders ("SEND F", "READ RSP L", "ACK").
func (o Opcode) ShortName() string {
	if int(o) < len(shortNames) && shortNames[o] != "" {
		return shortNames[o]
	}
	return o.String()
}

var shortNames = [32]string{
	0x00: "SEND F", 0x01: "SEND M", 0x02: "SEND L", 0x03: "SEND L+Imm", 0x04: "SEND O", 0x05: "SEND O+Imm",
	0x06: "WRITE F", 0x07: "WRITE M", 0x08: "WRITE L", 0x09: "WRITE L+Imm", 0x0A: "WRITE O", 0x0B: "WRITE O+Imm",
	0x0C: "READ REQ", 0x0D: "READ RSP F", 0x0E: "READ RSP M", 0x0F: "READ RSP L", 0x10: "READ RSP O",
	0x11: "ACK", 0x12: "ATOMIC ACK", 0x13: "CMP&SWAP", 0x14: "FETCH&ADD", 0x16: "SEND L+Inv", 0x17: "SEND O+Inv",
	0x1C: "FLUSH", 0x1D: "ATOMIC WRITE",
}

// ReadResponseOp returns the opcode of packet i (from 0) of a READ
// answer of n packets: Only when n is 1, else First, Middle… and Last.
func ReadResponseOp(i, n int) Opcode {
	switch {
	case n == 1:
		return ReadResponseOnly
	case i == 0:
		return ReadResponseFirst
	case i == n-1:
		return ReadResponseLast
	}
	return ReadResponseMiddle
}

// ReadResponsePackets returns how many READ response packets (and so PSNs)
// a READ of length bytes takes at path MTU mtu: ceil(length/mtu), at least
// one (C9-96; a READ reserves one PSN per path MTU of its length, and at
// least one).
func ReadResponsePackets(length uint32, mtu int) int {
	if length == 0 || mtu <= 0 {
		return 1
	}
	return int((uint64(length) + uint64(mtu) - 1) / uint64(mtu))
}

// ValidMTU reports whether mtu is an IB path MTU: 256, 512, 1024, 2048 or 4096.
func ValidMTU(mtu int) bool {
	switch mtu {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}
