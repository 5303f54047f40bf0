package simproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
)

// Simulator is a device model in simulated time, as Serve runs it. Serve
// calls its methods from one goroutine.
type Simulator interface {
	// Info describes the device (the agent protocol's hello), Caps its
	// capabilities (Cap*).
	Info() agentproto.DeviceInfo
	Caps() []string
	// Session serves the agent protocol's verbs; they take no simulated
	// time. PollCQ stamps each completion with the time it was produced.
	Session() agentproto.Session
	PollCQ(qp uint32) ([]Completion, error)
	// Now is the current simulated time.
	Now() time.Duration
	// Frame gives the device a frame at the current time, after
	// everything it did at that time. A frame the device drops is no
	// error.
	Frame(frame []byte) error
	// Advance runs the device until it emits a frame (returned with its
	// time, at most until) or until is reached (no frame).
	Advance(until time.Duration) (at time.Duration, frame []byte, err error)
}

// MaxLine bounds a request line: a frame, a memory write of the agent
// protocol's largest region, base64.
const MaxLine = 4*agentproto.MaxMRLength/3 + 4096

// Serve answers requests from r on w until r ends, then closes the
// session. The first request must be hello with this Version. It returns
// nil at the end of r, or the error that stopped it (a line too long, w
// failing).
func Serve(r io.Reader, w io.Writer, sim Simulator) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	sess := sim.Session()
	defer sess.Close()
	greeted := false
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp := answer(sim, sess, line, &greeted)
		b, err := json.Marshal(resp)
		if err != nil {
			return fmt.Errorf("encoding the answer to request %d: %w", resp.ID, err)
		}
		if _, err := bw.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("writing the answer to request %d: %w", resp.ID, err)
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing the answer to request %d: %w", resp.ID, err)
		}
	}
}

// readLine reads one line of at most MaxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("a request line longer than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		}
		return nil, err
	}
}

func answer(sim Simulator, sess agentproto.Session, line []byte, greeted *bool) *Response {
	var req Request
	bad := func(format string, a ...any) *Response {
		return &Response{Response: agentproto.Response{ID: req.ID, Code: agentproto.CodeBadRequest, Error: fmt.Sprintf(format, a...)}}
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return bad("a request that is not JSON: %v", err)
	}
	now := func() *int64 { t := int64(sim.Now()); return &t }
	if !*greeted {
		if req.Op != agentproto.OpHello || req.Version != Version {
			return &Response{Response: agentproto.Response{ID: req.ID, Code: agentproto.CodeUnauthorized,
				Error: fmt.Sprintf("the first request must be hello with version %d (got %q, version %d)", Version, req.Op, req.Version)}}
		}
		*greeted = true
		return &Response{Response: agentproto.Response{ID: req.ID, OK: true,
			Hello: &agentproto.Hello{Version: Version, Device: sim.Info()}}, Sim: &Hello{Caps: sim.Caps()}, Time: now()}
	}
	fail := func(err error) *Response {
		return &Response{Response: agentproto.Response{ID: req.ID, Code: agentproto.CodeOf(err), Error: err.Error()}}
	}
	switch req.Op {
	case OpFrame:
		if len(req.Frame) == 0 {
			return bad("frame needs frame")
		}
		if err := sim.Frame(req.Frame); err != nil {
			return fail(err)
		}
		return &Response{Response: agentproto.Response{ID: req.ID, OK: true}, Time: now()}
	case OpAdvance:
		if req.Until == nil {
			return bad("advance needs until")
		}
		until := time.Duration(*req.Until)
		if until < sim.Now() {
			return bad("advance until %d ns: the device is already at %d ns", *req.Until, int64(sim.Now()))
		}
		at, frame, err := sim.Advance(until)
		if err != nil {
			return fail(err)
		}
		t := int64(at)
		return &Response{Response: agentproto.Response{ID: req.ID, OK: true}, Time: &t, Frame: frame}
	case agentproto.OpPollCQ:
		cs, err := sim.PollCQ(req.QP)
		if err != nil {
			return fail(err)
		}
		return &Response{Response: agentproto.Response{ID: req.ID, OK: true}, Completions: cs, Time: now()}
	case agentproto.OpCounters, agentproto.OpPing:
		return bad("%s is not a simulator op", req.Op)
	}
	r := agentproto.Dispatch(sess, &req.Request)
	return &Response{Response: *r, Time: now()}
}
