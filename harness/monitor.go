package harness

import (
	"sort"
	"sync"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Checker is one monitor's state on one connection. Observe is called for
// every usable packet of the connection in trace order, before the
// connection model (Conn) absorbs the packet, so Conn describes what was
// seen before it. End is called once when the trace ends.
type Checker interface {
	Observe(c *Conn, r *trace.Record)
	End(c *Conn)
}

// The Auditor shows a Checker the records of the packet kinds it asks
// for (KindFilter). A packet's kind is its RC opcode (0x00–0x1F: the
// records a Checker sees are requests and responses of the RC transport),
// but for an Acknowledge whose AETH is not an ACK: its syndrome says which
// of RNR NAK or NAK it is, and a NAK's code what it refuses, so a Checker
// that judges only NAKs is not called for the many ACKs. The Acknowledge
// opcode's kind stands for the ACKs.
const (
	KindRNRNAK       = 32 + iota // an Acknowledge carrying an RNR NAK
	KindSequenceNAK              // a NAK for a PSN sequence error
	KindErrorNAK                 // a NAK with another code (an error, or a reserved code)
	KindReservedAETH             // an Acknowledge with a reserved syndrome (bits 6:5 = 10)
	numKinds
)

// Kinds is a set of packet kinds: bit k for kind k.
type Kinds uint64

// KindOf returns the kind of p, an RC request or response.
func KindOf(p *wire.Packet) int {
	if p.Opcode != wire.Acknowledge {
		return int(p.Opcode)
	}
	switch p.AETH.Kind() {
	case wire.KindACK:
		return int(wire.Acknowledge)
	case wire.KindRNR:
		return KindRNRNAK
	case wire.KindNAK:
		if p.AETH.Value() == wire.NAKPSNSequence {
			return KindSequenceNAK
		}
		return KindErrorNAK
	}
	return KindReservedAETH
}

// NAKKind returns the kind of an Acknowledge carrying a NAK with code
// code.
func NAKKind(code uint8) int {
	if code == wire.NAKPSNSequence {
		return KindSequenceNAK
	}
	return KindErrorNAK
}

// KindFilter may be implemented by a Checker whose Observe does nothing
// with the records of some kinds (it returns at once, changing nothing):
// the Auditor then calls Observe only for the records whose kind k has
// bit 1<<k set in Kinds, which it asks once, right after the checker is
// made. A Checker that does not implement it sees every record.
type KindFilter interface {
	Kinds() Kinds
}

// AllKinds is the set of kinds (KindFilter) of a Checker that sees every
// record.
const AllKinds = ^Kinds(0)

// AcknowledgeKinds is the set of the Acknowledge opcode's kinds.
const AcknowledgeKinds = Kinds(1)<<wire.Acknowledge | 1<<KindRNRNAK | 1<<KindSequenceNAK | 1<<KindErrorNAK | 1<<KindReservedAETH

// KindsWhere returns the set of kinds (KindFilter) of the RC opcodes for
// which keep holds: with the Acknowledge opcode, every Acknowledge.
func KindsWhere(keep func(op wire.Opcode) bool) Kinds {
	var set Kinds
	for o := range 32 {
		if keep(wire.Opcode(o)) {
			set |= 1 << o
		}
	}
	if set&(1<<wire.Acknowledge) != 0 {
		set |= AcknowledgeKinds
	}
	return set
}

// Monitor is a passive check of one clause: it builds a Checker per
// connection. Monitors flag only what no legal device could have sent
// given what the trace shows, and report indeterminate where the trace
// lacks what the clause needs.
type Monitor struct {
	Clause string
	New    func(c *Conn) Checker
}

var (
	monMu    sync.Mutex
	monitors []Monitor
)

// RegisterMonitor adds a passive monitor; rule packages call it from init.
func RegisterMonitor(m Monitor) {
	monMu.Lock()
	defer monMu.Unlock()
	monitors = append(monitors, m)
}

// Monitors returns the registered monitors sorted by clause.
func Monitors() []Monitor {
	monMu.Lock()
	defer monMu.Unlock()
	out := append([]Monitor(nil), monitors...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Clause < out[j].Clause })
	return out
}

// SRQMode says what is known about the responder QPs' receive queues.
type SRQMode uint8

// SRQ knowledge.
const (
	SRQUnknown SRQMode = iota
	SRQNone            // no responder QP uses an SRQ
	SRQAll             // every responder QP uses an SRQ
)

// Settings are connection settings the user knows (audit flags) or the
// active run configured. Zero values mean unknown.
type Settings struct {
	MTU        int
	SRQ        SRQMode
	AckTimeout int // local ACK timeout exponent; -1 unknown
	RetryCnt   int // -1 unknown
	RNRRetry   int // -1 unknown
	// Active is set for traces of active runs: the trace holds the whole
	// connection from its first packet, nothing was lost before the
	// capture point, and the device is the side named by DeviceIs.
	Active bool
	// Complete says the capture holds each connection from its first
	// packet, taken where nothing is lost before the capture point.
	Complete bool
	// FromStart says the capture holds the connection from its first
	// packet: its CM handshake (REQ and REP) and its first request, at
	// the starting PSN the handshake announced. Unlike Complete it says
	// nothing of loss before the capture point, of the order the capture
	// shows packets in, or of the capture's end.
	FromStart bool
	// DeviceIsRequester is set (with Active) when the device under test is
	// the requester of the connection.
	DeviceIsRequester bool
	// StartKnown says StartPSN is the responder's expected PSN when the
	// trace begins (an active run sets up both QPs, so it knows): the
	// expected-PSN window is then exact from the first request, whatever
	// PSN that request carries (a scenario may open out of sequence).
	StartKnown bool
	StartPSN   wire.PSN
	// Tolerance is, for active runs on a real clock (a live device), how
	// far the trace's timestamps may be from when the device really sent
	// (the adapter's measured round trip and its own timer lateness, never
	// the device's timer granularity): a time
	// bound is judged failed only beyond it. Zero on a virtual clock.
	Tolerance time.Duration
	// ReceiveLoss is set, with Active, when the adapter's receive path
	// lost packets the device sent (dut.LossReporter): the trace shows
	// the connection from its start and every packet the harness sent,
	// but may lack some of the device's, so it is not Complete.
	ReceiveLoss bool
	// CaptureDrops is set when the capture file reports packets it
	// dropped (dut/pcapdut: pcapng interface statistics, packet blocks'
	// drop counts, ERF loss counters): a connection whose beginning the
	// trace shows is then not taken as held whole from it (FromStart).
	// It says nothing of which packets were dropped, so a sender's
	// consecutive IPv4 Identifications still decide for its own.
	CaptureDrops bool
	// TimePrecision is the capture's timestamp resolution where it is
	// coarser than a microsecond (a pcapng interface's if_tsresol): two
	// packets recorded within it of each other may have passed the
	// capture point the other way round (harness.MayBeReordered).
	TimePrecision time.Duration
}

// UnknownSettings returns settings with every value unknown.
func UnknownSettings() Settings {
	return Settings{AckTimeout: -1, RetryCnt: -1, RNRRetry: -1}
}
