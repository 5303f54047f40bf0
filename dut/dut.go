// Package dut defines the device-under-test adapter interface that every
// rule drives, with the capabilities an adapter declares.
//
// An adapter gives the harness a fresh RC connection to the device: the
// harness plays the peer QP (the requester for responder rules, the
// responder for requester rules), injects packets, waits for what the
// device sends on the device's own clock, and, where the adapter can,
// posts work requests on the device and reads its completions and memory.
// A spec that needs a capability the adapter lacks reports "unsupported",
// never "fail".
//
// Adapters in this module: the bundled reference transport in-process
// (dut/refdut, the default) and capture replay (dut/pcapdut). A vendor
// writes an adapter in their own module by implementing DUT and Conn:
//
//	type myNIC struct{ agent *agentClient }
//
//	func (m *myNIC) Name() string { return "mynic" }
//	func (m *myNIC) Capabilities() dut.Capabilities {
//		return dut.Capabilities{Inject: true, PostWR: true, Completions: true, Memory: true}
//	}
//	func (m *myNIC) NewConn(cfg dut.ConnConfig) (dut.Conn, error) {
//		qp, err := m.agent.CreateQP(cfg) // QPN, PSNs, MTU, retry counts...
//		if err != nil {
//			return nil, fmt.Errorf("creating a QP on mynic: %w", err)
//		}
//		return newConn(qp), nil // sends frames over a socket, reads replies
//	}
//
// and registers it before the suite runs:
//
//	func init() { dut.Register("mynic", func(o dut.Options) (dut.DUT, error) { return &myNIC{}, nil }) }
//
// then runs `go tool ginkgo run ./rules -- --dut=mynic` from a test binary
// that imports both its adapter and github.com/rcconform/rcconform/rules.
package dut

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Capabilities says what an adapter can do.
type Capabilities struct {
	Inject      bool // the harness can send crafted packets to the device
	PostWR      bool // the harness can post work requests on the device's QP
	Completions bool // the harness can read the device's completions and QP state
	Memory      bool // the harness can read and write the device's registered memory
	Atomics     bool // the device executes CmpSwap and FetchAdd (o9-58, o9-66, o9-67)
	SRQ         bool // the device can attach a QP to a shared receive queue (o9-95.2.2)
	Capture     bool // the adapter replays a capture: passive monitors only
	Credits     bool // the device's receive queue depth is known and controllable (C9-150.2.1)
	// VirtualTime means the device runs on a virtual clock, so exact
	// timing checks are possible; live devices report false.
	VirtualTime bool
}

// ErrUnsupported is returned (wrapped) by adapters for operations they
// cannot do; specs turn it into the "unsupported" verdict.
var ErrUnsupported = errors.New("not supported by this device adapter")

// ErrBroken is wrapped by the value an adapter panics with when it lost
// its device mid-run (a simulator that broke its protocol): nothing the
// device did since can be judged, so the suite stops, naming the adapter's
// error, and blames no clause.
var ErrBroken = errors.New("the device adapter broke")

// ConnConfig is the configuration of the device's QP for one connection.
// Zero values mean the adapter's defaults.
type ConnConfig struct {
	MTU int // path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)
	// DevicePSN is the first PSN the device sends as a requester.
	DevicePSN wire.PSN
	// ExpectedPSN is the first PSN the device expects as a responder.
	ExpectedPSN wire.PSN
	// SetPSNs says DevicePSN and ExpectedPSN were chosen; otherwise the
	// adapter picks them (the reference picks from the seed).
	SetPSNs bool
	// SetRetry says Timeout, RetryCnt, RNRRetry and MinRNRTimer were
	// chosen, zero included. The four go together: when any of them is
	// non-zero they are all taken as given, too (see RetryChosen); only
	// when all are zero and SetRetry is false does the adapter use its
	// defaults.
	SetRetry bool
	// Requester-side attributes of the device's QP.
	Timeout  uint8 // local ACK timeout, 4.096 µs × 2^Timeout, 0 = none (C9-140)
	RetryCnt uint8 // 0–7
	RNRRetry uint8 // 0–7, 7 = infinite
	// Responder-side attributes.
	MinRNRTimer     uint8 // RNR timer code advertised in RNR NAKs
	MaxDestRdAtomic int   // READ/ATOMIC responder resources
	MaxRdAtomic     int   // READ/ATOMIC initiator depth
	SRQ             bool  // attach the device QP's receive side to an SRQ
	RecvWQEs        int   // receive WQEs posted before the first packet (-1: none)
	Atomics         bool  // grant remote atomic access
	// MemorySize is the size of the memory region the device registers for
	// the harness's RDMA and ATOMIC operations (default 1 MiB).
	MemorySize int
}

// RetryChosen reports whether Timeout, RetryCnt, RNRRetry and MinRNRTimer
// are to be taken as given (zero included) rather than defaulted.
func (c ConnConfig) RetryChosen() bool {
	return c.SetRetry || c.Timeout != 0 || c.RetryCnt != 0 || c.RNRRetry != 0 || c.MinRNRTimer != 0
}

// ConnInfo is what the harness needs to talk to the device's QP.
type ConnInfo struct {
	DeviceQPN uint32 // the device's QP number: DestQP of requests the harness sends
	PeerQPN   uint32 // the harness's QP number: DestQP of the device's packets
	MTU       int
	// ExpectedPSN is the PSN the device's responder expects next; DevicePSN
	// the first PSN its requester will use.
	ExpectedPSN wire.PSN
	DevicePSN   wire.PSN
	// The device's memory region for remote access by the harness.
	RKey uint32
	VA   uint64
	Len  int
	// PeerRKey, PeerVA, PeerLen: the harness's own memory region, which the
	// device's requester targets with WRITE, READ and ATOMIC.
	PeerRKey uint32
	PeerVA   uint64
	PeerLen  int
	Config   ConnConfig
}

// Op is a work request operation posted on the device.
type Op uint8

// Work request operations.
const (
	OpSend Op = iota
	OpSendImm
	OpSendInv
	OpWrite
	OpWriteImm
	OpRead
	OpCmpSwap
	OpFetchAdd
)

var opNames = [...]string{"SEND", "SEND with immediate", "SEND with invalidate", "RDMA WRITE",
	"RDMA WRITE with immediate", "RDMA READ", "CmpSwap", "FetchAdd"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op %d", o)
}

// WR is a send-queue work request posted on the device's QP.
type WR struct {
	ID     uint64
	Op     Op
	Data   []byte // SEND/WRITE payload
	Length int    // READ length
	// Remote address in the harness's (peer's) memory region.
	RemoteVA uint64
	RKey     uint32
	Imm      uint32
	// Atomic operands.
	CompareAdd uint64
	Swap       uint64
}

// Status is a completion status, as IBTA and verbs name them.
type Status uint8

// Completion statuses.
const (
	StatusSuccess Status = iota
	StatusRetryExceeded
	StatusRNRRetryExceeded
	StatusRemoteAccessError
	StatusRemoteInvalidRequest
	StatusRemoteOperationalError
	StatusFlushed
	StatusLocalError
)

var statusNames = [...]string{"success", "transport retry counter exceeded", "RNR retry counter exceeded",
	"remote access error", "remote invalid request error", "remote operational error", "work request flushed", "local error"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status %d", s)
}

// Completion is a completion queue entry read from the device.
type Completion struct {
	ID     uint64
	Op     Op
	Recv   bool // a receive completion
	Status Status
	Bytes  int
	Imm    uint32
	Time   time.Duration
}

// QPState is the device QP's state.
type QPState uint8

// QP states (IBTA §10.3).
const (
	StateReset QPState = iota
	StateInit
	StateRTR
	StateRTS
	StateSQD
	StateSQE
	StateError
)

func (s QPState) String() string {
	return [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERROR"}[s%7]
}

// Conn is one RC connection between the harness (the peer) and the device.
type Conn interface {
	Info() ConnInfo
	// Send injects a packet from the harness to the device. The adapter
	// fills in the addresses, DestQP (if zero) and the ICRC.
	Send(p *wire.Packet) error
	// SendRaw injects a packet exactly as given (DestQP included), for
	// stimuli that must be malformed.
	SendRaw(p *wire.Packet) error
	// Recv returns the next packet the device sends, waiting at most
	// timeout on the device's clock; ok is false when nothing came.
	Recv(timeout time.Duration) (rec *trace.Record, ok bool)
	// Wait lets d pass on the device's clock, collecting what the device
	// sends in the meantime (readable with Recv(0)).
	Wait(d time.Duration)
	// Now is the time on the device's clock since the connection opened.
	Now() time.Duration
	// PostRecv posts n receive WQEs of size bytes on the device's QP (or SRQ).
	PostRecv(n, size int) error
	// PostSend posts a work request on the device's send queue.
	PostSend(wr WR) error
	// Completions returns and clears the completions the device produced.
	Completions() ([]Completion, error)
	// State returns the device QP's state.
	State() (QPState, error)
	// ReadMemory and WriteMemory access the device's memory region at
	// offset off.
	ReadMemory(off, n int) ([]byte, error)
	WriteMemory(off int, data []byte) error
	// InvalidateRKey makes the device's memory region's R_Key invalid, as
	// deregistering it would.
	InvalidateRKey() error
	// Trace returns every packet exchanged on the connection so far.
	Trace() []*trace.Record
	Close() error
}

// Addressed returns a copy of p as Conn.Send sends it to the device's QP
// deviceQPN: DestQP filled in when zero, and the default P_Key (0xFFFF)
// when zero.
func Addressed(p *wire.Packet, deviceQPN uint32) *wire.Packet {
	q := *p
	if q.DestQP == 0 {
		q.DestQP = deviceQPN
	}
	if q.PKey == 0 {
		q.PKey = 0xFFFF
	}
	return &q
}

// LossReporter is implemented by a Conn whose own receive path can lose
// the device's packets before the harness records them (a kernel socket
// whose queue overflowed on a loaded host). ReceiveLoss returns how many
// were lost while the connection was open (0 when none) and a sentence
// saying where. The trace then may lack packets the device did send: the
// suite decides nothing from their absence (a scenario that fails
// becomes indeterminate, and the monitors judge the trace as one with
// loss before its capture point).
type LossReporter interface {
	ReceiveLoss() (lost int, where string)
}

// ReceiveLoss returns c's ReceiveLoss, or none when c cannot lose what
// the device sends.
func ReceiveLoss(c Conn) (int, string) {
	if lr, ok := c.(LossReporter); ok {
		return lr.ReceiveLoss()
	}
	return 0, ""
}

// DUT is a device under test.
type DUT interface {
	Name() string
	Capabilities() Capabilities
	// NewConn sets up a fresh QP on the device connected to the harness.
	NewConn(cfg ConnConfig) (Conn, error)
}

// Options are the suite's command-line settings an adapter may use.
type Options struct {
	Defect  string // reference only: the defect to switch on
	Capture string // pcap only: the capture file
	Seed    int64
	// Settings is free-form adapter configuration (--device, --agent, ...).
	Settings map[string]string
}

// Factory builds a DUT from the options.
type Factory func(Options) (DUT, error)

var (
	mu        sync.Mutex
	factories = map[string]Factory{}
)

// Register makes an adapter available under name (for --dut=name).
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	factories[name] = f
}

// New builds the adapter registered under name.
func New(name string, o Options) (DUT, error) {
	mu.Lock()
	f, ok := factories[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no device adapter named %q (known: %v)", name, Names())
	}
	d, err := f(o)
	if err != nil {
		return nil, fmt.Errorf("starting device adapter %q: %w", name, err)
	}
	return d, nil
}

// Names lists the registered adapters.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	var n []string
	for k := range factories {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
