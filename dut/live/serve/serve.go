// Package serve runs the reference RC transport as a live RoCEv2 endpoint:
// real RoCEv2 packets on a UDP socket (loopback by default), with the
// control agent's protocol (package agentproto) built in. It is what
// `rcconform serve` runs, so that the live adapter (dut/live) is tested
// over real sockets: the suite through the live adapter against the clean
// reference passes as it does in-process, and with a defect switched on
// (--defect NAME) the clause it breaks fails through the live path.
//
// The reference runs on a virtual clock; here that clock follows the wall
// clock: one goroutine advances it to the elapsed real time whenever an
// event is due, a packet arrives or a request changes something, all under
// one mutex. Virtual is the same device on a virtual clock its caller
// drives, taking and giving frames instead of datagrams: the simulator
// wrapper of dut/sim (cmd/rcconform-refsim).
package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/live/udpframe"
	"github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/wire"
)

// Defaults.
const (
	DefaultAddr  = "127.0.0.1:4791"
	DefaultAgent = "127.0.0.1:4792"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	// Addr is the RoCEv2 endpoint, host or host:port (default
	// 127.0.0.1:4791; port 0 picks a free one). The host is the served
	// device's address, its GID: a specific address, not 0.0.0.0 or ::.
	Addr string
	// Agent is the agent protocol's TCP address (default 127.0.0.1:4792;
	// port 0 picks a free one). Off loopback it needs Token.
	Agent string
	// Token, when set, must be given by every harness in hello.
	Token string
	// Defect switches a reference defect on for every QP.
	Defect string
	// Settings are the reference's open choices, as the reference
	// adapter's --settings: ack-policy, ack-every-n, ack-delay, msn-read,
	// ack-req-every, response-delay, packet-gap, unsolicited-ack,
	// timer-tick (also reported to the harness as the device's timer
	// granularity).
	Settings map[string]string
	// Idle closes a silent agent session (0: agentproto.DefaultIdle).
	Idle time.Duration
	// Logf logs sessions and refusals (nil: nothing).
	Logf func(format string, a ...any)
	// Ready, when set, is called once both sockets listen.
	Ready func(roce netip.AddrPort, agent net.Addr)
	// TxDropEvery, when positive, loses every TxDropEvery-th packet the
	// device sends after counting it in tx_packets, as a host whose
	// queue overflows does (soft-RoCE in a loaded VM): for tests of the
	// live adapter's loss accounting.
	TxDropEvery int
}

// ErrUsage is wrapped by errors about the options Serve was given (an
// address that is not one, an unknown defect or setting), as opposed to
// errors met while serving (an address it cannot bind).
var ErrUsage = errors.New("bad serve options")

// Serve runs the served reference until ctx is done. It returns an error
// at once if it cannot bind either address, and nil after a clean stop.
func Serve(ctx context.Context, o ServeOptions) error {
	base, err := baseConfig(o.Defect, o.Settings)
	if err != nil {
		return err
	}
	addr, err := roceAddr(o.Addr)
	if err != nil {
		return err
	}
	agentAddr := o.Agent
	if agentAddr == "" {
		agentAddr = DefaultAgent
	}
	if err := agentproto.CheckListen(agentAddr, o.Token); err != nil {
		return fmt.Errorf("%w: %w", err, ErrUsage)
	}
	uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return fmt.Errorf("cannot bind the RoCEv2 endpoint to %v: %w (%s)", addr, err, bindHint(err, addr))
	}
	defer uc.Close()
	if err := udpframe.SetDontFragment(uc); err != nil {
		return err
	}
	// Room for the harness's bursts on a loaded host: a request the
	// socket drops is lost as on a network, which the device (like a real
	// one) cannot tell the harness about. Best effort: the system's
	// net.core.rmem_max caps it.
	_ = uc.SetReadBuffer(8 << 20)
	ln, err := net.Listen("tcp", agentAddr)
	if err != nil {
		return fmt.Errorf("cannot listen for the agent protocol on %s: %w", agentAddr, err)
	}
	defer ln.Close()
	local := uc.LocalAddr().(*net.UDPAddr).AddrPort()
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())

	d := newDevice(uc, local, base, o.Defect)
	d.dropEvery = o.TxDropEvery
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.drive(ctx) }()
	go func() { defer wg.Done(); d.receive(ctx) }()
	if o.Ready != nil {
		o.Ready(local, ln.Addr())
	}
	srv := &agentproto.Server{Device: d, Token: o.Token, Idle: o.Idle, Logf: o.Logf}
	err = srv.Serve(ctx, ln)
	cancel()
	uc.Close()
	wg.Wait()
	return err
}

func roceAddr(s string) (netip.AddrPort, error) {
	if s == "" {
		s = DefaultAddr
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return ap, fmt.Errorf("RoCEv2 address %q: want IP or IP:port: %w", s, ErrUsage)
		}
		ap = netip.AddrPortFrom(a, wire.UDPPort)
	}
	if ap.Addr().IsUnspecified() {
		return ap, fmt.Errorf("RoCEv2 address %v: the served device needs one specific address (its GID), not the wildcard: %w", ap, ErrUsage)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

func bindHint(err error, addr netip.AddrPort) string {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Sprintf("something else owns UDP port %d there: another rcconform serve, or a soft-RoCE (rxe) device, which takes 4791 on every address; pick another with --addr=%v:PORT", addr.Port(), addr.Addr())
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Sprintf("%v is not an address of this host; serve binds loopback (127.0.0.1) unless told otherwise", addr.Addr())
	case errors.Is(err, syscall.EACCES):
		return "not allowed to bind there"
	}
	return "check the address"
}

// DefaultPacketGap paces the served reference's transmitter. A harness
// reacts to the device's packets from user space in tens to hundreds of
// microseconds, and some scenarios must act in the middle of a response
// stream (preempt it with an older duplicate, invalidate the region under
// a READ, overrun the responder's READ resources); at 50 µs a packet (about
// 160 Mbit/s at MTU 1024) a stream of a few dozen packets outlasts that.
// --settings=packet-gap=DURATION changes it.
const DefaultPacketGap = 50 * time.Microsecond

// baseConfig is the reference configuration every served QP starts from:
// the reference adapter's (refdut) defaults and settings, less the
// simulated link's latency, which here is the real one, and with the
// transmitter paced at DefaultPacketGap.
func baseConfig(defect string, settings map[string]string) (reference.Config, error) {
	base := reference.DefaultConfig()
	base.PacketGap = DefaultPacketGap
	if defect != "" {
		if _, ok := reference.LookupDefect(defect); !ok {
			return base, fmt.Errorf("unknown defect %q (known: %s): %w", defect, strings.Join(reference.DefectNames(), ", "), ErrUsage)
		}
		base.Defect = defect
	}
	for k, v := range settings {
		dur := func() (time.Duration, error) {
			d, err := time.ParseDuration(v)
			if err == nil && d < 0 {
				err = errors.New("negative duration")
			}
			return d, err
		}
		var err error
		switch k {
		case refdut.SetAckPolicy:
			base.AckPolicy, err = reference.ParseAckPolicy(v)
		case refdut.SetAckEveryN:
			base.AckEveryN, err = strconv.Atoi(v)
		case refdut.SetAckDelay:
			base.AckDelay, err = dur()
		case refdut.SetMSNRead:
			switch v {
			case "start":
				base.MSNAtReadEnd = false
			case "end":
				base.MSNAtReadEnd = true
			default:
				err = errors.New("want start or end")
			}
		case refdut.SetAckReqEvery:
			base.AckReqEvery, err = strconv.Atoi(v)
		case refdut.SetResponseDelay:
			base.ResponseDelay, err = dur()
		case refdut.SetPacketGap:
			base.PacketGap, err = dur()
		case refdut.SetUnsolicitedACK:
			base.UnsolicitedACK, err = strconv.ParseBool(v)
		case refdut.SetTimerTick:
			base.TimerTick, err = dur()
		default:
			err = fmt.Errorf("unknown setting (known: %s)", strings.Join(settingKeys, ", "))
		}
		if err != nil {
			return base, fmt.Errorf("reference setting %s=%s: %v: %w", k, v, err, ErrUsage)
		}
	}
	if err := base.Validate(); err != nil {
		return base, fmt.Errorf("reference settings: %v: %w", err, ErrUsage)
	}
	return base, nil
}

// settingKeys are the reference adapter's settings that serve takes.
var settingKeys = []string{refdut.SetAckPolicy, refdut.SetAckEveryN, refdut.SetAckDelay, refdut.SetMSNRead,
	refdut.SetAckReqEvery, refdut.SetResponseDelay, refdut.SetPacketGap, refdut.SetUnsolicitedACK, refdut.SetTimerTick}

// ServeMain is `rcconform serve`: it parses args (the arguments after
// "serve"), runs Serve until SIGINT or SIGTERM, and returns the exit
// status: 0 after a clean stop, 1 when serving failed (an address it
// cannot bind), 2 for bad usage.
func ServeMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcconform serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o ServeOptions
	var settings string
	fs.StringVar(&o.Addr, "addr", DefaultAddr, "the RoCEv2 endpoint: the served device's address (its GID) and UDP port")
	fs.StringVar(&o.Agent, "agent", DefaultAgent, "the agent protocol's TCP address (off loopback it needs --token)")
	fs.StringVar(&o.Token, "token", os.Getenv("RCCONFORM_AGENT_TOKEN"), "shared token harnesses must give (default $RCCONFORM_AGENT_TOKEN)")
	fs.StringVar(&o.Defect, "defect", "", "switch this reference defect on (see `rcconform defects`)")
	fs.StringVar(&settings, "settings", "", "the reference's open choices, key=value,…: "+strings.Join(settingKeys, ", "))
	fs.DurationVar(&o.Idle, "idle", agentproto.DefaultIdle, "close an agent session silent this long, freeing its QPs")
	verbose := fs.Bool("v", false, "log agent sessions")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rcconform serve [flags]\n\nRuns the reference RC transport as a live RoCEv2 endpoint with the control agent's protocol built in,\nfor the live adapter: go tool ginkgo run ./rules -- --dut=live --settings=device=ADDR,agent=ADDR:PORT\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rcconform serve: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	o.Settings = map[string]string{}
	for _, kv := range strings.Split(settings, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			k, v, _ := strings.Cut(kv, "=")
			o.Settings[k] = v
		}
	}
	if *verbose {
		o.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "rcconform serve: "+format+"\n", a...) }
	}
	o.Ready = func(roce netip.AddrPort, agent net.Addr) {
		defect := "none"
		if o.Defect != "" {
			defect = o.Defect
		}
		fmt.Fprintf(stdout, "rcconform serve: reference RC transport (defect: %s) on RoCEv2 %v; agent protocol on %v\n", defect, roce, agent)
		fmt.Fprintf(stdout, "run the suite with: go tool ginkgo run ./rules -- --dut=live --settings=device=%v,agent=%v\n", roce, agent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, o); err != nil {
		fmt.Fprintf(stderr, "rcconform serve: %v\n", err)
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// Compile-time checks.
var (
	_ agentproto.Device  = (*device)(nil)
	_ agentproto.Session = (*session)(nil)
)
