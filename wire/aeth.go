package wire

import (
	"fmt"
	"time"
)

// AETH is the ACK Extended Transport Header (IBTA Vol 1 §9.7.5.2, Tables
// 43 and 44): an 8-bit syndrome and a 24-bit MSN.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|R|Kind |  value  |        Message Sequence Number (MSN)        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// SyndromeKind is bits 6:5 of the AETH syndrome (§9.7.5.2, Table 43).
type SyndromeKind uint8

// Syndrome kinds.
const (
	KindACK      SyndromeKind = 0 // 00: ACK, bits 4:0 are the credit code
	KindRNR      SyndromeKind = 1 // 01: RNR NAK, bits 4:0 are the RNR timer code
	KindReserved SyndromeKind = 2 // 10: reserved
	KindNAK      SyndromeKind = 3 // 11: NAK, bits 4:0 are the NAK code
)

func (k SyndromeKind) String() string {
	return [...]string{"ACK", "RNR NAK", "reserved", "NAK"}[k&3]
}

// NAK codes (bits 4:0 of a NAK syndrome), §9.7.5.2 Table 44.
const (
	NAKPSNSequence    uint8 = 0 // PSN sequence error
	NAKInvalidRequest uint8 = 1
	NAKRemoteAccess   uint8 = 2
	NAKRemoteOp       uint8 = 3 // remote operational error
	NAKInvalidRD      uint8 = 4 // invalid RD request: RD only, reserved on RC
)

// CreditInvalid is the ACK credit code meaning "no valid credit count"
// (11111, §9.7.7.2; docs/interpretations.md, "Credit table and rounding").
const CreditInvalid uint8 = 0x1F

// Syndrome byte constructors.
func SynACK(credit uint8) uint8   { return credit & 0x1F }
func SynRNR(timer uint8) uint8    { return 0x20 | timer&0x1F }
func SynNAK(code uint8) uint8     { return 0x60 | code&0x1F }
func (a AETH) Kind() SyndromeKind { return SyndromeKind(a.Syndrome>>5) & 3 }

// Value returns bits 4:0: the credit code, RNR timer code or NAK code.
func (a AETH) Value() uint8 { return a.Syndrome & 0x1F }

// ReservedBit reports whether syndrome bit 7, reserved and zero, is set.
func (a AETH) ReservedBit() bool { return a.Syndrome&0x80 != 0 }

// IsACK reports a positive acknowledgment (kind 00, bit 7 clear).
func (a AETH) IsACK() bool { return a.Syndrome&0xE0 == 0 }

// IsNAK reports a NAK (kind 11) of the given code.
func (a AETH) IsNAK(code uint8) bool { return a.Syndrome == SynNAK(code) }

// IsRNR reports an RNR NAK (kind 01).
func (a AETH) IsRNR() bool { return a.Syndrome&0xE0 == 0x20 }

// String renders the syndrome for ladders ("ACK cr=0x1f", "NAK seq", "RNR t=14").
func (a AETH) String() string { return SyndromeString(a.Syndrome) }

// SyndromeString renders a syndrome byte for people.
func SyndromeString(s uint8) string {
	a := AETH{Syndrome: s}
	prefix := ""
	if a.ReservedBit() {
		prefix = "R!"
	}
	switch a.Kind() {
	case KindACK:
		return fmt.Sprintf("%sACK cr=0x%02x", prefix, a.Value())
	case KindRNR:
		return fmt.Sprintf("%sRNR t=%d", prefix, a.Value())
	case KindNAK:
		switch a.Value() {
		case NAKPSNSequence:
			return prefix + "NAK seq"
		case NAKInvalidRequest:
			return prefix + "NAK inv-req"
		case NAKRemoteAccess:
			return prefix + "NAK rem-access"
		case NAKRemoteOp:
			return prefix + "NAK rem-op"
		}
		return fmt.Sprintf("%sNAK code=%d", prefix, a.Value())
	}
	return fmt.Sprintf("%sreserved 0x%02x", prefix, s)
}

// creditTable maps credit codes 0x00–0x1E to numbers of credits
// (§9.7.7.2 credit encoding, as Linux rdmavt reads it:
// docs/interpretations.md, "Credit table and rounding").
var creditTable = [31]int{
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
}

// CreditCount returns the number of credits a code stands for; ok is false
// for 0x1F ("not valid") and for codes over 5 bits.
func CreditCount(code uint8) (n int, ok bool) {
	if code >= CreditInvalid {
		return 0, false
	}
	return creditTable[code], true
}

// CreditCode returns the code for n available receive WQEs: the largest
// table entry not above n (§9.7.7.2; the rounding is inferred from
// rdmavt: docs/interpretations.md, "Credit table and rounding"). Negative n encodes as 0.
func CreditCode(n int) uint8 {
	code := uint8(0)
	for i, v := range creditTable {
		if v <= n {
			code = uint8(i)
		}
	}
	return code
}

// rnrTable gives the minimum RNR NAK delay per timer code in microseconds
// (§9.7.5.2 Table 45 encoding; docs/interpretations.md, "RNR timer
// table"). Code 0 is the largest.
var rnrTable = [32]int64{
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// RNRDelay returns the minimum wait an RNR NAK timer code asks for.
func RNRDelay(code uint8) time.Duration {
	return time.Duration(rnrTable[code&0x1F]) * time.Microsecond
}

// AckTimeout returns the transport (local ACK) timer interval for a 5-bit
// timeout value: 4.096 µs × 2^timeout, and 0 when timeout is 0, which
// disables the timer (C9-140, §9.7.6; docs/interpretations.md, "Transport
// timer").
// Only the low five bits of timeout count.
func AckTimeout(timeout uint8) time.Duration {
	timeout &= 0x1F
	if timeout == 0 {
		return 0
	}
	return (4096 * time.Nanosecond) << timeout
}
