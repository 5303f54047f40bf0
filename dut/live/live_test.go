package live_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/live"
	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/live/serve"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// served is an in-process `rcconform serve` on loopback.
type served struct {
	roce  netip.AddrPort
	agent string
}

func startServe(t *testing.T, o serve.ServeOptions) served {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Agent == "" {
		o.Agent = "127.0.0.1:0"
	}
	ready := make(chan served, 1)
	o.Ready = func(roce netip.AddrPort, agent net.Addr) { ready <- served{roce, agent.String()} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Serve(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case s := <-ready:
		return s
	case err := <-done:
		t.Fatalf("serve did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start within 10 s")
	}
	return served{}
}

func openLive(t *testing.T, s served, extra map[string]string) *live.DUT {
	t.Helper()
	settings := map[string]string{"device": s.roce.String(), "agent": s.agent, "local": "127.0.0.2:0"}
	for k, v := range extra {
		settings[k] = v
	}
	cfg, err := live.ParseConfig(settings)
	if err != nil {
		t.Fatal(err)
	}
	d, err := live.Open(context.Background(), cfg, 1)
	if err != nil {
		t.Fatalf("opening the live adapter: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func newConn(t *testing.T, d *live.DUT, cc dut.ConnConfig) dut.Conn {
	t.Helper()
	c, err := d.NewConn(cc)
	if err != nil {
		t.Fatalf("NewConn: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expect returns the first packet from the device that matches, within d.
func expect(t *testing.T, c dut.Conn, what string, d time.Duration, match func(*wire.Packet) bool) *trace.Record {
	t.Helper()
	deadline := c.Now() + d
	var seen []string
	for {
		r, ok := c.Recv(deadline - c.Now())
		if !ok {
			t.Fatalf("no %s within %v (saw %v)", what, d, seen)
		}
		if match(r.Packet) {
			return r
		}
		seen = append(seen, r.Packet.String())
	}
}

func send(op wire.Opcode, c dut.Conn, psn wire.PSN, ackReq bool, payload []byte) *wire.Packet {
	info := c.Info()
	p := &wire.Packet{BTH: wire.BTH{Opcode: op, PKey: 0xFFFF, DestQP: info.DeviceQPN, PSN: psn, AckReq: ackReq}, Payload: payload}
	return p
}

func TestSendAck(t *testing.T) {
	for _, recv := range []string{"udp", "auto"} {
		t.Run("recv="+recv, func(t *testing.T) {
			s := startServe(t, serve.ServeOptions{})
			d := openLive(t, s, map[string]string{"recv": recv})
			if !strings.Contains(d.Describe(), "receive:") {
				t.Errorf("description %q says nothing of the receive socket", d.Describe())
			}
			t.Logf("%s", d.Describe())
			caps := d.Capabilities()
			if !caps.Inject || !caps.PostWR || !caps.Atomics || !caps.SRQ || caps.VirtualTime {
				t.Errorf("capabilities %+v", caps)
			}
			c := newConn(t, d, dut.ConnConfig{MTU: 1024, ExpectedPSN: 100, DevicePSN: 5000, SetPSNs: true})
			for i := 0; i < 3; i++ {
				if err := c.Send(send(wire.SendOnly, c, wire.PSN(100+i), i == 2, []byte("hello"))); err != nil {
					t.Fatal(err)
				}
			}
			r := expect(t, c, "an ACK", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
			if !r.Packet.AETH.IsACK() || r.Packet.PSN != 102 {
				t.Errorf("got %v, want an ACK with PSN 102", r.Packet)
			}
			if r.ICRC != wire.ICRCOK || r.Src != s.roce.Addr() || r.Dir != trace.ToRequester || !r.HasIPID {
				t.Errorf("record %+v", r)
			}
			if tr := c.Trace(); len(tr) != 4 || tr[0].Dir != trace.ToResponder || tr[3] != r {
				t.Errorf("trace %v", tr)
			}
			comps, err := c.Completions()
			if err != nil {
				t.Fatal(err)
			}
			if len(comps) != 3 || !comps[0].Recv || comps[0].Status != dut.StatusSuccess || comps[0].Bytes != 5 {
				t.Errorf("completions %+v", comps)
			}
			if st, err := c.State(); err != nil || st != dut.StateRTS {
				t.Errorf("state %v, %v", st, err)
			}
		})
	}
}

func TestReadAndMemory(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, nil)
	c := newConn(t, d, dut.ConnConfig{MTU: 256, ExpectedPSN: 0xFFFFFE, SetPSNs: true})
	info := c.Info()
	want := bytes.Repeat([]byte("0123456789abcdef"), 40) // 640 bytes: three READ responses at MTU 256
	if err := c.WriteMemory(100, want); err != nil {
		t.Fatal(err)
	}
	p := send(wire.ReadRequest, c, info.ExpectedPSN, true, nil)
	p.RETH = wire.RETH{VA: info.VA + 100, RKey: info.RKey, Length: uint32(len(want))}
	if err := c.Send(p); err != nil {
		t.Fatal(err)
	}
	var got []byte
	ops := []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseLast}
	for i, op := range ops {
		r := expect(t, c, op.String(), time.Second, func(k *wire.Packet) bool { return k.Opcode.IsResponse() })
		if r.Packet.Opcode != op || r.Packet.PSN != info.ExpectedPSN.Add(i) {
			t.Fatalf("response %d: %v, want %v with PSN %d", i, r.Packet, op, info.ExpectedPSN.Add(i))
		}
		got = append(got, r.Packet.Payload...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("READ returned %q", got)
	}
	// A WRITE lands in the device's memory.
	w := send(wire.WriteOnly, c, info.ExpectedPSN.Add(3), true, []byte("written"))
	w.RETH = wire.RETH{VA: info.VA + 8, RKey: info.RKey, Length: 7}
	c.Send(w)
	expect(t, c, "an ACK for the WRITE", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
	if m, err := c.ReadMemory(8, 7); err != nil || string(m) != "written" {
		t.Errorf("memory after the WRITE: %q, %v", m, err)
	}
	// An invalidated R_Key gets a remote access NAK.
	if err := c.InvalidateRKey(); err != nil {
		t.Fatal(err)
	}
	w.PSN = info.ExpectedPSN.Add(4)
	c.Send(w)
	r := expect(t, c, "a NAK", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
	if !r.Packet.AETH.IsNAK(wire.NAKRemoteAccess) {
		t.Errorf("got %v, want a remote access NAK", r.Packet)
	}
}

func TestRNRAndRequester(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, nil)
	c := newConn(t, d, dut.ConnConfig{RecvWQEs: -1, ExpectedPSN: 10, DevicePSN: 700, SetPSNs: true})
	c.Send(send(wire.SendOnly, c, 10, true, []byte("x")))
	r := expect(t, c, "an RNR NAK", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
	if !r.Packet.AETH.IsRNR() || r.Packet.PSN != 10 {
		t.Errorf("got %v, want an RNR NAK with PSN 10", r.Packet)
	}
	// The device as requester: a posted SEND arrives; the harness ACKs it.
	if err := c.PostSend(dut.WR{ID: 42, Op: dut.OpSend, Data: []byte("from the device")}); err != nil {
		t.Fatal(err)
	}
	q := expect(t, c, "the device's SEND", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.SendOnly })
	if q.Packet.PSN != 700 || string(q.Packet.Payload) != "from the device" || q.Dir != trace.ToResponder {
		t.Errorf("got %v", q.Packet)
	}
	ack := &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: 700}, AETH: wire.AETH{Syndrome: wire.SynACK(0x1F), MSN: 1}}
	c.Send(ack)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		comps, err := c.Completions()
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range comps {
			if cp.ID == 42 && !cp.Recv {
				if cp.Status != dut.StatusSuccess {
					t.Errorf("completion %+v", cp)
				}
				return
			}
		}
		c.Wait(5 * time.Millisecond)
	}
	t.Error("no send completion after the ACK")
}

// TestDefectVisible: a defect of the served reference shows on the wire.
func TestDefectVisible(t *testing.T) {
	s := startServe(t, serve.ServeOptions{Defect: "ack-psn-ahead"})
	d := openLive(t, s, nil)
	c := newConn(t, d, dut.ConnConfig{ExpectedPSN: 300, SetPSNs: true})
	c.Send(send(wire.SendOnly, c, 300, true, []byte("x")))
	r := expect(t, c, "an ACK", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
	if r.Packet.PSN != 301 {
		t.Errorf("with ack-psn-ahead the ACK names PSN %d, want 301 (newest + 1)", r.Packet.PSN)
	}
}

// TestPreflightDiagnoses: when the device cannot answer, the adapter says
// what is wrong instead of running a suite into silence.
func TestPreflightDiagnoses(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	cfg, err := live.ParseConfig(map[string]string{"device": "127.0.0.9:" + itoa(s.roce.Port()), "agent": s.agent, "local": "127.0.0.2:0"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = live.Open(context.Background(), cfg, 1)
	if err == nil || !strings.Contains(err.Error(), "is not an address of the agent's device") {
		t.Errorf("device address mismatch: %v", err)
	}
	// A stray sender address: make the device answer to an address the
	// harness does not listen on, by letting the socket bind one address
	// and telling the agent another is impossible here; instead block
	// the path with a wrong device port.
	cfg, _ = live.ParseConfig(map[string]string{"device": s.roce.String(), "agent": s.agent, "local": "127.0.0.2:0", "probe-timeout": "50ms"})
	cfg.Device = netip.AddrPortFrom(s.roce.Addr(), s.roce.Port()+1)
	if _, err = live.Open(context.Background(), cfg, 1); err == nil || !strings.Contains(err.Error(), "UDP port") {
		t.Errorf("device port mismatch: %v", err)
	}
}

// TestTokenRequired: an agent with a token refuses a harness without it.
func TestTokenRequired(t *testing.T) {
	s := startServe(t, serve.ServeOptions{Token: "s3cret"})
	cfg, _ := live.ParseConfig(map[string]string{"device": s.roce.String(), "agent": s.agent, "local": "127.0.0.2:0", "token": "wrong"})
	if _, err := live.Open(context.Background(), cfg, 1); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("wrong token: %v", err)
	}
	openLive(t, s, map[string]string{"token": "s3cret"})
}

func TestUnsupportedMTU(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, map[string]string{"probe": "false"})
	if _, err := d.NewConn(dut.ConnConfig{MTU: 333}); err == nil {
		t.Error("MTU 333 accepted")
	}
	c, err := d.NewConn(dut.ConnConfig{MTU: 4096})
	if err != nil {
		t.Fatalf("MTU 4096 on loopback: %v", err)
	}
	c.Close()
	if !errors.Is(dut.ErrUnsupported, dut.ErrUnsupported) {
		t.Fatal("unreachable")
	}
}

func itoa(p uint16) string {
	return strings.TrimPrefix(netip.AddrPortFrom(netip.IPv4Unspecified(), p).String(), "0.0.0.0:")
}

// TestRetransmitInRealTime: the served reference's clock follows the wall
// clock, so its requester's ACK timer fires after real time: timeout 12 is
// 4.096 µs × 2^12 ≈ 16.8 ms.
func TestRetransmitInRealTime(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, nil)
	c := newConn(t, d, dut.ConnConfig{DevicePSN: 40, ExpectedPSN: 1, SetPSNs: true, SetRetry: true, Timeout: 12, RetryCnt: 2, RNRRetry: 0, MinRNRTimer: 1})
	if err := c.PostSend(dut.WR{ID: 1, Op: dut.OpSend, Data: []byte("ping")}); err != nil {
		t.Fatal(err)
	}
	first := expect(t, c, "the SEND", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.SendOnly })
	again := expect(t, c, "its retransmission", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.SendOnly })
	gap := again.Time - first.Time
	want := wire.AckTimeout(12)
	tol := d.Tolerance()
	if gap < want-tol || gap > want+500*time.Millisecond {
		t.Errorf("retransmitted after %v; the ACK timeout is %v (tolerance %v)", gap, want, tol)
	}
	if again.Packet.PSN != 40 {
		t.Errorf("retransmission with PSN %d, want 40", again.Packet.PSN)
	}
}

// silentDevice is an agent whose device never answers: the preflight must
// say so, and what it checked.
type silentDevice struct {
	uc *net.UDPConn
	rx atomic.Int64
}

func (s *silentDevice) Info() agentproto.DeviceInfo {
	return agentproto.DeviceInfo{Agent: "silent", Name: "mute0", Port: 1, Address: "127.0.0.1",
		UDPPort: s.uc.LocalAddr().(*net.UDPAddr).Port, MTU: 1024, PKey: 0xFFFF, AnyPeerPort: true}
}
func (s *silentDevice) NewSession() (agentproto.Session, error) { return &silentSession{d: s}, nil }

type silentSession struct{ d *silentDevice }

func (s *silentSession) CreateQP(a agentproto.QPAttr) (agentproto.QPInfo, error) {
	return agentproto.QPInfo{Handle: 1, QPN: 0x77, State: "RTS", Attr: a, PKey: 0xFFFF}, nil
}
func (s *silentSession) RegMR(uint32, int, []string) (agentproto.MRInfo, error) {
	return agentproto.MRInfo{Handle: 2, RKey: 9, Addr: 0x1000, Length: 4096}, nil
}
func (s *silentSession) ReadMem(_ uint32, _, n int) ([]byte, error) { return make([]byte, n), nil }
func (s *silentSession) WriteMem(uint32, int, []byte) error         { return nil }
func (s *silentSession) InvalidateMR(uint32) error                  { return nil }
func (s *silentSession) PostRecv(uint32, int, int) error            { return nil }
func (s *silentSession) PostSend(uint32, agentproto.WR) error       { return nil }
func (s *silentSession) PollCQ(uint32) ([]agentproto.Completion, error) {
	return nil, nil
}
func (s *silentSession) QueryQP(uint32) (agentproto.QPStatus, error) {
	return agentproto.QPStatus{State: "RTS"}, nil
}
func (s *silentSession) DestroyQP(uint32) error { return nil }
func (s *silentSession) Counters() (map[string]int64, error) {
	return map[string]int64{"rx_packets": s.d.rx.Load()}, nil
}
func (s *silentSession) Close() error { return nil }

func TestPreflightNoAnswer(t *testing.T) {
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	dev := &silentDevice{uc: uc}
	go func() {
		buf := make([]byte, 1<<16)
		for {
			if _, _, err := uc.ReadFrom(buf); err != nil {
				return
			}
			dev.rx.Add(1)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&agentproto.Server{Device: dev}).Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	cfg, err := live.ParseConfig(map[string]string{"agent": ln.Addr().String(), "local": "127.0.0.2:0", "probe-timeout": "30ms"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = live.Open(context.Background(), cfg, 1)
	if !errors.Is(err, live.ErrNoAnswer) {
		t.Fatalf("a silent device: %v", err)
	}
	for _, want := range []string{"QP 0x000077", "state RTS", "remote GID", "P_Key 0xFFFF", "nothing at all came back", "rx_packets +3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the diagnosis does not say %q:\n%v", want, err)
		}
	}
	t.Logf("%v", err)
}

func TestIPv6(t *testing.T) {
	if ln, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	s := startServe(t, serve.ServeOptions{Addr: "[::1]:0"})
	d := openLive(t, s, map[string]string{"local": "[::1]:0"})
	c := newConn(t, d, dut.ConnConfig{ExpectedPSN: 9, SetPSNs: true})
	c.Send(send(wire.SendOnly, c, 9, true, []byte("v6")))
	r := expect(t, c, "an ACK", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
	if !r.Packet.AETH.IsACK() || r.Packet.PSN != 9 || r.ICRC != wire.ICRCOK || r.HasIPID {
		t.Errorf("record %+v, packet %v", r, r.Packet)
	}
}

// TestLatency: a device that answers late (here the served reference with a
// 150 ms response delay) is missed by a 20 ms wait, and caught by the same
// wait once the configured latency covers it.
func TestLatency(t *testing.T) {
	s := startServe(t, serve.ServeOptions{Settings: map[string]string{"response-delay": "150ms"}})
	for _, tc := range []struct {
		latency string
		want    bool
	}{{"0s", false}, {"2s", true}} { // 2 s: the served device's 150 ms can stretch on a loaded host (-race, CI)
		t.Run("latency="+tc.latency, func(t *testing.T) {
			d := openLive(t, s, map[string]string{"probe": "false", "latency": tc.latency})
			c := newConn(t, d, dut.ConnConfig{MTU: 1024, ExpectedPSN: 100, DevicePSN: 5000, SetPSNs: true})
			if err := c.Send(send(wire.SendOnly, c, 100, true, []byte("late"))); err != nil {
				t.Fatal(err)
			}
			r, ok := c.Recv(20 * time.Millisecond)
			if ok != tc.want {
				t.Fatalf("latency %s: a 20 ms wait returned %v, want %v (%v)", tc.latency, ok, tc.want, r)
			}
		})
	}
}

// TestLatencyOnlyWhileOwed: once the device has answered what it was sent,
// a wait for silence costs no latency.
func TestLatencyOnlyWhileOwed(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, map[string]string{"probe": "false", "latency": "2s"})
	c := newConn(t, d, dut.ConnConfig{MTU: 1024, ExpectedPSN: 100, DevicePSN: 5000, SetPSNs: true})
	if err := c.Send(send(wire.SendOnly, c, 100, true, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	expect(t, c, "an ACK", time.Second, func(k *wire.Packet) bool { return k.Opcode == wire.Acknowledge })
	start := time.Now()
	if r, ok := c.Recv(20 * time.Millisecond); ok {
		t.Fatalf("unexpected %v", r.Packet)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("a 20 ms wait for silence after the device answered took %v: the latency was added", waited)
	}
}

// TestReservedOpcodeGoesToResponder: a reserved opcode the harness injects
// as an invalid request is recorded as travelling to the device's responder.
func TestReservedOpcodeGoesToResponder(t *testing.T) {
	s := startServe(t, serve.ServeOptions{})
	d := openLive(t, s, map[string]string{"probe": "false"})
	c := newConn(t, d, dut.ConnConfig{MTU: 1024, ExpectedPSN: 100, DevicePSN: 5000, SetPSNs: true})
	if err := c.Send(send(wire.Opcode(0x15), c, 100, true, nil)); err != nil {
		t.Fatal(err)
	}
	if tr := c.Trace(); len(tr) == 0 || tr[0].Dir != trace.ToResponder {
		t.Fatalf("the reserved opcode is recorded as %v", tr)
	}
}

// TestDeviceLossCounted: packets the device counts as sent but that never
// reach the harness (a host queue that overflowed) are reported by the
// connection's ReceiveLoss, from the device's sent-packet counter against
// what the harness received; a device that loses nothing reports none.
func TestDeviceLossCounted(t *testing.T) {
	for _, every := range []int{0, 4} {
		s := startServe(t, serve.ServeOptions{TxDropEvery: every})
		d := openLive(t, s, map[string]string{"probe": "false"})
		c := newConn(t, d, dut.ConnConfig{MTU: 256, ExpectedPSN: 100, SetPSNs: true})
		info := c.Info()
		p := send(wire.ReadRequest, c, info.ExpectedPSN, true, nil)
		p.RETH = wire.RETH{VA: info.VA, RKey: info.RKey, Length: 10 * 256}
		if err := c.Send(p); err != nil {
			t.Fatal(err)
		}
		c.Wait(200 * time.Millisecond)
		got := 0
		for {
			if _, ok := c.Recv(0); !ok {
				break
			}
			got++
		}
		n, why := dut.ReceiveLoss(c)
		switch {
		case every == 0 && (n != 0 || got != 10):
			t.Errorf("a device that loses nothing: %d of 10 READ responses received, loss reported %d (%s)", got, n, why)
		case every > 0 && (n != 10-got || n == 0 || !strings.Contains(why, "tx_packets")):
			t.Errorf("every %dth packet lost: %d of 10 READ responses received, loss reported %d (%s)", every, got, n, why)
		default:
			t.Logf("drop every %d: %d of 10 received, loss %d: %s", every, got, n, why)
		}
		if !strings.Contains(d.Describe(), "loss-check") {
			t.Errorf("the run's description does not say how losses are checked: %s", d.Describe())
		}
	}
}
