package agentproto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
)

// fakeDevice counts sessions and what they hold.
type fakeDevice struct {
	// postGate, when set, holds every post_send until it is closed (an
	// agent slow to answer).
	postGate chan struct{}
	mu       sync.Mutex
	open     int
	closed   int
	alive    map[*fakeSession]bool
}

func (f *fakeDevice) Info() DeviceInfo {
	return DeviceInfo{Agent: "fake", Name: "fake0", Port: 1, Address: "127.0.0.1", UDPPort: 4791, MTU: 1024, PKey: 0xFFFF}
}

func (f *fakeDevice) NewSession() (Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open++
	s := &fakeSession{f: f, qps: map[uint32]bool{}}
	if f.alive == nil {
		f.alive = map[*fakeSession]bool{}
	}
	f.alive[s] = true
	return s, nil
}

func (f *fakeDevice) counts() (open, closed, alive int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open, f.closed, len(f.alive)
}

type fakeSession struct {
	f    *fakeDevice
	qps  map[uint32]bool
	next uint32
	mem  []byte
}

func (s *fakeSession) CreateQP(a QPAttr) (QPInfo, error) {
	s.next++
	s.qps[s.next] = true
	return QPInfo{Handle: s.next, QPN: 0x100 + s.next, State: "RTS", Attr: a}, nil
}
func (s *fakeSession) RegMR(qp uint32, length int, access []string) (MRInfo, error) {
	if !s.qps[qp] {
		return MRInfo{}, Errorf(CodeNotFound, "no QP %d", qp)
	}
	s.mem = make([]byte, length)
	return MRInfo{Handle: 99, RKey: 0x1234, Addr: 0x1000, Length: length}, nil
}
func (s *fakeSession) ReadMem(mr uint32, off, n int) ([]byte, error) { return s.mem[off : off+n], nil }
func (s *fakeSession) WriteMem(mr uint32, off int, data []byte) error {
	copy(s.mem[off:], data)
	return nil
}
func (s *fakeSession) InvalidateMR(mr uint32) error              { return nil }
func (s *fakeSession) PostRecv(qp uint32, count, size int) error { return nil }
func (s *fakeSession) PostSend(qp uint32, wr WR) error {
	if s.f.postGate != nil {
		<-s.f.postGate
	}
	if wr.Op == WRCmpSwap {
		return Errorf(CodeUnsupported, "no atomics")
	}
	return nil
}
func (s *fakeSession) PollCQ(qp uint32) ([]Completion, error) {
	return []Completion{{WRID: 7, Op: WRSend, Status: StatusRemAccessErr}}, nil
}
func (s *fakeSession) QueryQP(qp uint32) (QPStatus, error) { return QPStatus{State: "RTS"}, nil }
func (s *fakeSession) DestroyQP(qp uint32) error {
	delete(s.qps, qp)
	return nil
}
func (s *fakeSession) Counters() (map[string]int64, error) { return map[string]int64{"rx": 1}, nil }
func (s *fakeSession) Close() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.closed++
	delete(s.f.alive, s)
	return nil
}

func startServer(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSessionLifecycle(t *testing.T) {
	f := &fakeDevice{}
	addr := startServer(t, &Server{Device: f})
	c, err := Dial(context.Background(), addr, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Hello(); h.Device.Name != "fake0" || h.Version != Version || h.Peer == "" || h.IdleMS != DefaultIdle.Milliseconds() {
		t.Errorf("hello %+v", h)
	}
	qi, err := c.CreateQP(QPAttr{MTU: 1024, RemoteAddress: "127.0.0.2", RemoteQPN: 0x4242})
	if err != nil || qi.QPN != 0x101 || qi.Attr.RemoteQPN != 0x4242 {
		t.Fatalf("create_qp: %+v, %v", qi, err)
	}
	mi, err := c.RegMR(qi.Handle, 64, AccessRemoteWrite)
	if err != nil || mi.RKey != 0x1234 {
		t.Fatalf("reg_mr: %+v, %v", mi, err)
	}
	if _, err := c.RegMR(77, 64); CodeOf(err) != CodeNotFound {
		t.Errorf("reg_mr on a QP the session does not have: %v", err)
	}
	if _, err := c.RegMR(qi.Handle, 64, "everything"); CodeOf(err) != CodeBadRequest {
		t.Errorf("reg_mr with an unknown right: %v", err)
	}
	if _, err := c.RegMR(qi.Handle, MaxMRLength+1); CodeOf(err) != CodeBadRequest {
		t.Errorf("reg_mr over the limit: %v", err)
	}
	if err := c.WriteMem(mi.Handle, 8, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if b, err := c.ReadMem(mi.Handle, 8, 3); err != nil || string(b) != "\x01\x02\x03" {
		t.Errorf("read_mem: %v, %v", b, err)
	}
	if err := c.PostSend(qi.Handle, WR{Op: WRCmpSwap}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an unsupported op: %v", err)
	}
	if err := c.PostSend(qi.Handle, WR{Op: "teleport"}); CodeOf(err) != CodeBadRequest {
		t.Errorf("an unknown op: %v", err)
	}
	cs, err := c.PollCQ(qi.Handle)
	if err != nil || len(cs) != 1 {
		t.Fatalf("poll_cq: %v, %v", cs, err)
	}
	if dc, err := ToDUTCompletion(cs[0]); err != nil || dc.Status != dut.StatusRemoteAccessError || dc.ID != 7 {
		t.Errorf("completion %+v, %v", dc, err)
	}
	if _, err := c.Do(&Request{Op: "bogus"}); CodeOf(err) != CodeBadRequest {
		t.Errorf("an unknown op: %v", err)
	}
	// Closing the connection frees the session.
	c.Close()
	eventually(t, "the session is freed when the harness disconnects", func() bool {
		_, closed, alive := f.counts()
		return closed == 1 && alive == 0
	})
}

func TestTokenAndHello(t *testing.T) {
	f := &fakeDevice{}
	addr := startServer(t, &Server{Device: f, Token: "sesame"})
	if _, err := Dial(context.Background(), addr, "wrong", "test"); CodeOf(err) != CodeUnauthorized {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := Dial(context.Background(), addr, "", "test"); CodeOf(err) != CodeUnauthorized {
		t.Errorf("no token: %v", err)
	}
	// A request before hello is refused and the connection closed.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	json.NewEncoder(conn).Encode(Request{ID: 1, Op: OpCreateQP, Attr: &QPAttr{}})
	var resp Response
	if err := ReadLine(bufio.NewReader(conn), &resp); err != nil || resp.OK || resp.Code != CodeUnauthorized {
		t.Errorf("create_qp before hello: %+v, %v", resp, err)
	}
	if open, _, _ := f.counts(); open != 0 {
		t.Errorf("%d sessions opened without the token", open)
	}
	c, err := Dial(context.Background(), addr, "sesame", "test")
	if err != nil {
		t.Fatalf("the right token: %v", err)
	}
	c.Close()
}

func TestIdleSessionFreed(t *testing.T) {
	f := &fakeDevice{}
	addr := startServer(t, &Server{Device: f, Idle: 150 * time.Millisecond})
	// A silent harness loses its session ...
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	json.NewEncoder(conn).Encode(Request{ID: 1, Op: OpHello, Version: Version})
	r := bufio.NewReader(conn)
	var resp Response
	if err := ReadLine(r, &resp); err != nil || !resp.OK {
		t.Fatalf("hello: %+v, %v", resp, err)
	}
	eventually(t, "a silent session is freed", func() bool {
		_, closed, _ := f.counts()
		return closed == 1
	})
	if err := ReadLine(r, &resp); err == nil {
		t.Error("the agent kept the silent connection open")
	}
	// ... while the client's keepalive holds its own.
	c, err := Dial(context.Background(), addr, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(500 * time.Millisecond)
	if _, err := c.QueryQP(1); err != nil {
		t.Errorf("after 500 ms of keepalive only: %v", err)
	}
	if _, closed, _ := f.counts(); closed != 1 {
		t.Errorf("%d sessions closed, want only the silent one", closed)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:4792", "", true},
		{"[::1]:4792", "", true},
		{"localhost:4792", "", true},
		{"0.0.0.0:4792", "", false},
		{":4792", "", false},
		{"192.0.2.1:4792", "", false},
		{"0.0.0.0:4792", "t", true},
		{"nonsense", "t", false},
	} {
		err := CheckListen(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q) = %v", tc.addr, tc.token, err)
		}
		if err != nil && tc.addr == "0.0.0.0:4792" && !strings.Contains(err.Error(), "token") {
			t.Errorf("the refusal does not mention the token: %v", err)
		}
	}
}

func TestConversions(t *testing.T) {
	for op := dut.OpSend; op <= dut.OpFetchAdd; op++ {
		w := dut.WR{ID: 5, Op: op, Data: []byte("x"), Length: 9, RemoteVA: 0x10, RKey: 3, Imm: 4, CompareAdd: 6, Swap: 7}
		back, err := ToDUTWR(FromDUTWR(w))
		if err != nil || back.Op != op || back.RemoteVA != w.RemoteVA || back.Swap != 7 || back.Length != 9 {
			t.Errorf("%v: %+v, %v", op, back, err)
		}
	}
	for st := dut.StatusSuccess; st <= dut.StatusLocalError; st++ {
		if got, ok := ParseStatus(StatusName(st)); !ok || got != st {
			t.Errorf("status %v round-trips to %v", st, got)
		}
	}
	if got, ok := ParseStatus("err:fatal_err"); !ok || got != dut.StatusLocalError {
		t.Errorf("an unnamed verbs status: %v %v", got, ok)
	}
}

// TestStartedPost: a started post returns before the agent answers; the
// next request takes the answer off the connection first (answers come in
// order), and Wait returns it, refusals included.
func TestStartedPost(t *testing.T) {
	f := &fakeDevice{postGate: make(chan struct{})}
	addr := startServer(t, &Server{Device: f})
	c, err := Dial(context.Background(), addr, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	qp, err := c.CreateQP(QPAttr{})
	if err != nil {
		t.Fatal(err)
	}
	p := c.StartPostSends(qp.Handle, []WR{{ID: 1, Op: WRSend, Data: []byte("a")}})
	// Start came back although the agent cannot have answered yet: it
	// is still held at the gate.
	close(f.postGate)
	if st, err := c.QueryQP(qp.Handle); err != nil || st.State != "RTS" {
		t.Fatalf("a request after a started post: %+v, %v", st, err)
	}
	if err := c.WaitPost(p); err != nil {
		t.Errorf("the started post: %v", err)
	}
	if err := c.WaitPost(p); err != nil {
		t.Errorf("waiting twice: %v", err)
	}
	refused := c.StartPostSends(qp.Handle, []WR{{ID: 2, Op: WRCmpSwap}})
	if err := c.WaitPost(refused); CodeOf(err) != CodeUnsupported {
		t.Errorf("a refused started post: %v, want an unsupported error", err)
	}
	if _, err := c.QueryQP(qp.Handle); err != nil {
		t.Errorf("the session after a refused started post: %v", err)
	}
}
