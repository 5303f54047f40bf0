package reference

import (
	"errors"
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// Stats are a QP's counters.
type Stats struct {
	PacketsSent     int
	PacketsReceived int
	BadICRC         int // frames dropped for a bad ICRC
	Malformed       int // frames dropped as undecodable or not for this QP
	// Requester.
	RequestsSent    int // request packets, retransmissions included
	Retransmits     int // request packets sent again
	Retries         int // transport retries used (timeouts, sequence NAKs, implied NAKs)
	RNRRetries      int // RNR retries used
	Timeouts        int // ACK timer expiries
	SeqNAKsReceived int
	RNRNAKsReceived int
	ImpliedNAKs     int
	GhostResponses  int // responses ignored as duplicates or stale
	// Responder.
	Duplicates      int // duplicate requests seen
	OutOfSequence   int // requests ahead of the expected PSN
	LatchedDrops    int // out-of-sequence requests dropped silently under the NAK latch
	ACKsSent        int
	NAKsSent        int // every NAK and RNR NAK
	SeqNAKsSent     int
	RNRNAKsSent     int
	ReadResponses   int // READ response packets sent
	AtomicACKsSent  int
	DuplicateDrops  int // duplicates dropped silently (no saved state, or an error)
	UnsolicitedACKs int // ACKs re-sent to update credits
	Preempted       int // response streams stopped by an older duplicate
}

// recvWQE is a posted receive work request.
type recvWQE struct {
	id   uint64
	size int
}

// SRQ is a shared receive queue: QPs attached to it take their receive
// WQEs from one pool.
type SRQ struct {
	wqes []recvWQE
}

// NewSRQ returns an empty shared receive queue.
func NewSRQ() *SRQ { return &SRQ{} }

// Post posts a receive WQE of size bytes.
func (s *SRQ) Post(id uint64, size int) { s.wqes = append(s.wqes, recvWQE{id: id, size: size}) }

// Len returns the number of posted receive WQEs.
func (s *SRQ) Len() int { return len(s.wqes) }

// QP is a reference RC queue pair: requester and responder, driven by a
// virtual clock, transmitting RoCEv2 frames through tx.
type QP struct {
	clock  *Clock
	cfg    Config
	tx     func([]byte)
	state  dut.QPState
	mem    *Memory
	stats  Stats
	cq     []dut.Completion
	defect string

	rq       []recvWQE
	recvData map[uint64][]byte
	results  map[uint64][]byte

	// Transmitter.
	busyUntil time.Duration
	pumpTimer *Timer
	ipid      uint16
	dec       wire.Frame
	out       wire.Frame
	buf       []byte

	r responder
	s requester
}

// NewQP creates a QP in RTS with the given configuration; tx transmits
// one frame (it must not keep the slice).
func NewQP(c *Clock, cfg Config, tx func(frame []byte)) (*QP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxUnacked == 0 {
		cfg.MaxUnacked = 128
	}
	q := &QP{clock: c, cfg: cfg, tx: tx, defect: cfg.Defect,
		mem:      NewMemory(cfg.QPN),
		recvData: map[uint64][]byte{}, results: map[uint64][]byte{}}
	q.reset()
	q.state = dut.StateRTS
	q.initFrame()
	return q, nil
}

func (q *QP) initFrame() {
	f := &q.out
	f.DstMAC, f.SrcMAC = q.cfg.RemoteMAC, q.cfg.LocalMAC
	if q.cfg.LocalIP.Is4() {
		f.Encap = wire.RoCEv2IPv4
		f.DF = true
	} else {
		f.Encap = wire.RoCEv2IPv6
	}
	f.Src, f.Dst = q.cfg.LocalIP, q.cfg.RemoteIP
	f.TTL = 64
	f.SrcPort = q.cfg.UDPSrcPort
	f.DstPort = wire.UDPPort
}

// reset returns both halves to their initial state (RESET).
func (q *QP) reset() {
	q.stopTimers()
	q.r = responder{epsn: q.cfg.ExpectedPSN}
	q.s = requester{nextPSN: q.cfg.SendPSN}
	q.s.retryLeft, q.s.rnrLeft = q.retryBudget(), int(q.cfg.RNRRetry)
	q.rq = nil
}

func (q *QP) stopTimers() {
	q.pumpTimer.Stop()
	q.pumpTimer = nil
	q.r.ackTimer.Stop()
	q.s.timer.Stop()
	q.s.rnrTimer.Stop()
}

// Config returns the QP's configuration.
func (q *QP) Config() Config { return q.cfg }

// Clock returns the QP's clock.
func (q *QP) Clock() *Clock { return q.clock }

// Memory returns the QP's registered memory.
func (q *QP) Memory() *Memory { return q.mem }

// Stats returns the QP's counters.
func (q *QP) Stats() Stats { return q.stats }

// State returns the QP state.
func (q *QP) State() dut.QPState { return q.state }

// ExpectedPSN returns the PSN the responder expects next.
func (q *QP) ExpectedPSN() wire.PSN { return q.r.epsn }

// MSN returns the responder's message sequence number.
func (q *QP) MSN() uint32 { return q.r.msn }

// NextPSN returns the next new PSN the requester will use.
func (q *QP) NextPSN() wire.PSN { return q.s.nextPSN }

// RecvData returns the bytes received into the receive WQE id.
func (q *QP) RecvData(id uint64) []byte { return q.recvData[id] }

// Result returns what a completed READ placed in local memory, or the
// 8-byte original value (little-endian) an ATOMIC returned.
func (q *QP) Result(id uint64) []byte { return q.results[id] }

// PostedRecvs returns the number of receive WQEs on the QP's own RQ.
func (q *QP) PostedRecvs() int { return len(q.rq) }

// ErrState is wrapped by operations the QP state does not allow.
var ErrState = errors.New("not allowed in this QP state")

// Modify moves the QP to state to, along the transitions a verbs user
// has: RESET→INIT→RTR→RTS, RTS⇄SQD, SQE→RTS, and any state → RESET or
// ERROR. RESET clears everything and brings back the configured PSNs.
func (q *QP) Modify(to dut.QPState) error {
	from := q.state
	ok := false
	switch to {
	case dut.StateReset:
		q.reset()
		q.cq = nil
		ok = true
	case dut.StateError:
		q.enterError()
		return nil
	case dut.StateInit:
		ok = from == dut.StateReset || from == dut.StateInit
	case dut.StateRTR:
		ok = from == dut.StateInit
	case dut.StateRTS:
		ok = from == dut.StateRTR || from == dut.StateSQD || from == dut.StateSQE || from == dut.StateRTS
	case dut.StateSQD:
		ok = from == dut.StateRTS
	case dut.StateSQE:
		ok = from == dut.StateRTS
	}
	if !ok {
		return fmt.Errorf("modifying QP 0x%x from %v to %v: %w", q.cfg.QPN, from, to, ErrState)
	}
	q.state = to
	q.kick()
	return nil
}

// enterError moves the QP to ERROR: every outstanding WQE completes as
// flushed, queued responses are discarded and nothing more is sent.
func (q *QP) enterError() {
	if q.state == dut.StateError {
		return
	}
	q.state = dut.StateError
	q.stopTimers()
	q.r.queue = nil
	for _, w := range q.s.sq {
		q.completeSend(w, dut.StatusFlushed)
	}
	q.s.sq = nil
	q.s.cur = 0
	for _, w := range q.rq {
		q.cq = append(q.cq, dut.Completion{ID: w.id, Recv: true, Status: dut.StatusFlushed, Time: q.clock.Now()})
	}
	q.rq = nil
}

// PollCQ returns and clears the completions (send and receive).
func (q *QP) PollCQ() []dut.Completion {
	c := q.cq
	q.cq = nil
	return c
}

// PostRecv posts a receive WQE of size bytes on the QP's RQ, or on its SRQ.
func (q *QP) PostRecv(id uint64, size int) error {
	if size < 0 {
		return fmt.Errorf("posting receive WQE %d: negative size %d", id, size)
	}
	if q.cfg.SRQ != nil {
		q.cfg.SRQ.Post(id, size)
		return nil
	}
	switch q.state {
	case dut.StateReset:
		return fmt.Errorf("posting receive WQE %d: %w (%v)", id, ErrState, q.state)
	case dut.StateError:
		q.cq = append(q.cq, dut.Completion{ID: id, Recv: true, Status: dut.StatusFlushed, Time: q.clock.Now()})
		return nil
	}
	q.rq = append(q.rq, recvWQE{id: id, size: size})
	q.unsolicitedACK()
	return nil
}

// PostSend posts a work request on the send queue. READ data and ATOMIC
// results are kept by the QP (see Result).
func (q *QP) PostSend(wr dut.WR) error { return q.postSend(wr, nil) }

// PostSendLocal posts a work request whose READ data or ATOMIC original
// value (8 bytes, little-endian) is placed in local memory at localVA,
// which must lie in a region registered with LocalWrite.
func (q *QP) PostSendLocal(wr dut.WR, localVA uint64) error {
	n := 0
	switch wr.Op {
	case dut.OpRead:
		n = wr.Length
	case dut.OpCmpSwap, dut.OpFetchAdd:
		n = 8
	default:
		return q.postSend(wr, nil)
	}
	b, err := q.mem.Local(localVA, n)
	if err != nil {
		return fmt.Errorf("posting WR %d: %w", wr.ID, err)
	}
	return q.postSend(wr, b)
}

// Receive processes a frame arriving now.
func (q *QP) Receive(frame []byte) {
	q.stats.PacketsReceived++
	f := &q.dec
	err := f.DecodeEthernet(frame)
	if err != nil && !errors.Is(err, wire.ErrUnknownOpcode) {
		q.stats.Malformed++
		return
	}
	if f.CheckICRC() != wire.ICRCOK {
		q.stats.BadICRC++
		return
	}
	if f.DestQP != q.cfg.QPN || f.Dst != q.cfg.LocalIP {
		q.stats.Malformed++
		return
	}
	switch q.state {
	case dut.StateReset, dut.StateInit, dut.StateError:
		return
	}
	p := &f.Packet
	if err != nil {
		// A reserved or unknown opcode.
		if p.Opcode.Transport() == wire.TransportRC {
			q.respUnknownOpcode(p)
		} else {
			q.stats.Malformed++
		}
		return
	}
	switch {
	case p.Opcode.IsRequest():
		q.respReceive(p)
	case p.Opcode.IsResponse():
		if q.state == dut.StateRTR {
			q.stats.GhostResponses++
			return
		}
		q.reqReceive(p)
	default:
		q.stats.Malformed++
	}
}

// kick makes sure the transmitter runs when it may have work.
func (q *QP) kick() {
	if q.pumpTimer != nil || q.state == dut.StateError {
		return
	}
	at := q.clock.Now()
	if q.busyUntil > at {
		at = q.busyUntil
	}
	q.pumpTimer = q.clock.AfterFunc(at-q.clock.Now(), q.pump)
}

// pump transmits one packet: a response if one is ready, otherwise a
// request, then reschedules itself one packet gap later.
func (q *QP) pump() {
	q.pumpTimer = nil
	if q.state == dut.StateError {
		return
	}
	sent, wake := q.nextResponse()
	if !sent {
		sent = q.nextRequest()
	}
	if sent {
		q.busyUntil = q.clock.Now() + q.cfg.PacketGap
		q.kick()
		return
	}
	if wake > q.clock.Now() {
		q.pumpTimer = q.clock.AfterFunc(wake-q.clock.Now(), q.pump)
	}
}

// transmit builds the frame for p and hands it to tx.
func (q *QP) transmit(p *wire.Packet) {
	p.PKey = 0xFFFF
	p.DestQP = q.cfg.RemoteQPN
	q.out.Packet = *p
	if q.out.Encap == wire.RoCEv2IPv4 {
		q.ipid++
		q.out.IPID = q.ipid
	}
	q.buf = q.out.AppendEthernet(q.buf[:0])
	q.stats.PacketsSent++
	q.tx(q.buf)
}

func (q *QP) has(defect string) bool { return q.defect == defect }
