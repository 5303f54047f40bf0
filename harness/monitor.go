package harness

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// Checker is one monitor's state on one connection. Observe is called for
// every usable packet of the connection in trace order, before the
// connection model (Conn) absorbs the packet, so Conn describes what was
// seen before it. End is called once when the trace ends.
type Checker interface {
	Observe(c *Conn, r *trace.Record)
	End(c *Conn)
}

// OpcodeFilter may be implemented by a Checker whose Observe does nothing
// with the records of some opcodes (it returns at once, changing
// nothing): the Auditor then calls Observe only for the records whose
// opcode o has bit 1<<o set in Opcodes, which it asks once, right after
// the checker is made. The records a Checker sees are requests and
// responses of the RC transport, whose opcodes lie in 0x00–0x1F. A
// Checker that does not implement it sees every record.
type OpcodeFilter interface {
	Opcodes() uint32
}

// AllOpcodes is the opcode set (OpcodeFilter) of a Checker that sees
// every record.
const AllOpcodes = ^uint32(0)

// OpcodesWhere returns the opcode set (OpcodeFilter) of the RC opcodes
// for which keep holds.
func OpcodesWhere(keep func(op wire.Opcode) bool) uint32 {
	var set uint32
	for o := range 32 {
		if keep(wire.Opcode(o)) {
			set |= 1 << o
		}
	}
	return set
}

// Monitor is a passive check of one clause: it builds a Checker per
// connection. Monitors flag only what no legal device could have sent
// given what the trace shows, and report indeterminate where the trace
// lacks what the clause needs.
type Monitor struct {
	Clause string
	New    func(c *Conn) Checker
}

var (
	monMu    sync.Mutex
	monitors []Monitor
)

// RegisterMonitor adds a passive monitor; rule packages call it from init.
func RegisterMonitor(m Monitor) {
	monMu.Lock()
	defer monMu.Unlock()
	monitors = append(monitors, m)
}

// Monitors returns the registered monitors sorted by clause.
func Monitors() []Monitor {
	monMu.Lock()
	defer monMu.Unlock()
	out := append([]Monitor(nil), monitors...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Clause < out[j].Clause })
	return out
}

// SRQMode says what is known about the responder QPs' receive queues.
type SRQMode uint8

// SRQ knowledge.
const (
	SRQUnknown SRQMode = iota
	SRQNone            // no responder QP uses an SRQ
	SRQAll             // every responder QP uses an SRQ
)

// Settings are connection settings the user knows (audit flags) or the
// active run configured. Zero values mean unknown.
type Settings struct {
	MTU        int
	SRQ        SRQMode
	AckTimeout int // local ACK timeout exponent; -1 unknown
	RetryCnt   int // -1 unknown
	RNRRetry   int // -1 unknown
	// Active is set for traces of active runs: the trace holds the whole
	// connection from its first packet, nothing was lost before the
	// capture point, and the device is the side named by DeviceIs.
	Active bool
	// Complete says the capture holds each connection from its first
	// packet, taken where nothing is lost before the capture point.
	Complete bool
	// FromStart says the capture holds the connection from its first
	// packet: its CM handshake (REQ and REP) and its first request, at
	// the starting PSN the handshake announced. Unlike Complete it says
	// nothing of loss before the capture point, of the order the capture
	// shows packets in, or of the capture's end.
	FromStart bool
	// DeviceIsRequester is set (with Active) when the device under test is
	// the requester of the connection.
	DeviceIsRequester bool
	// StartKnown says StartPSN is the responder's expected PSN when the
	// trace begins (an active run sets up both QPs, so it knows): the
	// expected-PSN window is then exact from the first request, whatever
	// PSN that request carries (a scenario may open out of sequence).
	StartKnown bool
	StartPSN   wire.PSN
	// Tolerance is, for active runs on a real clock (a live device), how
	// far the trace's timestamps may be from when the device really sent
	// (the adapter's measured round trip and its own timer lateness, never
	// the device's timer granularity): a time
	// bound is judged failed only beyond it. Zero on a virtual clock.
	Tolerance time.Duration
	// ReceiveLoss is set, with Active, when the adapter's receive path
	// lost packets the device sent (dut.LossReporter): the trace shows
	// the connection from its start and every packet the harness sent,
	// but may lack some of the device's, so it is not Complete.
	ReceiveLoss bool
	// CaptureDrops is set when the capture reports packets it dropped
	// (pcapng interface statistics): a connection whose beginning the
	// trace shows is then not taken as complete.
	CaptureDrops bool
}

// UnknownSettings returns settings with every value unknown.
func UnknownSettings() Settings {
	return Settings{AckTimeout: -1, RetryCnt: -1, RNRRetry: -1}
}

// reqEntry is what the model remembers of one request PSN (16 bytes: a
// connection keeps up to reqWindow of them).
type reqEntry struct {
	frame int
	psn   wire.PSN
	sends uint16 // how many times this PSN was seen (first send + resends), at most 65535
	op    wire.Opcode
	flags reqFlags
}

// reqFlags are a reqEntry's flags.
type reqFlags uint8

const (
	reqValid  reqFlags = 1 << iota // the entry holds a request
	reqAckReq                      // the request asked for an acknowledgment
	// reqDropped: the latest copy was not executed (Conn.Dropped).
	reqDropped
)

// holds reports whether e is the entry of request PSN p.
func (e *reqEntry) holds(p wire.PSN) bool { return e != nil && e.flags&reqValid != 0 && e.psn == p }

// setDropped sets or clears reqDropped.
func (e *reqEntry) setDropped(d bool) {
	if d {
		e.flags |= reqDropped
	} else {
		e.flags &^= reqDropped
	}
}

// reqWindow is how many request PSNs the model remembers: PSN p in entry
// p mod reqWindow, kept in pages of reqPage entries allocated as PSNs
// reach them (a connection with few requests takes little memory).
const (
	reqWindow = 1 << 14
	reqPage   = 1 << 8
)

// reqAt returns the entry of PSN p (nil when its page was never used).
func (c *Conn) reqAt(p wire.PSN) *reqEntry {
	i := uint32(p) % reqWindow
	pg := c.reqs[i/reqPage]
	if pg == nil {
		return nil
	}
	return &pg[i%reqPage]
}

// Read is an RDMA READ request seen on the connection.
type Read struct {
	First, Last wire.PSN
	Length      uint32
	VA          uint64
	RKey        uint32
	Frame       int
	// Next is the next response PSN expected for this READ; Done when the
	// Last/Only response was seen.
	Next wire.PSN
	Done bool
}

// Conn is the model of one RC connection (one requester QP talking to one
// responder QP) built from the trace, shared by every monitor.
type Conn struct {
	ID          int
	Requester   netip.Addr
	Responder   netip.Addr
	ResponderQP uint32 // DestQP of requests
	RequesterQP uint32 // DestQP of responses (0 until a response is seen)
	Settings    Settings
	Capture     string
	// Follows is the connection whose addresses and responder QP this one
	// took over (0: none): its requests jumped to PSNs that no requester
	// of that QP could send (Auditor.reborn), so the QPs were made anew
	// with the same numbers. FollowsAt is the frame of the request that
	// showed it, FollowsWhy says what it showed.
	Follows    int
	FollowsAt  int
	FollowsWhy string
	// FirstFrame is the capture frame of the first record the auditor
	// gave the connection (0 on an active run, whose records have none).
	FirstFrame int

	// Requests.
	HaveReq    bool
	FirstReq   wire.PSN // first request PSN seen
	NextReq    wire.PSN // one past the highest PSN a request used (READ: its reserved range)
	reqs       [reqWindow / reqPage]*[reqPage]reqEntry
	Reads      []*Read // READs whose responses are not complete, oldest first
	MTUGuess   int     // largest payload of a First/Middle request or response seen (0: none)
	atomicOrig map[wire.PSN]uint64

	// Responses.
	HaveResp   bool
	LastAckPSN wire.PSN // PSN of the newest positive Acknowledge
	HaveAck    bool
	LastMSN    uint32
	HaveMSN    bool
	LastNAK    *trace.Record // most recent NAK (any code)
	Packets    int
	recent     []*trace.Record // the last records, at most recentMax, in recentBuf
	cur        *trace.Record   // the record being delivered to the monitors
	recentBuf  []*trace.Record
	sink       *Sink
	checkers   []Checker
	// route lists, for each RC opcode, the indexes in checkers of the
	// checkers that see its records (OpcodeFilter), in order. Connections
	// whose checkers ask for the same opcodes share one.
	route       *route
	lastRecTime int64 // the latest delivered record's Time (restartStep)
	shared      []sharedValue

	// The reconstruction (recon.go).
	// spans is a ring of the latest READ spans, nSpans of them made so
	// far; it grows (a power of two) with the spans up to spanRing, so
	// that a connection with few READs holds little.
	spans  []ReadSpan
	nSpans int
	// unordered counts the spans in the ring, the oldest left out, that
	// are not ordered (ReadSpan.ordered).
	unordered int
	exp       ExpectedPSN
	win       Window
	ids       [2]idOrder
	// seq numbers the records delivered to the checkers (Seq); runs
	// follows each direction's IPv4 Identifications in that order, and
	// missed holds the instances waiting for a sender's next record
	// (evidence.go).
	seq    uint64
	runs   [2]idRun
	missed []unlessMissed
	// held is a ring of the records held back to restore the senders'
	// order: nHeld of them from held[heldHead] on (Conn.heldAt).
	held     [heldRing]*trace.Record
	heldHead int
	nHeld    int
	out      [1]*trace.Record
	// Reordered counts the records the Auditor put back into their
	// sender's order (IPv4 IDs counting up showed the network reordered
	// them after the sender).
	Reordered int
	// Copies counts the responses not shown to the checkers because they
	// repeat a recent one of the same sender, IPv4 ID included: the
	// network or the capture made them (copyOf).
	Copies    int
	copies    CopyRing // the latest responses, for copyOf
	reqCopies CopyRing // the latest requests, for copyOf
	// For adoptRequests, as routed (connFor): whether a request and a
	// response were routed to the connection, and the latest response's
	// PSN.
	reqRouted, respRouted bool
	// reqKeyed: the connection has a request key (its responder QP came
	// from a request).
	reqKeyed bool
	respPSN  wire.PSN
	respPort uint16 // the latest routed response's UDP source port (0: unknown)
	// routedNext is one past the highest PSN a routed request reserved
	// (a READ: its range at the configured path MTU, or at the
	// smallest), valid once reqRouted: the pairing's view of NextReq.
	routedNext wire.PSN
	// routedLow is the lowest PSN a routed request carried (valid once
	// reqRouted): the requester's resends lie from there to routedNext.
	routedLow wire.PSN
	// replaced: a later connection took over this one's keys (Follows):
	// routing passes it by.
	replaced bool
	// adopted: the connection, begun by responses, took requests of a key
	// (adoptRequests), the first at adoptFirst; respSinceAdopt: a
	// response was routed to it since (which makes the adoption stick:
	// unadopt).
	adopted, respSinceAdopt bool
	adoptFirst              wire.PSN
	// lastReqFrame is the frame of the latest request routed here.
	lastReqFrame int
	// For walkResponse, as routed: the latest requests routed here, each
	// with the PSNs it reserved (a READ's whole range, at the configured
	// path MTU or at the smallest), until a response pairs the
	// connection.
	routed  [routedDepth]routedReq
	nRouted int
	// Late counts the responses shown to the checkers after a response
	// their sender sent later, as its IPv4 ID counting up shows, or (where
	// no ID tells) as an MSN behind one already delivered may show:
	// delayed (or copied) by the network or the capture past the reorder
	// buffer (lateResponse, staleMSN).
	Late int
	// newestRsp is the ID of the newest response delivered, by its
	// sender's count (haveRsp once there is one).
	newestRsp uint16
	haveRsp   bool
	// newestMSN is the newest MSN a response carried (haveMSN once one
	// did), for staleMSN.
	newestMSN    uint32
	newestMSNPSN wire.PSN // the PSN of the response that carried it
	haveMSN      bool
	// maybeCopies holds the packets that may be copies (MaybeCopy), or
	// late, with which, in the order of maybeOrder.
	maybeCopies map[*trace.Record]maybeKind
	maybeOrder  []*trace.Record
	start       startState
	startMsgs   []wire.PSN // message ends seen before the start test was decided
	// Request gaps (SeesEveryRequest): fresh requests skipping PSNs, and
	// whether a response showed one of them executed unseen.
	gaps           []reqGap
	nextLo, nextHi wire.PSN
	haveNext       bool
	missedReq      bool
	// psnFault: ResponsePSNFault.
	psnFault string
	// respIndexed: the Auditor's resps holds the connection's key.
	respIndexed bool
	// rs follows a request that may have begun QPs made anew with the
	// same numbers near the old PSNs (restart.go).
	rs restart
	// reservedOps are the latest requests with a reserved RC opcode,
	// nReserved how many were noted (ReservedOps).
	reservedOps []ReservedOp
	nReserved   int
}

// sharedValue is one entry of Conn.Shared.
type sharedValue struct {
	key any
	val any
}

// Shared returns the connection's value for key, made by make the first
// time key is asked for. Monitors use it to share one model of the
// connection among themselves (for example, all the checkers of a group
// of clauses feeding one tracker), keyed by a package-level key of their
// own. Every checker of a connection sees each record in turn before the
// next record, so a shared model can compute what a record means once and
// hand the result to each checker that asks. The value lives as long as
// the connection.
func (c *Conn) Shared(key any, make func() any) any {
	for i := range c.shared {
		if c.shared[i].key == key {
			return c.shared[i].val
		}
	}
	v := make()
	c.shared = append(c.shared, sharedValue{key: key, val: v})
	return v
}

// opFacts is what the connection model asks about an opcode on every
// packet; ops holds it for every opcode value, as wire.Opcode's methods
// answer (built once: the methods cost more than a load on this path).
type opFacts struct {
	class    wire.Class
	position wire.Position
	headers  wire.Header
	request  bool
	response bool
	ends     bool
}

var ops = func() (t [256]opFacts) {
	for i := range t {
		o := wire.Opcode(i)
		info, _ := o.Info()
		t[i] = opFacts{class: o.Class(), position: o.Position(), headers: info.Headers,
			request: o.IsRequest(), response: o.IsResponse(), ends: o.EndsMessage()}
	}
	return t
}()

// recentMax is how many records a finding's ladder shows.
const recentMax = 16

// Req returns what the model remembers of request PSN p.
func (c *Conn) Req(p wire.PSN) (op wire.Opcode, ackReq bool, frame int, ok bool) {
	e := c.reqAt(p)
	if !e.holds(p) {
		return 0, false, 0, false
	}
	return e.op, e.flags&reqAckReq != 0, e.frame, true
}

// ReqSends returns how many times request PSN p was seen.
func (c *Conn) ReqSends(p wire.PSN) int {
	e := c.reqAt(p)
	if !e.holds(p) {
		return 0
	}
	return int(e.sends)
}

// SentBefore reports whether a request used PSN p (a READ counts for its
// whole reserved range) before now.
func (c *Conn) SentBefore(p wire.PSN) bool {
	if !c.HaveReq {
		return false
	}
	return p.AtOrAfter(c.FirstReq) && p.Before(c.NextReq)
}

// ReadCovering returns the outstanding READ whose reserved range holds p.
func (c *Conn) ReadCovering(p wire.PSN) *Read {
	for _, r := range c.Reads {
		if p.InRange(r.First, r.Last) {
			return r
		}
	}
	return nil
}

// AtomicOriginal returns the original value first returned for the
// ATOMIC at PSN p.
func (c *Conn) AtomicOriginal(p wire.PSN) (uint64, bool) {
	v, ok := c.atomicOrig[p]
	return v, ok
}

// MTU returns the path MTU: the configured one, else the inferred one
// (0 if neither is known).
func (c *Conn) MTU() int {
	if c.Settings.MTU != 0 {
		return c.Settings.MTU
	}
	return c.MTUGuess
}

// BeyondMTU says why request r is one no responder can execute for its
// length: a SEND or RDMA WRITE packet carrying more than the path MTU (the
// connection's, configured or announced by its handshake, or, for an Only
// or Last packet, the one its full First and Middle packets show). It
// returns "" when r is not such a packet, or the MTU is not known.
func (c *Conn) BeyondMTU(r *trace.Record) string {
	p := r.Packet
	if cl := ops[p.Opcode].class; r.Truncated || cl != wire.ClassSend && cl != wire.ClassWrite {
		return ""
	}
	mtu, how := c.Settings.MTU, "the connection's path MTU"
	if mtu == 0 {
		if pos := ops[p.Opcode].position; pos != wire.PosOnly && pos != wire.PosLast {
			return ""
		}
		mtu, how = c.MTUGuess, "the path MTU its full First and Middle packets show"
	}
	if mtu == 0 || r.PayloadLen <= mtu {
		return ""
	}
	return fmt.Sprintf("a %s with PSN %d (frame %d) carries %d bytes, more than %s, %d", p.Opcode, p.PSN, r.Frame, r.PayloadLen, how, mtu)
}

// JudgesResponder reports whether responder-side monitors should judge
// this connection's responses: always for captures, and in active runs
// only when the device is the responder (the harness, playing the
// responder for requester rules, breaks responder rules on purpose).
func (c *Conn) JudgesResponder() bool { return !(c.Settings.Active && c.Settings.DeviceIsRequester) }

// JudgesRequester reports whether requester-side monitors should judge
// this connection's requests.
func (c *Conn) JudgesRequester() bool { return !c.Settings.Active || c.Settings.DeviceIsRequester }

// Complete reports whether the trace is known to hold the whole
// connection from its first packet with nothing lost before the capture
// point: true for active runs and for audits told so (--complete, for
// every connection; Settings.Complete set per connection, e.g. from a
// captured connection handshake), not for an active run whose adapter
// lost some of the device's packets (Settings.ReceiveLoss). A trace that merely shows the
// connection's beginning (FromStart) may still have lost packets on
// either side of the capture point, so it is not complete.
func (c *Conn) Complete() bool {
	return c.Settings.Active && !c.Settings.ReceiveLoss || c.Settings.Complete
}

// Recent returns the last records of the connection (for ladders).
func (c *Conn) Recent() []*trace.Record { return c.recent }

// absorb updates the model with r after the monitors saw it.
func (c *Conn) absorb(r *trace.Record) {
	p := r.Packet
	c.Packets++
	if len(c.recent) == recentMax {
		c.recent = c.recent[1:]
	}
	if len(c.recent) == cap(c.recent) {
		// No room left behind the last records: move them to the front
		// of the buffer (once every 3*recentMax records).
		if c.recentBuf == nil {
			c.recentBuf = make([]*trace.Record, 4*recentMax)
		}
		n := copy(c.recentBuf, c.recent)
		clear(c.recentBuf[n:])
		c.recent = c.recentBuf[:n]
	}
	c.recent = append(c.recent, r)
	c.StepWindow(r)
	defer c.syncExpected(r)
	c.reconStart(r)
	op := p.Opcode
	if ops[op].request {
		last := p.PSN
		if op == wire.ReadRequest {
			mtu := c.MTU()
			if mtu != 0 {
				last = p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1)
			}
		}
		e := c.reqAt(p.PSN)
		if e == nil {
			i := uint32(p.PSN) % reqWindow
			c.reqs[i/reqPage] = new([reqPage]reqEntry)
			e = c.reqAt(p.PSN)
		}
		if e.holds(p.PSN) {
			if e.sends < math.MaxUint16 {
				e.sends++
			}
		} else {
			*e = reqEntry{flags: reqValid, psn: p.PSN, op: op, frame: r.Frame, sends: 1}
			if p.AckReq {
				e.flags |= reqAckReq
			}
		}
		// A request behind NextReq is a resend or a duplicate: it uses
		// PSNs already counted and reserves nothing new, even when a
		// duplicate READ asks for more than the original did.
		fresh := !c.HaveReq || p.PSN.AtOrAfter(c.NextReq)
		lastMin, lastMax := last, last
		if op == wire.ReadRequest {
			if s := c.ReadSpanAt(p.PSN); s != nil && s.First == p.PSN {
				lastMin, lastMax = s.LastMin, s.LastMax
			} else if fresh || c.ReadSpanAt(p.PSN) == nil {
				s := c.newSpan(r)
				if !fresh {
					c.boundBySeen(s)
				}
				lastMin, lastMax = s.LastMin, s.LastMax
			}
		}
		if fresh && c.HaveReq {
			// The newest READ's span ends right before the next new
			// request's PSN (the requester numbers its requests
			// consecutively; a lost one only moves the bound back).
			if c.nSpans > 0 {
				if s := &c.spans[(c.nSpans-1)&(len(c.spans)-1)]; !s.Known() && s.First.Before(p.PSN) && p.PSN.AtOrBefore(s.LastMax.Next()) && !(op == wire.ReadRequest && s.First == p.PSN) {
					if end := p.PSN.Add(-1); end.AtOrAfter(s.LastMin) {
						s.LastMax = end
					}
				}
			}
		}
		c.reconRequest(e, p.PSN, lastMin, lastMax)
		c.reconGap(p.PSN, lastMin, lastMax, fresh)
		if !c.HaveReq {
			c.HaveReq, c.FirstReq, c.NextReq = true, p.PSN, last.Next()
		} else if fresh && last.AtOrAfter(c.NextReq) {
			c.NextReq = last.Next()
		}
		if op == wire.ReadRequest && fresh && c.ReadCovering(p.PSN) == nil && c.MTU() != 0 {
			c.Reads = append(c.Reads, &Read{First: p.PSN, Last: last, Length: p.RETH.Length,
				VA: p.RETH.VA, RKey: p.RETH.RKey, Frame: r.Frame, Next: p.PSN})
			if len(c.Reads) > 256 {
				c.Reads = c.Reads[1:]
			}
		}
		if pos := ops[op].position; (pos == wire.PosFirst || pos == wire.PosMiddle) && !r.Truncated {
			if n := r.PayloadLen; n > c.MTUGuess && wire.ValidMTU(n) {
				c.MTUGuess = n
			}
		}
		return
	}
	if !ops[op].response {
		return
	}
	c.HaveResp = true
	c.reconResponse(r)
	if c.IsLate(r) {
		// Sent before responses already absorbed (lateResponse): it
		// tells nothing newer than they did, so the latest ACK, MSN and
		// NAK stay theirs.
		return
	}
	if ops[op].headers&wire.HdrAETH != 0 {
		c.LastMSN, c.HaveMSN = p.AETH.MSN, true
	}
	switch ops[op].class {
	case wire.ClassAck:
		if p.AETH.IsACK() {
			c.LastAckPSN, c.HaveAck = p.PSN, true
			c.retireReads(p.PSN, false)
		} else {
			c.LastNAK = r
		}
	case wire.ClassReadResponse:
		if pos := ops[op].position; pos == wire.PosFirst || pos == wire.PosMiddle {
			if n := r.PayloadLen; n > c.MTUGuess && wire.ValidMTU(n) && !r.Truncated {
				c.MTUGuess = n
			}
		}
		if rd := c.ReadCovering(p.PSN); rd != nil {
			rd.Next = p.PSN.Next()
			if ops[op].ends && p.PSN == rd.Last {
				rd.Done = true
			}
		}
		c.retireReads(p.PSN, true)
	case wire.ClassAtomicAck:
		if c.atomicOrig == nil {
			c.atomicOrig = map[wire.PSN]uint64{}
		}
		if _, ok := c.atomicOrig[p.PSN]; !ok {
			c.atomicOrig[p.PSN] = p.AtomicAck
			if len(c.atomicOrig) > 4096 {
				for k := range c.atomicOrig {
					if k.Before(p.PSN.Add(-2048)) {
						delete(c.atomicOrig, k)
					}
				}
			}
		}
	}
}

// retireReads drops READs that are complete, or that an acknowledgment
// with a later PSN has implicitly NAKed (the requester will re-issue).
func (c *Conn) retireReads(psn wire.PSN, resp bool) {
	k := 0
	for _, rd := range c.Reads {
		if rd.Done || (!resp && psn.After(rd.Last)) {
			continue
		}
		c.Reads[k] = rd
		k++
	}
	for i := k; i < len(c.Reads); i++ {
		c.Reads[i] = nil
	}
	c.Reads = c.Reads[:k]
}

// Violation reports that r violates clause. Where r is a response that
// may be a copy (MaybeCopy), the instance is left undecided instead: the
// copy the capture or the network made is legal, the responder sending it
// again may not be, and the trace cannot tell which.
func (c *Conn) Violation(clause string, r *trace.Record, message string, expected []string, seen string) {
	if kind, ok := c.maybeCopies[r]; r != nil && ok {
		what := "repeats an earlier response byte for byte and no IPv4 Identification tells a copy the capture or the network made (no violation) from the responder sending it again"
		switch {
		case kind == lateByID:
			what = "was sent before responses the trace shows earlier, as its IPv4 Identification shows: the network or the capture delayed it (or copied one whose original the capture lost), so where it stands in the trace says nothing of the responder's order"
		case kind == lateByMSN:
			what = "carries an MSN behind one a response the trace shows earlier carried, and no IPv4 Identification tells (IPv6, or an ID that never changes) whether the responder sent it again (a violation) or the network or the capture delayed it, or copied one whose original the capture lost (none)"
		case ops[r.Packet.Opcode].request:
			what = "repeats an earlier request with its IPv4 Identification: a copy the capture or the network made (no violation), not the requester sending it again"
		}
		c.Unresolved(clause, fmt.Sprintf("frame %d %s: %s", r.Frame, what, message))
		return
	}
	if c.rs.phase != restartNone && c.restartHold(clause, r, message, expected, seen) {
		return
	}
	c.sink.violation(c, clause, r, message, expected, seen)
}

// Unresolved records an instance of clause the trace leaves open where
// it matters to the verdict: a legal explanation remains (reason names
// it), but so does a violation, so the clause cannot pass while it is
// open. It counts as undecided (Tally.Indeterminate) and keeps the
// verdict at indeterminate unless a violation fails it.
func (c *Conn) Unresolved(clause, reason string) {
	t := c.sink.tally(clause)
	t.Indeterminate++
	t.Open++
	if t.Reason == "" || t.Open == 1 {
		t.Reason, t.ReasonAt = reason, c.sink.At
	}
	frame := c.frameNow()
	t.addKind(reason, true, frame, c.sink.At)
	if c.sink.Undecided != nil {
		c.sink.Undecided(clause, reason, true, frame)
	}
}

// Checked counts one instance of clause that was checked and held.
func (c *Conn) Checked(clause string) {
	if c.rs.phase == restartAnew {
		return // a model that takes new QPs' records for resends checks nothing (restart.go)
	}
	c.sink.tally(clause).Checked++
}

// Indeterminate records that an instance of clause could not be decided.
func (c *Conn) Indeterminate(clause, reason string) {
	t := c.sink.tally(clause)
	t.Indeterminate++
	if t.Reason == "" {
		t.Reason, t.ReasonAt = reason, c.sink.At
	}
	frame := c.frameNow()
	t.addKind(reason, false, frame, c.sink.At)
	if c.sink.Undecided != nil {
		c.sink.Undecided(clause, reason, false, frame)
	}
}

// frameNow is the capture frame of the record the connection's monitors
// are judging (0 on an active run, whose records have no capture frame).
func (c *Conn) frameNow() int {
	if c.Settings.Active || c.cur == nil {
		return 0
	}
	return c.cur.Frame
}

// Tally counts what happened to one clause.
type Tally struct {
	Checked    int
	Violations int
	// Indeterminate counts every undecided instance (the report's
	// "undecided"); Open those of them that block a pass (Unresolved).
	Indeterminate int
	Open          int
	Reason        string
	// ReasonAt is the sink's At when Reason was set (see Sink.At).
	ReasonAt int64
	// Kinds lists every undecided instance by the kind of its reason
	// (reports.ReasonKind), in order of first appearance: the count
	// of each and its first instance, so that no doubt is hidden
	// behind the one Reason. Their counts add up to Indeterminate.
	Kinds      []reports.UndecidedKind
	kindAt     map[string]int // kind key -> index in Kinds
	lastReason string         // the last reason given, and its index in Kinds
	lastKind   int
}

// Empty reports whether nothing was counted in the tally.
func (t *Tally) Empty() bool {
	return t.Checked == 0 && t.Violations == 0 && t.Indeterminate == 0 && t.Open == 0 && t.Reason == "" && len(t.Kinds) == 0
}

// addKind counts one undecided instance under its reason's kind.
func (t *Tally) addKind(reason string, open bool, frame int, at int64) {
	if len(t.Kinds) > 0 && reason == t.lastReason && t.Kinds[t.lastKind].Open == open {
		t.Kinds[t.lastKind].Count++
		return
	}
	key := reports.ReasonKind(reason, open)
	i, ok := t.kindAt[key]
	if !ok {
		if t.kindAt == nil {
			t.kindAt = map[string]int{}
		}
		i = len(t.Kinds)
		t.kindAt[key] = i
		t.Kinds = append(t.Kinds, reports.UndecidedKind{Reason: reason, Open: open, Frame: frame, At: at})
	}
	t.Kinds[i].Count++
	t.lastReason, t.lastKind = reason, i
}

// mergeKinds sets t's kinds from several tallies' (shard workers'), as
// one tally fed every instance in trace order would hold them
// (reports.MergeUndecidedKinds).
func (t *Tally) mergeKinds(from []*Tally) {
	lists := make([][]reports.UndecidedKind, len(from))
	for i, o := range from {
		lists[i] = o.Kinds
	}
	t.Kinds, t.kindAt, t.lastReason = reports.MergeUndecidedKinds(lists), map[string]int{}, ""
	for i, k := range t.Kinds {
		t.kindAt[reports.ReasonKind(k.Reason, k.Open)] = i
	}
}

// Verdict turns a tally into a verdict: any violation fails; otherwise an
// open instance (Unresolved) leaves it indeterminate; otherwise a checked
// instance passes (with its undecided instances counted beside it);
// otherwise an undecided one is indeterminate; otherwise the clause was
// not exercised.
func (t *Tally) Verdict() reports.Verdict {
	switch {
	case t == nil:
		return reports.NotExercised
	case t.Violations > 0:
		return reports.Fail
	case t.Open > 0:
		return reports.Indeterminate
	case t.Checked > 0:
		return reports.Pass
	case t.Indeterminate > 0:
		return reports.Indeterminate
	}
	return reports.NotExercised
}

// Sink collects findings and tallies.
type Sink struct {
	Capture  string
	Tallies  map[string]*Tally
	Findings []reports.Finding
	// MaxFindings bounds the findings kept per clause (the count goes on).
	MaxFindings int
	perClause   map[string]int
	// Text gives the clause in our words for findings.
	Text func(clause string) string
	// At is where in the trace the sink's auditor is, as set by a caller
	// that merges sinks (ShardedAuditor): each tally's ReasonAt records
	// it, so that merged tallies keep the reason a single auditor would
	// have kept (the first one given). Zero when unused.
	At int64
	// Undecided, when set, is told of every undecided instance as it is
	// counted: its clause, its reason, whether it is open (Unresolved)
	// and the capture frame it was seen at (0 on an active run), as the
	// tally's Kinds record the first of each kind. A ShardedAuditor's
	// workers call it from their goroutines: it must be safe for
	// concurrent use.
	Undecided func(clause, reason string, open bool, frame int)
	// tallyCache caches tallies of Tallies by clause (every record tallies a
	// few clauses, and a map lookup costs more than a comparison).
	tallyCache [64]cachedTally
}

type cachedTally struct {
	clause string
	t      *Tally
}

// tallySlot returns where clause's tally is cached.
func tallySlot(clause string) int {
	n := len(clause)
	if n == 0 {
		return 0
	}
	return (n*7 + int(clause[n-1])*3 + int(clause[n/2])) & 63
}

// NewSink returns an empty sink.
func NewSink(capture string) *Sink {
	return &Sink{Capture: capture, Tallies: map[string]*Tally{}, MaxFindings: 50, perClause: map[string]int{}}
}

func (s *Sink) tally(clause string) *Tally {
	e := &s.tallyCache[tallySlot(clause)]
	if e.t != nil && e.clause == clause {
		return e.t
	}
	t := s.Tallies[clause]
	if t == nil {
		t = &Tally{}
		s.Tallies[clause] = t
	}
	e.clause, e.t = clause, t
	return t
}

// Tally returns the tally of clause (nil if nothing happened to it).
func (s *Sink) Tally(clause string) *Tally { return s.Tallies[clause] }

func (s *Sink) violation(c *Conn, clause string, r *trace.Record, message string, expected []string, seen string) {
	s.violationIn(c, clause, r, message, expected, seen, c.recent)
}

// violationIn is violation with the connection's latest records as they
// were when the violation was found (its ladder).
func (s *Sink) violationIn(c *Conn, clause string, r *trace.Record, message string, expected []string, seen string, recent []*trace.Record) {
	s.tally(clause).Violations++
	s.perClause[clause]++
	if s.MaxFindings > 0 && s.perClause[clause] > s.MaxFindings {
		return
	}
	f := reports.Finding{
		ID: clause, Capture: s.Capture, QP: c.ResponderQP,
		Message: message, Expected: expected, Seen: seen,
	}
	if r != nil {
		f.PSN = uint32(r.Packet.PSN)
		if c.Settings.Active {
			f.Frame = 0
		} else {
			f.Frame = r.Frame
		}
	}
	if s.Text != nil {
		f.Clause = s.Text(clause)
	}
	recs := append([]*trace.Record(nil), recent...)
	if r != nil && (len(recs) == 0 || recs[len(recs)-1] != r) {
		recs = append(recs, r)
	}
	f.Ladder = Rungs(recs, r, !c.Settings.Active)
	s.Findings = append(s.Findings, f)
}

// Auditor runs every registered monitor over a stream of records in one
// pass, rebuilding connections as it goes.
type Auditor struct {
	Settings Settings
	Sink     *Sink
	Only     map[string]bool // if non-nil, run only these clauses' monitors
	conns    []*Conn
	mons     []Monitor
	routes   map[string]*route
	// reqs indexes the connections by the key of their requests: the
	// first made with it. resps indexes those a response was seen on by
	// the key of their responses (requester, responder, requester QP):
	// the one with the lowest ID (connFor).
	reqs, resps map[connKey]*Conn
	// cache holds, for reqs (0) and resps (1), the last key looked up
	// per QP number (modulo routeCacheLen) and its connection: it saves
	// hashing two addresses per record. Made with the second connection
	// (ShardedAuditor's per-connection auditors have one).
	cache *[2][routeCacheLen]routeEntry[*Conn]

	// ConnSetup, when set, adjusts each new connection's Settings from
	// what the capture says about it (dut/pcapdut: the connection
	// manager's handshake) before its monitors are made. Requester,
	// Responder and ResponderQP are set then (ResponderQP is 0 for a
	// connection first seen through a response). It runs on the
	// goroutine that calls Observe.
	ConnSetup func(c *Conn)

	// pin, when set (a ShardedAuditor's per-connection auditor), is the
	// one connection every record goes to, as the sharded auditor's
	// pairing model decided: made on the first record with these keys.
	pin *pinned
	// skew measures the reordering the trace shows (evidence.go); a
	// pinned auditor takes its records' Skew as the sharded auditor set it.
	skew skewMeter
}

// pinned is the connection a per-connection auditor holds: its keys and
// ID as the pairing model made them.
type pinned struct {
	id                       int
	requester, responder     netip.Addr
	responderQP, requesterQP uint32
	keyed                    bool
}

// route lists, for each RC opcode, the indexes of the checkers of a
// connection that see its records.
type route [32][]uint16

// routeFor returns the route of a connection's checkers, from the opcode
// sets they ask for (OpcodeFilter).
func (a *Auditor) routeFor(checkers []Checker) *route {
	sets := make([]byte, 0, 4*len(checkers))
	for _, ch := range checkers {
		set := AllOpcodes
		if f, ok := ch.(OpcodeFilter); ok {
			set = f.Opcodes()
		}
		sets = binary.LittleEndian.AppendUint32(sets, set)
	}
	if rt := a.routes[string(sets)]; rt != nil {
		return rt
	}
	rt := new(route)
	for i := range checkers {
		set := binary.LittleEndian.Uint32(sets[4*i:])
		for o := range rt {
			if set&(1<<o) != 0 {
				rt[o] = append(rt[o], uint16(i))
			}
		}
	}
	if a.routes == nil {
		a.routes = map[string]*route{}
	}
	a.routes[string(sets)] = rt
	return rt
}

// NewAuditor returns an auditor writing into sink.
func NewAuditor(settings Settings, sink *Sink) *Auditor {
	return &Auditor{Settings: settings, Sink: sink}
}

// Conns returns the connections seen so far.
func (a *Auditor) Conns() []*Conn { return a.conns }

func (a *Auditor) monitorsToRun() []Monitor {
	if a.mons == nil {
		for _, m := range Monitors() {
			if a.Only == nil || a.Only[m.Clause] {
				a.mons = append(a.mons, m)
			}
		}
	}
	return a.mons
}

// Assign finds or makes the connection r belongs to, as Observe does,
// and absorbs r into its model without running any monitor; it returns
// nil for a record Observe would leave out. An auditor fed only through
// Assign pairs the two directions of each connection for callers that
// split connections among several auditors (ShardedAuditor).
func (a *Auditor) Assign(r *trace.Record) *Conn {
	if !r.Usable() || r.Packet == nil {
		return nil
	}
	op := r.Packet.Opcode
	if !ops[op].request && !ops[op].response {
		return nil
	}
	c := a.connFor(r)
	if c != nil {
		c.absorb(r)
	}
	return c
}

// indexResponder adds c to resps once a response was routed to it.
func (a *Auditor) indexResponder(c *Conn) {
	if c.respIndexed || !c.respRouted {
		return
	}
	c.respIndexed = true
	k := connKey{c.Requester, c.Responder, c.RequesterQP}
	if old := a.resps[k]; old == nil || old.ID > c.ID {
		a.resps[k] = c
		if a.cache != nil {
			if e := &a.cache[1][k.qp%routeCacheLen]; e.k == k {
				e.c = c
			}
		}
	}
}

// lookup returns the connection of key k in reqs (dir 0) or resps (dir
// 1), through the cache.
func (a *Auditor) lookup(dir int, k connKey) *Conn {
	if a.cache == nil {
		// At most one connection: its keys, without hashing.
		if len(a.conns) == 0 {
			return nil
		}
		c := a.conns[0]
		if dir == 0 && c.reqKeyed && k == (connKey{c.Requester, c.Responder, c.ResponderQP}) ||
			dir == 1 && c.respIndexed && k == (connKey{c.Requester, c.Responder, c.RequesterQP}) {
			return c
		}
		return nil
	}
	m := a.reqs
	if dir == 1 {
		m = a.resps
	}
	return cachedRoute(&a.cache[dir][k.qp%routeCacheLen], m, k)
}

// Observe feeds one record. Records with a bad ICRC are left out: their
// receiver dropped them. The record must not be modified afterwards.
func (a *Auditor) Observe(r *trace.Record) {
	if !r.Usable() || r.Packet == nil {
		return
	}
	if a.pin == nil {
		a.skew.note(r)
	}
	op := r.Packet.Opcode
	if !ops[op].request && !ops[op].response {
		if op.ReservedRC() {
			a.reservedOp(r)
		}
		return
	}
	c := a.connFor(r)
	if c == nil {
		return
	}
	if c.FirstFrame == 0 && !c.Settings.Active {
		c.FirstFrame = r.Frame
	}
	if c.copyOf(r) {
		c.Copies++
		return
	}
	for _, r := range c.hold(r) {
		c.deliver(r)
	}
}

// reservedOp notes a request with a reserved RC opcode on the connection
// its key names, if there is one (it begins none: no pairing or model
// state is taken from it).
func (a *Auditor) reservedOp(r *trace.Record) {
	var c *Conn
	switch {
	case a.pin != nil && len(a.conns) > 0:
		c = a.conns[0]
	case a.pin == nil:
		c = a.lookup(0, connKey{r.Src, r.Dst, r.Packet.DestQP})
	}
	if c != nil {
		c.noteReserved(r)
	}
}

// ReservedOp is a request with a reserved RC opcode (wire.Opcode.ReservedRC)
// the connection's requester sent, which no responder can execute. The
// connection model takes no state from it (it is no request of the RC
// operations), so it is noted apart, as the auditor routes it (before the
// records held back to restore the senders' order are delivered).
type ReservedOp struct {
	Rec *trace.Record
	// InSeq: it carried the responder's expected PSN as the trace proved
	// it when the request was routed (or it is the first request of a
	// complete trace).
	InSeq bool
}

// maxReservedOps bounds the reserved-opcode requests a connection keeps.
const maxReservedOps = 16

// noteReserved notes a reserved-opcode request.
func (c *Conn) noteReserved(r *trace.Record) {
	op := ReservedOp{Rec: r, InSeq: c.Classify(r.Packet.PSN) == ReqInSeq || !c.HaveReq && c.Complete()}
	if len(c.reservedOps) == maxReservedOps {
		c.reservedOps = append(c.reservedOps[:0], c.reservedOps[1:]...)
	}
	c.reservedOps = append(c.reservedOps, op)
	c.nReserved++
}

// ReservedOps returns the latest reserved-opcode requests noted on the
// connection, oldest first, and how many were noted in all (a monitor
// takes those it has not seen from the count).
func (c *Conn) ReservedOps() (latest []ReservedOp, total int) { return c.reservedOps, c.nReserved }

// deliver shows r to the connection's checkers, then absorbs it.
func (c *Conn) deliver(r *trace.Record) {
	c.cur = r
	c.seq++
	if own := c.runs[r.Dir&1].step(r, c.seq); own && len(c.missed) > 0 {
		c.decideMissed(r)
	}
	if r.Dir == trace.ToRequester {
		if r.HasIPID {
			c.lateResponse(r)
		}
		c.staleMSN(r)
	}
	c.restartStep(r)
	if op := r.Packet.Opcode; op < 32 {
		for _, i := range c.route[op] {
			c.checkers[i].Observe(c, r)
		}
	} else {
		for _, ch := range c.checkers {
			ch.Observe(c, r)
		}
	}
	c.absorb(r)
}

// End finishes every connection: the records still held back are
// delivered, then every checker ends.
func (a *Auditor) End() {
	for _, c := range a.conns {
		for _, r := range c.flush() {
			c.deliver(r)
		}
		for _, ch := range c.checkers {
			ch.End(c)
		}
		c.endMissed()
		c.restartEnd()
	}
}

// newConn makes a connection; keyed says a request named its responder
// QP (a connection its responses began has no request key: requests
// reach it only by adoptRequests).
func (a *Auditor) newConn(req, rsp netip.Addr, rspQP uint32, keyed bool) *Conn {
	c := &Conn{ID: len(a.conns) + 1, Requester: req, Responder: rsp, ResponderQP: rspQP,
		Settings: a.Settings, Capture: a.Sink.Capture, sink: a.Sink}
	if a.ConnSetup != nil {
		a.ConnSetup(c)
	}
	for _, m := range a.monitorsToRun() {
		c.checkers = append(c.checkers, m.New(c))
	}
	c.route = a.routeFor(c.checkers)
	a.conns = append(a.conns, c)
	if a.reqs == nil {
		a.reqs, a.resps = map[connKey]*Conn{}, map[connKey]*Conn{}
	}
	if len(a.conns) == 2 {
		a.cache = new([2][routeCacheLen]routeEntry[*Conn])
	}
	if k := (connKey{req, rsp, rspQP}); keyed && a.reqs[k] == nil {
		a.reqs[k] = c
	}
	c.reqKeyed = keyed
	return c
}

// connFor finds or creates the connection a record belongs to. Requests
// are keyed by (requester, responder, DestQP). Responses go to the
// requester's QP: they are paired with the connection between the same
// two addresses whose requester QP is already known to be their DestQP,
// else with an unpaired one whose request PSNs are nearest.
//
// The indexes give what a walk through the connections in ID order
// finds: the first connection made with a request's key (keys never
// change), and the first one paired with a response's requester QP that
// has seen a response (a connection's requester QP no longer changes
// once it has).
func (a *Auditor) connFor(r *trace.Record) *Conn {
	c := a.route(r)
	if c != nil {
		c.noteRoute(r)
		a.indexResponder(c)
	}
	return c
}

// noteRoute updates the pairing's routing-time state of the connection
// with r, a record routed to it: what the routing saw, at once (the
// checkers see records only after the reorder buffer, and the pairing
// model of a ShardedAuditor at once), for walkResponse and
// adoptRequests. A ShardedAuditor's router calls it too for the records
// it routes by table without its pairing model, so that the model's
// state stays the single Auditor's.
func (c *Conn) noteRoute(r *trace.Record) {
	p := r.Packet
	if !ops[p.Opcode].request {
		c.respRouted, c.respPSN, c.respPort = true, p.PSN, r.SrcPort
		if c.adopted {
			c.respSinceAdopt = true
		}
		return
	}
	last := c.reserved(p)
	c.lastReqFrame = r.Frame
	if !c.reqRouted || last.AtOrAfter(c.routedNext) {
		c.routedNext = last.Next()
	}
	if !c.reqRouted || p.PSN.Before(c.routedLow) {
		c.routedLow = p.PSN
	}
	c.reqRouted = true
	if !c.respRouted {
		c.noteRouted(r, last)
	}
}

// route is connFor's choice of connection.
func (a *Auditor) route(r *trace.Record) *Conn {
	if pn := a.pin; pn != nil {
		if len(a.conns) == 0 {
			c := a.newConn(pn.requester, pn.responder, pn.responderQP, pn.keyed)
			c.ID, c.RequesterQP = pn.id, pn.requesterQP
		}
		return a.conns[0]
	}
	p := r.Packet
	if ops[p.Opcode].request {
		if c := a.lookup(0, connKey{r.Src, r.Dst, p.DestQP}); c != nil {
			if why := c.reborn(r); why != "" {
				if c.Follows != 0 {
					if prev := a.conns[c.Follows-1]; prev.reborn(r) == "" {
						return prev // a late request of the QPs made before
					}
				}
				return a.rebirth(c, r, why)
			}
			return c
		}
		if c := a.adoptRequests(r); c != nil {
			return c
		}
		return a.newConn(r.Src, r.Dst, p.DestQP, true)
	}
	if c := a.lookup(1, connKey{r.Dst, r.Src, p.DestQP}); c != nil {
		return c
	}
	// A response from r.Src (the responder) to r.Dst (the requester).
	found, best, exact := a.walkResponse(r)
	if found != nil {
		return found
	}
	// A connection that adopted requests r answers and had no response
	// since (unadopt) against one whose request r answers exactly: the
	// one whose request came last.
	x := a.unadoptable(r)
	if best != nil && exact && (x == nil || best.lastReqFrame > x.lastReqFrame) {
		best.RequesterQP = p.DestQP
		return best
	}
	if x != nil {
		return a.unadopt(r, x)
	}
	if best != nil {
		best.RequesterQP = p.DestQP
		return best
	}
	// Responses whose requests were never seen: a connection of its own,
	// on which monitors needing the requests will be indeterminate.
	c := a.newConn(r.Dst, r.Src, 0, false)
	c.RequesterQP = p.DestQP
	return c
}

// rebornJump is how far, in PSNs, a request may lie past the next PSN
// of its connection's requests, or before the lowest one, and still be
// that connection's: past it, the QPs were made anew with the same
// numbers (reborn). A requester sends its PSNs in order and resends only
// PSNs it sent, so a request further ahead means the capture lost that
// many of one connection's packets in a row, and one further behind
// means that many PSNs were outstanding before the capture began: both
// far beyond what captures and READs show, while a new QP's random
// starting PSN falls that far off seven times in eight.
const rebornJump = 1 << 18

// reborn says why request r, whose key is c's, cannot be c's (it jumped
// rebornJump or more past the PSNs c's requests used), or "" when it can
// be. It reads only routing-time state, as walkResponse does.
func (c *Conn) reborn(r *trace.Record) string {
	if !c.reqRouted || c.Settings.Active {
		return "" // an active run's harness made its QPs: one key, one connection
	}
	p := r.Packet.PSN
	if d := p.Diff(c.routedNext); d > rebornJump {
		return fmt.Sprintf("its PSN %d is %d past the next PSN %d of the requests before it", p, d, c.routedNext)
	}
	if p.Before(c.routedNext) {
		if d := c.routedLow.Diff(p); d > rebornJump {
			return fmt.Sprintf("its PSN %d is %d before the lowest PSN %d the requests before it carried", p, d, c.routedLow)
		}
	}
	return ""
}

// rebirth makes the connection that request r begins in place of old,
// whose key r has but which r cannot belong to (why): old takes no more
// records, and the responses that follow pair anew.
func (a *Auditor) rebirth(old *Conn, r *trace.Record, why string) *Conn {
	old.replaced = true
	if old.respIndexed {
		a.unroute(1, connKey{old.Requester, old.Responder, old.RequesterQP}, old)
	}
	a.unroute(0, connKey{r.Src, r.Dst, r.Packet.DestQP}, old)
	c := a.newConn(r.Src, r.Dst, r.Packet.DestQP, true)
	c.Follows, c.FollowsAt, c.FollowsWhy = old.ID, r.Frame, why
	return c
}

// unroute removes key k of reqs (dir 0) or resps (dir 1) where it leads
// to c.
func (a *Auditor) unroute(dir int, k connKey, c *Conn) {
	m := a.reqs
	if dir == 1 {
		m = a.resps
	}
	var cache *[routeCacheLen]routeEntry[*Conn]
	if a.cache != nil {
		cache = &a.cache[dir]
	}
	dropRoute(m, cache, k, c)
}

// dropRoute removes key k from m, and from its cache (nil: none), where
// it leads to c (Auditor, ShardedAuditor).
func dropRoute[C comparable](m map[connKey]C, cache *[routeCacheLen]routeEntry[C], k connKey, c C) {
	if m[k] == c {
		delete(m, k)
	}
	if cache != nil {
		if e := &cache[k.qp%routeCacheLen]; e.c == c {
			*e = routeEntry[C]{}
		}
	}
}

// adoptBehind and adoptAhead are how far behind and ahead of a
// response-only connection's latest response PSN a request may be and
// still join it (adoptRequests): the requests in flight. Two connections
// between the same hosts whose PSNs are that close cannot be told apart
// by their PSNs; elsewhere the window keeps one's requests from another's
// responses.
const (
	adoptBehind = 1024
	adoptAhead  = 8192
)

// adoptRequests finds, for request r whose key no connection has, the
// connection its responses began: a capture that starts mid-connection
// may show a response first, which makes a connection of its own with
// the responder QP unknown (connFor). The request joins the one between
// the same two hosts, with no request yet, whose latest response PSN is
// nearest r's PSN (adoptAhead ahead, adoptBehind behind), as a response
// joins the requests nearest it (walkResponse); the connection learns its
// responder QP.
func (a *Auditor) adoptRequests(r *trace.Record) *Conn {
	p := r.Packet
	var best *Conn
	bestDist := 1 << 16
	for _, c := range a.conns {
		if c.reqRouted || c.ResponderQP != 0 || !c.respRouted || c.replaced || c.Requester != r.Src || c.Responder != r.Dst {
			continue
		}
		// A request after a response of its connection is new (past the
		// response's PSN, by up to the requests in flight) or a resend
		// of a little before it (a READ re-issued): far behind it, it is
		// another connection's.
		d := p.PSN.Diff(c.respPSN)
		if d < -adoptBehind || d > adoptAhead {
			continue
		}
		if d < 0 {
			d = -d
		}
		if r.SrcPort != 0 && r.SrcPort == c.respPort {
			// The UDP source port its responses came from: a stack that
			// derives the port from both QP numbers (Linux) gives both
			// directions the same one, and one that does not makes a
			// match a rare coincidence, so it wins over nearness (many
			// QPs may start at the same PSN). A port shared by every
			// connection changes nothing.
			d -= 1 << 16
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == nil {
		return nil
	}
	best.ResponderQP, best.reqKeyed = p.DestQP, true
	best.adopted, best.adoptFirst = true, p.PSN
	k := connKey{r.Src, r.Dst, p.DestQP}
	if a.reqs == nil {
		a.reqs, a.resps = map[connKey]*Conn{}, map[connKey]*Conn{}
	}
	if a.reqs[k] == nil {
		a.reqs[k] = best
		if a.cache != nil {
			if e := &a.cache[0][k.qp%routeCacheLen]; e.k == k {
				e.c = best
			}
		}
	}
	return best
}

// walkResponse walks through the connections in ID order for response r
// (from the responder r.Src to the requester r.Dst): found is the first
// paired with r's DestQP that a response was routed to, else best is the
// unpaired one whose request PSNs are nearest r's PSN (nil when none is
// within 2^16).
//
// It reads only what routing itself keeps (reqRouted, respRouted,
// routedNext, routed), never what absorbing the records does: a single
// Auditor absorbs a record only after its reorder buffer, the pairing
// model of a ShardedAuditor at once, and both must pair alike.
func (a *Auditor) walkResponse(r *trace.Record) (found, best *Conn, exact bool) {
	p := r.Packet
	bestDist := 1 << 30
	newest := 0 // the latest request between the two hosts
	for _, c := range a.conns {
		if c.Requester == r.Dst && c.Responder == r.Src && c.lastReqFrame > newest {
			newest = c.lastReqFrame
		}
	}
	for _, c := range a.conns {
		if c.Requester != r.Dst || c.Responder != r.Src || c.replaced {
			continue
		}
		if c.RequesterQP == p.DestQP && c.respRouted {
			return c, nil, true
		}
		if c.respRouted || !c.reqRouted {
			continue
		}
		d := p.PSN.Diff(c.routedNext)
		if d < 0 {
			d = -d
		}
		if p.PSN.Diff(c.routedNext) > adoptAhead || c.routedLow.Diff(p.PSN) > adoptBehind {
			// Far ahead of its requests, or far behind the lowest: not
			// the answer of a request in flight (a connection whose
			// responses the capture lost does not take another's).
			d = 1 << 30
		}
		exact, port, contra := c.answers(r)
		if contra && !exact && c.lastReqFrame < newest {
			// A request of the connection carries the response's PSN
			// and is not of the kind it answers, and another connection
			// between the hosts requested since: the answer is likelier
			// that one's, or one whose request the capture lost, than a
			// wrong one of this (where this connection requested last,
			// a wrong answer stays its own, to be judged).
			d = 1 << 30
		}
		if exact {
			// It answers one of the connection's latest requests: its
			// own PSN, or one of a READ's range (a long READ's answer
			// lies far from the next request's PSN). Many connections
			// between two hosts have PSNs near each other's; one whose
			// request the response answers exactly wins over nearness.
			d = -1
			if port {
				// Several QPs starting at the same PSN all answer it
				// exactly: the one whose request came from the
				// response's UDP source port wins (see adoptRequests).
				d = -2
			}
		}
		if d < bestDist || d == bestDist && best != nil && c.lastReqFrame > best.lastReqFrame {
			// Equally near: the connection whose latest request came
			// last (a response answers a request in flight; an older
			// connection's may be one whose answers the capture lost).
			best, bestDist = c, d
		}
	}
	if bestDist < 1<<16 {
		return nil, best, bestDist < 0
	}
	return nil, nil, false
}

// unadoptable returns the connection unadopt takes r's key from (nil:
// none), changing nothing.
func (a *Auditor) unadoptable(r *trace.Record) *Conn {
	var x *Conn
	for _, c := range a.conns {
		if c.adopted && !c.respSinceAdopt && !c.replaced && c.Requester == r.Dst && c.Responder == r.Src &&
			r.Packet.PSN.InRange(c.adoptFirst, c.routedNext.Add(-1)) {
			x = c // the latest adoption wins
		}
	}
	return x
}

// unadopt is for response r that pairs with no connection, and x, the
// connection that adopted requests r answers (adoptRequests) and has had
// no response since (unadoptable): those requests were another QP's,
// whose first response r is (a connection of responses only, its
// requests lost, had taken the next connection's, and each would take
// the next). The key of those requests moves to a new connection, which
// r begins and which it returns; the requests already taken stay where
// they went.
func (a *Auditor) unadopt(r *trace.Record, x *Conn) *Conn {
	x.adopted = false
	a.unroute(0, connKey{x.Requester, x.Responder, x.ResponderQP}, x)
	c := a.newConn(x.Requester, x.Responder, x.ResponderQP, true)
	c.RequesterQP = r.Packet.DestQP
	x.ResponderQP, x.reqKeyed = 0, false // its own requests' key is unknown again
	return c
}

// routedDepth is how many of a connection's latest requests the pairing
// of its first response compares it with.
const routedDepth = 32

// routedReq is a request as routed: its opcode and the PSNs it reserved.
type routedReq struct {
	op          wire.Opcode
	first, last wire.PSN
	port        uint16 // its UDP source port (0: unknown)
	length      uint32 // a READ's DMA length
}

// reserved is the last PSN request p reserved, as the pairing sees it:
// a READ's range at the configured path MTU, or at the smallest.
func (c *Conn) reserved(p *wire.Packet) wire.PSN {
	if p.Opcode != wire.ReadRequest {
		return p.PSN
	}
	mtu := c.Settings.MTU
	if mtu == 0 {
		mtu = minMTU
	}
	return p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1)
}

// noteRouted remembers request r, reserving up to last, for the pairing
// of the connection's first response.
func (c *Conn) noteRouted(r *trace.Record, last wire.PSN) {
	p := r.Packet
	q := routedReq{op: p.Opcode, first: p.PSN, last: last, port: r.SrcPort, length: p.RETH.Length}
	c.routed[c.nRouted%routedDepth] = q
	c.nRouted++
}

// answers reports whether response p answers one of the latest requests
// routed to the connection: a READ response inside a READ's range (its
// first PSN for a First or Only), an ATOMIC acknowledgment or an
// Acknowledge at a request's own PSN (an ACK names the newest request it
// covers, an RNR NAK the request it refused). port reports that one such
// request came from the response's UDP source port.
//
// contra reports that a request at the response's PSN is of a kind it
// cannot answer: an ATOMIC acknowledgment at another request's PSN, or a
// READ response's First or Only at a PSN a request other than a READ
// used.
func (c *Conn) answers(r *trace.Record) (exact, port, contra bool) {
	p := r.Packet
	f := &ops[p.Opcode]
	for i := range min(c.nRouted, routedDepth) {
		q := &c.routed[i]
		answered := false
		switch {
		case f.class == wire.ClassReadResponse:
			answered = q.op == wire.ReadRequest && p.PSN.InRange(q.first, q.last) &&
				(f.position != wire.PosFirst && f.position != wire.PosOnly || p.PSN == q.first)
			if c := ops[q.op].class; c != wire.ClassReadRequest && c != wire.ClassFlush && c != wire.ClassAtomicWrite &&
				p.PSN == q.first && (f.position == wire.PosFirst || f.position == wire.PosOnly) {
				contra = true // (FLUSH and ATOMIC WRITE are answered by a READ Response Only)
			}
			if q.op == wire.ReadRequest && p.PSN == q.first &&
				(f.position == wire.PosFirst && q.length <= minMTU || f.position == wire.PosOnly && q.length > maxMTU) {
				// A READ that fits one packet at every MTU answered by
				// several, or one that needs several at every MTU by one.
				answered, contra = false, true
			}
		case p.Opcode == wire.AtomicAcknowledge:
			answered = ops[q.op].class == wire.ClassAtomic && p.PSN == q.first
			if !answered && p.PSN == q.first {
				contra = true
			}
		case p.Opcode == wire.Acknowledge && (p.AETH.IsACK() || p.AETH.IsRNR()):
			answered = q.op != wire.ReadRequest && ops[q.op].class != wire.ClassAtomic && p.PSN == q.first
		}
		if answered {
			exact = true
			if r.SrcPort != 0 && q.port == r.SrcPort {
				return true, true, contra
			}
		}
	}
	return exact, false, contra
}

// Rungs converts records to ladder rungs, highlighting hi.
func Rungs(recs []*trace.Record, hi *trace.Record, frames bool) []reports.Rung {
	out := make([]reports.Rung, 0, len(recs))
	for _, r := range recs {
		out = append(out, Rung(r, r == hi, frames))
	}
	return out
}

// Rung converts one record to a ladder rung.
func Rung(r *trace.Record, highlight, frames bool) reports.Rung {
	p := r.Packet
	g := reports.Rung{TimeNS: int64(r.Time), Dir: r.Dir.String(), Opcode: p.Opcode.ShortName(),
		PSN: uint32(p.PSN), AckReq: p.AckReq, QP: p.DestQP, Highlight: highlight, Note: r.Note}
	if frames {
		g.Frame = r.Frame
	}
	if p.Opcode.Has(wire.HdrAETH) {
		g.Syndrome = p.AETH.String()
		m := p.AETH.MSN
		g.MSN = &m
	}
	if p.Opcode.Has(wire.HdrAtomicAckETH) {
		g.Note = joinNote(g.Note, fmt.Sprintf("orig=0x%x", p.AtomicAck))
	}
	if p.Opcode.Has(wire.HdrRETH) {
		g.Note = joinNote(g.Note, fmt.Sprintf("len=%d", p.RETH.Length))
	}
	return g
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Ladder renders records as a text ladder for failure messages.
func Ladder(recs []*trace.Record, hi *trace.Record, frames bool) string {
	return reports.LadderText(Rungs(recs, hi, frames))
}
