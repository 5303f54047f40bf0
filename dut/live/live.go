// Package live is the device adapter for live devices: real NICs, FPGA
// boards, soft-RoCE hosts, or `rcconform serve`. The harness is the
// device's peer QP over the real wire, in the pattern of gVisor's
// packetimpact: it sends crafted RoCEv2 packets to the device's address on
// UDP 4791 and receives what the device sends back, and a small control
// agent on the device's host (cmd/rcconform-agent, or the one built into
// `rcconform serve`) does what a verbs user would do: it creates a fresh
// QP for every connection, registers memory, posts work requests and
// reports completions, over the protocol in PROTOCOL.md.
//
// Select it with --dut=live and configure it with --settings (see Keys):
//
//	go tool ginkgo run ./rules -- --dut=live --settings=device=192.0.2.7,agent=192.0.2.7:4792,token=SECRET
//
// Time is real here: Capabilities().VirtualTime is false, so specs that
// need exact virtual timing report unsupported, and their real-time
// counterparts (rules/internal/requester/realtime, rules/internal/realclock)
// judge lower bounds less Conn.Tolerance: the slowest of 16 probe round
// trips and the harness's own timer lateness, measured before the run and
// stated in the environment. The device's timer tick (as its agent
// reports it) is stated too but never tolerated: a timer that fires
// before its interval breaks the clause whatever the tick. Arrival times
// come from the kernel (SO_TIMESTAMPNS) where the socket gives them.
package live

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

func init() { dut.Register("live", New) }

// DUT is a live device reached through its control agent.
type DUT struct {
	cfg   Config
	agent *agentproto.Client
	hello agentproto.Hello
	tr    *transport
	caps  dut.Capabilities

	mu     sync.Mutex
	rng    *rand.Rand
	desc   string
	probe  time.Duration // the probe's round trip
	timing Timing        // measured before the run (Tolerance)
	// sentCounter is the device's counter of packets it sent (see
	// sentCounters), "" when it has none or the check is off; sentWhy
	// says which, for the run's description.
	sentCounter, sentWhy string
}

// sentCounters are the agents' names of a device's sent-packet counter,
// in the order tried: Linux soft-RoCE's hw_counters/sent_pkts, the IB
// port counter (packets, not octets), and the served reference's.
var sentCounters = []string{"hw_counters/sent_pkts", "counters/port_xmit_packets", "tx_packets"}

// Reference-like defaults for what a connection does not choose.
const (
	defaultMTU         = 1024
	defaultTimeout     = 14
	defaultRetryCnt    = 7
	defaultRNRRetry    = 7
	defaultMinRNRTimer = 12
	defaultRdAtomic    = 16
	defaultRecvWQEs    = 64
	defaultMemory      = 1 << 20
	peerVA             = 0x5a0000000000
	maxRecvWR          = 1024
)

// New builds the adapter from the suite's options: it connects to the
// agent, checks the adapter's configuration against what the agent
// reports, opens the sockets and, unless probe=false, sends one probe
// through the whole path.
func New(o dut.Options) (dut.DUT, error) {
	cfg, err := ParseConfig(o.Settings)
	if err != nil {
		return nil, err
	}
	return Open(context.Background(), cfg, o.Seed)
}

// Open is New with a parsed configuration.
func Open(ctx context.Context, cfg Config, seed int64) (*DUT, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	agent, err := agentproto.Dial(dctx, cfg.Agent, cfg.Token, "rcconform live adapter")
	if err != nil {
		return nil, err
	}
	d := &DUT{cfg: cfg, agent: agent, hello: agent.Hello(), rng: rand.New(rand.NewSource(seed*7919 + 17))}
	fail := func(err error) (*DUT, error) {
		d.Close()
		return nil, err
	}
	device, local, err := d.addresses()
	if err != nil {
		return fail(err)
	}
	if d.tr, err = newTransport(cfg, local, device); err != nil {
		return fail(err)
	}
	dev := d.hello.Device
	if d.tr.local.Port() != wire.UDPPort && !dev.AnyPeerPort {
		return fail(fmt.Errorf("the harness listens on UDP port %d, but %s sends RoCEv2 to port %d only: use local=%v:%d",
			d.tr.local.Port(), dev.Name, wire.UDPPort, d.tr.local.Addr(), wire.UDPPort))
	}
	d.timing = Timing{Floor: cfg.Tolerance, DeviceTimer: time.Duration(dev.TimerNS), Tolerance: cfg.Tolerance}
	d.caps = dut.Capabilities{Inject: true, PostWR: true, Completions: true, Memory: true, Atomics: dev.Atomics,
		SRQ: dev.SRQ, Credits: true, VirtualTime: false}
	d.pickSentCounter()
	if cfg.Probe {
		if err := d.preflight(); err != nil {
			return fail(err)
		}
	}
	d.desc = d.describe()
	fmt.Fprintf(os.Stderr, "rcconform live: %s\n", d.desc)
	return d, nil
}

// addresses settles the device's and the harness's addresses and checks
// them against the agent's report.
func (d *DUT) addresses() (device, local netip.AddrPort, err error) {
	dev := d.hello.Device
	port := uint16(dev.UDPPort)
	if port == 0 {
		port = wire.UDPPort
	}
	device = d.cfg.Device
	if !device.IsValid() {
		a, perr := netip.ParseAddr(dev.Address)
		if perr != nil {
			return device, local, fmt.Errorf("the agent reports no usable address for %s (%q): give device=ADDR", dev.Name, dev.Address)
		}
		device = netip.AddrPortFrom(a.Unmap(), port)
	}
	known := []string{dev.Address}
	ok := sameAddr(dev.Address, device.Addr())
	for _, g := range dev.GIDs {
		known = append(known, g.Address)
		ok = ok || sameAddr(g.Address, device.Addr())
	}
	if !ok {
		return device, local, fmt.Errorf("device=%v is not an address of the agent's device %s port %d (its RoCEv2 GIDs: %s): packets sent there would not reach the QPs the agent creates",
			device.Addr(), dev.Name, dev.Port, strings.Join(uniq(known), ", "))
	}
	if device.Port() != port {
		return device, local, fmt.Errorf("device=%v: the agent's device %s takes RoCEv2 on UDP port %d, not %d", device, dev.Name, port, device.Port())
	}
	local = d.cfg.Local
	if !local.IsValid() {
		a, err := localAddrFor(device.Addr())
		if err != nil {
			return device, local, err
		}
		local = netip.AddrPortFrom(a, wire.UDPPort)
	}
	if local.Addr().Is4() != device.Addr().Is4() {
		return device, local, fmt.Errorf("local=%v and device=%v are not of one IP version", local.Addr(), device.Addr())
	}
	if local == device {
		return device, local, fmt.Errorf("the harness and the device cannot share %v: give local=ADDR[:PORT] (on Linux any 127.x.y.z is loopback)", local)
	}
	return device, local, nil
}

func sameAddr(s string, a netip.Addr) bool {
	b, err := netip.ParseAddr(s)
	return err == nil && b.Unmap() == a
}

func uniq(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, x := range s {
		if x != "" && (i == 0 || x != s[i-1]) {
			out = append(out, x)
		}
	}
	return out
}

// localAddrFor returns the address this host sends to a from: for a
// loopback device another loopback address (both sides bind port 4791),
// otherwise the source address of the route to it.
func localAddrFor(a netip.Addr) (netip.Addr, error) {
	if a.IsLoopback() {
		if a.Is4() {
			b := a.As4()
			if b[3] == 2 {
				b[3] = 1
			} else {
				b[3] = 2
			}
			return netip.AddrFrom4(b), nil
		}
		return a, fmt.Errorf("the device is on %v, the only IPv6 loopback address: give local=[::1]:PORT with another port", a)
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, wire.UDPPort)))
	if err != nil {
		return a, fmt.Errorf("finding this host's address towards the device %v: %w (give local=ADDR)", a, err)
	}
	defer c.Close()
	l := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	return l, nil
}

// Close closes the sockets and the agent session (the agent frees every
// QP and memory region it created for it).
func (d *DUT) Close() error {
	if d.tr != nil {
		d.tr.close()
	}
	if d.agent != nil {
		return d.agent.Close()
	}
	return nil
}

// Name implements dut.DUT.
func (d *DUT) Name() string { return "live" }

// Capabilities implements dut.DUT.
func (d *DUT) Capabilities() dut.Capabilities { return d.caps }

// Describe says what the adapter is talking to and how: the device and
// agent, and which sockets send and receive (so which ICRC checks hold).
func (d *DUT) Describe() string { return d.desc }

// Environment returns the same as key/value pairs, for reports.
func (d *DUT) Environment() map[string]string {
	dev := d.hello.Device
	m := map[string]string{
		"device":    d.tr.device.String(),
		"agent":     d.cfg.Agent + " (" + dev.Agent + ")",
		"rdma":      fmt.Sprintf("%s port %d", dev.Name, dev.Port),
		"harness":   d.tr.local.String(),
		"send":      d.tr.sendDesc,
		"receive":   d.tr.recvDesc,
		"tolerance": d.timing.String(),
	}
	if dev.Defect != "" {
		m["defect"] = dev.Defect
	}
	if d.probe > 0 {
		m["probe-rtt"] = d.probe.String()
	}
	m["loss-check"] = d.sentWhy
	return m
}

// Declared is what the device's agent reported of it (hello), for the
// run's certificate.
func (d *DUT) Declared() map[string]string {
	dev := d.hello.Device
	m := map[string]string{
		"agent":               dev.Agent,
		"rdma-device":         fmt.Sprintf("%s port %d", dev.Name, dev.Port),
		"address":             dev.Address,
		"active-mtu":          strconv.Itoa(dev.MTU),
		"pkey":                fmt.Sprintf("0x%04x", dev.PKey),
		"atomics":             strconv.FormatBool(dev.Atomics),
		"srq":                 strconv.FormatBool(dev.SRQ),
		"max-qp-rd-atom":      strconv.Itoa(dev.MaxRd),
		"max-qp-init-rd-atom": strconv.Itoa(dev.MaxInit),
		"protocol-version":    strconv.Itoa(d.hello.Version),
	}
	if dev.Defect != "" {
		m["defect"] = dev.Defect
	}
	if dev.TimerNS > 0 {
		m["timer-granularity"] = time.Duration(dev.TimerNS).String()
	}
	for k, v := range map[string]string{"firmware": dev.Firmware, "driver": dev.Driver, "kernel": dev.Kernel} {
		if v != "" {
			m[k] = v
		}
	}
	if dev.VendorID != 0 || dev.VendorPartID != 0 {
		m["vendor-id"], m["vendor-part-id"] = fmt.Sprintf("0x%04x", dev.VendorID), fmt.Sprintf("0x%04x", dev.VendorPartID)
		m["hw-version"] = fmt.Sprintf("0x%x", dev.HWVersion)
	}
	return m
}

// pickSentCounter chooses the device counter the loss check compares
// with what the harness received (Config.SentCounter).
func (d *DUT) pickSentCounter() {
	want := d.cfg.SentCounter
	if want == "none" {
		d.sentWhy = "the harness's socket drops only (sent-counter=none)"
		return
	}
	cs, err := d.agent.Counters()
	if err != nil {
		d.sentWhy = "the harness's socket drops only (the agent's counters: " + err.Error() + ")"
		return
	}
	names := sentCounters
	if want != "" {
		names = []string{want}
	}
	for _, n := range names {
		if _, ok := cs[n]; ok {
			d.sentCounter = n
			d.sentWhy = fmt.Sprintf("the harness's socket drops, and per connection the device's %s counter against the packets the harness received (a packet lost on the way)", n)
			return
		}
	}
	d.sentWhy = fmt.Sprintf("the harness's socket drops only (the agent reports none of the counters %s: packets lost between the device and the harness go unseen)", strings.Join(names, ", "))
}

// deviceSent reads the device's sent-packet counter.
func (d *DUT) deviceSent() (int64, bool) {
	if d.sentCounter == "" {
		return 0, false
	}
	cs, err := d.agent.Counters()
	if err != nil {
		return 0, false
	}
	n, ok := cs[d.sentCounter]
	return n, ok
}

func (d *DUT) describe() string {
	env := d.Environment()
	var keys []string
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+": "+env[k])
	}
	return strings.Join(parts, "; ")
}

// Tolerance is the timing tolerance: the configured floor, or what the
// adapter measured before the run if that is more (see Timing).
func (d *DUT) Tolerance() time.Duration { return d.timing.Tolerance }

// Timing returns what the adapter measured of real time before the run.
func (d *DUT) Timing() Timing { return d.timing }

// NewConn implements dut.DUT: a fresh QP on the device, connected to a
// fresh QP number of the harness.
func (d *DUT) NewConn(cc dut.ConnConfig) (dut.Conn, error) {
	dev := d.hello.Device
	unsupported := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), dut.ErrUnsupported)
	}
	mtu := cc.MTU
	if mtu == 0 {
		mtu = min(defaultMTU, max(dev.MTU, 256))
	}
	if !wire.ValidMTU(mtu) {
		return nil, fmt.Errorf("path MTU %d is not 256, 512, 1024, 2048 or 4096", mtu)
	}
	if dev.MTU != 0 && mtu > dev.MTU {
		return nil, unsupported("path MTU %d exceeds the active MTU %d of %s port %d", mtu, dev.MTU, dev.Name, dev.Port)
	}
	if cc.SRQ && !dev.SRQ {
		return nil, unsupported("%s has no shared receive queues", dev.Name)
	}
	if cc.Atomics && !dev.Atomics {
		return nil, unsupported("%s does not execute remote atomics", dev.Name)
	}
	rd, init := cc.MaxDestRdAtomic, cc.MaxRdAtomic
	if rd == 0 {
		rd = capAt(defaultRdAtomic, dev.MaxRd)
	}
	if init == 0 {
		init = capAt(defaultRdAtomic, dev.MaxInit)
	}
	if dev.MaxRd != 0 && rd > dev.MaxRd || dev.MaxInit != 0 && init > dev.MaxInit {
		return nil, unsupported("%d READ/ATOMIC responder resources and initiator depth %d exceed %s's %d and %d", rd, init, dev.Name, dev.MaxRd, dev.MaxInit)
	}
	d.mu.Lock()
	peerQPN := uint32(0)
	for peerQPN == 0 || d.tr.has(peerQPN) {
		peerQPN = 0x10000 | uint32(d.rng.Intn(0xEF0000))
	}
	sq, rq := cc.DevicePSN, cc.ExpectedPSN
	if !cc.SetPSNs {
		sq, rq = wire.PSN(d.rng.Intn(wire.PSNSpace)), wire.PSN(d.rng.Intn(wire.PSNSpace))
	}
	peerRKey := 0x5a5a0000 | uint32(d.rng.Intn(0xFFFF))
	d.mu.Unlock()
	timeout, retry, rnr, minRNR := uint8(defaultTimeout), uint8(defaultRetryCnt), uint8(defaultRNRRetry), uint8(defaultMinRNRTimer)
	if cc.RetryChosen() {
		timeout, retry, rnr, minRNR = cc.Timeout, cc.RetryCnt, cc.RNRRetry, cc.MinRNRTimer
	} else {
		if cc.Timeout != 0 {
			timeout = cc.Timeout
		}
		if cc.RetryCnt != 0 {
			retry = cc.RetryCnt
		}
		if cc.RNRRetry != 0 {
			rnr = cc.RNRRetry
		}
		if cc.MinRNRTimer != 0 {
			minRNR = cc.MinRNRTimer
		}
	}
	nrecv := cc.RecvWQEs
	if nrecv == 0 {
		nrecv = defaultRecvWQEs
	}
	attr := agentproto.QPAttr{MTU: mtu, SQPSN: uint32(sq), RQPSN: uint32(rq), Timeout: timeout, RetryCnt: retry,
		RNRRetry: rnr, MinRNRTimer: minRNR, MaxRdAtomic: init, MaxDestRdAtomic: rd, SRQ: cc.SRQ, RemoteAtomic: cc.Atomics,
		MaxSendWR: 256, MaxRecvWR: max(maxRecvWR, nrecv), LocalAddress: d.tr.device.Addr().String(),
		RemoteAddress: d.tr.local.Addr().String(), RemoteQPN: peerQPN}
	if dev.AnyPeerPort {
		attr.RemotePort = int(d.tr.local.Port())
	}
	qi, err := d.agent.CreateQP(attr)
	if err != nil {
		if errors.Is(err, agentproto.ErrUnsupported) {
			return nil, fmt.Errorf("creating a QP on %s: %v: %w", dev.Name, err, dut.ErrUnsupported)
		}
		return nil, fmt.Errorf("creating a QP on %s through the agent: %w", dev.Name, err)
	}
	c := &Conn{d: d, qp: qi.Handle, start: time.Now(), notify: make(chan struct{}, 1),
		info: dut.ConnInfo{DeviceQPN: qi.QPN, PeerQPN: peerQPN}}
	c.drops0, c.dropsErr = d.tr.drops()
	// What was received so far first, then the device's count: a packet
	// in flight between the two readings can only hide a loss, never
	// invent one.
	c.recv0 = d.tr.snapshot().fromDevice
	c.sent0, c.sentOK = d.deviceSent()
	d.tr.register(peerQPN, c)
	fail := func(err error) (dut.Conn, error) {
		c.Close()
		return nil, err
	}
	memSize := cc.MemorySize
	if memSize == 0 {
		memSize = defaultMemory
	}
	access := []string{agentproto.AccessLocalWrite, agentproto.AccessRemoteRead, agentproto.AccessRemoteWrite}
	if cc.Atomics {
		access = append(access, agentproto.AccessRemoteAtomic)
	}
	mi, err := d.agent.RegMR(qi.Handle, memSize, access...)
	if err != nil {
		return fail(fmt.Errorf("registering %d bytes on %s through the agent: %w", memSize, dev.Name, err))
	}
	c.mr = mi.Handle
	if nrecv > 0 {
		if err := d.agent.PostRecv(qi.Handle, nrecv, d.cfg.RecvSize); err != nil {
			return fail(fmt.Errorf("posting %d receive WQEs on %s through the agent: %w", nrecv, dev.Name, err))
		}
	}
	eff := cc
	eff.MTU, eff.DevicePSN, eff.ExpectedPSN, eff.SetPSNs = qi.Attr.MTU, wire.PSN(qi.Attr.SQPSN), wire.PSN(qi.Attr.RQPSN), true
	eff.Timeout, eff.RetryCnt, eff.RNRRetry, eff.MinRNRTimer = qi.Attr.Timeout, qi.Attr.RetryCnt, qi.Attr.RNRRetry, qi.Attr.MinRNRTimer
	eff.MaxDestRdAtomic, eff.MaxRdAtomic, eff.MemorySize, eff.RecvWQEs = qi.Attr.MaxDestRdAtomic, qi.Attr.MaxRdAtomic, memSize, nrecv
	if eff.MTU == 0 {
		eff.MTU = mtu
	}
	c.info = dut.ConnInfo{DeviceQPN: qi.QPN, PeerQPN: peerQPN, MTU: eff.MTU,
		ExpectedPSN: eff.ExpectedPSN, DevicePSN: eff.DevicePSN,
		RKey: mi.RKey, VA: mi.Addr, Len: mi.Length,
		PeerRKey: peerRKey, PeerVA: peerVA, PeerLen: memSize, Config: eff}
	c.pkey = qi.PKey
	return c, nil
}

func capAt(v, limit int) int {
	if limit > 0 && v > limit {
		return limit
	}
	return v
}

func (t *transport) has(qpn uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[qpn] != nil
}

// Conn is one connection to a QP on the live device.
type Conn struct {
	d     *DUT
	qp    uint32 // the agent's handles
	mr    uint32
	info  dut.ConnInfo
	pkey  uint16
	start time.Time

	mu    sync.Mutex
	trace []*trace.Record
	inbox []*trace.Record
	last  time.Time // the last packet either way
	// owed: the device may still answer what it was sent (see owes); only
	// then do waits last the configured latency.
	owed    bool
	sentPSN wire.PSN // the PSN of the last request the harness sent
	notify  chan struct{}
	closed  bool
	// drops0 is the receiving socket's drop count when the connection
	// opened (dropsErr: it cannot be read); lost, the drops seen since,
	// frozen at Close.
	drops0   uint32
	dropsErr error
	lost     int
	// sent0, recv0: the device's sent-packet counter and the packets the
	// harness received from the device, when the connection opened
	// (sentOK: the counter was read); unseen, the packets the device
	// counted as sent that never reached the harness, as last checked.
	sent0  int64
	recv0  int
	sentOK bool
	unseen int
}

// Info implements dut.Conn.
func (c *Conn) Info() dut.ConnInfo { return c.info }

// Tolerance is the timing slack real time needs: a measured interval may
// be off by this much either way (scheduling on both hosts, the wire). A
// spec checking a lower bound should report indeterminate, not fail, when
// what it measured is short of the bound by less than this; one waiting
// for something bounded from above should wait this much longer.
func (c *Conn) Tolerance() time.Duration { return c.d.Tolerance() }

// TimerTick is the granularity of the device's retry and RNR timers as its
// agent reports it (0: unknown or exact). It is not part of Tolerance: a
// finding on a timer that fired early says which tick it fired against.
func (c *Conn) TimerTick() time.Duration { return c.d.timing.DeviceTimer }

// arrive records a packet from the device and queues it for Recv; the
// transport's lock is held.
func (c *Conn) arrive(at time.Time, rec *trace.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	rec.Time = at.Sub(c.start)
	rec.Frame = len(c.trace) + 1
	if rec.Packet.Opcode.IsRequest() {
		rec.Dir = trace.ToResponder
	} else {
		rec.Dir = trace.ToRequester
	}
	c.trace = append(c.trace, rec)
	c.inbox = append(c.inbox, rec)
	c.last = at
	c.owes(rec, false)
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Send implements dut.Conn.
func (c *Conn) Send(p *wire.Packet) error {
	return c.SendRaw(dut.Addressed(p, c.info.DeviceQPN))
}

// SendRaw implements dut.Conn.
func (c *Conn) SendRaw(p *wire.Packet) error {
	t := c.d.tr
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("sending on a closed connection")
	}
	// Recorded before it leaves, so that the answer cannot precede it.
	rec := &trace.Record{Frame: len(c.trace) + 1, Time: time.Since(c.start), Src: t.local.Addr(), Dst: t.device.Addr(),
		HasIPID: t.local.Addr().Is4(), Packet: p.Clone(), PayloadLen: len(p.Payload), ICRC: wire.ICRCOK}
	// What the harness sends goes to the device's responder unless it is a
	// response: a reserved opcode injected as an invalid request included.
	if p.Opcode.IsResponse() {
		rec.Dir = trace.ToRequester
	} else {
		rec.Dir = trace.ToResponder
	}
	c.trace = append(c.trace, rec)
	c.last = time.Now()
	c.owes(rec, true)
	c.mu.Unlock()
	ipid, err := t.send(p)
	c.mu.Lock()
	rec.IPID = ipid
	if err != nil {
		rec.Note = "not sent: " + err.Error()
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sending %s to %v: %w", p, t.device, err)
	}
	return nil
}

// Recv implements dut.Conn: it waits up to timeout of real time. While the
// device still owes an answer (see owes), the wait lasts at least until the
// configured latency has passed since the last packet on the wire, a poll
// (timeout 0) included: a slow device's answer, or the rest of a READ
// response stream, is not given up on. A device that has answered
// everything it was sent costs no latency: waits for silence stay short.
func (c *Conn) Recv(timeout time.Duration) (*trace.Record, bool) {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		if len(c.inbox) > 0 {
			r := c.inbox[0]
			c.inbox = c.inbox[1:]
			c.mu.Unlock()
			return r, true
		}
		end := deadline
		if c.owed && c.d.cfg.Latency > 0 {
			if late := c.last.Add(c.d.cfg.Latency); late.After(end) {
				end = late
			}
		}
		c.mu.Unlock()
		wait := time.Until(end)
		if wait <= 0 {
			return nil, false
		}
		timer := time.NewTimer(wait)
		select {
		case <-c.notify:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// owes updates whether the device still owes an answer after rec: it owes
// one once the harness sent it a request, until an answer covers the last
// request's PSN (an ACK, READ response Last/Only or ATOMIC acknowledge at
// or past it) or a NAK stops it; the caller holds c.mu.
func (c *Conn) owes(rec *trace.Record, fromHarness bool) {
	p := rec.Packet
	if fromHarness {
		if !p.Opcode.IsResponse() {
			c.owed, c.sentPSN = true, p.PSN
		}
		return
	}
	switch p.Opcode {
	case wire.Acknowledge, wire.AtomicAcknowledge, wire.ReadResponseLast, wire.ReadResponseOnly:
		if !p.AETH.IsACK() || p.PSN.AtOrAfter(c.sentPSN) {
			c.owed = false
		}
	}
}

// Wait implements dut.Conn: d of real time passes.
func (c *Conn) Wait(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// Now implements dut.Conn: real time since the connection opened.
func (c *Conn) Now() time.Duration { return time.Since(c.start) }

func (c *Conn) agentErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, agentproto.ErrUnsupported) {
		return fmt.Errorf("%s on %s: %v: %w", what, c.d.hello.Device.Name, err, dut.ErrUnsupported)
	}
	return fmt.Errorf("%s on %s through the agent: %w", what, c.d.hello.Device.Name, err)
}

// PostRecv implements dut.Conn.
func (c *Conn) PostRecv(n, size int) error {
	return c.agentErr(fmt.Sprintf("posting %d receive WQEs", n), c.d.agent.PostRecv(c.qp, n, size))
}

// PostSend implements dut.Conn.
func (c *Conn) PostSend(wr dut.WR) error {
	return c.agentErr("posting "+wr.Op.String(), c.d.agent.PostSend(c.qp, agentproto.FromDUTWR(wr)))
}

// PostSends posts work requests on the device's send queue in one
// request to the agent, so that they reach the queue together.
func (c *Conn) PostSends(wrs []dut.WR) error {
	pw := make([]agentproto.WR, len(wrs))
	for i, wr := range wrs {
		pw[i] = agentproto.FromDUTWR(wr)
	}
	return c.agentErr(fmt.Sprintf("posting %d work requests", len(wrs)), c.d.agent.PostSends(c.qp, pw))
}

// StartPostSends posts work requests as PostSends does, without waiting
// for the agent's answer: the returned function waits for it. Real-time
// scenarios act on the device's first packets meanwhile (an agent on a
// slow or emulated host answers a post long after the device has sent).
func (c *Conn) StartPostSends(wrs []dut.WR) (wait func() error) {
	pw := make([]agentproto.WR, len(wrs))
	for i, wr := range wrs {
		pw[i] = agentproto.FromDUTWR(wr)
	}
	p := c.d.agent.StartPostSends(c.qp, pw)
	return func() error {
		return c.agentErr(fmt.Sprintf("posting %d work requests", len(wrs)), c.d.agent.WaitPost(p))
	}
}

// Completions implements dut.Conn; each completion's time is when it was
// polled.
func (c *Conn) Completions() ([]dut.Completion, error) {
	pcs, err := c.d.agent.PollCQ(c.qp)
	if err != nil {
		return nil, c.agentErr("polling completions", err)
	}
	now := c.Now()
	out := make([]dut.Completion, 0, len(pcs))
	for _, pc := range pcs {
		dc, err := agentproto.ToDUTCompletion(pc)
		if err != nil {
			return out, fmt.Errorf("the agent reported a completion the harness cannot read: %w", err)
		}
		dc.Time = now
		out = append(out, dc)
	}
	return out, nil
}

// State implements dut.Conn.
func (c *Conn) State() (dut.QPState, error) {
	st, err := c.d.agent.QueryQP(c.qp)
	if err != nil {
		return 0, c.agentErr("querying the QP", err)
	}
	return ParseState(st.State)
}

// ParseState reads a QP state name (RESET, INIT, RTR, RTS, SQD, SQE,
// ERROR).
func ParseState(s string) (dut.QPState, error) {
	for st := dut.StateReset; st <= dut.StateError; st++ {
		if strings.EqualFold(st.String(), s) {
			return st, nil
		}
	}
	return 0, fmt.Errorf("unknown QP state %q", s)
}

// ReadMemory implements dut.Conn.
func (c *Conn) ReadMemory(off, n int) ([]byte, error) {
	b, err := c.d.agent.ReadMem(c.mr, off, n)
	return b, c.agentErr(fmt.Sprintf("reading %d bytes at offset %d", n, off), err)
}

// WriteMemory implements dut.Conn.
func (c *Conn) WriteMemory(off int, data []byte) error {
	return c.agentErr(fmt.Sprintf("writing %d bytes at offset %d", len(data), off), c.d.agent.WriteMem(c.mr, off, data))
}

// InvalidateRKey implements dut.Conn.
func (c *Conn) InvalidateRKey() error {
	return c.agentErr("invalidating the R_Key", c.d.agent.InvalidateMR(c.mr))
}

// Trace implements dut.Conn. The device's answers to the last stimuli may
// still be on the wire, so it first waits until nothing has been sent or
// received for the settle time (at most 20 times that): the trace then
// holds what an in-process device would already have sent.
func (c *Conn) Trace() []*trace.Record {
	settle := c.d.cfg.Settle
	deadline := time.Now().Add(20 * settle)
	for {
		c.mu.Lock()
		quiet := time.Since(c.last)
		if c.closed || quiet >= settle || !time.Now().Before(deadline) {
			defer c.mu.Unlock()
			return append([]*trace.Record(nil), c.trace...)
		}
		c.mu.Unlock()
		time.Sleep(settle - quiet)
	}
}

// TraceNow returns what the connection has recorded so far, without
// waiting for the wire to settle as Trace does: for a scenario that must
// act within the device's timers.
func (c *Conn) TraceNow() []*trace.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*trace.Record(nil), c.trace...)
}

// ReceiveLoss implements dut.LossReporter: how many of the device's
// packets the harness lost while the connection was open, and where.
// Two counts: the socket taking in the device's packets dropped some (its
// queue full: the harness read too slowly), or the device counted more
// packets sent than the harness received (lost on the way: a host queue,
// the network; where the agent reports a sent-packet counter). Both are
// per device, not per QP, so a loss is charged to every connection open
// at the time. It waits for the wire to settle first (as Trace does) and
// reads the device's counter through the agent.
func (c *Conn) ReceiveLoss() (int, string) {
	c.Trace() // settle: answers still on their way are not lost
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if !closed && c.sentOK {
		// The device's count first, then what was received: a packet
		// sent after the first reading has had the agent's round trip
		// to arrive.
		if sent, ok := c.d.deviceSent(); ok {
			recv := c.d.tr.snapshot().fromDevice
			c.mu.Lock()
			c.unseen = max(0, int(sent-c.sent0)-(recv-c.recv0))
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.dropsErr == nil {
		c.lost = c.lostNow()
	}
	var why []string
	if c.lost > 0 {
		why = append(why, fmt.Sprintf("the harness's receiving socket (%s) dropped %d packet(s) while this connection was open, its queue full: the harness read too slowly (a loaded host; raise --settings=recv-buffer)", c.d.tr.recvShort, c.lost))
	}
	if c.unseen > 0 {
		why = append(why, fmt.Sprintf("the device counted %d packet(s) more as sent (%s) than the harness received while this connection was open: lost between the device's transport and the harness (a host queue or the network)", c.unseen, c.d.sentCounter))
	}
	return c.lost + c.unseen, strings.Join(why, "; ")
}

// lostNow reads the socket's drops since the connection opened.
func (c *Conn) lostNow() int {
	n, err := c.d.tr.drops()
	if err != nil {
		return c.lost
	}
	return int(n - c.drops0)
}

// Close implements dut.Conn: the agent destroys the QP and its memory,
// whatever state the spec left it in.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	if c.dropsErr == nil {
		c.lost = c.lostNow()
	}
	c.closed = true
	c.mu.Unlock()
	c.d.tr.unregister(c.info.PeerQPN)
	return c.agentErr("destroying the QP", c.d.agent.DestroyQP(c.qp))
}

// TraceLen implements harness.TraceCounter: the packets recorded so far,
// without waiting for the wire to settle.
func (c *Conn) TraceLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.trace)
}
