package refdut

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/wire"
)

func newConn(t *testing.T, o dut.Options, cc dut.ConnConfig) *Conn {
	t.Helper()
	d, err := dut.New("reference", o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.NewConn(cc)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*Conn)
}

func recv(t *testing.T, c *Conn) *wire.Packet {
	t.Helper()
	r, ok := c.Recv(time.Millisecond)
	if !ok {
		t.Fatal("no packet from the device")
	}
	return r.Packet
}

func TestSendAck(t *testing.T) {
	c := newConn(t, dut.Options{Seed: 1}, dut.ConnConfig{})
	info := c.Info()
	e := info.ExpectedPSN
	if err := c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e, AckReq: true}, Payload: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	p := recv(t, c)
	if p.Opcode != wire.Acknowledge || p.PSN != e || !p.AETH.IsACK() || p.AETH.MSN != 1 {
		t.Fatalf("got %v, want ACK psn=%d msn=1", p, e)
	}
	if got := p.AETH.Value(); got != wire.CreditCode(63) {
		t.Errorf("credit code %#x, want %#x", got, wire.CreditCode(63))
	}
	cs, _ := c.Completions()
	if len(cs) != 1 || !cs[0].Recv || cs[0].Bytes != 5 {
		t.Errorf("completions %+v", cs)
	}
	// READ 3000 bytes at MTU 1024: 3 responses.
	copy(c.DeviceMR().Bytes(), []byte("abcdefgh"))
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: e.Add(1), AckReq: true},
		RETH: wire.RETH{VA: info.VA, RKey: info.RKey, Length: 3000}})
	want := []wire.Opcode{wire.ReadResponseFirst, wire.ReadResponseMiddle, wire.ReadResponseLast}
	for i, op := range want {
		p := recv(t, c)
		if p.Opcode != op || p.PSN != e.Add(1+i) {
			t.Fatalf("response %d: %v, want %v psn %d", i, p, op, e.Add(1+i))
		}
		if i == 0 && string(p.Payload[:8]) != "abcdefgh" {
			t.Errorf("payload %q", p.Payload[:8])
		}
	}
	tr := c.Trace()
	if len(tr) != 6 || tr[0].Dir != trace.ToResponder || tr[1].Dir != trace.ToRequester || tr[0].Frame != 1 {
		t.Errorf("trace %v", tr)
	}
}

func TestCapabilitiesAndOptions(t *testing.T) {
	d, err := New(dut.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Capabilities()
	if d.Name() != "reference" || c.Capture || !c.Inject || !c.PostWR || !c.Completions || !c.Memory || !c.Atomics ||
		!c.SRQ || !c.Credits || !c.VirtualTime {
		t.Errorf("%s: capabilities %+v", d.Name(), c)
	}
	if _, err := New(dut.Options{Defect: "no-such"}); err == nil || !strings.Contains(err.Error(), "ack-oldest-psn") {
		t.Errorf("unknown defect: %v (want an error listing the names)", err)
	}
	for _, bad := range []map[string]string{
		{SetAckPolicy: "sometimes"}, {SetMSNRead: "middle"}, {SetAckDelay: "soon"}, {SetAckEveryN: "x"},
	} {
		if _, err := New(dut.Options{Settings: bad}); err == nil {
			t.Errorf("settings %v accepted", bad)
		}
	}
	if _, err := New(dut.Options{Settings: map[string]string{SetAckPolicy: "every-n", SetAckEveryN: "0"}}); err == nil {
		t.Errorf("every-n with N=0 accepted")
	}
	if _, err := New(dut.Options{Settings: map[string]string{"device": "ignored", SetAckPolicy: "delay"}}); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}
}

func TestSettingsSweep(t *testing.T) {
	c := newConn(t, dut.Options{Seed: 3, Settings: map[string]string{
		SetAckPolicy: "every-n", SetAckEveryN: "2", SetMSNRead: "end", SetLatency: "2us", SetPacketGap: "1us",
	}}, dut.ConnConfig{MTU: 1024})
	info := c.Info()
	e := info.ExpectedPSN
	t0 := c.Now()
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e}, Payload: []byte("a")})
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e.Add(1)}, Payload: []byte("b")})
	r, ok := c.Recv(time.Millisecond)
	if !ok || r.Packet.Opcode != wire.Acknowledge || r.Packet.PSN != e.Add(1) {
		t.Fatalf("every-n: got %v", r)
	}
	if r.Time-t0 < 2*time.Microsecond {
		t.Errorf("latency setting ignored: sent at %v", r.Time)
	}
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: e.Add(2)}, RETH: wire.RETH{VA: info.VA, RKey: info.RKey, Length: 2048}})
	f := recv(t, c)
	l := recv(t, c)
	if f.AETH.MSN != 2 || l.AETH.MSN != 3 {
		t.Errorf("msn-read=end: First MSN %d, Last MSN %d, want 2 and 3", f.AETH.MSN, l.AETH.MSN)
	}
}

func TestSeeds(t *testing.T) {
	info := func(seed int64) dut.ConnInfo {
		return newConn(t, dut.Options{Seed: seed}, dut.ConnConfig{}).Info()
	}
	a, b, c := info(1), info(1), info(2)
	if a.DeviceQPN != b.DeviceQPN || a.ExpectedPSN != b.ExpectedPSN || a.DevicePSN != b.DevicePSN || a.RKey != b.RKey {
		t.Errorf("the same seed gave different connections: %+v %+v", a, b)
	}
	if a.DeviceQPN == c.DeviceQPN && a.ExpectedPSN == c.ExpectedPSN {
		t.Errorf("different seeds gave the same connection")
	}
	s := newConn(t, dut.Options{Seed: 1}, dut.ConnConfig{SetPSNs: true, ExpectedPSN: 5, DevicePSN: 9}).Info()
	if s.ExpectedPSN != 5 || s.DevicePSN != 9 || s.MTU != 1024 || s.Len != DefaultMemorySize || s.VA != DeviceVA || s.PeerVA != PeerVA {
		t.Errorf("info %+v", s)
	}
}

func TestRecvTimeoutAndWait(t *testing.T) {
	c := newConn(t, dut.Options{}, dut.ConnConfig{})
	if r, ok := c.Recv(50 * time.Microsecond); ok {
		t.Errorf("got %v from an idle device", r)
	}
	if c.Now() != 50*time.Microsecond {
		t.Errorf("Recv's timeout did not pass on the clock: %v", c.Now())
	}
	e := c.Info().ExpectedPSN
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e, AckReq: true}})
	c.Wait(time.Millisecond)
	if r, ok := c.Recv(0); !ok || r.Packet.Opcode != wire.Acknowledge {
		t.Errorf("Wait did not collect the ACK: %v", r)
	}
}

func TestDeviceAsRequester(t *testing.T) {
	c := newConn(t, dut.Options{Seed: 5}, dut.ConnConfig{Timeout: 8, RetryCnt: 3, RNRRetry: 3})
	info := c.Info()
	// Lose the device's first packet: it must come again after the timeout.
	c.Link().AddRule(reference.Impairment{Dir: reference.AtoB, Action: reference.Drop, ByIndex: true, Index: 0})
	if err := c.PostSend(dut.WR{ID: 1, Op: dut.OpWrite, Data: []byte("payload"), RemoteVA: info.PeerVA, RKey: info.PeerRKey}); err != nil {
		t.Fatal(err)
	}
	r, ok := c.Recv(10 * time.Millisecond)
	if !ok || r.Packet.Opcode != wire.WriteOnly || r.Packet.PSN != info.DevicePSN || r.Dir != trace.ToResponder {
		t.Fatalf("got %v", r)
	}
	if r.Time < wire.AckTimeout(8) {
		t.Errorf("retransmission at %v, before the ACK timeout", r.Time)
	}
	a := &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge, PSN: info.DevicePSN}, AETH: wire.AETH{Syndrome: 0x1F, MSN: 1}}
	c.Send(a)
	c.Wait(10 * time.Microsecond)
	cs, _ := c.Completions()
	if len(cs) != 1 || cs[0].Status != dut.StatusSuccess {
		t.Fatalf("completions %+v", cs)
	}
	tr := c.Trace()
	if len(tr) != 3 || tr[2].Dir != trace.ToRequester || tr[2].Packet.Opcode != wire.Acknowledge || tr[0].Frame != 1 || tr[2].Frame != 3 {
		t.Errorf("trace %v", tr)
	}
	for _, rec := range tr {
		if rec.ICRC != wire.ICRCOK || !rec.HasIPID {
			t.Errorf("record %v: ICRC %v", rec, rec.ICRC)
		}
	}
	if tr[0].IPID == tr[1].IPID {
		t.Errorf("a retransmission kept its IP identification")
	}
	if st, _ := c.State(); st != dut.StateRTS {
		t.Errorf("state %v", st)
	}
}

func TestDefectOption(t *testing.T) {
	c := newConn(t, dut.Options{Defect: "ack-psn-ahead"}, dut.ConnConfig{})
	e := c.Info().ExpectedPSN
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e, AckReq: true}})
	r, ok := c.Recv(time.Millisecond)
	if !ok || r.Packet.PSN != e.Add(1) || r.Note != "defect ack-psn-ahead" {
		t.Errorf("got %v (note %q), want the defect's ACK at %d", r, r.Note, e.Add(1))
	}
}

func TestMemoryAndAtomics(t *testing.T) {
	c := newConn(t, dut.Options{}, dut.ConnConfig{Atomics: true, RecvWQEs: -1, SRQ: true})
	info := c.Info()
	e := info.ExpectedPSN
	if err := c.WriteMemory(8, []byte{41, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.FetchAdd, PSN: e}, Atomic: wire.AtomicETH{VA: info.VA + 8, RKey: info.RKey, SwapAdd: 1}})
	if p := recv(t, c); p.Opcode != wire.AtomicAcknowledge || p.AtomicAck != 41 {
		t.Errorf("got %v", p)
	}
	if b, _ := c.ReadMemory(8, 1); b[0] != 42 {
		t.Errorf("memory %v", b)
	}
	// No receive WQEs: RNR NAK; an SRQ QP advertises no credits.
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e.Add(1), AckReq: true}})
	if p := recv(t, c); !p.AETH.IsRNR() || p.PSN != e.Add(1) {
		t.Errorf("got %v, want an RNR NAK", p)
	}
	c.PostRecv(1, 64)
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: e.Add(1), AckReq: true}})
	if p := recv(t, c); !p.AETH.IsACK() || p.AETH.Value() != wire.CreditInvalid {
		t.Errorf("got %v, want an ACK with credit code 0x1F", p)
	}
	c.InvalidateRKey()
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: e.Add(2)}, RETH: wire.RETH{VA: info.VA, RKey: info.RKey, Length: 4}})
	if p := recv(t, c); !p.AETH.IsNAK(wire.NAKRemoteAccess) {
		t.Errorf("got %v, want NAK remote access", p)
	}
	if _, err := c.ReadMemory(info.Len-1, 2); err == nil {
		t.Errorf("out-of-range read accepted")
	}
}

func TestNoAtomics(t *testing.T) {
	c := newConn(t, dut.Options{}, dut.ConnConfig{})
	info := c.Info()
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.CompareSwap, PSN: info.ExpectedPSN}, Atomic: wire.AtomicETH{VA: info.VA, RKey: info.RKey}})
	if p := recv(t, c); !p.AETH.IsNAK(wire.NAKInvalidRequest) {
		t.Errorf("got %v, want NAK invalid request", p)
	}
}

func TestPcapngOfAConnection(t *testing.T) {
	c := newConn(t, dut.Options{}, dut.ConnConfig{})
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: c.Info().ExpectedPSN, AckReq: true}})
	recv(t, c)
	var b bytes.Buffer
	if err := c.Link().WritePcapng(&b); err != nil || b.Len() < 100 {
		t.Errorf("pcapng: %v, %d bytes", err, b.Len())
	}
}

// TestMidStreamInvalidate drives C9-100 through the adapter: the region is
// invalidated as soon as the first READ response reaches the harness.
func TestMidStreamInvalidate(t *testing.T) {
	c := newConn(t, dut.Options{}, dut.ConnConfig{})
	info := c.Info()
	e := info.ExpectedPSN
	c.Send(&wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: e}, RETH: wire.RETH{VA: info.VA, RKey: info.RKey, Length: 16 * 1024}})
	if p := recv(t, c); p.Opcode != wire.ReadResponseFirst {
		t.Fatalf("got %v", p)
	}
	c.InvalidateRKey()
	next := e.Add(1)
	for {
		r, ok := c.Recv(time.Millisecond)
		if !ok {
			t.Fatal("no NAK")
		}
		p := r.Packet
		if p.Opcode == wire.ReadResponseMiddle && p.PSN == next {
			next = next.Add(1)
			continue
		}
		if p.Opcode != wire.Acknowledge || !p.AETH.IsNAK(wire.NAKRemoteAccess) || p.PSN != next {
			t.Fatalf("got %v, want NAK remote access at %d", p, next)
		}
		break
	}
	if r, ok := c.Recv(time.Millisecond); ok {
		t.Errorf("sent %v after the NAK", r)
	}
	if st, _ := c.State(); st != dut.StateError {
		t.Errorf("state %v", st)
	}
}
