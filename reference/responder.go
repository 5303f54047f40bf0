package reference

import (
	"encoding/binary"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// The responder half of a QP: the PSN check and NAK latch, execution of
// new requests, the READ/ATOMIC resources that let duplicates be
// answered, and the ordered queue of responses (ACKs, NAKs, READ response
// streams, ATOMIC acknowledgments) that the transmitter drains.

type itemKind uint8

const (
	itemAck    itemKind = iota // positive ACK of new SEND/WRITE requests
	itemDupAck                 // ACK answering a duplicate SEND/WRITE (C9-105)
	itemNAK                    // NAK or RNR NAK (always an Acknowledge, C9-113.a1)
	itemRead                   // a READ response stream
	itemAtomic                 // an ATOMIC Acknowledge
)

// respItem is one response owed to the requester.
type respItem struct {
	kind    itemKind
	key     wire.PSN // PSN of the request answered: responses leave in key order
	psn     wire.PSN // BTH PSN (not for READ streams or duplicate ACKs)
	syn     uint8    // NAK syndrome
	msn     uint32
	readyAt time.Duration
	dup     bool
	fatal   bool // class C: the QP goes to ERROR once the NAK is sent
	repeat  bool // a repeated NAK (defect unsolicited-nak-repeat)
	// unsolicited marks an ACK repeated only to update the credits.
	unsolicited bool
	opcode      wire.Opcode
	// READ stream.
	res               *rdRes
	next, end         wire.PSN
	va                uint64
	remaining         uint32
	started           bool
	msnFirst, msnLast uint32
	// ATOMIC.
	orig uint64
}

// rdRes is a READ/ATOMIC responder resource: the PSN range reserved by
// the request, its RETH and the saved ATOMIC result. A resource is
// outstanding until its last response packet has been transmitted.
type rdRes struct {
	atomic      bool
	first, last wire.PSN
	va          uint64
	rkey        uint32
	length      uint32
	orig        uint64
	done        bool
	deferred    []*respItem // ACKs held back until this READ's responses are out (C9-101)
}

// inMsg is a multi-packet SEND or WRITE in progress.
type inMsg struct {
	class wire.Class
	first wire.PSN
	rwqe  recvWQE
	data  []byte // SEND: the bytes received so far
	va    uint64 // WRITE
	rkey  uint32
	total uint32
	off   uint32
}

type responder struct {
	epsn       wire.PSN
	msn        uint32
	latch      bool // a sequence NAK is outstanding (C9-114/C9-122)
	rnrLatch   bool // an RNR NAK is outstanding: later packets are dropped silently
	cur        *inMsg
	failed     bool // a class C error was found: the QP is about to go to ERROR
	pending    bool // SEND/WRITE packets not yet acknowledged
	pendOldest wire.PSN
	pendNewest wire.PSN
	pendCount  int
	ackTimer   *Timer
	res        []*rdRes
	queue      []*respItem
	wireMSN    uint32    // the highest MSN sent: AETHs never go back
	lastAck    *respItem // the latest positive Acknowledge sent, for unsolicited ACKs
	unsolicit  bool      // an unsolicited ACK is queued
	// ackReg is, with defect dup-ack-register, the expected PSN as the
	// last SEND, WRITE or ATOMIC left it (0 on a fresh QP; READs never
	// move it): duplicate SENDs and WRITEs are acknowledged with the PSN
	// before it.
	ackReg wire.PSN
}

// respReceive runs the PSN check on a request packet.
func (q *QP) respReceive(p *wire.Packet) {
	r := &q.r
	if r.failed {
		return
	}
	d := p.PSN.Diff(r.epsn)
	if d > 0 && q.has(DefNAKInvReqReceivedPSN) && q.badSequence(p) {
		q.nakFatal(wire.NAKInvalidRequest, p.PSN)
		return
	}
	switch {
	case d > 0:
		q.stats.OutOfSequence++
		if r.rnrLatch || (r.latch && !q.has(DefNAKLatchOff)) {
			q.stats.LatchedDrops++
			return
		}
		r.latch = true
		psn := r.epsn
		if q.has(DefNAKSeqReceivedPSN) {
			psn = p.PSN
		}
		q.enqueue(&respItem{kind: itemNAK, key: r.epsn, psn: psn, syn: wire.SynNAK(wire.NAKPSNSequence), msn: r.msn})
	case d < 0:
		q.respDuplicate(p)
	default:
		r.latch, r.rnrLatch = false, false
		q.respNew(p)
	}
}

// respUnknownOpcode handles a request with a reserved RC opcode.
func (q *QP) respUnknownOpcode(p *wire.Packet) {
	r := &q.r
	if r.failed {
		return
	}
	switch d := p.PSN.Diff(r.epsn); {
	case d == 0 && q.has(DefDropInvalidRequest):
		// Dropped without a word: the expected PSN stays.
	case d == 0:
		q.nakFatal(wire.NAKInvalidRequest, r.epsn)
	case d > 0:
		q.respReceive(&wire.Packet{BTH: wire.BTH{Opcode: wire.SendOnly, PSN: p.PSN}})
	}
}

// badSequence reports an opcode that cannot follow what came before: a
// Middle or Last with no message in progress, or anything but a Middle or
// Last of the same operation inside one.
func (q *QP) badSequence(p *wire.Packet) bool {
	pos := p.Opcode.Position()
	cont := pos == wire.PosMiddle || pos == wire.PosLast
	if m := q.r.cur; m != nil {
		return !cont || p.Opcode.Class() != m.class
	}
	return cont
}

// payloadOK checks a request's payload length against its position.
func (q *QP) payloadOK(p *wire.Packet) bool {
	n := len(p.Payload)
	switch p.Opcode.Class() {
	case wire.ClassReadRequest, wire.ClassAtomic:
		return n == 0
	}
	switch p.Opcode.Position() {
	case wire.PosFirst, wire.PosMiddle:
		return n == q.cfg.MTU
	case wire.PosLast:
		return n >= 1 && n <= q.cfg.MTU
	}
	return n <= q.cfg.MTU
}

// tooLong handles a SEND or WRITE packet longer than the path MTU, which
// cannot be executed: it gets a NAK invalid request with the expected
// PSN. It reports whether the packet is executed all the same (defect
// ack-invalid-request, for a single-packet message, as rxe 6.1 does).
func (q *QP) tooLong(p *wire.Packet) bool {
	switch {
	case q.has(DefAckInvalidRequest) && p.Opcode.Position() == wire.PosOnly:
		return true
	case q.has(DefDropInvalidRequest):
		// Dropped without a word: the expected PSN stays.
	default:
		q.nakFatal(wire.NAKInvalidRequest, q.r.epsn)
	}
	return false
}

// overMTU reports whether p is a SEND or WRITE packet whose payload is
// longer than the path MTU.
func (q *QP) overMTU(p *wire.Packet) bool {
	c := p.Opcode.Class()
	return (c == wire.ClassSend || c == wire.ClassWrite) && len(p.Payload) > q.cfg.MTU
}

// respNew executes a request carrying the expected PSN.
func (q *QP) respNew(p *wire.Packet) {
	if q.badSequence(p) || !q.payloadOK(p) {
		if q.badSequence(p) || !q.overMTU(p) {
			q.nakFatal(wire.NAKInvalidRequest, q.r.epsn)
			return
		}
		if !q.tooLong(p) {
			return
		}
	}
	switch p.Opcode.Class() {
	case wire.ClassSend:
		q.respSend(p)
	case wire.ClassWrite:
		q.respWrite(p)
	case wire.ClassReadRequest:
		q.respRead(p)
	case wire.ClassAtomic:
		q.respAtomic(p)
	default:
		q.nakFatal(wire.NAKInvalidRequest, q.r.epsn)
	}
}

func (q *QP) accept() {
	q.r.epsn = q.r.epsn.Next()
	if q.has(DefDupAckRegister) {
		q.r.ackReg = q.r.epsn
	}
}

func (q *QP) rwqeCount() int {
	if q.cfg.SRQ != nil {
		return q.cfg.SRQ.Len()
	}
	return len(q.rq)
}

func (q *QP) takeRWQE() (recvWQE, bool) {
	if s := q.cfg.SRQ; s != nil {
		if len(s.wqes) == 0 {
			return recvWQE{}, false
		}
		w := s.wqes[0]
		s.wqes = s.wqes[1:]
		return w, true
	}
	if len(q.rq) == 0 {
		return recvWQE{}, false
	}
	w := q.rq[0]
	q.rq = q.rq[1:]
	return w, true
}

func (q *QP) respSend(p *wire.Packet) {
	r := &q.r
	if p.Opcode.StartsMessage() {
		w, ok := q.takeRWQE()
		if !ok {
			q.rnrNAK(p.PSN)
			return
		}
		r.cur = &inMsg{class: wire.ClassSend, first: p.PSN, rwqe: w, data: make([]byte, 0, w.size)}
	}
	m := r.cur
	if len(m.data)+len(p.Payload) > m.rwqe.size {
		// The message is longer than the receive buffer.
		q.cq = append(q.cq, dut.Completion{ID: m.rwqe.id, Op: dut.OpSend, Recv: true,
			Status: dut.StatusLocalError, Time: q.clock.Now()})
		code := wire.NAKRemoteOp
		if q.has(DefNAKCodeReserved) {
			code = 5
		}
		q.nakFatal(code, p.PSN)
		return
	}
	m.data = append(m.data, p.Payload...)
	if p.Opcode.EndsMessage() {
		c := dut.Completion{ID: m.rwqe.id, Op: dut.OpSend, Recv: true, Bytes: len(m.data), Time: q.clock.Now()}
		switch p.Opcode {
		case wire.SendLastImm, wire.SendOnlyImm:
			c.Op, c.Imm = dut.OpSendImm, p.Imm
		case wire.SendLastInvalidate, wire.SendOnlyInvalidate:
			c.Op, c.Imm = dut.OpSendInv, p.IETH
			if !q.mem.invalidate(p.IETH) {
				c.Status = dut.StatusLocalError
				if !q.invalidateFailed(c) {
					return
				}
			}
		}
		q.cq = append(q.cq, c)
		q.recvData[m.rwqe.id] = m.data
		r.cur = nil
		r.msn = (r.msn + 1) & 0xFFFFFF
	}
	q.accept()
	q.ackPolicy(p)
}

// invalidateFailed handles a SEND with Invalidate whose R_Key cannot be
// invalidated (none such, or already invalid), c its receive completion
// (in error): the request cannot be executed, so it gets a NAK invalid
// request with the expected PSN (the NAK's PSN: C9-125) and the QP goes
// to ERROR. It reports whether the request is taken as executed all the
// same (defect ack-invalid-request, as rxe does: its QP goes to ERROR,
// but the packet is still acknowledged positively).
func (q *QP) invalidateFailed(c dut.Completion) bool {
	if q.has(DefAckInvalidRequest) {
		return true
	}
	q.cq = append(q.cq, c)
	q.nakFatal(wire.NAKInvalidRequest, q.r.epsn)
	return false
}

func (q *QP) respWrite(p *wire.Packet) {
	r := &q.r
	imm := p.Opcode == wire.WriteOnlyImm || p.Opcode == wire.WriteLastImm
	if imm && q.rwqeCount() == 0 {
		q.rnrNAK(p.PSN)
		return
	}
	n := uint32(len(p.Payload))
	if p.Opcode.StartsMessage() {
		length := p.RETH.Length
		if (p.Opcode.Position() == wire.PosOnly && n != length) || (p.Opcode.Position() == wire.PosFirst && length <= n) {
			q.nakFatal(wire.NAKInvalidRequest, r.epsn)
			return
		}
		r.cur = &inMsg{class: wire.ClassWrite, first: p.PSN, va: p.RETH.VA, rkey: p.RETH.RKey, total: length}
	}
	m := r.cur
	if n > m.total-m.off || (p.Opcode.EndsMessage() && m.off+n != m.total) {
		q.nakFatal(wire.NAKInvalidRequest, r.epsn)
		return
	}
	if n > 0 {
		dst, _, err := q.mem.lookup(m.rkey, m.va+uint64(m.off), uint64(n), RemoteWrite)
		if err != nil {
			psn := p.PSN
			if q.has(DefAccessNAKExpectedPSN) {
				psn = m.first
			}
			q.nakFatal(wire.NAKRemoteAccess, psn)
			return
		}
		copy(dst, p.Payload)
	}
	m.off += n
	q.accept()
	if p.Opcode.EndsMessage() {
		if imm {
			w, _ := q.takeRWQE()
			q.cq = append(q.cq, dut.Completion{ID: w.id, Op: dut.OpWriteImm, Recv: true, Bytes: int(m.total),
				Imm: p.Imm, Time: q.clock.Now()})
		}
		r.cur = nil
		r.msn = (r.msn + 1) & 0xFFFFFF
	}
	q.ackPolicy(p)
}

// resourceFree reports whether a READ/ATOMIC responder resource is free:
// fewer than MaxDestRdAtomic are outstanding.
func (q *QP) resourceFree() bool {
	n := 0
	for _, res := range q.r.res {
		if !res.done {
			n++
		}
	}
	return n < q.cfg.MaxDestRdAtomic
}

// tooManyReads handles a READ/ATOMIC beyond the responder resources
// (Table 58: NAK invalid request, then ERROR). It reports whether the
// request must not be executed.
func (q *QP) tooManyReads(p *wire.Packet) bool {
	if q.resourceFree() {
		return false
	}
	switch {
	case q.has(DefTooManyReadsServed):
		return false
	case q.has(DefTooManyReadsRNR):
		q.rnrNAK(p.PSN)
	default:
		q.nakFatal(wire.NAKInvalidRequest, q.r.epsn)
	}
	return true
}

// addRes keeps a new resource, recycling the oldest finished one when all
// MaxDestRdAtomic slots are used.
func (q *QP) addRes(res *rdRes) {
	r := &q.r
	if len(r.res) >= q.cfg.MaxDestRdAtomic && len(r.res) > 0 {
		victim := 0
		for i, old := range r.res {
			if old.done {
				victim = i
				break
			}
		}
		r.res = append(r.res[:victim], r.res[victim+1:]...)
	}
	r.res = append(r.res, res)
}

func (q *QP) respRead(p *wire.Packet) {
	r := &q.r
	length := p.RETH.Length
	if length > 1<<31 {
		q.nakFatal(wire.NAKInvalidRequest, r.epsn)
		return
	}
	if q.tooManyReads(p) {
		return
	}
	if length > 0 {
		if _, _, err := q.mem.lookup(p.RETH.RKey, p.RETH.VA, uint64(length), RemoteRead); err != nil {
			q.nakFatal(wire.NAKRemoteAccess, p.PSN)
			return
		}
	}
	n := wire.ReadResponsePackets(length, q.cfg.MTU)
	res := &rdRes{first: p.PSN, last: p.PSN.Add(n - 1), va: p.RETH.VA, rkey: p.RETH.RKey, length: length}
	q.addRes(res)
	before := r.msn
	if !q.has(DefMSNReadSkipped) {
		r.msn = (r.msn + 1) & 0xFFFFFF
	}
	it := &respItem{kind: itemRead, key: p.PSN, res: res, next: res.first, end: res.last, va: res.va,
		remaining: length, msnFirst: r.msn, msnLast: r.msn}
	if q.cfg.MSNAtReadEnd {
		it.msnFirst = before
	}
	r.epsn = r.epsn.Add(n)
	q.clearPending()
	q.enqueue(it)
}

func (q *QP) respAtomic(p *wire.Packet) {
	r := &q.r
	a := &p.Atomic
	if !q.cfg.RemoteAtomic || a.VA%8 != 0 {
		q.nakFatal(wire.NAKInvalidRequest, r.epsn)
		return
	}
	if q.tooManyReads(p) {
		return
	}
	orig, ok := q.execAtomic(p)
	if !ok {
		q.nakFatal(wire.NAKRemoteAccess, p.PSN)
		return
	}
	res := &rdRes{atomic: true, first: p.PSN, last: p.PSN, va: a.VA, rkey: a.RKey, orig: orig}
	q.addRes(res)
	r.msn = (r.msn + 1) & 0xFFFFFF
	q.accept()
	q.clearPending()
	q.enqueue(q.atomicItem(p.PSN, orig, res, false))
}

// execAtomic performs CmpSwap or FetchAdd on host-order (little-endian)
// memory and returns the original value.
func (q *QP) execAtomic(p *wire.Packet) (uint64, bool) {
	a := &p.Atomic
	b, _, err := q.mem.lookup(a.RKey, a.VA, 8, RemoteAtomic)
	if err != nil {
		return 0, false
	}
	orig := binary.LittleEndian.Uint64(b)
	switch p.Opcode {
	case wire.CompareSwap:
		if orig == a.Compare {
			binary.LittleEndian.PutUint64(b, a.SwapAdd)
		}
	case wire.FetchAdd:
		binary.LittleEndian.PutUint64(b, orig+a.SwapAdd)
	}
	return orig, true
}

func (q *QP) atomicItem(psn wire.PSN, orig uint64, res *rdRes, dup bool) *respItem {
	out := psn
	if q.has(DefAtomicAckPSNSkew) {
		out = psn.Next()
	}
	return &respItem{kind: itemAtomic, key: psn, psn: out, orig: orig, res: res, msn: q.r.msn, dup: dup}
}

// respDuplicate answers a request behind the expected PSN without
// executing it again (C9-103 … o9-67).
func (q *QP) respDuplicate(p *wire.Packet) {
	r := &q.r
	q.stats.Duplicates++
	if q.has(DefMSNDupBump) && p.Opcode.EndsMessage() {
		r.msn = (r.msn + 1) & 0xFFFFFF
	}
	switch p.Opcode.Class() {
	case wire.ClassSend, wire.ClassWrite:
		if q.has(DefDupSendReexecuted) && p.Opcode.Class() == wire.ClassSend {
			q.reexecuteSend(p)
		} else {
			q.enqueueDup(&respItem{kind: itemDupAck, key: p.PSN, msn: r.msn, dup: true})
		}
	case wire.ClassReadRequest:
		q.dupRead(p)
	case wire.ClassAtomic:
		q.dupAtomic(p)
	default:
		q.stats.DuplicateDrops++
	}
	if q.has(DefDupMovesEPSN) {
		r.epsn = p.PSN.Next()
	}
}

// reexecuteSend is defect dup-send-reexecuted.
func (q *QP) reexecuteSend(p *wire.Packet) {
	r := &q.r
	if p.Opcode.Position() == wire.PosOnly {
		if w, ok := q.takeRWQE(); ok {
			n := min(len(p.Payload), w.size)
			q.recvData[w.id] = append([]byte(nil), p.Payload[:n]...)
			q.cq = append(q.cq, dut.Completion{ID: w.id, Op: dut.OpSend, Recv: true, Bytes: n, Time: q.clock.Now()})
		}
	}
	if p.Opcode.EndsMessage() {
		r.msn = (r.msn + 1) & 0xFFFFFF
	}
	q.enqueueDup(&respItem{kind: itemAck, key: p.PSN, psn: p.PSN, msn: r.msn, dup: true})
}

// dupError handles an error found while answering a duplicate: a silent
// drop (C9-106/C9-115).
func (q *QP) dupError(p *wire.Packet) {
	if q.has(DefDupErrorNAK) {
		q.nakFatal(wire.NAKRemoteAccess, p.PSN)
		return
	}
	q.stats.DuplicateDrops++
}

func (q *QP) dupRead(p *wire.Packet) {
	r := &q.r
	if q.has(DefDupReadDropped) {
		q.stats.DuplicateDrops++
		return
	}
	var res *rdRes
	for i := len(r.res) - 1; i >= 0; i-- {
		if c := r.res[i]; !c.atomic && p.PSN.InRange(c.first, c.last) {
			res = c
			break
		}
	}
	if res == nil {
		// No saved state for it (class D): dropped.
		q.stats.DuplicateDrops++
		return
	}
	k := uint64(p.PSN.Diff(res.first)) * uint64(q.cfg.MTU)
	reth := p.RETH
	if res.length == 0 {
		if reth.Length != 0 {
			q.dupError(p)
			return
		}
	} else if reth.RKey != res.rkey || reth.VA != res.va+k || k >= uint64(res.length) ||
		uint64(reth.Length) > uint64(res.length)-k {
		q.dupError(p)
		return
	}
	if reth.Length > 0 {
		if _, _, err := q.mem.lookup(reth.RKey, reth.VA, uint64(reth.Length), RemoteRead); err != nil {
			q.dupError(p)
			return
		}
	}
	n := wire.ReadResponsePackets(reth.Length, q.cfg.MTU)
	q.enqueueDup(&respItem{kind: itemRead, key: p.PSN, res: res, next: p.PSN, end: p.PSN.Add(n - 1),
		va: reth.VA, remaining: reth.Length, msnFirst: r.msn, msnLast: r.msn, dup: true})
}

func (q *QP) dupAtomic(p *wire.Packet) {
	r := &q.r
	var res *rdRes
	for i := len(r.res) - 1; i >= 0; i-- {
		if c := r.res[i]; c.atomic && c.first == p.PSN {
			res = c
			break
		}
	}
	if res == nil {
		if q.has(DefDupAtomicUnknownNAK) {
			q.nakFatal(wire.NAKInvalidRequest, r.epsn)
			return
		}
		q.stats.DuplicateDrops++ // o9-67
		return
	}
	orig := res.orig
	if q.has(DefDupAtomicReexecuted) {
		if o, ok := q.execAtomic(p); ok {
			orig = o
			res.orig = o
		}
	}
	q.enqueueDup(q.atomicItem(p.PSN, orig, res, true))
}

// rnrNAK refuses a request for lack of a receive WQE (C9-113); nothing
// else changes and later packets are dropped until it is resent.
func (q *QP) rnrNAK(psn wire.PSN) {
	q.r.rnrLatch = true
	out := psn
	if q.has(DefRNRNAKWrongPSN) {
		out = psn.Next()
	}
	q.enqueue(&respItem{kind: itemNAK, key: psn, psn: out, syn: wire.SynRNR(q.cfg.MinRNRTimer), msn: q.r.msn})
}

// nakFatal sends a class C NAK; once it is sent the QP goes to ERROR, and
// no request is processed in the meantime.
func (q *QP) nakFatal(code uint8, psn wire.PSN) {
	r := &q.r
	r.failed = true
	r.cur = nil
	q.enqueue(&respItem{kind: itemNAK, key: r.epsn, psn: psn, syn: wire.SynNAK(code), msn: r.msn, fatal: true})
}

// ackPolicy decides, after a new SEND/WRITE packet, whether an ACK is due.
func (q *QP) ackPolicy(p *wire.Packet) {
	r := &q.r
	if !r.pending {
		r.pending = true
		r.pendOldest = p.PSN
		r.pendCount = 0
	}
	r.pendNewest = p.PSN
	r.pendCount++
	force := p.AckReq && !q.has(DefAckReqIgnored)
	switch q.cfg.AckPolicy {
	case AckEveryN:
		if r.pendCount >= q.cfg.AckEveryN {
			force = true
		}
	case AckAfterDelay:
		if !force && !r.ackTimer.Pending() {
			r.ackTimer = q.clock.AfterFunc(q.cfg.AckDelay, q.ackTimerFired)
		}
	}
	if force {
		q.flushAck()
	}
}

func (q *QP) ackTimerFired() {
	if q.r.pending && q.state != dut.StateError && !q.r.failed {
		q.flushAck()
	}
}

// flushAck queues an ACK covering every pending SEND/WRITE packet, with
// the PSN of the newest (C9-95).
func (q *QP) flushAck() {
	r := &q.r
	psn := r.pendNewest
	if q.has(DefAckOldestPSN) {
		psn = r.pendOldest
	}
	if q.has(DefAckPSNAhead) {
		psn = psn.Next()
	}
	it := &respItem{kind: itemAck, key: r.pendNewest, psn: psn, msn: r.msn}
	q.clearPending()
	if q.has(DefAckOvertakesRead) {
		it.readyAt = q.clock.Now() + q.cfg.ResponseDelay
		i := 0
		for i < len(r.queue) && r.queue[i].kind != itemRead {
			i++
		}
		r.queue = insertItem(r.queue, i, it)
		q.kick()
		return
	}
	q.enqueue(it)
}

func (q *QP) clearPending() {
	r := &q.r
	r.pending = false
	r.pendCount = 0
	r.ackTimer.Stop()
}

func (q *QP) enqueue(it *respItem) {
	it.readyAt = q.clock.Now() + q.cfg.ResponseDelay
	q.r.queue = append(q.r.queue, it)
	q.kick()
}

// enqueueDup queues the answer to a duplicate: in PSN order among the
// waiting answers, oldest first, and an answer being streamed for a later
// PSN is stopped (C9-104/C9-110).
func (q *QP) enqueueDup(it *respItem) {
	r := &q.r
	it.readyAt = q.clock.Now() + q.cfg.ResponseDelay
	i := 0
	if q.has(DefDupNewestFirst) {
		if len(r.queue) > 0 && r.queue[0].started {
			i = 1
		}
		for i < len(r.queue) && r.queue[i].dup && !r.queue[i].key.Before(it.key) {
			i++
		}
	} else {
		for i < len(r.queue) && !r.queue[i].key.After(it.key) {
			i++
		}
		if i == 0 && len(r.queue) > 0 && r.queue[0].started {
			if q.has(DefReadNoPreempt) {
				i = 1 // the answer being streamed runs to its end
			} else {
				r.queue = r.queue[1:]
				q.stats.Preempted++
			}
		}
	}
	r.queue = insertItem(r.queue, i, it)
	q.kick()
}

func insertItem(s []*respItem, i int, it *respItem) []*respItem {
	s = append(s, nil)
	copy(s[i+1:], s[i:])
	s[i] = it
	return s
}

// credits returns the credit code for ACK-type AETHs: the receive WQEs
// posted on a QP without SRQ (C9-150.2.1), 0x1F on an SRQ QP (o9-95.2.2).
func (q *QP) credits() uint8 {
	if q.cfg.SRQ != nil {
		if q.has(DefSRQCredits) {
			return wire.CreditCode(q.cfg.SRQ.Len())
		}
		return wire.CreditInvalid
	}
	if q.has(DefCreditsInvalidNoSRQ) {
		return wire.CreditInvalid
	}
	return wire.CreditCode(len(q.rq))
}

func (q *QP) ackSyndrome() uint8 {
	s := wire.SynACK(q.credits())
	if q.has(DefSyndromeReservedBit) {
		s |= 0x80
	}
	return s
}

// frontier is the PSN of the most recently completed new request: the
// last request PSN accepted, held back before any READ whose responses
// have not all been sent (C9-101, C9-105).
func (q *QP) frontier() wire.PSN {
	f := q.r.epsn.Add(-1)
	for _, res := range q.r.res {
		if !res.done && res.first.AtOrBefore(f) {
			return res.first.Add(-1)
		}
	}
	return f
}

// blocker returns the READ/ATOMIC resource an acknowledgment would pass
// while its responses are still owed (C9-101), or nil.
func (q *QP) blocker(it *respItem) *rdRes {
	if it.fatal || q.has(DefAckOvertakesRead) {
		return nil
	}
	if it.kind != itemAck && it.kind != itemNAK {
		return nil
	}
	for _, res := range q.r.res {
		if !res.done && res.last.Before(it.psn) {
			return res
		}
	}
	return nil
}

// nextResponse sends the next ready response packet, if any. When the
// head of the queue is not ready yet, wake is when it will be.
func (q *QP) nextResponse() (sent bool, wake time.Duration) {
	r := &q.r
	for len(r.queue) > 0 {
		it := r.queue[0]
		if it.readyAt > q.clock.Now() {
			return false, it.readyAt
		}
		if b := q.blocker(it); b != nil {
			r.queue = r.queue[1:]
			b.deferred = append(b.deferred, it)
			continue
		}
		if it.kind == itemRead {
			if q.sendReadPacket(it) {
				return true, 0
			}
			continue
		}
		r.queue = r.queue[1:]
		q.sendAckItem(it)
		return true, 0
	}
	return false, 0
}

func (q *QP) finishRes(res *rdRes) {
	res.done = true
	if len(res.deferred) > 0 {
		q.r.queue = append(res.deferred, q.r.queue...)
		res.deferred = nil
	}
}

// sendAckItem transmits an Acknowledge or ATOMIC Acknowledge.
func (q *QP) sendAckItem(it *respItem) {
	p := wire.Packet{}
	p.Opcode = wire.Acknowledge
	p.AETH.MSN = it.msn
	switch it.kind {
	case itemAck:
		p.PSN = it.psn
		p.AETH.Syndrome = q.ackSyndrome()
		q.stats.ACKsSent++
		if it.unsolicited {
			q.r.unsolicit = false
			q.stats.UnsolicitedACKs++
		}
	case itemDupAck:
		p.PSN = q.frontier()
		if q.has(DefDupAckRegister) {
			p.PSN = q.r.ackReg.Add(-1)
		}
		p.AETH.Syndrome = q.ackSyndrome()
		q.stats.ACKsSent++
	case itemNAK:
		p.PSN = it.psn
		p.AETH.Syndrome = it.syn
		if it.opcode != 0 {
			p.Opcode = it.opcode
		}
		if q.has(DefNAKMSNZero) {
			p.AETH.MSN = 0
		}
		q.stats.NAKsSent++
		switch {
		case it.syn == wire.SynNAK(wire.NAKPSNSequence):
			q.stats.SeqNAKsSent++
		case it.syn&0xE0 == 0x20:
			q.stats.RNRNAKsSent++
		}
	case itemAtomic:
		p.Opcode = wire.AtomicAcknowledge
		p.PSN = it.psn
		p.AETH.Syndrome = q.ackSyndrome()
		p.AtomicAck = it.orig
		q.stats.AtomicACKsSent++
	}
	if !(it.kind == itemNAK && q.has(DefNAKMSNZero)) {
		p.AETH.MSN = q.monotonicMSN(p.AETH.MSN)
	}
	q.transmit(&p)
	if it.kind == itemAck || it.kind == itemDupAck {
		q.r.lastAck = &respItem{kind: itemAck, key: p.PSN, psn: p.PSN, msn: p.AETH.MSN}
	}
	if it.kind == itemAtomic && !it.res.done {
		q.finishRes(it.res)
	}
	if it.fatal {
		q.enterError()
		return
	}
	if it.kind == itemNAK && q.has(DefUnsolicitedNAKRepeat) && !it.repeat {
		d := q.cfg.UnsolicitedNAKRepeat
		if d <= 0 {
			d = 50 * time.Microsecond
		}
		again := *it
		again.repeat = true
		q.clock.AfterFunc(d, func() {
			if q.state != dut.StateError {
				q.enqueue(&again)
			}
		})
	}
}

// sendReadPacket sends the next packet of a READ response stream. It
// reads memory now, so a region invalidated mid-stream is noticed
// (C9-100/C9-112). It reports whether a packet left.
func (q *QP) sendReadPacket(it *respItem) bool {
	r := &q.r
	first := !it.started
	final := it.next == it.end
	n := it.remaining
	if n > uint32(q.cfg.MTU) {
		n = uint32(q.cfg.MTU)
	}
	var op wire.Opcode
	switch {
	case first && final:
		op = wire.ReadResponseOnly
	case first:
		op = wire.ReadResponseFirst
	case final:
		op = wire.ReadResponseLast
	default:
		op = wire.ReadResponseMiddle
	}
	switch {
	case first && it.dup && it.next != it.res.first && q.has(DefReadReplayMiddle):
		if final {
			op = wire.ReadResponseLast
		} else {
			op = wire.ReadResponseMiddle
		}
	case op == wire.ReadResponseFirst && q.has(DefReadFirstNoAETH):
		op = wire.ReadResponseMiddle
	case op == wire.ReadResponseLast && q.has(DefReadLastNoAETH):
		op = wire.ReadResponseMiddle
	}
	var data []byte
	if n > 0 {
		b, _, err := q.mem.lookup(it.res.rkey, it.va, uint64(n), RemoteRead)
		if err != nil {
			return q.readFailed(it, op)
		}
		data = b
	}
	p := wire.Packet{}
	p.Opcode = op
	p.PSN = it.next
	if q.has(DefReadRespPSNSkew) {
		p.PSN = p.PSN.Next()
	}
	if op.Has(wire.HdrAETH) {
		p.AETH.Syndrome = q.ackSyndrome()
		p.AETH.MSN = it.msnLast
		if op == wire.ReadResponseFirst {
			p.AETH.MSN = it.msnFirst
		}
		p.AETH.MSN = q.monotonicMSN(p.AETH.MSN)
	}
	p.Payload = data
	q.transmit(&p)
	q.stats.ReadResponses++
	it.started = true
	it.va += uint64(n)
	it.remaining -= n
	if final {
		r.queue = r.queue[1:]
		if it.end == it.res.last && !it.res.done {
			q.finishRes(it.res)
		}
	} else {
		it.next = it.next.Next()
	}
	return true
}

// readFailed handles a READ whose memory became inaccessible: the packet
// that would have carried the data goes out as an Acknowledge NAK (remote
// access) with that packet's PSN (C9-100/C9-112, C9-113.a1), then the QP
// goes to ERROR. For a duplicate the answer is dropped (C9-106/C9-115).
func (q *QP) readFailed(it *respItem, op wire.Opcode) bool {
	r := &q.r
	r.queue = r.queue[1:]
	if it.dup && !q.has(DefDupErrorNAK) {
		q.stats.DuplicateDrops++
		return false
	}
	psn := it.next
	if q.has(DefReadFailRequestPSN) {
		psn = it.key
	}
	nak := &respItem{kind: itemNAK, key: it.key, psn: psn, syn: wire.SynNAK(wire.NAKRemoteAccess), msn: r.msn, fatal: true}
	if q.has(DefNAKInReadResponse) {
		nak.opcode = op
		if !op.Has(wire.HdrAETH) {
			nak.opcode = wire.ReadResponseLast
		}
	}
	r.failed = true
	q.sendAckItem(nak)
	return true
}

// unsolicitedACK re-sends the latest positive ACK with the credits that
// the receive WQEs just posted give (§9.7.7.2). It is never made from a
// NAK.
func (q *QP) unsolicitedACK() {
	r := &q.r
	if !q.cfg.UnsolicitedACK || q.cfg.SRQ != nil || r.lastAck == nil || r.unsolicit || r.failed {
		return
	}
	switch q.state {
	case dut.StateRTR, dut.StateRTS, dut.StateSQD, dut.StateSQE:
	default:
		return
	}
	it := *r.lastAck
	it.unsolicited = true
	r.unsolicit = true
	q.enqueue(&it)
}

// monotonicMSN returns the MSN an AETH carries: the value owed when the
// response was generated, raised to the highest already sent. Answers to
// duplicates go ahead of responses generated before them (C9-104/C9-110),
// and the MSN a requester sees must never go back.
func (q *QP) monotonicMSN(m uint32) uint32 {
	r := &q.r
	if d := (m - r.wireMSN) & 0xFFFFFF; d >= 1<<23 {
		m = r.wireMSN
	}
	r.wireMSN = m
	return m
}
