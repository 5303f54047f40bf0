package agentproto

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Device is what an agent serves: the RDMA device (or the reference).
type Device interface {
	Info() DeviceInfo
	// NewSession starts a session for one harness connection.
	NewSession() (Session, error)
}

// Session holds everything one harness connection created. The server
// calls its methods from one goroutine at a time, and Close exactly once,
// when the connection ends for any reason. Handles are the session's own:
// a handle it did not hand out is an *Error with CodeNotFound.
type Session interface {
	CreateQP(a QPAttr) (QPInfo, error)
	RegMR(qp uint32, length int, access []string) (MRInfo, error)
	ReadMem(mr uint32, off, n int) ([]byte, error)
	WriteMem(mr uint32, off int, data []byte) error
	InvalidateMR(mr uint32) error
	PostRecv(qp uint32, count, size int) error
	PostSend(qp uint32, wr WR) error
	PollCQ(qp uint32) ([]Completion, error)
	QueryQP(qp uint32) (QPStatus, error)
	DestroyQP(qp uint32) error
	Counters() (map[string]int64, error)
	// Close destroys everything the session created.
	Close() error
}

// Limits bound what one request may ask of the agent's host.
const (
	MaxMRLength = 64 << 20 // bytes in one memory region
	MaxRecvWQEs = 4096     // receive WQEs in one post_recv
	MaxRecvSize = 1 << 20  // bytes in one receive WQE
	MaxQPs      = 64       // QPs alive in one session
	maxLine     = 4*MaxMRLength/3 + 4096
)

// Server runs the agent protocol for a Device.
type Server struct {
	Device Device
	// Token, when not empty, must be given in hello.
	Token string
	// Idle closes a session silent this long (0: DefaultIdle).
	Idle time.Duration
	// Logf logs sessions and refusals (nil: nothing).
	Logf func(format string, a ...any)

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// CheckListen refuses to listen on an address that is not loopback without
// a token: the agent can read and write the memory it registers, so
// anyone who can reach it could.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("agent address %q: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without a token: the agent reads and writes the memory it registers, so off loopback it needs --token (or RCCONFORM_AGENT_TOKEN) given on both sides", addr)
}

func (s *Server) logf(format string, a ...any) {
	if s.Logf != nil {
		s.Logf(format, a...)
	}
}

// Serve accepts connections on ln until ctx is done, then closes ln and
// every connection (freeing their sessions) and returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accepting agent connections on %v: %w", ln.Addr(), err)
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) idle() time.Duration {
	if s.Idle > 0 {
		return s.Idle
	}
	return DefaultIdle
}

// serveConn runs one session.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	peer := c.RemoteAddr().String()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	w := bufio.NewWriter(c)
	enc := json.NewEncoder(w)
	send := func(r *Response) bool {
		if err := enc.Encode(r); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	// read reads the next line into a fresh request; false when the
	// connection ended or stayed silent too long.
	read := func() (*Request, bool) {
		c.SetReadDeadline(time.Now().Add(s.idle()))
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					s.logf("session %s: silent for %v, closing it", peer, s.idle())
				} else {
					s.logf("session %s: %v", peer, err)
				}
			}
			return nil, false
		}
		return new(Request), true
	}

	// Hello first.
	req, ok := read()
	if !ok {
		return
	}
	if err := json.Unmarshal(sc.Bytes(), req); err != nil || req.Op != OpHello {
		send(&Response{ID: req.ID, Code: CodeUnauthorized, Error: "the first request must be hello"})
		s.logf("session %s: refused: no hello", peer)
		return
	}
	if s.Token != "" && subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.Token)) != 1 {
		send(&Response{ID: req.ID, Code: CodeUnauthorized, Error: "wrong or missing token"})
		s.logf("session %s: refused: wrong or missing token", peer)
		return
	}
	if req.Version != Version {
		send(&Response{ID: req.ID, Code: CodeUnauthorized, Error: fmt.Sprintf("protocol version %d; this agent speaks %d", req.Version, Version)})
		return
	}
	sess, err := s.Device.NewSession()
	if err != nil {
		send(&Response{ID: req.ID, Code: CodeOf(err), Error: err.Error()})
		return
	}
	defer func() {
		if err := sess.Close(); err != nil {
			s.logf("session %s: freeing its resources: %v", peer, err)
		} else {
			s.logf("session %s: closed, its QPs and memory regions freed", peer)
		}
	}()
	s.logf("session %s: opened (%s)", peer, req.Client)
	if !send(&Response{ID: req.ID, OK: true, Hello: &Hello{Version: Version, Device: s.Device.Info(), Peer: peer,
		IdleMS: s.idle().Milliseconds()}}) {
		return
	}
	for {
		req, ok := read()
		if !ok {
			return
		}
		var resp *Response
		if err := json.Unmarshal(sc.Bytes(), req); err != nil {
			resp = &Response{ID: req.ID, Code: CodeBadRequest, Error: "malformed request: " + err.Error()}
		} else {
			resp = Dispatch(sess, req)
		}
		if !send(resp) {
			return
		}
	}
}

// Dispatch runs one request (other than hello) on a session, checking
// the request's fields and the protocol's limits first.
func Dispatch(sess Session, req *Request) *Response {
	r := &Response{ID: req.ID}
	fail := func(err error) *Response {
		return &Response{ID: req.ID, Code: CodeOf(err), Error: err.Error()}
	}
	bad := func(format string, a ...any) *Response { return fail(Errorf(CodeBadRequest, format, a...)) }
	var err error
	switch req.Op {
	case OpPing:
	case OpHello:
		return bad("hello was already said on this connection")
	case OpCreateQP:
		if req.Attr == nil {
			return bad("create_qp needs attr")
		}
		var qi QPInfo
		qi, err = sess.CreateQP(*req.Attr)
		r.QP = &qi
	case OpRegMR:
		if req.Length <= 0 || req.Length > MaxMRLength {
			return bad("reg_mr length %d: want 1 to %d bytes", req.Length, MaxMRLength)
		}
		for _, a := range req.Access {
			switch a {
			case AccessLocalWrite, AccessRemoteRead, AccessRemoteWrite, AccessRemoteAtomic:
			default:
				return bad("reg_mr access %q: want %s, %s, %s or %s", a, AccessLocalWrite, AccessRemoteRead, AccessRemoteWrite, AccessRemoteAtomic)
			}
		}
		var mi MRInfo
		mi, err = sess.RegMR(req.QP, req.Length, req.Access)
		r.MR = &mi
	case OpReadMem:
		if req.Offset < 0 || req.Length < 0 || req.Length > MaxMRLength {
			return bad("read_mem offset %d length %d", req.Offset, req.Length)
		}
		r.Data, err = sess.ReadMem(req.MR, req.Offset, req.Length)
	case OpWriteMem:
		if req.Offset < 0 {
			return bad("write_mem offset %d", req.Offset)
		}
		err = sess.WriteMem(req.MR, req.Offset, req.Data)
	case OpInvalidate:
		err = sess.InvalidateMR(req.MR)
	case OpPostRecv:
		if req.Count < 0 || req.Count > MaxRecvWQEs || req.Size < 0 || req.Size > MaxRecvSize {
			return bad("post_recv count %d size %d: at most %d WQEs of %d bytes", req.Count, req.Size, MaxRecvWQEs, MaxRecvSize)
		}
		err = sess.PostRecv(req.QP, req.Count, req.Size)
	case OpPostSend:
		wrs := req.WRs
		if req.WR != nil {
			wrs = append([]WR{*req.WR}, wrs...)
		}
		if len(wrs) == 0 || len(wrs) > MaxPostWRs {
			return bad("post_send needs wr, or 1 to %d wrs (got %d)", MaxPostWRs, len(wrs))
		}
		for i, wr := range wrs {
			switch wr.Op {
			case WRSend, WRSendImm, WRSendInv, WRWrite, WRWriteImm, WRRead, WRCmpSwap, WRFetchAdd:
			default:
				return bad("post_send work request %d: op %q", i+1, wr.Op)
			}
			if wr.Length < 0 || wr.Length > MaxMRLength || len(wr.Data) > MaxMRLength {
				return bad("post_send work request %d: length %d (data %d bytes): at most %d", i+1, wr.Length, len(wr.Data), MaxMRLength)
			}
		}
		for i, wr := range wrs {
			if err = sess.PostSend(req.QP, wr); err != nil {
				if len(wrs) > 1 {
					err = fmt.Errorf("work request %d of %d (the ones before it are posted): %w", i+1, len(wrs), err)
				}
				break
			}
		}
	case OpPollCQ:
		r.Completions, err = sess.PollCQ(req.QP)
	case OpQueryQP:
		var st QPStatus
		st, err = sess.QueryQP(req.QP)
		r.Status = &st
	case OpDestroyQP:
		err = sess.DestroyQP(req.QP)
	case OpCounters:
		r.Counters, err = sess.Counters()
	default:
		return bad("unknown op %q", req.Op)
	}
	if err != nil {
		return fail(err)
	}
	r.OK = true
	return r
}

// ReadLine reads one JSON line into v (for tools and tests speaking the
// protocol by hand).
func ReadLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil && (err != io.EOF || len(line) == 0) {
		return err
	}
	return json.Unmarshal(line, v)
}
