// Package agentproto is the control protocol between the live adapter
// (the harness) and the agent on the device's host: JSON lines over TCP.
// PROTOCOL.md beside dut/live documents it for people writing their own
// agent; this package is its one implementation in Go: the messages, a
// Server that runs any Device (the reference in `rcconform serve`,
// libibverbs in cmd/rcconform-agent), and the Client the adapter uses.
//
// Every request is one JSON object on one line with an "id" and an "op";
// every response is one line with the same "id", "ok", and either the
// op's result or "error" with a "code". The first request on a
// connection must be "hello" (with the token when the agent has one);
// everything a session creates belongs to it alone and is destroyed when
// the connection closes or stays silent longer than the agent's idle
// limit.
package agentproto

import (
	"errors"
	"fmt"
	"time"
)

// Version is the protocol version this package speaks.
const Version = 1

// DefaultPort is the agent's default TCP port (next to RoCEv2's 4791).
const DefaultPort = 4792

// DefaultIdle is how long an agent keeps a silent session.
const DefaultIdle = 30 * time.Second

// Ops.
const (
	OpHello      = "hello"
	OpPing       = "ping"
	OpCreateQP   = "create_qp"
	OpRegMR      = "reg_mr"
	OpReadMem    = "read_mem"
	OpWriteMem   = "write_mem"
	OpInvalidate = "invalidate_mr"
	OpPostRecv   = "post_recv"
	OpPostSend   = "post_send"
	OpPollCQ     = "poll_cq"
	OpQueryQP    = "query_qp"
	OpDestroyQP  = "destroy_qp"
	OpCounters   = "counters"
)

// Error codes.
const (
	CodeBadRequest   = "bad-request"  // malformed JSON, unknown op, missing or invalid fields
	CodeUnauthorized = "unauthorized" // hello missing, wrong token or version
	CodeNotFound     = "not-found"    // a handle this session did not create
	CodeUnsupported  = "unsupported"  // the device cannot do it (atomics, SRQ, an MTU)
	CodeDevice       = "device"       // the device or its driver refused
)

// Request is one request line. Which fields count depends on Op (see
// PROTOCOL.md); the others are left out.
type Request struct {
	ID uint64 `json:"id"`
	Op string `json:"op"`

	// hello
	Version int    `json:"version,omitempty"`
	Token   string `json:"token,omitempty"`
	Client  string `json:"client,omitempty"`

	// Handles: every op on a QP or MR names it.
	QP uint32 `json:"qp,omitempty"`
	MR uint32 `json:"mr,omitempty"`

	// create_qp
	Attr *QPAttr `json:"attr,omitempty"`

	// reg_mr: Length bytes with Access rights.
	Length int      `json:"length,omitempty"`
	Access []string `json:"access,omitempty"`

	// read_mem, write_mem
	Offset int    `json:"offset,omitempty"`
	Data   []byte `json:"data,omitempty"` // base64 in JSON

	// post_recv: Count WQEs of Size bytes.
	Count int `json:"count,omitempty"`
	Size  int `json:"size,omitempty"`

	// post_send: one work request (WR), or several posted in order in
	// one request (WRs, at most MaxPostWRs), so that they reach the send
	// queue together rather than one control round trip apart.
	WR  *WR  `json:"wr,omitempty"`
	WRs []WR `json:"wrs,omitempty"`
}

// MaxPostWRs is the most work requests one post_send may carry.
const MaxPostWRs = 64

// Access rights for reg_mr.
const (
	AccessLocalWrite   = "local_write"
	AccessRemoteRead   = "remote_read"
	AccessRemoteWrite  = "remote_write"
	AccessRemoteAtomic = "remote_atomic"
)

// QPAttr are the attributes of an RC QP to create, and the harness's side
// it connects to.
type QPAttr struct {
	MTU             int    `json:"mtu"`                // path MTU: 256 … 4096
	SQPSN           uint32 `json:"sq_psn"`             // first PSN the device's requester uses
	RQPSN           uint32 `json:"rq_psn"`             // first PSN the device's responder expects
	Timeout         uint8  `json:"timeout"`            // local ACK timeout exponent, 0 = none
	RetryCnt        uint8  `json:"retry_cnt"`          // 0–7
	RNRRetry        uint8  `json:"rnr_retry"`          // 0–7, 7 = infinite
	MinRNRTimer     uint8  `json:"min_rnr_timer"`      // RNR timer code advertised in RNR NAKs
	MaxRdAtomic     int    `json:"max_rd_atomic"`      // initiator depth
	MaxDestRdAtomic int    `json:"max_dest_rd_atomic"` // responder resources
	SRQ             bool   `json:"srq"`                // attach the receive side to a new SRQ
	// RemoteAtomic grants remote atomic access on the QP itself (verbs:
	// IBV_ACCESS_REMOTE_ATOMIC in qp_access_flags). Without it an ATOMIC
	// is an invalid request, whatever the memory region allows.
	RemoteAtomic bool `json:"remote_atomic,omitempty"`
	MaxSendWR    int  `json:"max_send_wr,omitempty"`
	MaxRecvWR    int  `json:"max_recv_wr,omitempty"`
	// LocalAddress selects the device's GID by its IP address (empty: the
	// agent's default GID).
	LocalAddress string `json:"local_address,omitempty"`
	// RemoteAddress and RemoteQPN are the harness's: the QP's remote GID
	// (an IPv4 or IPv6 address) and destination QP.
	RemoteAddress string `json:"remote_address"`
	RemoteQPN     uint32 `json:"remote_qpn"`
	// RemotePort is the UDP port the device sends to: 4791, the RoCEv2
	// port, unless the agent says in hello that it can send elsewhere
	// (rcconform serve can, for loopback tests).
	RemotePort int `json:"remote_port,omitempty"`
}

// WR operations.
const (
	WRSend     = "send"
	WRSendImm  = "send_imm"
	WRSendInv  = "send_inv"
	WRWrite    = "write"
	WRWriteImm = "write_imm"
	WRRead     = "read"
	WRCmpSwap  = "cmp_swap"
	WRFetchAdd = "fetch_add"
	WRRecv     = "recv" // completions only
)

// WR is a send-queue work request.
type WR struct {
	ID         uint64 `json:"wr_id"`
	Op         string `json:"op"`
	Data       []byte `json:"data,omitempty"`   // SEND/WRITE payload
	Length     int    `json:"length,omitempty"` // READ length
	RemoteAddr uint64 `json:"remote_addr,omitempty"`
	RKey       uint32 `json:"rkey,omitempty"` // for send_inv: the R_Key to invalidate
	Imm        uint32 `json:"imm,omitempty"`
	CompareAdd uint64 `json:"compare_add,omitempty"`
	Swap       uint64 `json:"swap,omitempty"`
}

// Completion statuses (verbs' IBV_WC_* names, lower case).
const (
	StatusSuccess        = "success"
	StatusRetryExceeded  = "retry_exc_err"
	StatusRNRRetryExc    = "rnr_retry_exc_err"
	StatusRemAccessErr   = "rem_access_err"
	StatusRemInvReqErr   = "rem_inv_req_err"
	StatusRemOpErr       = "rem_op_err"
	StatusFlushed        = "wr_flush_err"
	StatusLocalErr       = "loc_err" // any local error (loc_len_err, loc_qp_op_err, loc_prot_err, …)
	StatusOtherErrPrefix = "err:"    // other statuses: "err:" and verbs' name
)

// Completion is one completion queue entry.
type Completion struct {
	WRID   uint64 `json:"wr_id"`
	Op     string `json:"op"` // a WR op, or "recv"
	Recv   bool   `json:"recv,omitempty"`
	Status string `json:"status"`
	// VendorErr is the driver's vendor error code, for humans.
	VendorErr uint32 `json:"vendor_err,omitempty"`
	Bytes     int    `json:"bytes,omitempty"`
	Imm       uint32 `json:"imm,omitempty"`
	HasImm    bool   `json:"has_imm,omitempty"`
}

// DeviceInfo is what hello reports about the device.
type DeviceInfo struct {
	Agent   string `json:"agent"`          // "rcconform-agent (libibverbs)", "rcconform serve (reference)"
	Name    string `json:"name"`           // the RDMA device, e.g. "rxe0", "mlx5_0"
	Port    int    `json:"port"`           // its port number
	Address string `json:"address"`        // the default GID's IP address: where RoCEv2 packets go
	GIDs    []GID  `json:"gids,omitempty"` // the port's RoCEv2 GIDs
	UDPPort int    `json:"udp_port"`       // the device's RoCEv2 UDP port: 4791
	MTU     int    `json:"active_mtu"`     // the port's active MTU
	PKey    uint16 `json:"pkey"`           // the P_Key at index 0, which its QPs use
	Atomics bool   `json:"atomics"`        // remote atomics supported
	SRQ     bool   `json:"srq"`            // SRQs supported
	MaxRd   int    `json:"max_qp_rd_atom"` // most responder resources
	MaxInit int    `json:"max_qp_init_rd_atom"`
	// AnyPeerPort: the device can send to a UDP port other than 4791
	// (QPAttr.RemotePort), as rcconform serve can.
	AnyPeerPort bool `json:"any_peer_port,omitempty"`
	// Reference is set by rcconform serve: the defect switched on.
	Defect string `json:"defect,omitempty"`
	// TimerNS is the granularity of the device's retry and RNR timers in
	// nanoseconds, where the agent knows it (a kernel driver's jiffy):
	// such a timer may fire up to one tick before its interval, so the
	// harness adds it to its timing tolerance. 0: unknown or exact.
	TimerNS int64 `json:"timer_ns,omitempty"`
	// What the device is, for a run's certificate, where the agent can
	// tell (empty or 0: not told): the device's vendor and part IDs,
	// hardware and firmware versions as its driver reports them, the
	// driver, and the host's operating system kernel.
	VendorID     uint32 `json:"vendor_id,omitempty"`
	VendorPartID uint32 `json:"vendor_part_id,omitempty"`
	HWVersion    uint32 `json:"hw_ver,omitempty"`
	Firmware     string `json:"fw_ver,omitempty"`
	Driver       string `json:"driver,omitempty"`
	Kernel       string `json:"kernel,omitempty"`
}

// GID is one RoCEv2 GID of the device's port.
type GID struct {
	Index   int    `json:"index"`
	GID     string `json:"gid"`
	Address string `json:"address"`
}

// Hello is the hello response.
type Hello struct {
	Version int        `json:"version"`
	Device  DeviceInfo `json:"device"`
	// Peer is the harness's address as the agent sees the TCP connection:
	// the address the device should see its RoCEv2 packets come from when
	// both go the same way.
	Peer string `json:"peer"`
	// Idle is the agent's idle limit in milliseconds: a session silent
	// that long is closed and its resources freed.
	IdleMS int64 `json:"idle_ms"`
}

// QPInfo is the create_qp response.
type QPInfo struct {
	Handle uint32 `json:"qp"`
	QPN    uint32 `json:"qpn"`
	State  string `json:"state"`
	// Attr are the attributes the QP got (the driver may round some).
	Attr QPAttr `json:"attr"`
	// GIDIndex and Address: the source GID its packets carry.
	GIDIndex int    `json:"gid_index"`
	Address  string `json:"address"`
	PKey     uint16 `json:"pkey"`
}

// MRInfo is the reg_mr response.
type MRInfo struct {
	Handle uint32 `json:"mr"`
	RKey   uint32 `json:"rkey"`
	LKey   uint32 `json:"lkey"`
	Addr   uint64 `json:"addr"`
	Length int    `json:"length"`
}

// QPStatus is the query_qp response.
type QPStatus struct {
	State string `json:"state"` // RESET, INIT, RTR, RTS, SQD, SQE, ERROR
}

// Response is one response line.
type Response struct {
	ID    uint64 `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`

	Hello       *Hello           `json:"hello,omitempty"`
	QP          *QPInfo          `json:"qp_info,omitempty"`
	MR          *MRInfo          `json:"mr_info,omitempty"`
	Data        []byte           `json:"data,omitempty"`
	Completions []Completion     `json:"completions,omitempty"`
	Status      *QPStatus        `json:"status,omitempty"`
	Counters    map[string]int64 `json:"counters,omitempty"`
}

// Error is an error with a protocol code: what a Device returns to say
// which code the response carries, and what the Client returns for a
// response with ok false.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg + " (" + e.Code + ")" }

// Errorf returns an *Error with the code.
func Errorf(code, format string, a ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// CodeOf returns the protocol code of err: its *Error's code, or
// CodeDevice.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeDevice
}

// ErrUnsupported matches (errors.Is) every *Error with CodeUnsupported.
var ErrUnsupported = &Error{Code: CodeUnsupported, Msg: "unsupported by the device"}

// Is makes errors.Is(err, ErrUnsupported) true for any unsupported error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t == ErrUnsupported && e.Code == CodeUnsupported
}
