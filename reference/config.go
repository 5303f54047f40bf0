package reference

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rcconform/rcconform/wire"
)

// AckPolicy says when the responder acknowledges SENDs and WRITEs, a
// choice the spec leaves to the responder as long as AckReq forces a
// response (C9-116) and the ACK carries the newest PSN it covers (C9-95).
type AckPolicy uint8

// ACK policies.
const (
	// AckOnAckReq acknowledges a SEND or WRITE packet only when its AckReq
	// bit is set, as Linux soft-RoCE (rxe) does.
	AckOnAckReq AckPolicy = iota
	// AckEveryN also acknowledges after every AckEveryN unacknowledged
	// request packets.
	AckEveryN
	// AckAfterDelay also acknowledges AckDelay after the first
	// unacknowledged request packet (a coalescing timer).
	AckAfterDelay
)

func (p AckPolicy) String() string {
	switch p {
	case AckOnAckReq:
		return "ackreq"
	case AckEveryN:
		return "every-n"
	case AckAfterDelay:
		return "delay"
	}
	return fmt.Sprintf("AckPolicy(%d)", p)
}

// ParseAckPolicy parses "ackreq", "every-n" or "delay".
func ParseAckPolicy(s string) (AckPolicy, error) {
	switch s {
	case "ackreq", "ack-req":
		return AckOnAckReq, nil
	case "every-n", "everyn":
		return AckEveryN, nil
	case "delay":
		return AckAfterDelay, nil
	}
	return 0, fmt.Errorf("unknown ACK policy %q (want ackreq, every-n or delay)", s)
}

// Config configures one reference QP. Both halves live in one QP: the
// requester (its send queue) and the responder (its receive side).
type Config struct {
	QPN, RemoteQPN       uint32
	LocalMAC, RemoteMAC  [6]byte
	LocalIP, RemoteIP    netip.Addr // IPv4 or IPv6: RoCEv2 over that
	UDPSrcPort           uint16
	MTU                  int      // path MTU: 256, 512, 1024, 2048 or 4096
	SendPSN              wire.PSN // first PSN the requester uses
	ExpectedPSN          wire.PSN // first PSN the responder expects
	Timeout              uint8    // local ACK timeout: 4.096 µs × 2^Timeout, 0 = no timer (C9-140)
	RetryCnt             uint8    // transport retries, 0–7
	RNRRetry             uint8    // RNR retries, 0–7, 7 = infinite
	MinRNRTimer          uint8    // RNR timer code advertised in RNR NAKs (Table 45 encoding)
	MaxDestRdAtomic      int      // READ/ATOMIC responder resources (0: every READ/ATOMIC is refused, Table 58)
	MaxRdAtomic          int      // READ/ATOMIC initiator depth (0: no limit)
	SRQ                  *SRQ     // nil: the QP has its own receive queue
	RemoteAtomic         bool     // the QP executes ATOMICs (remote atomic access granted)
	AckPolicy            AckPolicy
	AckEveryN            int
	AckDelay             time.Duration
	MSNAtReadEnd         bool          // false: MSN moves when a READ is validated (rxe); true: after its last response
	AckReqEvery          int           // requester: AckReq on each message's last packet and every N packets (0: last only)
	ResponseDelay        time.Duration // responder turnaround before a response leaves
	PacketGap            time.Duration // transmit serialization time per packet
	MaxUnacked           int           // requester: most PSNs outstanding at once (0: 128)
	UnsolicitedACK       bool          // re-send the latest ACK with updated credits when receive WQEs are posted (§9.7.7.2)
	UnsolicitedNAKRepeat time.Duration // with defect unsolicited-nak-repeat: delay before the repeat
	TimerTick            time.Duration // requester timers fire on ticks of this length, at or after their interval (0: exact)
	Defect               string        // "" or a name from Defects()
	// TimerEarly makes the requester's transport timer and RNR timer
	// fire this much before their intervals: a device model whose timer
	// counter stops one clock cycle short (cmd/rcconform-refsim
	// --timer-early). 0 for a conforming QP.
	TimerEarly time.Duration
}

// DefaultConfig returns a valid configuration: QPN 0x11 talking to 0x12
// over IPv4 10.0.0.1 → 10.0.0.2, MTU 1024, PSNs 0, timeout 14 (67 ms),
// seven retries of each kind (RNR: infinite), RNR timer code 12 (0.64 ms),
// 16 READ/ATOMIC resources each way, rxe's ACK choices (AckReq only, MSN
// at READ validation) and a 100 ns packet gap.
func DefaultConfig() Config {
	return Config{
		QPN:             0x11,
		RemoteQPN:       0x12,
		LocalMAC:        [6]byte{0x02, 0, 0, 0, 0, 0x01},
		RemoteMAC:       [6]byte{0x02, 0, 0, 0, 0, 0x02},
		LocalIP:         netip.MustParseAddr("10.0.0.1"),
		RemoteIP:        netip.MustParseAddr("10.0.0.2"),
		UDPSrcPort:      0xC011,
		MTU:             1024,
		Timeout:         14,
		RetryCnt:        7,
		RNRRetry:        7,
		MinRNRTimer:     12,
		MaxDestRdAtomic: 16,
		MaxRdAtomic:     16,
		RemoteAtomic:    true,
		AckPolicy:       AckOnAckReq,
		AckEveryN:       8,
		AckDelay:        5 * time.Microsecond,
		PacketGap:       100 * time.Nanosecond,
		MaxUnacked:      128,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid QP configuration")

// Validate checks the configuration.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.QPN == 0 || c.QPN > 0xFFFFFF:
		return bad("QPN 0x%x is not a 24-bit non-zero QP number", c.QPN)
	case c.RemoteQPN == 0 || c.RemoteQPN > 0xFFFFFF:
		return bad("remote QPN 0x%x is not a 24-bit non-zero QP number", c.RemoteQPN)
	case !wire.ValidMTU(c.MTU):
		return bad("MTU %d is not 256, 512, 1024, 2048 or 4096", c.MTU)
	case !c.SendPSN.Valid() || !c.ExpectedPSN.Valid():
		return bad("PSNs must fit in 24 bits")
	case c.Timeout > 31:
		return bad("timeout %d exceeds 31", c.Timeout)
	case c.RetryCnt > 7 || c.RNRRetry > 7:
		return bad("retry counts are 3 bits (0–7)")
	case c.MinRNRTimer > 31:
		return bad("RNR timer code %d exceeds 31", c.MinRNRTimer)
	case c.MaxDestRdAtomic < 0 || c.MaxRdAtomic < 0:
		return bad("READ/ATOMIC depths must not be negative")
	case !c.LocalIP.IsValid() || !c.RemoteIP.IsValid() || c.LocalIP.Is4() != c.RemoteIP.Is4():
		return bad("local and remote IP addresses must both be IPv4 or both IPv6")
	case c.AckPolicy > AckAfterDelay:
		return bad("unknown ACK policy %d", c.AckPolicy)
	case c.AckPolicy == AckEveryN && c.AckEveryN < 1:
		return bad("ACK policy every-n needs AckEveryN ≥ 1")
	case c.AckPolicy == AckAfterDelay && c.AckDelay <= 0:
		return bad("ACK policy delay needs AckDelay > 0")
	case c.AckReqEvery < 0 || c.ResponseDelay < 0 || c.PacketGap < 0 || c.MaxUnacked < 0 || c.TimerEarly < 0 || c.TimerTick < 0:
		return bad("AckReqEvery, ResponseDelay, PacketGap, MaxUnacked, TimerEarly and TimerTick must not be negative")
	}
	if c.Defect != "" {
		if _, ok := LookupDefect(c.Defect); !ok {
			return fmt.Errorf("%w: unknown defect %q (known: %v)", ErrConfig, c.Defect, DefectNames())
		}
	}
	return nil
}
