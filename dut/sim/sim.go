// Package sim adapts a device that runs in simulated time (an RTL model
// under Verilator, an HLS C simulation, a cycle-accurate C++ model) to the
// dut.DUT interface. The suite starts the simulator as a subprocess
// (`--sim='<command>'`, run with sh -c) and speaks the protocol of
// PROTOCOL.md with it over its standard input and output (package
// simproto): the control agent's verbs (create a QP, register memory,
// post work requests, poll completions, read memory), `frame` to give
// the device a frame at the current simulated time and `advance` to let
// simulated time run until a given time or until the device emits a
// frame. It registers itself as "sim".
//
// Simulated time is the device's clock and the suite's: timers are judged
// exactly (Capabilities.VirtualTime), and the harness's own work costs no
// simulated time. Between the harness and the model's port the adapter
// puts a wire of a fixed one-way latency (setting latency, default 1 µs,
// the reference adapter's link): a frame the harness sends at t reaches
// the device at t+latency, and one the device emits at t reaches the
// harness at t+latency; the trace holds each frame at the time its sender
// sent it.
//
// Settings (--settings=key=value,…; --sim sets sim):
//
//	sim=COMMAND       the simulator, run with sh -c (required)
//	latency=DURATION  the wire's one-way latency (default 1µs)
//	timeout=DURATION  wall-clock bound on each answer (default 2m): a
//	                  simulator that says nothing that long is stopped
//	local=ADDR        the harness's IP address (default 10.0.0.2)
//
// A simulator that breaks the protocol (no answer within the timeout, a
// line that is not JSON, time going backwards, a frame that is not
// RoCEv2) is stopped, and every method of the adapter panics from then on
// with an error wrapping dut.ErrBroken that names what it sent: the suite
// stops there, blaming the simulator, not a clause.
package sim

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/dut/sim/simproto"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/wire"
)

func init() { dut.Register("sim", New) }

// Settings keys.
const (
	SetSim     = "sim"
	SetLatency = "latency"
	SetTimeout = "timeout"
	SetLocal   = "local"
)

// Defaults of a connection, as the reference adapter's.
const (
	DefaultLatency  = refdut.DefaultLatency
	defaultRecvSize = refdut.DefaultRecvSize
)

// MaxFramesAtOnce bounds the frames a device may emit at one simulated
// time: a simulator whose time stops while it emits frames would hold the
// suite forever.
const MaxFramesAtOnce = 1 << 16

// Sim is the sim adapter: one simulator process for the run.
type Sim struct {
	opts   dut.Options
	c      *simproto.Client
	dev    agentproto.DeviceInfo
	caps   dut.Capabilities
	lat    time.Duration
	local  netip.Addr
	device netip.Addr

	mu       sync.Mutex
	conns    int64
	open     map[uint32]*Conn // by the harness's QPN
	toDevice []inFlight       // the harness's frames on the wire, in order
	toPeer   []inFlight       // the device's frames on the wire, in order
	drained  bool             // the simulator has run everything at its current time
	stray    int              // device frames for no open connection
	lastAt   time.Duration    // the time of the latest frame emitted
	atOnce   int              // frames emitted at lastAt
	// Emitted counts the frames the device emitted, Advances the
	// advance requests: the run's cost in round trips.
	Emitted, Advances int
}

type inFlight struct {
	at    time.Duration
	frame []byte
	rec   *trace.Record
	conn  *Conn
}

// New starts the simulator of o.Settings["sim"] and says hello.
func New(o dut.Options) (dut.DUT, error) {
	cmd := o.Settings[SetSim]
	if cmd == "" {
		return nil, errors.New("the sim adapter needs the simulator's command: --sim='COMMAND' (or --settings=sim=COMMAND)")
	}
	s := &Sim{opts: o, lat: DefaultLatency, local: refdut.PeerIP, open: map[uint32]*Conn{}}
	timeout := simproto.DefaultTimeout
	var err error
	if v, ok := o.Settings[SetLatency]; ok {
		if s.lat, err = time.ParseDuration(v); err != nil || s.lat < 0 {
			return nil, fmt.Errorf("sim setting %s=%q: want a duration of 0 or more", SetLatency, v)
		}
	}
	if v, ok := o.Settings[SetTimeout]; ok {
		if timeout, err = time.ParseDuration(v); err != nil || timeout <= 0 {
			return nil, fmt.Errorf("sim setting %s=%q: want a positive duration", SetTimeout, v)
		}
	}
	if v, ok := o.Settings[SetLocal]; ok {
		if s.local, err = netip.ParseAddr(v); err != nil {
			return nil, fmt.Errorf("sim setting %s=%q: %w", SetLocal, v, err)
		}
	}
	if o.Defect != "" {
		return nil, fmt.Errorf("--defect is the reference's: give the simulator its own (for rcconform-refsim: --sim='rcconform-refsim --defect=%s')", o.Defect)
	}
	s.c, err = simproto.Start(cmd, timeout, os.Stderr)
	if err != nil {
		return nil, err
	}
	h := s.c.Hello()
	s.dev = h.Hello.Device
	if s.device, err = netip.ParseAddr(s.dev.Address); err != nil {
		s.c.Close()
		return nil, fmt.Errorf("%w: the simulator's hello gives the device address %q: %v", simproto.ErrProtocol, s.dev.Address, err)
	}
	has := func(c string) bool { return slices.Contains(h.Sim.Caps, c) }
	s.caps = dut.Capabilities{Inject: true, PostWR: has(simproto.CapPostSend), Completions: has(simproto.CapPollCQ),
		Memory: has(simproto.CapMemory), Atomics: has(simproto.CapAtomics) && s.dev.Atomics,
		SRQ: has(simproto.CapSRQ) && s.dev.SRQ, Credits: has(simproto.CapCredits), VirtualTime: true}
	return s, nil
}

// Name returns "sim".
func (s *Sim) Name() string { return "sim" }

// Capabilities are what the simulator declared in hello, on a virtual
// clock.
func (s *Sim) Capabilities() dut.Capabilities { return s.caps }

// Environment describes the simulator for the report.
func (s *Sim) Environment() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]string{"sim": s.opts.Settings[SetSim], "sim.device": s.dev.Name + " (" + s.dev.Agent + ")",
		"sim.latency": s.lat.String(), "sim.time": s.c.Now().String(),
		"sim.frames": fmt.Sprint(s.Emitted), "sim.advances": fmt.Sprint(s.Advances), "sim.stray-frames": fmt.Sprint(s.stray)}
}

// Close ends the simulator.
func (s *Sim) Close() error { return s.c.Close() }

// broken panics with the simulator's error: nothing it said since can be
// judged.
func (s *Sim) broken(err error) {
	panic(fmt.Errorf("%w: %w", dut.ErrBroken, err))
}

// do runs one request; a protocol break panics (broken), a refusal is
// returned.
func (s *Sim) do(req *simproto.Request) (*simproto.Response, error) {
	resp, err := s.c.Do(req)
	if errors.Is(err, simproto.ErrProtocol) {
		s.broken(err)
	}
	return resp, err
}

// refusal wraps a simulator's refusal of what: an unsupported one as
// dut.ErrUnsupported.
func (s *Sim) refusal(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, agentproto.ErrUnsupported) {
		return fmt.Errorf("%s on the simulator: %v: %w", what, err, dut.ErrUnsupported)
	}
	return fmt.Errorf("%s on the simulator: %w", what, err)
}

// NewConn creates a QP on the simulated device, registers its memory and
// posts its receive WQEs; PSNs come from the seed as the reference
// adapter draws them.
func (s *Sim) NewConn(cc dut.ConnConfig) (dut.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns++
	rng := rand.New(rand.NewSource(s.opts.Seed*1000003 + s.conns))
	if cc.MTU == 0 {
		cc.MTU = 1024
	}
	if !wire.ValidMTU(cc.MTU) {
		return nil, fmt.Errorf("path MTU %d is not 256, 512, 1024, 2048 or 4096", cc.MTU)
	}
	if s.dev.MTU != 0 && cc.MTU > s.dev.MTU {
		return nil, fmt.Errorf("path MTU %d exceeds the simulated device's %d: %w", cc.MTU, s.dev.MTU, dut.ErrUnsupported)
	}
	if cc.MaxDestRdAtomic == 0 {
		cc.MaxDestRdAtomic = 16
	}
	if cc.MaxRdAtomic == 0 {
		cc.MaxRdAtomic = 16
	}
	if cc.RecvWQEs == 0 {
		cc.RecvWQEs = refdut.DefaultRecvWQEs
	}
	if cc.MemorySize == 0 {
		cc.MemorySize = refdut.DefaultMemorySize
	}
	if !cc.SetPSNs {
		cc.DevicePSN = wire.PSN(rng.Intn(wire.PSNSpace))
		cc.ExpectedPSN = wire.PSN(rng.Intn(wire.PSNSpace))
	}
	_ = rng.Intn(0xFFFE00) // the reference's own QPN: the simulator picks the device's
	peerQPN := uint32(0x100 + rng.Intn(0xFFFE00))
	for s.open[peerQPN] != nil {
		peerQPN = uint32(0x100 + rng.Intn(0xFFFE00))
	}
	if !cc.RetryChosen() {
		d := reference.DefaultConfig()
		cc.Timeout, cc.RetryCnt, cc.RNRRetry, cc.MinRNRTimer = d.Timeout, d.RetryCnt, d.RNRRetry, d.MinRNRTimer
	}
	cc.SetRetry = true
	attr := agentproto.QPAttr{MTU: cc.MTU, SQPSN: uint32(cc.DevicePSN), RQPSN: uint32(cc.ExpectedPSN), Timeout: cc.Timeout,
		RetryCnt: cc.RetryCnt, RNRRetry: cc.RNRRetry, MinRNRTimer: cc.MinRNRTimer, MaxRdAtomic: cc.MaxRdAtomic,
		MaxDestRdAtomic: cc.MaxDestRdAtomic, SRQ: cc.SRQ, RemoteAtomic: cc.Atomics, MaxSendWR: 256,
		MaxRecvWR: max(1024, cc.RecvWQEs), LocalAddress: s.device.String(), RemoteAddress: s.local.String(), RemoteQPN: peerQPN}
	resp, err := s.do(&simproto.Request{Request: agentproto.Request{Op: agentproto.OpCreateQP, Attr: &attr}})
	if err != nil {
		return nil, s.refusal("creating a QP", err)
	}
	if resp.QP == nil {
		s.broken(fmt.Errorf("%w: the simulator answered create_qp without qp_info", simproto.ErrProtocol))
	}
	qi := *resp.QP
	c := &Conn{s: s, qp: qi.Handle, t0: s.c.Now(), cc: cc, peerQPN: peerQPN, deviceQPN: qi.QPN,
		peer: wire.Frame{DstMAC: refdut.DeviceMAC, SrcMAC: refdut.PeerMAC, Encap: wire.RoCEv2IPv4, Src: s.local, Dst: s.device,
			TTL: 64, DF: true, SrcPort: uint16(0xC000 | peerQPN&0x3FFF), DstPort: wire.UDPPort}}
	if !s.local.Is4() {
		c.peer.Encap = wire.RoCEv2IPv6
	}
	s.open[peerQPN] = c
	fail := func(err error) (dut.Conn, error) {
		s.mu.Unlock()
		c.Close()
		s.mu.Lock()
		return nil, err
	}
	access := []string{agentproto.AccessLocalWrite, agentproto.AccessRemoteRead, agentproto.AccessRemoteWrite}
	if cc.Atomics {
		access = append(access, agentproto.AccessRemoteAtomic)
	}
	resp, err = s.do(&simproto.Request{Request: agentproto.Request{Op: agentproto.OpRegMR, QP: c.qp, Length: cc.MemorySize, Access: access}})
	if err != nil {
		return fail(s.refusal(fmt.Sprintf("registering %d bytes", cc.MemorySize), err))
	}
	if resp.MR == nil {
		s.broken(fmt.Errorf("%w: the simulator answered reg_mr without mr_info", simproto.ErrProtocol))
	}
	c.mr = *resp.MR
	if cc.RecvWQEs > 0 {
		if _, err := s.do(&simproto.Request{Request: agentproto.Request{Op: agentproto.OpPostRecv, QP: c.qp, Count: cc.RecvWQEs, Size: defaultRecvSize}}); err != nil {
			return fail(s.refusal(fmt.Sprintf("posting %d receive WQEs", cc.RecvWQEs), err))
		}
	}
	if qi.Attr.MTU != 0 {
		cc.MTU = qi.Attr.MTU
	}
	c.cc = cc
	c.peerRKey = 0x5a5a0000 | uint32(rng.Intn(0xFFFF))
	return c, nil
}

// run lets simulated time pass until T, moving frames across the wire;
// it stops early when stop says so (checked whenever a frame reached the
// harness). s.mu is held.
func (s *Sim) run(T time.Duration, stop func() bool) {
	for {
		now := s.c.Now()
		next := T
		if len(s.toDevice) > 0 && s.toDevice[0].at < next {
			next = s.toDevice[0].at
		}
		if len(s.toPeer) > 0 && s.toPeer[0].at < next {
			next = s.toPeer[0].at
		}
		if now < next || !s.drained {
			s.advance(max(next, now))
			continue
		}
		// Everything the device did up to now has run: what reaches
		// either end of the wire now arrives.
		for len(s.toDevice) > 0 && s.toDevice[0].at <= now {
			f := s.toDevice[0]
			s.toDevice = s.toDevice[1:]
			if f.conn.closed {
				continue
			}
			if _, err := s.do(&simproto.Request{Request: agentproto.Request{Op: simproto.OpFrame}, Frame: f.frame}); err != nil {
				f.rec.Note = "the simulator refused the frame: " + err.Error()
			}
			s.drained = false
		}
		arrived := false
		for len(s.toPeer) > 0 && s.toPeer[0].at <= now {
			f := s.toPeer[0]
			s.toPeer = s.toPeer[1:]
			if !f.conn.closed {
				f.conn.inbox = append(f.conn.inbox, f.rec)
				arrived = true
			}
		}
		if arrived && stop != nil && stop() {
			return
		}
		if now >= T && s.drained {
			return
		}
	}
}

// advance asks the simulator to run until; a frame it emits is recorded
// and put on the wire to the harness. s.mu is held.
func (s *Sim) advance(until time.Duration) {
	u := int64(until)
	s.Advances++
	resp, err := s.do(&simproto.Request{Request: agentproto.Request{Op: simproto.OpAdvance}, Until: &u})
	if err != nil {
		s.broken(fmt.Errorf("%w: the simulator refused advance until %d ns: %w", simproto.ErrProtocol, u, err))
	}
	if len(resp.Frame) == 0 {
		s.drained = true
		return
	}
	s.drained = false
	s.Emitted++
	at := time.Duration(*resp.Time)
	if at != s.lastAt {
		s.lastAt, s.atOnce = at, 0
	}
	if s.atOnce++; s.atOnce > MaxFramesAtOnce {
		s.c.Close()
		s.broken(fmt.Errorf("%w: the simulator emitted more than %d frames at %d ns without time moving", simproto.ErrProtocol, MaxFramesAtOnce, int64(at)))
	}
	var f wire.Frame
	if err := f.DecodeEthernet(resp.Frame); err != nil && !errors.Is(err, wire.ErrUnknownOpcode) {
		s.c.Close()
		s.broken(fmt.Errorf("%w: the simulator emitted, at %d ns, a frame that is not RoCEv2 over Ethernet (%v): % x", simproto.ErrProtocol, int64(at), err, clip(resp.Frame)))
	}
	c := s.open[f.DestQP]
	if c == nil {
		s.stray++
		return
	}
	rec := c.record(&f, at, false)
	s.toPeer = append(s.toPeer, inFlight{at: at + s.lat, rec: rec, conn: c})
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

var _ dut.Conn = (*Conn)(nil)

// Conn is one QP on the simulated device.
type Conn struct {
	s         *Sim
	qp        uint32
	mr        agentproto.MRInfo
	t0        time.Duration // the simulator's time when the connection opened
	cc        dut.ConnConfig
	peerQPN   uint32
	deviceQPN uint32
	peerRKey  uint32
	peer      wire.Frame
	ipid      uint16
	records   []*trace.Record
	inbox     []*trace.Record
	closed    bool
}

// record adds a frame to the trace, sent at simulated time at; s.mu is
// held.
func (c *Conn) record(f *wire.Frame, at time.Duration, fromHarness bool) *trace.Record {
	rec := &trace.Record{Frame: len(c.records) + 1, Time: at - c.t0, Dir: trace.DirOf(f.Opcode, fromHarness),
		Src: f.Src, Dst: f.Dst, IPID: f.IPID, HasIPID: f.Encap == wire.RoCEv2IPv4, Packet: f.Packet.Clone(),
		ICRC: f.CheckICRC(), PayloadLen: len(f.Payload)}
	c.records = append(c.records, rec)
	return rec
}

// Info describes the connection.
func (c *Conn) Info() dut.ConnInfo {
	return dut.ConnInfo{DeviceQPN: c.deviceQPN, PeerQPN: c.peerQPN, MTU: c.cc.MTU, ExpectedPSN: c.cc.ExpectedPSN,
		DevicePSN: c.cc.DevicePSN, RKey: c.mr.RKey, VA: c.mr.Addr, Len: c.mr.Length,
		PeerRKey: c.peerRKey, PeerVA: refdut.PeerVA, PeerLen: c.cc.MemorySize, Config: c.cc}
}

// Tolerance is the wire's round trip, as the reference adapter's.
func (c *Conn) Tolerance() time.Duration { return 2 * c.s.lat }

// Send injects a packet, filling in DestQP and the P_Key when zero.
func (c *Conn) Send(p *wire.Packet) error {
	return c.SendRaw(dut.Addressed(p, c.deviceQPN))
}

// SendRaw injects the packet as given (headers and ICRC added): it
// reaches the device one wire latency from now.
func (c *Conn) SendRaw(p *wire.Packet) error {
	if len(p.Payload) > 1<<16 {
		return fmt.Errorf("sending %v: payload of %d bytes does not fit a frame", p.Opcode, len(p.Payload))
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed {
		return errors.New("sending on a closed connection")
	}
	f := c.peer
	c.ipid++
	f.IPID = c.ipid
	f.Packet = *p
	frame := f.AppendEthernet(nil)
	var d wire.Frame
	if err := d.DecodeEthernet(frame); err != nil && !errors.Is(err, wire.ErrUnknownOpcode) {
		return fmt.Errorf("sending %v: %w", p.Opcode, err)
	}
	now := s.c.Now()
	rec := c.record(&d, now, true)
	s.toDevice = append(s.toDevice, inFlight{at: now + s.lat, frame: frame, rec: rec, conn: c})
	return nil
}

// Recv lets simulated time pass until a frame the device sent reaches
// the harness, or timeout passes.
func (c *Conn) Recv(timeout time.Duration) (*trace.Record, bool) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(c.inbox) == 0 {
		s.run(s.c.Now()+timeout, func() bool { return len(c.inbox) > 0 })
	}
	if len(c.inbox) == 0 {
		return nil, false
	}
	r := c.inbox[0]
	c.inbox = c.inbox[1:]
	return r, true
}

// Wait lets d pass; what the device sends meanwhile stays readable with
// Recv(0).
func (c *Conn) Wait(d time.Duration) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run(s.c.Now()+d, nil)
}

// Now is the simulated time since the connection opened.
func (c *Conn) Now() time.Duration { return c.s.c.Now() - c.t0 }

func (c *Conn) verb(what string, req *simproto.Request) (*simproto.Response, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	req.QP = c.qp
	resp, err := s.do(req)
	return resp, s.refusal(what, err)
}

// PostRecv posts n receive WQEs of size bytes.
func (c *Conn) PostRecv(n, size int) error {
	_, err := c.verb(fmt.Sprintf("posting %d receive WQEs", n), &simproto.Request{Request: agentproto.Request{Op: agentproto.OpPostRecv, Count: n, Size: size}})
	return err
}

// PostSend posts a work request on the device's send queue.
func (c *Conn) PostSend(wr dut.WR) error {
	w := agentproto.FromDUTWR(wr)
	_, err := c.verb("posting "+wr.Op.String(), &simproto.Request{Request: agentproto.Request{Op: agentproto.OpPostSend, WR: &w}})
	return err
}

// PostSends posts several work requests in one request, so that they
// reach the send queue at one simulated time.
func (c *Conn) PostSends(wrs []dut.WR) error {
	ws := make([]agentproto.WR, len(wrs))
	for i, wr := range wrs {
		ws[i] = agentproto.FromDUTWR(wr)
	}
	_, err := c.verb(fmt.Sprintf("posting %d work requests", len(wrs)), &simproto.Request{Request: agentproto.Request{Op: agentproto.OpPostSend, WRs: ws}})
	return err
}

// Completions returns and clears the device's completions, each at the
// simulated time the device produced it.
func (c *Conn) Completions() ([]dut.Completion, error) {
	resp, err := c.verb("polling completions", &simproto.Request{Request: agentproto.Request{Op: agentproto.OpPollCQ}})
	if err != nil {
		return nil, err
	}
	out := make([]dut.Completion, 0, len(resp.Completions))
	for _, pc := range resp.Completions {
		dc, err := agentproto.ToDUTCompletion(pc.Completion)
		if err != nil {
			c.s.broken(fmt.Errorf("%w: %w", simproto.ErrProtocol, err))
		}
		dc.Time = time.Duration(pc.Time) - c.t0
		out = append(out, dc)
	}
	return out, nil
}

// State returns the device QP's state.
func (c *Conn) State() (dut.QPState, error) {
	resp, err := c.verb("querying the QP", &simproto.Request{Request: agentproto.Request{Op: agentproto.OpQueryQP}})
	if err != nil {
		return 0, err
	}
	if resp.Status == nil {
		c.s.broken(fmt.Errorf("%w: the simulator answered query_qp without status", simproto.ErrProtocol))
	}
	for st := dut.StateReset; st <= dut.StateError; st++ {
		if strings.EqualFold(st.String(), resp.Status.State) {
			return st, nil
		}
	}
	c.s.broken(fmt.Errorf("%w: the simulator answered query_qp with the state %q", simproto.ErrProtocol, resp.Status.State))
	return 0, nil
}

// ReadMemory reads n bytes at offset off of the device's region.
func (c *Conn) ReadMemory(off, n int) ([]byte, error) {
	resp, err := c.verb(fmt.Sprintf("reading %d bytes at offset %d", n, off), &simproto.Request{Request: agentproto.Request{Op: agentproto.OpReadMem, MR: c.mr.Handle, Offset: off, Length: n}})
	if err != nil {
		return nil, err
	}
	if len(resp.Data) != n {
		c.s.broken(fmt.Errorf("%w: the simulator returned %d bytes for a read_mem of %d", simproto.ErrProtocol, len(resp.Data), n))
	}
	return resp.Data, nil
}

// WriteMemory writes data at offset off of the device's region.
func (c *Conn) WriteMemory(off int, data []byte) error {
	_, err := c.verb(fmt.Sprintf("writing %d bytes at offset %d", len(data), off), &simproto.Request{Request: agentproto.Request{Op: agentproto.OpWriteMem, MR: c.mr.Handle, Offset: off, Data: data}})
	return err
}

// InvalidateRKey invalidates the device region's R_Key.
func (c *Conn) InvalidateRKey() error {
	_, err := c.verb("invalidating the R_Key", &simproto.Request{Request: agentproto.Request{Op: agentproto.OpInvalidate, MR: c.mr.Handle}})
	return err
}

// Trace returns every frame of the connection, both directions.
func (c *Conn) Trace() []*trace.Record {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return append([]*trace.Record(nil), c.records...)
}

// Close destroys the QP on the simulated device; frames still on the
// wire to or from it are dropped.
func (c *Conn) Close() error {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	delete(s.open, c.peerQPN)
	if s.c.Err() != nil {
		return nil
	}
	_, err := s.c.Do(&simproto.Request{Request: agentproto.Request{Op: agentproto.OpDestroyQP, QP: c.qp}})
	return err
}

// TraceLen implements harness.TraceCounter.
func (c *Conn) TraceLen() int {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return len(c.records)
}
