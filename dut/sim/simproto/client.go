package simproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
)

// ErrProtocol is wrapped by every error about a simulator that broke the
// protocol: no answer within the wall-clock deadline, a line that is not
// JSON or answers another request, time going backwards or past what was
// asked, an exit. The simulator is stopped; nothing it says afterwards
// is read.
var ErrProtocol = errors.New("the simulator broke the protocol")

// DefaultTimeout is how long, in wall-clock time, the client waits for
// one answer: a slow model advancing through a long timer answers late.
const DefaultTimeout = 2 * time.Minute

// Client runs a simulator as a subprocess and speaks the protocol with
// it, one request at a time.
type Client struct {
	command string
	cmd     *exec.Cmd
	in      *os.File // the simulator's standard input
	out     *os.File // its standard output
	r       *bufio.Reader
	stderr  *tail
	hello   Response
	// Timeout bounds each answer in wall-clock time.
	Timeout time.Duration

	mu     sync.Mutex
	next   uint64
	now    time.Duration // the simulator's time, as it last said
	broken error
	exited chan struct{}
	exit   error
}

// Start runs command with `sh -c` and says hello. stderr, when not nil,
// also receives what the simulator writes on its standard error (the
// client keeps its last lines for its errors).
func Start(command string, timeout time.Duration, stderr io.Writer) (*Client, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("no simulator command")
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}
	c := &Client{command: command, in: inW, out: outR, r: bufio.NewReaderSize(outR, 64<<10), stderr: &tail{w: stderr},
		Timeout: timeout, exited: make(chan struct{})}
	c.cmd = exec.Command("sh", "-c", command)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.stderr
	c.cmd.WaitDelay = time.Second
	ownGroup(c.cmd)
	err = c.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting the simulator %q: %w", command, err)
	}
	go func() {
		c.exit = c.cmd.Wait()
		close(c.exited)
	}()
	resp, err := c.Do(&Request{Request: agentproto.Request{Op: agentproto.OpHello, Version: Version, Client: "rcconform sim adapter"}})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("saying hello to the simulator %q: %w", command, err)
	}
	if resp.Hello == nil || resp.Sim == nil || resp.Time == nil {
		c.Close()
		return nil, c.breaks("hello", line(resp), "an answer with hello, sim and time")
	}
	if resp.Hello.Version != Version {
		c.Close()
		return nil, c.breaks("hello", line(resp), fmt.Sprintf("protocol version %d", Version))
	}
	c.hello = *resp
	return c, nil
}

// Hello returns the simulator's answer to hello.
func (c *Client) Hello() Response { return c.hello }

// Now returns the simulator's time as it last said.
func (c *Client) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Err returns the error that broke the session, or nil.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

func line(r *Response) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// breaks records that the simulator broke the protocol answering op with
// what it sent instead of what was wanted, stops it, and returns the
// error; the caller holds c.mu or is still starting.
func (c *Client) breaks(op, sent, want string) error {
	c.broken = fmt.Errorf("%w: %s answered %s with %s; wanted %s%s", ErrProtocol, c.command, op, clip(sent), want, c.stderr.last())
	c.kill()
	return c.broken
}

func clip(s string) string {
	const max = 300
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// Do sends one request and reads its answer, checking its framing and
// time: an answer with ok false comes back as an *agentproto.Error (the
// simulator refused, the session goes on); a broken protocol as an error
// wrapping ErrProtocol (the session is over).
func (c *Client) Do(req *Request) (*Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, c.broken
	}
	c.next++
	req.ID = c.next
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", req.Op, err)
	}
	deadline := time.Now().Add(c.Timeout)
	_ = c.in.SetWriteDeadline(deadline)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return nil, c.lost(req.Op, "taking the request", err)
	}
	_ = c.out.SetReadDeadline(deadline)
	raw, err := c.r.ReadBytes('\n')
	if err != nil {
		return nil, c.lost(req.Op, "answering", err)
	}
	var resp Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), "one JSON object on one line ("+err.Error()+")")
	}
	if resp.ID != req.ID {
		return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), fmt.Sprintf("the answer to request id %d", req.ID))
	}
	if !resp.OK {
		if resp.Code == "" {
			return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), `"ok":true, or "ok":false with a code`)
		}
		return nil, &agentproto.Error{Code: resp.Code, Msg: resp.Error}
	}
	if resp.Time != nil {
		t := time.Duration(*resp.Time)
		switch {
		case t < c.now:
			return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), fmt.Sprintf("a time no earlier than %d ns, the time it gave before (time must not go backwards)", int64(c.now)))
		case req.Op == OpAdvance && req.Until != nil && *resp.Time > *req.Until:
			return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), fmt.Sprintf("a time no later than until (%d ns)", *req.Until))
		case req.Op == OpAdvance && req.Until != nil && len(resp.Frame) == 0 && *resp.Time != *req.Until:
			return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), fmt.Sprintf("a frame, or the time until (%d ns)", *req.Until))
		}
		c.now = t
	} else if req.Op == OpAdvance {
		return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), "an answer with the time")
	}
	for _, cq := range resp.Completions {
		if time.Duration(cq.Time) > c.now {
			return nil, c.breaks(req.Op, strings.TrimRight(string(raw), "\n"), fmt.Sprintf("completions produced no later than now (%d ns)", int64(c.now)))
		}
	}
	return &resp, nil
}

// lost reports a simulator that did not take a request or answer it in
// time, or that exited; the caller holds c.mu.
func (c *Client) lost(op, doing string, err error) error {
	var why string
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		// A closed pipe: most likely the simulator is exiting.
		select {
		case <-c.exited:
		case <-time.After(time.Second):
		}
	}
	select {
	case <-c.exited:
		why = fmt.Sprintf("exited (%v) instead of %s", c.exit, doing)
	default:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			why = fmt.Sprintf("sent nothing %s within %v of wall-clock time (a hang, or a model too slow for the setting timeout)", doing, c.Timeout)
		} else {
			why = fmt.Sprintf("closed its pipe instead of %s (%v)", doing, err)
		}
	}
	c.broken = fmt.Errorf("%w: %s, asked %s, %s%s", ErrProtocol, c.command, op, why, c.stderr.last())
	c.kill()
	return c.broken
}

// kill stops the simulator, with whatever the shell started (its
// process group).
func (c *Client) kill() {
	killGroup(c.cmd)
	c.in.Close()
	c.out.Close()
}

// Close ends the session: the simulator's input closes, and a simulator
// still running a second later is killed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.Close()
	select {
	case <-c.exited:
	case <-time.After(time.Second):
		killGroup(c.cmd)
		<-c.exited
	}
	c.out.Close()
	if c.broken == nil {
		c.broken = errors.New("the simulator session is closed")
	}
	return nil
}

// tail keeps the last lines a simulator wrote on its standard error, and
// passes them on.
type tail struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	if t.w != nil {
		_, _ = t.w.Write(p)
	}
	return len(p), nil
}

// last returns the kept lines for an error message.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; its standard error ended with: " + s
}
