package agentproto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Client is the harness's side of a session with an agent. Its methods
// may be called from several goroutines; requests go one at a time. While
// it is open it pings the agent whenever it has been quiet for a third of
// the agent's idle limit, so a harness waiting on the wire keeps its
// session.
type Client struct {
	addr  string
	conn  net.Conn
	r     *bufio.Reader
	hello Hello
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration

	mu      sync.Mutex
	pending *Pending // a request Start sent whose response is still unread
	next    uint64
	last    time.Time
	broken  error
	done    chan struct{}
	wg      sync.WaitGroup
}

// Dial connects to the agent at addr and says hello with the token.
func Dial(ctx context.Context, addr, token, client string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to the agent at %s: %w", addr, err)
	}
	c := &Client{addr: addr, conn: conn, r: bufio.NewReaderSize(conn, 64<<10), Timeout: 10 * time.Second,
		done: make(chan struct{})}
	resp, err := c.Do(&Request{Op: OpHello, Version: Version, Token: token, Client: client})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("saying hello to the agent at %s: %w", addr, err)
	}
	if resp.Hello == nil {
		conn.Close()
		return nil, fmt.Errorf("saying hello to the agent at %s: the answer has no hello", addr)
	}
	c.hello = *resp.Hello
	c.wg.Add(1)
	go c.keepalive()
	return c, nil
}

// Hello returns what the agent said in hello.
func (c *Client) Hello() Hello { return c.hello }

// Addr returns the agent's address.
func (c *Client) Addr() string { return c.addr }

func (c *Client) keepalive() {
	defer c.wg.Done()
	every := time.Duration(c.hello.IdleMS) * time.Millisecond / 3
	if every <= 0 {
		every = DefaultIdle / 3
	}
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.mu.Lock()
		quiet := time.Since(c.last) >= every
		c.mu.Unlock()
		if quiet {
			if _, err := c.Do(&Request{Op: OpPing}); err != nil {
				return
			}
		}
	}
}

// Do sends one request and waits for its response; a response with ok
// false comes back as an *Error.
func (c *Client) Do(req *Request) (*Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	if err := c.send(req); err != nil {
		return nil, err
	}
	return c.receive(req)
}

// Pending is a request sent without waiting for its response (Start).
type Pending struct {
	req  *Request
	done bool
	resp *Response
	err  error
}

// Start sends req without waiting for its response, which Wait returns.
// The agent answers in order, so every later request first takes this
// response off the connection: a harness can act on what the device
// does while the agent is still answering (a slow host's agent answers a
// post long after the device sent its first packet).
func (c *Client) Start(req *Request) *Pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	p := &Pending{req: req}
	if err := c.send(req); err != nil {
		p.done, p.err = true, err
		return p
	}
	c.pending = p
	return p
}

// Wait returns the response to the request Start sent.
func (c *Client) Wait(p *Pending) (*Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == p {
		c.settle()
	}
	return p.resp, p.err
}

// settle takes the response to a started request off the connection; the
// caller holds c.mu.
func (c *Client) settle() {
	p := c.pending
	if p == nil {
		return
	}
	c.pending = nil
	p.resp, p.err = c.receive(p.req)
	p.done = true
}

// send writes req with the next ID; the caller holds c.mu.
func (c *Client) send(req *Request) error {
	if c.broken != nil {
		return c.broken
	}
	c.next++
	req.ID = c.next
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", req.Op, err)
	}
	c.conn.SetDeadline(time.Now().Add(c.Timeout))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		c.broken = fmt.Errorf("agent connection to %s lost: %w", c.addr, err)
		return c.broken
	}
	return nil
}

// receive reads the response to req, which send wrote; the caller holds
// c.mu.
func (c *Client) receive(req *Request) (*Response, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	c.conn.SetDeadline(time.Now().Add(c.Timeout))
	var resp Response
	for {
		if err := ReadLine(c.r, &resp); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				c.broken = fmt.Errorf("agent at %s answered %s with something that is not JSON: %w", c.addr, req.Op, err)
			} else {
				c.broken = fmt.Errorf("agent connection to %s lost waiting for %s: %w", c.addr, req.Op, err)
			}
			return nil, c.broken
		}
		if resp.ID == req.ID {
			break
		}
	}
	c.last = time.Now()
	if !resp.OK {
		if resp.Code == CodeUnauthorized {
			c.broken = &Error{Code: resp.Code, Msg: resp.Error}
		}
		return nil, &Error{Code: resp.Code, Msg: resp.Error}
	}
	return &resp, nil
}

// Close ends the session: the agent frees everything it created.
func (c *Client) Close() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	close(c.done)
	err := c.conn.Close()
	c.wg.Wait()
	return err
}

// CreateQP creates a QP connected to the harness.
func (c *Client) CreateQP(a QPAttr) (QPInfo, error) {
	r, err := c.Do(&Request{Op: OpCreateQP, Attr: &a})
	if err != nil {
		return QPInfo{}, err
	}
	if r.QP == nil {
		return QPInfo{}, fmt.Errorf("agent answered create_qp without qp_info")
	}
	return *r.QP, nil
}

// RegMR registers length bytes for the QP with the access rights.
func (c *Client) RegMR(qp uint32, length int, access ...string) (MRInfo, error) {
	r, err := c.Do(&Request{Op: OpRegMR, QP: qp, Length: length, Access: access})
	if err != nil {
		return MRInfo{}, err
	}
	if r.MR == nil {
		return MRInfo{}, fmt.Errorf("agent answered reg_mr without mr_info")
	}
	return *r.MR, nil
}

// ReadMem reads n bytes at off of the memory region.
func (c *Client) ReadMem(mr uint32, off, n int) ([]byte, error) {
	r, err := c.Do(&Request{Op: OpReadMem, MR: mr, Offset: off, Length: n})
	if err != nil {
		return nil, err
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("agent returned %d bytes for a read of %d", len(r.Data), n)
	}
	return r.Data, nil
}

// WriteMem writes data at off of the memory region.
func (c *Client) WriteMem(mr uint32, off int, data []byte) error {
	_, err := c.Do(&Request{Op: OpWriteMem, MR: mr, Offset: off, Data: data})
	return err
}

// InvalidateMR makes the region's R_Key invalid (the memory stays
// readable through the agent).
func (c *Client) InvalidateMR(mr uint32) error {
	_, err := c.Do(&Request{Op: OpInvalidate, MR: mr})
	return err
}

// PostRecv posts count receive WQEs of size bytes (on the QP's SRQ if it
// has one).
func (c *Client) PostRecv(qp uint32, count, size int) error {
	_, err := c.Do(&Request{Op: OpPostRecv, QP: qp, Count: count, Size: size})
	return err
}

// PostSends posts work requests on the QP's send queue in one request,
// in order.
func (c *Client) PostSends(qp uint32, wrs []WR) error {
	_, err := c.Do(&Request{Op: OpPostSend, QP: qp, WRs: wrs})
	return err
}

// StartPostSends posts work requests as PostSends does without waiting
// for the agent's answer: WaitPost returns it.
func (c *Client) StartPostSends(qp uint32, wrs []WR) *Pending {
	return c.Start(&Request{Op: OpPostSend, QP: qp, WRs: wrs})
}

// WaitPost returns the agent's answer to StartPostSends.
func (c *Client) WaitPost(p *Pending) error {
	_, err := c.Wait(p)
	return err
}

// PostSend posts a work request on the QP's send queue.
func (c *Client) PostSend(qp uint32, wr WR) error {
	_, err := c.Do(&Request{Op: OpPostSend, QP: qp, WR: &wr})
	return err
}

// PollCQ returns and clears the QP's completions.
func (c *Client) PollCQ(qp uint32) ([]Completion, error) {
	r, err := c.Do(&Request{Op: OpPollCQ, QP: qp})
	if err != nil {
		return nil, err
	}
	return r.Completions, nil
}

// QueryQP returns the QP's state.
func (c *Client) QueryQP(qp uint32) (QPStatus, error) {
	r, err := c.Do(&Request{Op: OpQueryQP, QP: qp})
	if err != nil {
		return QPStatus{}, err
	}
	if r.Status == nil {
		return QPStatus{}, fmt.Errorf("agent answered query_qp without status")
	}
	return *r.Status, nil
}

// DestroyQP destroys the QP and the memory regions registered for it.
func (c *Client) DestroyQP(qp uint32) error {
	_, err := c.Do(&Request{Op: OpDestroyQP, QP: qp})
	return err
}

// Counters returns the device's packet counters (names are the agent's).
func (c *Client) Counters() (map[string]int64, error) {
	r, err := c.Do(&Request{Op: OpCounters})
	if err != nil {
		return nil, err
	}
	return r.Counters, nil
}
