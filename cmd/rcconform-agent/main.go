// Command rcconform-agent is the control agent of the live adapter
// (dut/live): it runs on the host of the device under test and does what
// a verbs user would do there, at the harness's request, over the JSON
// lines protocol of dut/live/PROTOCOL.md: it creates RC QPs connected to
// the harness's GID and QP number, registers memory and reads and writes
// it, posts receives, SENDs, WRITEs, READs and atomics, and reports
// completions and QP states.
//
// It talks to the device through libibverbs, so it is built with cgo and
// the build tag "verbs" (Debian: apt-get install libibverbs-dev):
//
//	go build -tags verbs -o rcconform-agent ./cmd/rcconform-agent
//
// Built without the tag it only explains that. The agent can read and
// write the memory it registers, so it listens on loopback unless told
// otherwise, needs a shared token (--token or RCCONFORM_AGENT_TOKEN, given
// to the harness too) to listen anywhere else, acts only on the QPs and
// memory regions a session created, and frees them when the harness
// disconnects or stays silent longer than --idle.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
)

// Options select the device and how the agent listens.
type Options struct {
	Listen   string
	Token    string
	Device   string // RDMA device name ("": the first)
	Port     int
	GIDIndex int    // -1: by Address, else the first RoCEv2 IPv4 GID
	Address  string // pick the RoCEv2 GID with this IP address
	Idle     time.Duration
	Verbose  bool
}

// errNoVerbs is returned by openDevice in builds without libibverbs.
var errNoVerbs = errors.New("this rcconform-agent was built without libibverbs: build it with `go build -tags verbs ./cmd/rcconform-agent` on a host with libibverbs-dev (ci/agent-build.sh does)")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcconform-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Listen, "listen", fmt.Sprintf("127.0.0.1:%d", agentproto.DefaultPort), "TCP address for the harness (off loopback it needs --token)")
	fs.StringVar(&o.Token, "token", os.Getenv("RCCONFORM_AGENT_TOKEN"), "shared token the harness must give (default $RCCONFORM_AGENT_TOKEN)")
	fs.StringVar(&o.Device, "device", "", "RDMA device, e.g. rxe0 or mlx5_0 (default: the first)")
	fs.IntVar(&o.Port, "port", 1, "the device's port")
	fs.IntVar(&o.GIDIndex, "gid-index", -1, "GID index for the QPs (default: the RoCEv2 GID of --address, or the first RoCEv2 IPv4 GID)")
	fs.StringVar(&o.Address, "address", "", "use the RoCEv2 GID with this IP address")
	fs.DurationVar(&o.Idle, "idle", agentproto.DefaultIdle, "free a session's QPs and memory after this long without a request")
	fs.BoolVar(&o.Verbose, "v", false, "log sessions")
	tick := fs.Duration("timer-granularity", -1, "granularity of the device's retry and RNR timers, reported to the harness (default: the kernel's jiffy, from CONFIG_HZ, for software devices such as rxe; 0: exact)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rcconform-agent: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := agentproto.CheckListen(o.Listen, o.Token); err != nil {
		fmt.Fprintf(stderr, "rcconform-agent: %v\n", err)
		return 2
	}
	dev, err := openDevice(o)
	if err != nil {
		fmt.Fprintf(stderr, "rcconform-agent: %v\n", err)
		return 1
	}
	defer dev.Close()
	if *tick < 0 {
		*tick = kernelTick()
	}
	dev = withTick{device: dev, tick: *tick}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "rcconform-agent: cannot listen on %s: %v\n", o.Listen, err)
		return 1
	}
	info := dev.Info()
	fmt.Fprintf(stdout, "rcconform-agent: %s port %d, RoCEv2 address %s (active MTU %d); agent protocol on %v\n",
		info.Name, info.Port, info.Address, info.MTU, ln.Addr())
	srv := &agentproto.Server{Device: dev, Token: o.Token, Idle: o.Idle}
	if o.Verbose {
		srv.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "rcconform-agent: "+format+"\n", a...) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "rcconform-agent: %v\n", err)
		return 1
	}
	return 0
}

// device is what openDevice returns.
type device interface {
	agentproto.Device
	Close() error
}
