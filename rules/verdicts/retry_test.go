package verdicts

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// retryExchange simulates, from rng, a requester and a responder that
// both follow the rules over a link that loses packets, written
// independently of the reference transport:
//
//   - the requester sends SENDs and WRITEs of one or more packets (AckReq
//     on the last), READs and ATOMICs, in PSN order, in bursts;
//   - the responder executes new requests in order (C9-148: the MSN counts
//     each completed message, a READ's from its first response on),
//     acknowledges SENDs and WRITEs at once or coalesced (C9-95), answers
//     a READ with its whole response stream (C9-96) and an ATOMIC with its
//     Atomic Acknowledge (o9-58), NAKs the first request past a gap with
//     its expected PSN and then stays silent until that PSN arrives
//     (C9-111, C9-114), answers a duplicate SEND or WRITE with an ACK of the
//     newest completed request (C9-105), executes a duplicate READ again
//     (C9-107) and replays a duplicate ATOMIC's saved result (o9-66);
//   - the requester, on a sequence NAK, resends from the NAK's PSN (§2.5);
//     on an acknowledgment past an unanswered READ or ATOMIC re-issues it
//     (§9.7.5.1.2); and when nothing answers what it sent, waits for its
//     timer and resends from its oldest unacknowledged PSN (go-back-N).
//
// Where the capture is taken decides which lost packets it shows: at the
// responder (a lost request never reaches it, a lost response left it),
// at the requester (the reverse), in the middle (either, at random), or
// complete (nothing lost: what --complete says). Losses stop after a few rounds, so that everything
// completes in the end.
//
// origMSN makes the responder answer a duplicate READ or ATOMIC with the
// MSN of its first answer, not the current one (either is allowed:
// docs/interpretations.md, "MSN of a replayed answer").
func retryExchange(rng *rand.Rand, mtu int, loss float64, view captureView, fromStart, origMSN bool) *ht.Trace {
	t := retryExchangeSent(rng, mtu, loss, view, fromStart, origMSN)
	for i := len(t.Records) - 1; i >= 0; i-- {
		if t.Records[i].Note == noteLost {
			t.Remove(i)
		}
	}
	return t
}

// Notes retryExchangeSent leaves on its records.
const (
	noteLost    = "lost"                // lost before the capture point: not in the capture
	noteDupSend = "answers a duplicate" // an ACK answering a duplicate SEND or WRITE
)

// retryExchangeSent is retryExchange before the capture: every packet
// sent, those lost before the capture point still in the trace with the
// note noteLost, the IPv4 IDs numbered over all of them.
func retryExchangeSent(rng *rand.Rand, mtu int, loss float64, view captureView, fromStart, origMSN bool) *ht.Trace {
	type msg struct {
		op       wire.Opcode
		psn      wire.PSN
		n, size  int
		orig     uint64 // an ATOMIC's original value
		acked    bool   // complete at the requester
		got      int    // READ response packets received in order
		executed bool   // executed by the responder (new)
		partial  bool   // a READ re-requested only from its first missing packet
		ackAt    int    // a packet before the last that carries AckReq too (-1: none)
		msn      uint32 // a READ's or an ATOMIC's MSN when executed
	}
	t := &ht.Trace{}
	var msgs []*msg
	next := wire.PSN(rng.IntN(1 << 24))
	// Responder state.
	epsn := next
	msn := uint32(0)
	if !fromStart {
		msn = uint32(rng.IntN(1 << 24))
	}
	latch := false
	lastDone := next.Add(-1) // PSN of the newest completed new request packet
	pendingAck := false
	// The message each PSN belongs to, and its packet index.
	byPSN := map[wire.PSN][2]int{}

	lost := func(r *trace.Record, lossy bool) bool {
		if !lossy || rng.Float64() >= loss {
			return false
		}
		request := r.Dir == trace.ToResponder
		if view == viewComplete {
			// --complete: the responder's whole view for the responder's
			// rules and the requester's for the requester's, so nothing
			// is lost on either side of the capture point.
			return false
		}
		switch {
		case view == viewResponder && request, view == viewRequester && !request, view == viewMiddle && rng.IntN(2) == 0:
			r.Note = noteLost // before the capture point: not in the trace
		}
		return true
	}
	// packet adds packet k of message m to the trace.
	packet := func(m *msg, k int) *trace.Record {
		switch m.op {
		case wire.ReadRequest:
			// k > 0: a partial re-request of the part not received, an
			// exact subset of the READ (§2.5).
			r := t.Read(m.psn.Add(k), uint32(m.size-k*mtu))
			r.Packet.RETH.VA += uint64(k * mtu)
			return r
		case wire.FetchAdd, wire.CompareSwap:
			return t.Atomic(m.op, m.psn)
		}
		op := m.op
		if m.n > 1 {
			write := m.op == wire.WriteOnly
			switch {
			case k == 0 && write:
				op = wire.WriteFirst
			case k == 0:
				op = wire.SendFirst
			case k == m.n-1 && write:
				op = wire.WriteLast
			case k == m.n-1:
				op = wire.SendLast
			case write:
				op = wire.WriteMiddle
			default:
				op = wire.SendMiddle
			}
		}
		r := t.Req(op, m.psn.Add(k), k == m.n-1 || k == m.ackAt)
		if op == wire.WriteFirst || op == wire.WriteOnly {
			r.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 0x42, Length: uint32(m.size)}
		}
		sz := min(mtu, m.size-k*mtu)
		r.Packet.Payload = make([]byte, sz)
		r.PayloadLen = sz
		return r
	}
	// respond is the responder receiving packet k of message i; it returns
	// the responses it sends.
	refuse := false                    // the responder has no receive WQE this round
	rnrCode := uint8(1 + rng.IntN(13)) // 0.01 to 0.96 ms
	respond := func(i, k int, ackReq bool) []*trace.Record {
		m := msgs[i]
		p := m.psn.Add(k)
		var out []*trace.Record
		flush := func() {
			if pendingAck {
				out = append(out, t.Ack(lastDone, msn))
				pendingAck = false
			}
		}
		switch {
		case p == epsn && refuse && m.op == wire.SendOnly && k == 0:
			// No receive WQE: an RNR NAK naming the SEND's first PSN
			// (C9-113), nothing else changes.
			latch = false
			flush()
			out = append(out, t.RNR(p, rnrCode, msn))
		case p == epsn:
			latch = false
			switch m.op {
			case wire.ReadRequest:
				flush()
				msn = (msn + 1) & 0xFFFFFF
				m.executed, m.msn = true, msn
				out = append(out, t.ReadStream(m.psn, m.size, mtu, msn)...)
				epsn = epsn.Add(m.n)
				lastDone = epsn.Add(-1)
				pendingAck = false
			case wire.FetchAdd, wire.CompareSwap:
				flush()
				msn = (msn + 1) & 0xFFFFFF
				m.executed, m.msn = true, msn
				out = append(out, t.AtomicAck(m.psn, msn, m.orig))
				epsn = epsn.Next()
				lastDone = p
			default:
				epsn = epsn.Next()
				lastDone = p
				if k == m.n-1 {
					msn = (msn + 1) & 0xFFFFFF
					m.executed = true
				}
				switch {
				case ackReq && rng.IntN(3) > 0, !ackReq && rng.IntN(10) == 0:
					// Acknowledged now (without AckReq too, now and
					// then: allowed, C9-116), mid-message with the MSN
					// of the messages completed.
					out = append(out, t.Ack(p, msn))
					pendingAck = false
				case ackReq:
					pendingAck = true // coalesced into a later ACK
				}
			}
		case p.After(epsn):
			if !latch {
				flush()
				out = append(out, t.NAK(epsn, 0, msn))
				latch = true
			}
		default: // a duplicate
			rmsn := msn
			if origMSN && m.executed {
				rmsn = m.msn
			}
			switch m.op {
			case wire.ReadRequest:
				// Executed again from the PSN asked for (C9-107).
				flush()
				out = append(out, t.ReadStream(p, m.size-k*mtu, mtu, rmsn)...)
			case wire.FetchAdd, wire.CompareSwap:
				flush()
				out = append(out, t.AtomicAck(m.psn, rmsn, m.orig))
			default:
				if ackReq {
					flush()
					out = append(out, t.Ack(lastDone, msn))
					out[len(out)-1].Note = noteDupSend
				}
			}
		}
		return out
	}

	type pkt struct{ i, k int }
	var netCopies [][2]*trace.Record // a request and the network's copy of it
	var queue []pkt                  // what the requester sends next round
	rounds := 2 + rng.IntN(10)
	for round := 0; round < rounds+12; round++ {
		lossy := round < rounds
		// New messages.
		if round < rounds {
			for range rng.IntN(4) {
				kinds := []wire.Opcode{wire.SendOnly, wire.WriteOnly, wire.ReadRequest, wire.FetchAdd, wire.CompareSwap, wire.SendOnly}
				m := &msg{op: kinds[rng.IntN(len(kinds))], psn: next, n: 1, orig: rng.Uint64(), partial: rng.IntN(2) == 0}
				m.ackAt = -1
				switch m.op {
				case wire.SendOnly, wire.WriteOnly:
					m.size = []int{0, 10, mtu, 2*mtu + 3}[rng.IntN(4)]
					m.n = max(1, (m.size+mtu-1)/mtu)
					if m.n > 1 && rng.IntN(4) == 0 {
						m.ackAt = rng.IntN(m.n - 1) // as a requester asking every so many packets does
					}
				case wire.ReadRequest:
					m.size = []int{0, 8, mtu, 3 * mtu}[rng.IntN(4)]
					m.n = wire.ReadResponsePackets(uint32(m.size), mtu)
				}
				for k := range m.n {
					byPSN[m.psn.Add(k)] = [2]int{len(msgs), k}
				}
				msgs = append(msgs, m)
				next = next.Add(m.n)
				if m.op == wire.ReadRequest || m.op == wire.FetchAdd || m.op == wire.CompareSwap {
					queue = append(queue, pkt{len(msgs) - 1, 0})
				} else {
					for k := range m.n {
						queue = append(queue, pkt{len(msgs) - 1, k})
					}
				}
			}
		}
		if len(queue) == 0 {
			if round >= rounds {
				break
			}
			continue
		}
		refuse = lossy && rng.IntN(6) == 0
		// The requester sends; the responder receives what arrives.
		var received []pkt
		for _, q := range queue {
			m := msgs[q.i]
			r := packet(m, q.k)
			if !lost(r, lossy) {
				received = append(received, q)
				if lossy && view != viewComplete && rng.IntN(40) == 0 {
					// The network copies the request: the responder
					// receives it twice (a duplicate the second time),
					// and the capture shows the copy with its ID.
					netCopies = append(netCopies, [2]*trace.Record{r, t.Recopy(len(t.Records) - 1)})
					received = append(received, q)
				}
			}
		}
		queue = nil
		var answers []*trace.Record
		for _, q := range received {
			m := msgs[q.i]
			ackReq := m.op == wire.ReadRequest || m.op == wire.FetchAdd || m.op == wire.CompareSwap || q.k == m.n-1 || q.k == m.ackAt
			answers = append(answers, respond(q.i, q.k, ackReq)...)
		}
		if pendingAck {
			answers = append(answers, t.Ack(lastDone, msn))
			pendingAck = false
		}
		if len(answers) > 0 && lossy && rng.IntN(8) == 0 {
			// An unsolicited ACK: the latest positive one again (§9.7.7.2).
			if last := answers[len(answers)-1].Packet; last.Opcode == wire.Acknowledge && last.AETH.IsACK() {
				answers = append(answers, t.Ack(last.PSN, last.AETH.MSN))
			}
		}
		// The requester takes what arrives.
		nakAt, nak, rnr := wire.PSN(0), false, false
		for _, r := range answers {
			if lost(r, lossy) {
				continue
			}
			p := r.Packet
			switch p.Opcode {
			case wire.Acknowledge:
				if p.AETH.IsRNR() {
					// Wait the RNR delay, then go back to its PSN (which
					// the NAK does not acknowledge).
					if !nak || p.PSN.Before(nakAt) {
						nakAt, nak = p.PSN, true
					}
					rnr = true
					continue
				}
				if p.AETH.IsNAK(wire.NAKPSNSequence) {
					if !nak || p.PSN.Before(nakAt) {
						nakAt, nak = p.PSN, true
					}
					for _, m := range msgs {
						if m.op != wire.ReadRequest && m.op != wire.FetchAdd && m.op != wire.CompareSwap && m.psn.Add(m.n-1).Before(p.PSN) {
							m.acked = true
						}
					}
					continue
				}
				for _, m := range msgs {
					if m.op != wire.ReadRequest && m.op != wire.FetchAdd && m.op != wire.CompareSwap && m.psn.Add(m.n-1).AtOrBefore(p.PSN) {
						m.acked = true
					}
				}
			case wire.AtomicAcknowledge:
				for _, m := range msgs {
					if m.psn == p.PSN || (m.psn.Before(p.PSN) && m.op != wire.ReadRequest && m.op != wire.FetchAdd && m.op != wire.CompareSwap) {
						m.acked = true
					}
				}
			default: // READ responses
				at, ok := byPSN[p.PSN]
				if !ok {
					continue
				}
				m := msgs[at[0]]
				if at[1] == m.got {
					m.got++
				}
				if m.got == m.n {
					m.acked = true
				}
				if p.Opcode == wire.ReadResponseFirst || p.Opcode == wire.ReadResponseOnly {
					for _, e := range msgs {
						if e.psn.Before(m.psn) && e.op != wire.ReadRequest && e.op != wire.FetchAdd && e.op != wire.CompareSwap {
							e.acked = true
						}
					}
				}
			}
		}
		// What to send again.
		var open []*msg
		for _, m := range msgs {
			if !m.acked {
				open = append(open, m)
			}
		}
		if len(open) == 0 {
			continue
		}
		switch {
		case rnr:
			// The RNR NAK's delay (Table 45, §9.7.5.2), and a little more.
			delay := []time.Duration{0, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960}[rnrCode] * time.Microsecond
			t.Wait(delay + time.Duration(rng.IntN(200))*time.Microsecond)
		case !nak:
			// Nothing asked for a resend: the requester's timer expires.
			t.Wait(time.Duration(2+rng.IntN(20)) * time.Millisecond)
		}
		// Go-back-N: every packet from the restart PSN on, completed or
		// not (the requester retires its requests in order), from the
		// NAK's PSN or, on a timeout, from the oldest open request.
		start := open[0].psn
		if nak {
			start = nakAt
		}
		for i, m := range msgs {
			last := m.psn.Add(m.n - 1)
			isRead := m.op == wire.ReadRequest
			single := isRead || m.op == wire.FetchAdd || m.op == wire.CompareSwap
			switch {
			case last.Before(start) && !(single && !m.acked):
				continue
			case last.Before(start):
				// An unanswered READ or ATOMIC before the NAK's PSN:
				// re-issued (after the go-back-N, below).
			}
			if isRead && m.partial && m.got > 0 && m.got < m.n {
				// Re-request only what did not arrive.
				queue = append(queue, pkt{i, m.got})
				continue
			}
			if isRead && !m.partial {
				m.got = 0
			}
			if single {
				queue = append(queue, pkt{i, 0})
				continue
			}
			from := 0
			if start.After(m.psn) {
				from = start.Diff(m.psn)
			}
			for k := from; k < m.n; k++ {
				queue = append(queue, pkt{i, k})
			}
		}
		if nak {
			// Go back to the NAK's PSN first; READs and ATOMICs before it
			// that went unanswered are re-issued after (§9.7.5.1.2).
			var at, behind []pkt
			for _, q := range queue {
				if msgs[q.i].psn.Add(q.k).Before(nakAt) {
					behind = append(behind, q)
				} else {
					at = append(at, q)
				}
			}
			queue = append(at, behind...)
		}
	}
	t.IPIDs(uint16(rng.Uint32()), uint16(rng.Uint32()))
	for _, c := range netCopies {
		c[1].IPID = c[0].IPID
	}
	if view != viewComplete && len(t.Records) > 0 && rng.IntN(3) == 0 {
		// Packets the capture recorded twice, or the network copied,
		// seen again at the end.
		for range 1 + rng.IntN(3) {
			t.Recopy(rng.IntN(len(t.Records)))
		}
	}
	return t
}

// captureView is where a capture is taken.
type captureView int

const (
	viewResponder captureView = iota
	viewRequester
	viewMiddle
	// viewComplete loses nothing: what --complete says (the responder's
	// rules take the capture as the responder's whole view, the
	// requester's as the requester's). RNR NAKs still cause resends.
	viewComplete
)

func (v captureView) String() string {
	return [...]string{"at the responder", "at the requester", "in the middle", "complete"}[v]
}

// TestRetryExchangesPass: no clause may fail on a lossy exchange between
// a requester and a responder that follow the rules, captured anywhere
// (audited as a capture), and where --complete holds (also audited as
// complete).
func TestRetryExchangesPass(t *testing.T) {
	// Each default seed made some clause fail falsely before the fixes
	// these exchanges found (far copies, a PSN only maybe inside a READ's
	// span, a partial READ re-request answered after a replay whose tail
	// was lost).
	seeds := []uint64{6, 8, 2}
	n := 1500
	if testing.Short() {
		n = 300
	}
	seeds, n = seedsFromEnv(t, "RETRY", seeds, n)
	for _, seed := range seeds {
		retrySeed(t, seed, n, false)
	}
}

// TestRetryExchangesOrigMSNPass is TestRetryExchangesPass with a
// responder that answers a duplicate READ or ATOMIC with the MSN of its
// first answer (docs/interpretations.md, "MSN of a replayed answer": it or the
// current one).
// Each default seed made a clause fail falsely before its fix: a replay's
// Last, its First lost, dated before an ACK by its low MSN (C9-101), and
// taken for the original answer's Last, whose MSN went back (C9-148);
// seed 27: a far copy of an old RNR NAK (late by its ID) marked a READ
// answered since as dropped, so the READ's resend was taken as new and
// its replay judged as a new answer (C9-148).
func TestRetryExchangesOrigMSNPass(t *testing.T) {
	seeds := []uint64{13, 18, 27}
	n := 4000
	if testing.Short() {
		seeds, n = seeds[:1], 300
	}
	seeds, n = seedsFromEnv(t, "RETRY_ORIG", seeds, n)
	for _, seed := range seeds {
		retrySeed(t, seed, n, true)
	}
}

// retrySeed audits n lossy conformant exchanges made from seed.
func retrySeed(t *testing.T, seed uint64, n int, origMSN bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	checked := 0
	reached := map[string]bool{}
	for i := range n {
		mtu := []int{256, 1024, 4096}[rng.IntN(3)]
		view := captureView(rng.IntN(4))
		loss := []float64{0, 0.05, 0.15}[rng.IntN(3)]
		tr := retryExchange(rng, mtu, loss, view, view == viewComplete, origMSN)
		settings := []harness.Settings{ht.Capture()}
		if view == viewComplete {
			complete := ht.Complete()
			complete.MTU = mtu
			settings = append(settings, complete)
		}
		for _, s := range settings {
			tallies, fs := ht.AuditAll(tr, s)
			for id, tl := range tallies {
				checked += tl.Checked
				if tl.Checked > 0 {
					reached[id] = true
				}
			}
			if len(fs) > 0 {
				t.Fatalf("seed %d trace %d (MTU %d, loss %.2f, captured %v, complete %v): a conformant exchange fails %s at frame %d: %s\n%s",
					seed, i, mtu, loss, view, s.Complete, fs[0].ID, fs[0].Frame, fs[0].Message, dump(tr))
			}
		}
	}
	if checked < 10*n {
		t.Errorf("seed %d: only %d instances checked in %d exchanges", seed, checked, n)
	}
	// The exchanges reach the rules of loss and retry, not only the
	// plain ones.
	for _, id := range []string{"C9-95", "C9-96", "o9-58", "C9-105", "C9-107", "o9-66", "C9-121", "C9-113", "C9-114", "C9-148", "C9-149", "go-back-n", "rnr-retry"} {
		if !reached[id] {
			t.Errorf("seed %d: no exchange checked %s", seed, id)
		}
	}
	ids := make([]string, 0, len(reached))
	for id := range reached {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	t.Logf("seed %d: %d lossy conformant exchanges, %d instances of %v checked, none failed", seed, n, checked, ids)
}
