package reference

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// The requester half of a QP: segmentation, AckReq, the ACK (transport)
// timer, go-back-N, the RNR timer, the two retry counters, the
// interpretation of responses (§9.7.5.1.2) and completions.

type wqeKind uint8

const (
	kindSend wqeKind = iota
	kindWrite
	kindRead
	kindAtomic
)

// sendWQE is a posted send work request.
type sendWQE struct {
	wr          dut.WR
	kind        wqeKind
	npkts       int // request packets: SEND/WRITE segments, 1 for READ/ATOMIC
	psns        int // PSNs it uses: npkts, or the READ response count
	first, last wire.PSN
	started     bool // PSNs assigned and first packet sent
	acked       int  // SEND/WRITE: packets acknowledged; READ: response packets received
	local       []byte
}

func (w *sendWQE) readOrAtomic() bool { return w.kind == kindRead || w.kind == kindAtomic }

type requester struct {
	sq          []*sendWQE // posted and not completed, oldest first
	cur         int        // index in sq of the WQE transmitted next
	curPkt      int        // its next packet
	nextPSN     wire.PSN   // the next PSN never assigned
	sentUpTo    wire.PSN   // the next PSN never transmitted
	retryLeft   int
	rnrLeft     int
	timer       *Timer // the ACK (transport) timer
	rnrTimer    *Timer
	rnrWait     bool
	rnrPSN      wire.PSN
	sinceAckReq int
	renumber    bool // defect gbn-new-psn
	// inRetry is set by a go-back-N and cleared by progress. While it is
	// set, an implied NAK is not acted on: the acknowledgments of the
	// packets sent before the rewind keep arriving (a responder answers
	// every duplicate), and each would otherwise start the retry again and
	// spend the counter. rxe likewise starts no second retry sequence
	// while one is in progress, except on a timeout.
	inRetry bool
}

func (q *QP) retryBudget() int {
	n := int(q.cfg.RetryCnt)
	if q.has(DefRetryCountPlusOne) {
		n++
	}
	return n
}

func (q *QP) resetCounters() {
	s := &q.s
	s.retryLeft = q.retryBudget()
	s.rnrLeft = int(q.cfg.RNRRetry)
	s.inRetry = false
}

func (q *QP) postSend(wr dut.WR, local []byte) error {
	switch q.state {
	case dut.StateReset, dut.StateInit:
		return fmt.Errorf("posting WR %d: %w (%v)", wr.ID, ErrState, q.state)
	case dut.StateError:
		q.cq = append(q.cq, dut.Completion{ID: wr.ID, Op: wr.Op, Status: dut.StatusFlushed, Time: q.clock.Now()})
		return nil
	}
	w := &sendWQE{wr: wr, local: local}
	mtu := q.cfg.MTU
	switch wr.Op {
	case dut.OpSend, dut.OpSendImm, dut.OpSendInv:
		w.kind = kindSend
	case dut.OpWrite, dut.OpWriteImm:
		w.kind = kindWrite
	case dut.OpRead:
		w.kind = kindRead
	case dut.OpCmpSwap, dut.OpFetchAdd:
		w.kind = kindAtomic
	default:
		return fmt.Errorf("posting WR %d: unknown operation %v", wr.ID, wr.Op)
	}
	switch w.kind {
	case kindSend, kindWrite:
		if len(wr.Data) > 1<<31 {
			return fmt.Errorf("posting WR %d: %d bytes exceed 2^31", wr.ID, len(wr.Data))
		}
		w.npkts = max(1, (len(wr.Data)+mtu-1)/mtu)
		w.psns = w.npkts
	case kindRead:
		if wr.Length < 0 || wr.Length > 1<<31 {
			return fmt.Errorf("posting WR %d: READ length %d out of range", wr.ID, wr.Length)
		}
		w.npkts = 1
		w.psns = wire.ReadResponsePackets(uint32(wr.Length), mtu)
		if w.local == nil {
			w.local = make([]byte, wr.Length)
		}
	case kindAtomic:
		if wr.RemoteVA%8 != 0 {
			return fmt.Errorf("posting WR %d: ATOMIC address 0x%x is not 8-byte aligned", wr.ID, wr.RemoteVA)
		}
		w.npkts, w.psns = 1, 1
		if w.local == nil {
			w.local = make([]byte, 8)
		}
	}
	q.s.sq = append(q.s.sq, w)
	q.kick()
	return nil
}

// head returns the oldest WQE if it has started, else nil.
func (q *QP) head() *sendWQE {
	if len(q.s.sq) == 0 || !q.s.sq[0].started {
		return nil
	}
	return q.s.sq[0]
}

// oldestUnacked is the first PSN not yet acknowledged (or received, for
// a READ); nextPSN when nothing is outstanding.
func (q *QP) oldestUnacked() wire.PSN {
	w := q.head()
	if w == nil {
		return q.s.nextPSN
	}
	if w.kind == kindAtomic {
		return w.first
	}
	return w.first.Add(w.acked)
}

func (q *QP) outstanding() bool { return q.head() != nil }

func (q *QP) outstandingRdAtomic() int {
	n := 0
	for _, w := range q.s.sq {
		if !w.started {
			break
		}
		if w.readOrAtomic() {
			n++
		}
	}
	return n
}

// setCursor points the transmitter at sq[i], at its first packet not yet
// acknowledged.
func (q *QP) setCursor(i int) {
	s := &q.s
	s.cur, s.curPkt = i, 0
	if i < len(s.sq) {
		if w := s.sq[i]; w.started && !w.readOrAtomic() {
			s.curPkt = w.acked
		}
	}
}

func (q *QP) advanceCursor() {
	q.setCursor(q.s.cur + 1)
}

// nextRequest transmits the next request packet, if the QP may send one.
func (q *QP) nextRequest() bool {
	s := &q.s
	if (q.state != dut.StateRTS && q.state != dut.StateSQD) || s.rnrWait || s.cur >= len(s.sq) {
		return false
	}
	w := s.sq[s.cur]
	oldest := q.oldestUnacked()
	if !w.started {
		if q.state == dut.StateSQD {
			return false
		}
		if w.readOrAtomic() && q.cfg.MaxRdAtomic > 0 && q.outstandingRdAtomic() >= q.cfg.MaxRdAtomic {
			return false
		}
		if q.outstanding() && s.nextPSN.Diff(oldest)+min(w.psns, q.cfg.MaxUnacked) > q.cfg.MaxUnacked {
			return false
		}
		w.first = s.nextPSN
		w.last = w.first.Add(w.psns - 1)
		s.nextPSN = s.nextPSN.Add(w.psns)
		w.started = true
		s.curPkt = 0
		oldest = q.oldestUnacked()
	}
	p := wire.Packet{}
	mtu := q.cfg.MTU
	switch w.kind {
	case kindSend, kindWrite:
		i := s.curPkt
		p.PSN = w.first.Add(i)
		if d := p.PSN.Diff(oldest); d >= q.cfg.MaxUnacked {
			return false
		}
		lo := min(i*mtu, len(w.wr.Data))
		hi := min(lo+mtu, len(w.wr.Data))
		p.Payload = w.wr.Data[lo:hi]
		p.Opcode = segmentOpcode(w.wr.Op, i, w.npkts)
		if p.Opcode.Has(wire.HdrRETH) {
			p.RETH = wire.RETH{VA: w.wr.RemoteVA, RKey: w.wr.RKey, Length: uint32(len(w.wr.Data))}
		}
		p.Imm = w.wr.Imm
		p.IETH = w.wr.RKey
		last := i == w.npkts-1
		p.AckReq = last ||
			(q.cfg.AckReqEvery > 0 && s.sinceAckReq+1 >= q.cfg.AckReqEvery) ||
			p.PSN.Diff(oldest)+1 >= q.cfg.MaxUnacked
		s.curPkt++
		if s.curPkt >= w.npkts {
			q.advanceCursor()
		}
	case kindRead:
		off := w.acked * mtu
		p.Opcode = wire.ReadRequest
		p.PSN = w.first.Add(w.acked)
		p.RETH = wire.RETH{VA: w.wr.RemoteVA + uint64(off), RKey: w.wr.RKey, Length: uint32(w.wr.Length - off)}
		p.AckReq = true
		q.advanceCursor()
	case kindAtomic:
		p.Opcode = wire.CompareSwap
		if w.wr.Op == dut.OpFetchAdd {
			p.Opcode = wire.FetchAdd
		}
		p.PSN = w.first
		p.Atomic = wire.AtomicETH{VA: w.wr.RemoteVA, RKey: w.wr.RKey, SwapAdd: w.wr.Swap, Compare: w.wr.CompareAdd}
		if w.wr.Op == dut.OpFetchAdd {
			p.Atomic.SwapAdd, p.Atomic.Compare = w.wr.CompareAdd, 0
		}
		p.AckReq = true
		q.advanceCursor()
	}
	if p.PSN.Before(s.sentUpTo) {
		q.stats.Retransmits++
		if s.renumber {
			p.PSN = s.nextPSN
			s.nextPSN = s.nextPSN.Next()
		}
	} else {
		s.sentUpTo = p.PSN.Next()
		if w.kind == kindRead {
			s.sentUpTo = w.last.Next()
		}
	}
	if p.AckReq {
		s.sinceAckReq = 0
	} else {
		s.sinceAckReq++
	}
	q.stats.RequestsSent++
	q.transmit(&p)
	q.armTimer()
	return true
}

// segmentOpcode returns the opcode of packet i of n of a SEND or WRITE.
func segmentOpcode(op dut.Op, i, n int) wire.Opcode {
	first, last := i == 0, i == n-1
	switch op {
	case dut.OpWrite, dut.OpWriteImm:
		switch {
		case first && last && op == dut.OpWriteImm:
			return wire.WriteOnlyImm
		case first && last:
			return wire.WriteOnly
		case first:
			return wire.WriteFirst
		case last && op == dut.OpWriteImm:
			return wire.WriteLastImm
		case last:
			return wire.WriteLast
		}
		return wire.WriteMiddle
	}
	switch {
	case first && last:
		switch op {
		case dut.OpSendImm:
			return wire.SendOnlyImm
		case dut.OpSendInv:
			return wire.SendOnlyInvalidate
		}
		return wire.SendOnly
	case first:
		return wire.SendFirst
	case last:
		switch op {
		case dut.OpSendImm:
			return wire.SendLastImm
		case dut.OpSendInv:
			return wire.SendLastInvalidate
		}
		return wire.SendLast
	}
	return wire.SendMiddle
}

// ackInterval is the transport timer interval (C9-140); 0 means none.
func (q *QP) ackInterval() time.Duration {
	d := wire.AckTimeout(q.cfg.Timeout)
	if d == 0 && q.has(DefRetryTimeoutZero) {
		d = time.Millisecond
	}
	if q.has(DefRetryBeforeTimeout) {
		d /= 2
	}
	if d > 0 {
		d = max(d-q.cfg.TimerEarly, 0)
	}
	return d
}

// defaultTick is the timer tick of defect timer-one-tick-early when the
// configuration sets none: Linux's jiffy at HZ=250.
const defaultTick = 4 * time.Millisecond

// tick is the requester's timer granularity for defect
// timer-one-tick-early.
func (q *QP) tick() time.Duration {
	if q.cfg.TimerTick > 0 {
		return q.cfg.TimerTick
	}
	return defaultTick
}

// onTick is how long after now a requester timer of interval d fires: at
// d on an exact clock, else on the first tick boundary at or past d (a
// coarse timer is late, never early).
func (q *QP) onTick(d time.Duration) time.Duration {
	t := q.cfg.TimerTick
	if t <= 0 {
		return d
	}
	now := q.clock.Now()
	return (now+d+t-1)/t*t - now
}

// armTimer arms the ACK timer if it is not running.
func (q *QP) armTimer() {
	s := &q.s
	if s.timer.Pending() {
		return
	}
	if d := q.ackInterval(); d > 0 {
		if q.has(DefTimerOneTickEarly) {
			d -= min(q.tick(), d/2)
		} else {
			d = q.onTick(d)
		}
		s.timer = q.clock.AfterFunc(d, q.ackTimeout)
	}
}

func (q *QP) restartTimer() {
	q.s.timer.Stop()
	if q.outstanding() && !q.s.rnrWait {
		q.armTimer()
	}
}

func (q *QP) ackTimeout() {
	stale := q.s.rnrWait && q.has(DefRNRStaleTimer)
	if (q.state != dut.StateRTS && q.state != dut.StateSQD) || !q.outstanding() || q.s.rnrWait && !stale {
		return
	}
	q.stats.Timeouts++
	q.retry(q.oldestUnacked())
}

// retry spends one transport retry and goes back to from, or ends the
// oldest WQE with retry-exceeded when none is left.
func (q *QP) retry(from wire.PSN) {
	s := &q.s
	if s.retryLeft <= 0 {
		q.failHead(dut.StatusRetryExceeded)
		return
	}
	if q.cfg.RetryCnt != 7 || !q.has(DefRetry7Unlimited) {
		s.retryLeft--
	}
	q.stats.Retries++
	q.rewind(from)
}

// rewind goes back to psn (go-back-N): the same packets are sent again,
// with the same PSNs, from the one carrying psn.
func (q *QP) rewind(psn wire.PSN) {
	s := &q.s
	if !(s.rnrWait && q.has(DefRNRStaleTimer)) {
		s.timer.Stop()
	}
	i := 0
	for i < len(s.sq) && s.sq[i].started && !psn.InRange(s.sq[i].first, s.sq[i].last) {
		i++
	}
	q.setCursor(i)
	if i < len(s.sq) && s.sq[i].started && !s.sq[i].readOrAtomic() {
		w := s.sq[i]
		s.curPkt = max(w.acked, psn.Diff(w.first))
		if q.has(DefGBNSkipOne) {
			s.curPkt++
			if s.curPkt >= w.npkts {
				q.advanceCursor()
			}
		}
	}
	if q.has(DefGBNNewPSN) {
		s.renumber = true
	}
	s.inRetry = true
	q.kick()
}

// completeSend writes a send completion.
func (q *QP) completeSend(w *sendWQE, st dut.Status) {
	c := dut.Completion{ID: w.wr.ID, Op: w.wr.Op, Status: st, Time: q.clock.Now()}
	switch w.kind {
	case kindSend, kindWrite:
		c.Bytes = len(w.wr.Data)
	case kindRead:
		c.Bytes = w.wr.Length
	case kindAtomic:
		c.Bytes = 8
	}
	if st == dut.StatusSuccess && w.readOrAtomic() {
		q.results[w.wr.ID] = w.local
	}
	q.cq = append(q.cq, c)
}

// popHead completes the oldest WQE successfully.
func (q *QP) popHead() {
	s := &q.s
	w := s.sq[0]
	q.completeSend(w, dut.StatusSuccess)
	s.sq[0] = nil
	s.sq = s.sq[1:]
	if s.cur > 0 {
		s.cur--
	} else {
		q.setCursor(0)
	}
}

// failHead completes the oldest WQE with an error; the QP goes to ERROR.
func (q *QP) failHead(st dut.Status) {
	s := &q.s
	if len(s.sq) > 0 {
		q.completeSend(s.sq[0], st)
		s.sq = s.sq[1:]
	}
	q.enterError()
}

// cover applies an acknowledgment of every PSN before limit (and limit
// itself when inclusive): SENDs and WRITEs complete; a READ or ATOMIC
// passed without its response was implicitly NAKed (§9.7.5.1.2 rule 1)
// and is re-issued, which stops the processing (retried is true).
func (q *QP) cover(limit wire.PSN, inclusive bool) (progress, retried bool) {
	s := &q.s
	for len(s.sq) > 0 && s.sq[0].started {
		w := s.sq[0]
		passed := w.last.Before(limit) || (inclusive && w.last == limit)
		if !passed {
			if !w.readOrAtomic() && !w.first.After(limit) {
				n := limit.Diff(w.first)
				if inclusive {
					n++
				}
				if n > w.acked {
					w.acked = n
					progress = true
					q.resetCounters()
					if s.cur == 0 && s.curPkt < n {
						s.curPkt = n
					}
				}
			}
			return progress, false
		}
		if w.readOrAtomic() && !q.has(DefImpliedNAKIgnored) {
			q.stats.ImpliedNAKs++
			if s.inRetry {
				q.stats.GhostResponses++
			} else {
				q.retry(q.oldestUnacked())
			}
			return progress, true
		}
		q.popHead()
		progress = true
		q.resetCounters()
	}
	return progress, false
}

// afterResponse updates the ACK timer after a response was processed.
func (q *QP) afterResponse(progress bool) {
	if progress {
		q.restartTimer()
	} else if !q.outstanding() {
		q.s.timer.Stop()
	}
	q.kick()
}

// find returns the started, incomplete WQE whose PSN range holds psn.
func (q *QP) find(psn wire.PSN) *sendWQE {
	for _, w := range q.s.sq {
		if !w.started {
			return nil
		}
		if psn.InRange(w.first, w.last) {
			return w
		}
	}
	return nil
}

// reqReceive interprets a response (§9.7.5.1.2).
func (q *QP) reqReceive(p *wire.Packet) {
	if q.head() == nil {
		q.stats.GhostResponses++
		return
	}
	op := p.Opcode
	if op.Has(wire.HdrAETH) {
		syn := p.AETH.Syndrome
		kind := wire.SyndromeKind(syn>>5) & 3
		if op == wire.Acknowledge || kind != wire.KindACK {
			switch kind {
			case wire.KindACK:
				q.onAck(p.PSN)
			case wire.KindRNR:
				q.onRNR(p.PSN, syn&0x1F)
			case wire.KindNAK:
				if syn&0x1F == wire.NAKPSNSequence {
					q.onSeqNAK(p.PSN)
				} else {
					q.onFatalNAK(p.PSN, syn&0x1F)
				}
			default:
				q.onFatalNAK(p.PSN, wire.NAKRemoteOp)
			}
			return
		}
	}
	switch op.Class() {
	case wire.ClassReadResponse:
		q.onReadResponse(p)
	case wire.ClassAtomicAck:
		q.onAtomicAck(p)
	default:
		q.stats.GhostResponses++
	}
}

// inWindow reports whether psn lies in [oldest unacknowledged, nextPSN),
// or up to nextPSN itself when upTo.
func (q *QP) inWindow(psn wire.PSN, upTo bool) bool {
	oldest := q.oldestUnacked()
	if psn.Before(oldest) {
		return false
	}
	if upTo {
		return psn.AtOrBefore(q.s.nextPSN)
	}
	return psn.Before(q.s.nextPSN)
}

func (q *QP) onAck(psn wire.PSN) {
	if !q.inWindow(psn, false) {
		q.stats.GhostResponses++
		return
	}
	progress, retried := q.cover(psn, true)
	if !retried {
		q.afterResponse(progress)
	}
}

func (q *QP) onReadResponse(p *wire.Packet) {
	w := q.find(p.PSN)
	if w == nil || w.kind != kindRead || p.PSN != w.first.Add(w.acked) {
		q.stats.GhostResponses++
		return
	}
	if _, retried := q.cover(w.first, false); retried {
		return
	}
	if q.s.sq[0] != w {
		q.stats.GhostResponses++
		return
	}
	mtu := q.cfg.MTU
	final := w.acked+1 == w.psns
	pos := p.Opcode.Position()
	off := w.acked * mtu
	want := min(mtu, w.wr.Length-off)
	if final != (pos == wire.PosLast || pos == wire.PosOnly) || len(p.Payload) != want {
		q.stats.GhostResponses++
		return
	}
	copy(w.local[off:], p.Payload)
	w.acked++
	q.resetCounters()
	if final {
		q.popHead()
	} else if q.s.cur == 0 {
		q.setCursor(0)
	}
	q.afterResponse(true)
}

func (q *QP) onAtomicAck(p *wire.Packet) {
	w := q.find(p.PSN)
	if w == nil || w.kind != kindAtomic {
		q.stats.GhostResponses++
		return
	}
	if _, retried := q.cover(w.first, false); retried {
		return
	}
	if q.s.sq[0] != w {
		q.stats.GhostResponses++
		return
	}
	binary.LittleEndian.PutUint64(w.local, p.AtomicAck)
	q.resetCounters()
	q.popHead()
	q.afterResponse(true)
}

func (q *QP) onSeqNAK(psn wire.PSN) {
	s := &q.s
	q.stats.SeqNAKsReceived++
	if (s.rnrWait && !psn.Before(s.rnrPSN)) || !q.inWindow(psn, true) {
		q.stats.GhostResponses++
		return
	}
	progress, retried := q.cover(psn, false)
	if retried {
		return
	}
	if !q.outstanding() {
		q.afterResponse(progress)
		return
	}
	from := psn
	if o := q.oldestUnacked(); from.Before(o) {
		from = o
	}
	q.retry(from)
}

func (q *QP) onRNR(psn wire.PSN, code uint8) {
	s := &q.s
	q.stats.RNRNAKsReceived++
	if s.rnrWait || !q.inWindow(psn, false) {
		q.stats.GhostResponses++
		return
	}
	if _, retried := q.cover(psn, false); retried {
		return
	}
	infinite := q.cfg.RNRRetry == 7 && !q.has(DefRNRRetry7Finite) && !q.has(DefRNRCostsRetry)
	left := &s.rnrLeft
	if q.has(DefRNRCostsRetry) {
		left = &s.retryLeft
	}
	if !infinite {
		if *left <= 0 {
			q.failHead(dut.StatusRNRRetryExceeded)
			return
		}
		*left--
	}
	q.stats.RNRRetries++
	s.rnrWait = true
	s.rnrPSN = psn
	q.rewind(psn)
	d := wire.RNRDelay(code)
	if q.has(DefRNRResendEarly) {
		d /= 2
	}
	d = max(d-q.cfg.TimerEarly, 0)
	s.rnrTimer = q.clock.AfterFunc(q.onTick(d), func() {
		s.rnrWait = false
		q.kick()
	})
}

func (q *QP) onFatalNAK(psn wire.PSN, code uint8) {
	if psn.Before(q.s.sq[0].first) || !psn.Before(q.s.nextPSN) {
		q.stats.GhostResponses++
		return
	}
	if q.has(DefRetryAfterFatalNAK) {
		if _, retried := q.cover(psn, false); !retried && q.outstanding() {
			from := psn
			if o := q.oldestUnacked(); from.Before(o) {
				from = o
			}
			q.retry(from)
		}
		return
	}
	if _, retried := q.cover(psn, false); retried {
		return
	}
	st := dut.StatusRemoteOperationalError
	switch code {
	case wire.NAKInvalidRequest:
		st = dut.StatusRemoteInvalidRequest
	case wire.NAKRemoteAccess:
		st = dut.StatusRemoteAccessError
	}
	q.failHead(st)
}
