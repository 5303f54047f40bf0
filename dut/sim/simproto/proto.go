// Package simproto is the protocol between the sim adapter (dut/sim, the
// harness) and a device running in simulated time (an RTL or C model
// behind a small wrapper): JSON lines over the simulator's standard input
// and output. dut/sim/PROTOCOL.md documents it for people wrapping a
// model; this package is its one implementation in Go: the messages
// (the agent protocol's, dut/live/agentproto, with two more ops and the
// simulated time), the Client the adapter uses, and Serve, which runs any
// Simulator written in Go (cmd/rcconform-refsim wraps the reference).
package simproto

import "github.com/rcconform/rcconform/dut/live/agentproto"

// Version is the protocol version this package speaks.
const Version = 1

// Ops beyond the agent protocol's.
const (
	// OpFrame gives the device an Ethernet frame at the current time.
	OpFrame = "frame"
	// OpAdvance lets simulated time run until a given time, or until
	// the device emits a frame.
	OpAdvance = "advance"
)

// Ops of the agent protocol that a simulator serves: create_qp, reg_mr,
// read_mem, write_mem, invalidate_mr, post_recv, post_send, poll_cq,
// query_qp and destroy_qp (agentproto's Op* constants).
var AgentOps = []string{agentproto.OpCreateQP, agentproto.OpRegMR, agentproto.OpReadMem, agentproto.OpWriteMem,
	agentproto.OpInvalidate, agentproto.OpPostRecv, agentproto.OpPostSend, agentproto.OpPollCQ, agentproto.OpQueryQP,
	agentproto.OpDestroyQP}

// Capabilities a simulator declares in hello (Hello.Caps): what the
// device model does beyond taking frames, creating QPs and posting
// receive WQEs. The suite reports the clauses that need a missing one
// unsupported.
const (
	CapPostSend = "post_send" // post_send: the device as a requester
	CapPollCQ   = "poll_cq"   // poll_cq and query_qp: completions and QP state
	CapMemory   = "memory"    // reg_mr's memory readable and writable (read_mem, write_mem, invalidate_mr)
	CapAtomics  = "atomics"   // CmpSwap and FetchAdd, as responder and requester
	CapSRQ      = "srq"       // create_qp with srq
	CapCredits  = "credits"   // end-to-end credits from a receive queue depth the harness controls
)

// AllCaps lists every capability, in the order PROTOCOL.md gives them.
var AllCaps = []string{CapPostSend, CapPollCQ, CapMemory, CapAtomics, CapSRQ, CapCredits}

// Request is one request line: an agent protocol request, or one of the
// two ops of simulated time.
type Request struct {
	agentproto.Request
	// Frame is frame's Ethernet frame (base64 in JSON).
	Frame []byte `json:"frame,omitempty"`
	// Until is advance's target time, in nanoseconds of simulated time.
	Until *int64 `json:"until,omitempty"`
}

// Hello is what a simulator adds to the agent protocol's hello.
type Hello struct {
	// Caps are the capabilities of the device model (Cap*).
	Caps []string `json:"caps"`
}

// Completion is a completion with the simulated time the device
// produced it.
type Completion struct {
	agentproto.Completion
	Time int64 `json:"time"` // nanoseconds
}

// Response is one response line.
type Response struct {
	agentproto.Response
	Sim *Hello `json:"sim,omitempty"`
	// Time is the device's simulated time in nanoseconds after the
	// request: in every response to hello and advance, and wherever the
	// simulator gives it.
	Time *int64 `json:"time,omitempty"`
	// Frame is the frame advance stopped for, emitted at Time.
	Frame []byte `json:"frame,omitempty"`
	// Completions (poll_cq) carry their time; they take the place of
	// the agent protocol's.
	Completions []Completion `json:"completions,omitempty"`
}
