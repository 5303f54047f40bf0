// Package refdut adapts the reference RC transport to the dut.DUT
// interface: each connection is a fresh virtual clock, a reference QP as
// the device (side A of a simulated link, 1 µs one way) and the harness as
// the peer (side B). It registers itself as "reference".
//
// Addresses are fixed: the device is 10.0.0.1 (02:00:00:00:00:01), the
// harness 10.0.0.2 (02:00:00:00:00:02). QPNs, and PSNs unless
// ConnConfig.SetPSNs, come from Options.Seed. Timeout, RetryCnt, RNRRetry
// and MinRNRTimer follow ConnConfig.RetryChosen: all zero without SetRetry
// gives the reference's defaults (14, 7, 7, 12); otherwise they are taken
// literally (Timeout 0 means no ACK timer, RNR
// timer code 0 means 655.36 ms); a zero MTU, MaxDestRdAtomic, MaxRdAtomic,
// RecvWQEs or MemorySize means 1024, 16, 16, 64 and 1 MiB. The device
// registers one region at DeviceVA with remote read and write (and atomic
// access with ConnConfig.Atomics); PeerMR stands for the harness's memory.
// For a SEND with invalidate posted on the device, WR.RKey is the R_Key to
// invalidate; what a device READ or ATOMIC returned is QP().Result(id).
//
// Options.Defect switches a reference defect on for every QP; Options.Seed
// also seeds link impairments; Options.Settings may carry the reference's
// open choices, so the suite can sweep configurations:
//
//	ack-policy=ackreq|every-n|delay  when a SEND/WRITE is acknowledged without AckReq
//	ack-every-n=N                    N for every-n
//	ack-delay=DURATION               coalescing delay for delay
//	msn-read=start|end               the MSN moves when a READ is validated, or after its last response
//	ack-req-every=N                  the device requester's AckReq cadence within a message
//	response-delay=DURATION          the responder's turnaround
//	packet-gap=DURATION              transmit serialization per packet (default 500ns)
//	latency=DURATION                 one-way link latency (default 1µs)
//	unsolicited-ack=true|false       re-send the latest ACK with new credits when WQEs are posted
//	timer-tick=DURATION              the requester's timers fire on ticks of this length (default 0: exact)
//
// Other keys are left to other adapters.
package refdut

import (
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/wire"
)

func init() { dut.Register("reference", New) }

// Fixed addressing of every connection.
var (
	DeviceIP  = netip.MustParseAddr("10.0.0.1")
	PeerIP    = netip.MustParseAddr("10.0.0.2")
	DeviceMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	PeerMAC   = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

// Defaults for a connection.
const (
	DefaultLatency    = time.Microsecond
	DefaultPacketGap  = 500 * time.Nanosecond // the device's transmit serialization per packet
	DefaultMemorySize = 1 << 20
	DefaultRecvWQEs   = 64
	DefaultRecvSize   = 1 << 16
	DeviceVA          = 0x10000000
	PeerVA            = 0x20000000
)

// Settings keys understood in dut.Options.Settings.
const (
	SetAckPolicy      = "ack-policy"      // ackreq | every-n | delay
	SetAckEveryN      = "ack-every-n"     // N for every-n
	SetAckDelay       = "ack-delay"       // duration for delay
	SetMSNRead        = "msn-read"        // start | end
	SetAckReqEvery    = "ack-req-every"   // requester AckReq cadence
	SetResponseDelay  = "response-delay"  // responder turnaround
	SetPacketGap      = "packet-gap"      // transmit serialization per packet
	SetLatency        = "latency"         // one-way link latency
	SetUnsolicitedACK = "unsolicited-ack" // true: re-send the latest ACK with new credits when WQEs are posted
	SetTimerTick      = "timer-tick"      // the requester's timer granularity
)

// Ref is the reference device adapter.
type Ref struct {
	opts  dut.Options
	base  reference.Config
	lat   time.Duration
	conns int64
}

// New builds the reference adapter. Options.Defect selects a defect for
// every QP it creates; Options.Settings may carry the reference's open
// choices (see the Set* keys).
func New(o dut.Options) (dut.DUT, error) {
	r := &Ref{opts: o, base: reference.DefaultConfig(), lat: DefaultLatency}
	r.base.PacketGap = DefaultPacketGap
	if o.Defect != "" {
		if _, ok := reference.LookupDefect(o.Defect); !ok {
			return nil, fmt.Errorf("unknown reference defect %q (known: %s)", o.Defect,
				strings.Join(reference.DefectNames(), ", "))
		}
		r.base.Defect = o.Defect
	}
	keys := make([]string, 0, len(o.Settings))
	for k := range o.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := r.apply(k, o.Settings[k]); err != nil {
			return nil, fmt.Errorf("reference setting %s=%q: %w", k, o.Settings[k], err)
		}
	}
	if err := r.base.Validate(); err != nil {
		return nil, fmt.Errorf("reference settings: %w", err)
	}
	return r, nil
}

func (r *Ref) apply(k, v string) error {
	c := &r.base
	dur := func() (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err == nil && d < 0 {
			err = errors.New("negative duration")
		}
		return d, err
	}
	var err error
	switch k {
	case SetAckPolicy:
		c.AckPolicy, err = reference.ParseAckPolicy(v)
	case SetAckEveryN:
		c.AckEveryN, err = strconv.Atoi(v)
	case SetAckDelay:
		c.AckDelay, err = dur()
	case SetMSNRead:
		switch v {
		case "start":
			c.MSNAtReadEnd = false
		case "end":
			c.MSNAtReadEnd = true
		default:
			err = errors.New("want start or end")
		}
	case SetAckReqEvery:
		c.AckReqEvery, err = strconv.Atoi(v)
	case SetResponseDelay:
		c.ResponseDelay, err = dur()
	case SetPacketGap:
		c.PacketGap, err = dur()
	case SetLatency:
		r.lat, err = dur()
	case SetUnsolicitedACK:
		c.UnsolicitedACK, err = strconv.ParseBool(v)
	case SetTimerTick:
		c.TimerTick, err = dur()
	}
	return err
}

// Name returns "reference".
func (r *Ref) Name() string { return "reference" }

// Declared says what the reference is, for the run's certificate: the
// bundled transport and its defect ("none" for the conformant one).
func (r *Ref) Declared() map[string]string {
	defect := r.base.Defect
	if defect == "" {
		defect = "none"
	}
	return map[string]string{"device": "rcconform's reference RC transport (virtual clock)", "defect": defect}
}

// Capabilities: everything but Capture.
func (r *Ref) Capabilities() dut.Capabilities {
	return dut.Capabilities{Inject: true, PostWR: true, Completions: true, Memory: true,
		Atomics: true, SRQ: true, Credits: true, VirtualTime: true}
}

// NewConn sets up a fresh clock, link and device QP.
func (r *Ref) NewConn(cc dut.ConnConfig) (dut.Conn, error) {
	r.conns++
	rng := rand.New(rand.NewSource(r.opts.Seed*1000003 + r.conns))
	cfg := r.base
	if cc.MTU == 0 {
		cc.MTU = 1024
	}
	if cc.MaxDestRdAtomic == 0 {
		cc.MaxDestRdAtomic = 16
	}
	if cc.MaxRdAtomic == 0 {
		cc.MaxRdAtomic = 16
	}
	if cc.RecvWQEs == 0 {
		cc.RecvWQEs = DefaultRecvWQEs
	}
	if cc.MemorySize == 0 {
		cc.MemorySize = DefaultMemorySize
	}
	if !cc.SetPSNs {
		cc.DevicePSN = wire.PSN(rng.Intn(wire.PSNSpace))
		cc.ExpectedPSN = wire.PSN(rng.Intn(wire.PSNSpace))
	}
	cfg.QPN = uint32(0x100 + rng.Intn(0xFFFE00))
	cfg.RemoteQPN = uint32(0x100 + rng.Intn(0xFFFE00))
	for cfg.RemoteQPN == cfg.QPN {
		cfg.RemoteQPN = uint32(0x100 + rng.Intn(0xFFFE00))
	}
	cfg.LocalMAC, cfg.RemoteMAC = DeviceMAC, PeerMAC
	cfg.LocalIP, cfg.RemoteIP = DeviceIP, PeerIP
	cfg.UDPSrcPort = uint16(0xC000 | cfg.QPN&0x3FFF)
	cfg.MTU = cc.MTU
	cfg.SendPSN, cfg.ExpectedPSN = cc.DevicePSN, cc.ExpectedPSN
	if cc.RetryChosen() {
		cfg.Timeout, cfg.RetryCnt, cfg.RNRRetry, cfg.MinRNRTimer = cc.Timeout, cc.RetryCnt, cc.RNRRetry, cc.MinRNRTimer
	} else {
		cc.Timeout, cc.RetryCnt, cc.RNRRetry, cc.MinRNRTimer = cfg.Timeout, cfg.RetryCnt, cfg.RNRRetry, cfg.MinRNRTimer
		cc.SetRetry = true
	}
	cfg.MaxDestRdAtomic, cfg.MaxRdAtomic = cc.MaxDestRdAtomic, cc.MaxRdAtomic
	cfg.RemoteAtomic = cc.Atomics
	if cc.SRQ {
		cfg.SRQ = reference.NewSRQ()
	}
	c := &Conn{clock: reference.NewClock(), cc: cc, lat: r.lat}
	c.link = reference.NewLink(c.clock, r.lat, rng.Int63())
	qp, err := reference.NewQP(c.clock, cfg, c.link.SendA)
	if err != nil {
		return nil, fmt.Errorf("creating the reference QP: %w", err)
	}
	c.qp = qp
	c.link.Connect(qp.Receive, c.deliver)
	c.link.OnTransmit = c.onTransmit
	access := reference.LocalWrite | reference.RemoteRead | reference.RemoteWrite
	if cc.Atomics {
		access |= reference.RemoteAtomic
	}
	c.mr = qp.Memory().Register(DeviceVA, cc.MemorySize, access)
	c.peerMem = reference.NewMemory(cfg.RemoteQPN)
	c.peerMR = c.peerMem.Register(PeerVA, cc.MemorySize, reference.AllRemote)
	if cc.RecvWQEs > 0 {
		if err := c.PostRecv(cc.RecvWQEs, DefaultRecvSize); err != nil {
			return nil, err
		}
	}
	c.peer = wire.Frame{DstMAC: DeviceMAC, SrcMAC: PeerMAC, Encap: wire.RoCEv2IPv4, Src: PeerIP, Dst: DeviceIP,
		TTL: 64, DF: true, SrcPort: uint16(0xC000 | cfg.RemoteQPN&0x3FFF), DstPort: wire.UDPPort}
	return c, nil
}

var _ dut.Conn = (*Conn)(nil)

// Conn is one connection to the reference device.
type Conn struct {
	lat        time.Duration // one-way link latency
	clock      *reference.Clock
	link       *reference.Link
	qp         *reference.QP
	cc         dut.ConnConfig
	mr         *reference.MR
	peerMem    *reference.Memory
	peerMR     *reference.MR
	peer       wire.Frame
	ipid       uint16
	nextRecvID uint64
	records    []*trace.Record
	byFrame    map[*byte]*trace.Record
	inbox      []*trace.Record
	dec        wire.Frame
}

// Link returns the simulated link (side A is the device), for impairment
// rules in tests.
func (c *Conn) Link() *reference.Link { return c.link }

// QP returns the device's reference QP.
func (c *Conn) QP() *reference.QP { return c.qp }

// Clock returns the connection's virtual clock.
func (c *Conn) Clock() *reference.Clock { return c.clock }

// DeviceMR returns the device's memory region for the harness's RDMA.
func (c *Conn) DeviceMR() *reference.MR { return c.mr }

// PeerMR returns the memory region standing for the harness's own memory,
// which the device's requests target (the harness answers them itself).
func (c *Conn) PeerMR() *reference.MR { return c.peerMR }

// Info describes the connection.
func (c *Conn) Info() dut.ConnInfo {
	cfg := c.qp.Config()
	return dut.ConnInfo{
		DeviceQPN: cfg.QPN, PeerQPN: cfg.RemoteQPN, MTU: cfg.MTU,
		ExpectedPSN: cfg.ExpectedPSN, DevicePSN: cfg.SendPSN,
		RKey: c.mr.RKey, VA: c.mr.VA, Len: c.mr.Len(),
		PeerRKey: c.peerMR.RKey, PeerVA: c.peerMR.VA, PeerLen: c.peerMR.Len(),
		Config: c.cc,
	}
}

// onTransmit records every frame entering the link.
func (c *Conn) onTransmit(from reference.Side, _ int, frame []byte) {
	f := &c.dec
	err := f.DecodeEthernet(frame)
	if err != nil && !errors.Is(err, wire.ErrUnknownOpcode) {
		return
	}
	rec := &trace.Record{
		Frame:      len(c.records) + 1,
		Time:       c.clock.Now(),
		Dir:        trace.DirOf(f.Opcode, from == reference.SideB),
		Src:        f.Src,
		Dst:        f.Dst,
		IPID:       f.IPID,
		HasIPID:    f.Encap == wire.RoCEv2IPv4,
		Packet:     f.Packet.Clone(),
		ICRC:       f.CheckICRC(),
		PayloadLen: len(f.Payload),
	}
	if d := c.qp.Config().Defect; d != "" && from == reference.SideA {
		rec.Note = "defect " + d
	}
	c.records = append(c.records, rec)
	if c.byFrame == nil {
		c.byFrame = map[*byte]*trace.Record{}
	}
	if len(frame) > 0 {
		c.byFrame[&frame[0]] = rec
	}
}

// deliver receives a frame the device sent at the harness's side.
func (c *Conn) deliver(frame []byte) {
	if len(frame) == 0 {
		return
	}
	if rec, ok := c.byFrame[&frame[0]]; ok {
		c.inbox = append(c.inbox, rec)
	}
}

// Send injects a packet from the harness, filling in DestQP when zero
// and the default P_Key (0xFFFF) when zero.
func (c *Conn) Send(p *wire.Packet) error {
	return c.SendRaw(dut.Addressed(p, c.qp.Config().QPN))
}

// SendRaw injects the packet exactly as given; only the Ethernet, IP and
// UDP headers and the ICRC are added.
func (c *Conn) SendRaw(p *wire.Packet) error {
	if len(p.Payload) > 1<<16 {
		return fmt.Errorf("sending %v: payload of %d bytes does not fit a frame", p.Opcode, len(p.Payload))
	}
	f := c.peer
	c.ipid++
	f.IPID = c.ipid
	f.Packet = *p
	c.link.SendB(f.AppendEthernet(nil))
	return nil
}

// Recv steps the clock until a packet the device sent reaches the
// harness, or timeout passes.
func (c *Conn) Recv(timeout time.Duration) (*trace.Record, bool) {
	deadline := c.clock.Now() + timeout
	for {
		if len(c.inbox) > 0 {
			r := c.inbox[0]
			c.inbox = c.inbox[1:]
			return r, true
		}
		t, ok := c.clock.NextEvent()
		if !ok || t > deadline {
			c.clock.RunUntil(deadline)
			if len(c.inbox) > 0 {
				continue
			}
			return nil, false
		}
		c.clock.Step()
	}
}

// Wait lets d pass on the clock; what the device sends meanwhile stays
// readable with Recv(0).
func (c *Conn) Wait(d time.Duration) { c.clock.RunUntil(c.clock.Now() + d) }

// Now is the clock's time since the connection opened.
func (c *Conn) Now() time.Duration { return c.clock.Now() }

// PostRecv posts n receive WQEs of size bytes on the device's RQ or SRQ.
func (c *Conn) PostRecv(n, size int) error {
	for i := 0; i < n; i++ {
		c.nextRecvID++
		if err := c.qp.PostRecv(c.nextRecvID, size); err != nil {
			return err
		}
	}
	return nil
}

// PostSend posts a work request on the device. For SEND with invalidate,
// RKey is the R_Key to invalidate.
func (c *Conn) PostSend(wr dut.WR) error { return c.qp.PostSend(wr) }

// Completions returns and clears the device's completions.
func (c *Conn) Completions() ([]dut.Completion, error) { return c.qp.PollCQ(), nil }

// State returns the device QP's state.
func (c *Conn) State() (dut.QPState, error) { return c.qp.State(), nil }

// ReadMemory reads n bytes at offset off of the device's region.
func (c *Conn) ReadMemory(off, n int) ([]byte, error) {
	b := c.mr.Bytes()
	if off < 0 || n < 0 || off+n > len(b) {
		return nil, fmt.Errorf("reading device memory [%d, +%d): outside the %d-byte region", off, n, len(b))
	}
	return append([]byte(nil), b[off:off+n]...), nil
}

// WriteMemory writes data at offset off of the device's region.
func (c *Conn) WriteMemory(off int, data []byte) error {
	b := c.mr.Bytes()
	if off < 0 || off+len(data) > len(b) {
		return fmt.Errorf("writing device memory [%d, +%d): outside the %d-byte region", off, len(data), len(b))
	}
	copy(b[off:], data)
	return nil
}

// Tolerance is the timing slack of the connection's virtual clock: the
// link's round trip. Times are exact, but the harness sees the device's
// packets one link latency after they left and its own arrive one later,
// so a bound judged from the harness's side must allow for both (a
// device timer can fire before the harness's answer arrives).
func (c *Conn) Tolerance() time.Duration { return 2 * c.lat }

// InvalidateRKey invalidates the device region's R_Key.
func (c *Conn) InvalidateRKey() error {
	c.mr.Invalidate()
	return nil
}

// Trace returns every packet of the connection, both directions.
func (c *Conn) Trace() []*trace.Record {
	return append([]*trace.Record(nil), c.records...)
}

// Close ends the connection.
func (c *Conn) Close() error { return nil }

// WritePcapng writes every frame that crossed the connection's link, both
// directions, as a pcapng capture (the same bytes a capture adapter reads).
func (c *Conn) WritePcapng(w io.Writer) error { return c.link.WritePcapng(w) }

// TraceLen implements harness.TraceCounter.
func (c *Conn) TraceLen() int { return len(c.records) }
