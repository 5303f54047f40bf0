// Package script reads and runs RC scenario scripts: line-oriented
// descriptions of a scenario in the manner of packetdrill (set the QP up,
// tell the device to post, inject packets as its peer with `<`, expect
// the device's packets with `>`, its completions and QP state), each
// expectation naming the clause it stands for. A script runs through the
// same machinery as the suite's Go scenarios: a harness.Peer on a fresh
// connection of any dut.DUT, a failed line blaming its clause (a setup
// line the clause governing it, leaving the script's own clauses
// indeterminate), and every trace audited by every passive monitor.
//
// The format is documented in docs/scripts.md.
package script

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// Script is a parsed scenario script.
type Script struct {
	File string
	// DeviceIsRequester: the device is the requester and the harness
	// plays the responder (`side requester`).
	DeviceIsRequester bool
	// Config is the device QP's configuration (`qp` line).
	Config dut.ConnConfig
	// NoAtomics: `qp atomics=no`, the device grants no remote atomic
	// access, whatever ATOMICs the script sends it.
	NoAtomics bool
	Steps     []*Step
}

// Kind is what a step does.
type Kind uint8

// Step kinds, one per command of the format.
const (
	Inject     Kind = iota // < OPCODE fields
	Expect                 // > or >> OPCODE patterns
	Nothing                // > nothing [OPCODE patterns]
	Post                   // post OP args: a work request on the device's send queue
	PostRecv               // post-recv: receive WQEs on the device
	Invalidate             // invalidate-rkey: the device's memory region's R_Key
	MemWrite               // mem-write: into the device's memory region
	MemExpect              // mem-expect: the device's memory region holds these bytes
	Completion             // completion: the device produces this completion
	State                  // state: the device QP is in this state
	Wait                   // wait: let time pass
)

// Checks reports whether a step of kind k checks the device (and so
// stands for a clause).
func (k Kind) Checks() bool {
	switch k {
	case Expect, Nothing, MemExpect, Completion, State:
		return true
	}
	return false
}

// Role is how a step's clause is blamed when the step fails.
type Role uint8

// Roles (the Go scenarios' Peer.Own, Peer.Setup and Peer.Trigger).
const (
	Check   Role = iota // the script's own check of Clause: a failure fails it
	Setup               // a precondition Clause governs: a failure is Clause's finding, the script's clauses indeterminate
	Trigger             // the behaviour the script needs to reach its clauses: a failure leaves them not exercised
)

// Time is a point in time on the device's clock: absolute (since the
// connection opened, `@5ms`) or relative to the previous line's event
// (`+5ms`, or a bare duration in a bound).
type Time struct {
	Set bool
	Abs bool
	D   time.Duration
}

func (t Time) String() string {
	if t.Abs {
		return "@" + t.D.String()
	}
	return t.D.String()
}

// at resolves t against ref, the previous line's event.
func (t Time) at(ref time.Duration) time.Duration {
	if t.Abs {
		return t.D
	}
	return ref + t.D
}

// Base is what a number in a script counts from.
type Base uint8

// Bases of numbers.
const (
	Lit    Base = iota // a literal
	EPSN               // the PSN the device's responder expects first
	DPSN               // the first PSN the device's requester sends
	Next               // the peer's next request PSN (injected requests only)
	BadKey             // an R_Key the device never gave: its own with every bit flipped (injected rkey only)
)

// Num is a number, or an offset from one of the connection's PSNs.
type Num struct {
	Base Base
	// Off is the offset, or a literal's 64 bits (uint64(Off) is its
	// value: an ATOMIC operand may use all 64).
	Off int64
}

// Pattern is a field's value (injected) or what it may be (expected):
// anything, one value, or an inclusive range (modulo 2^24 for PSNs).
type Pattern struct {
	Any    bool
	Lo, Hi Num
	Range  bool
}

// Field is one field=value of a step.
type Field struct {
	Name string
	Raw  string // the value as written
	Col  int
	Pat  Pattern
	Data []byte // data=HEX
}

// Step is one line of a script that does something.
type Step struct {
	Line, Col int
	Text      string // the line as written, without its comment
	Kind      Kind
	At        Time // when to start the step (prefix @T or +T)
	// Clause is the clause the step stands for (checks, setup and
	// trigger lines; "" for a setup or trigger no rule governs).
	Clause string
	Role   Role
	// Inject, Expect and Nothing: the opcodes (Expect and Nothing: any of
	// them, none meaning any opcode) and fields.
	Ops    []wire.Opcode
	Fields []Field
	// Strict: `>` (the device's next packet must match); `>>` passes over
	// packets that do not.
	Strict bool
	// Bounds of checks: the event comes by Within (default 100 ms after
	// the previous line's event) and not before NotBefore.
	Within, NotBefore Time
	// Post: the work request. Off is its offset in the peer's memory.
	WR  dut.WR
	Off int64
	// PostRecv: N WQEs of Size bytes.
	N, Size int
	// MemWrite and MemExpect: the bytes at Off of the device's region.
	Data []byte
	// Completion: what to match (Recv, and each Has* field when set).
	Recv                      bool
	Status                    dut.Status
	HasStatus, HasOp, HasByte bool
	HasImm                    bool
	Bytes                     int
	// State: the expected QP state.
	QPState dut.QPState
	// Wait: how long.
	Wait time.Duration
}

func (s *Step) String() string { return fmt.Sprintf("line %d: %s", s.Line, s.Text) }

// Clauses returns the clauses the script checks (its check lines'), in
// order of first appearance.
func (s *Script) Clauses() []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range s.Steps {
		if st.Kind.Checks() && st.Role == Check && !seen[st.Clause] {
			seen[st.Clause] = true
			out = append(out, st.Clause)
		}
	}
	return out
}

// Governing returns every clause a line of the script names (checks,
// setup and trigger lines): the labels of its spec.
func (s *Script) Governing() []string {
	out := s.Clauses()
	seen := map[string]bool{}
	for _, c := range out {
		seen[c] = true
	}
	for _, st := range s.Steps {
		if st.Clause != "" && !seen[st.Clause] {
			seen[st.Clause] = true
			out = append(out, st.Clause)
		}
	}
	return out
}
