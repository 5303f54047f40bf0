package verdicts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// A capture made elsewhere may hold any sequence of well-formed RC
// packets: PSNs that jump anywhere, any AETH syndrome and MSN, responses
// to nothing, READ responses of any length, requests of any opcode in any
// order, clocks that stand still. The monitors must judge every such
// trace without panicking (a panic ends the audit of the whole capture
// with an error), keep their counts consistent, and give the same result
// twice. anyTrace builds such a trace from the fuzzer's bytes.

// rcOpcodes are the RC opcodes the fuzzer picks from: every request and
// response opcode the wire package knows.
var rcOpcodes = func() []wire.Opcode {
	var ops []wire.Opcode
	for o := range 32 {
		if op := wire.Opcode(o); op.Known() {
			ops = append(ops, op)
		}
	}
	return ops
}()

// anySettings picks the audit's settings from one byte: a capture of
// unknown settings, a complete capture, or an active run with the device
// as responder or requester, at one of the MTUs, with timers known or not
// and a real clock's tolerance or a virtual clock.
func anySettings(b byte) harness.Settings {
	s := harness.UnknownSettings()
	switch b & 3 {
	case 1:
		s.Complete = true
	case 2, 3:
		s.Active, s.StartKnown, s.StartPSN = true, true, 300
		s.DeviceIsRequester = b&3 == 3
	}
	s.MTU = []int{0, 256, 1024, 4096}[(b>>2)&3]
	if b&0x10 != 0 {
		s.AckTimeout, s.RetryCnt, s.RNRRetry = 14, 3, 2
	}
	if b&0x20 != 0 {
		s.Tolerance = 2 * time.Millisecond
	}
	if b&0x40 != 0 && s.Active {
		s.ReceiveLoss = true
	}
	return s
}

// anyTrace decodes data into records between the two test hosts, 8 bytes
// a record (a short tail is dropped):
//
//	0: bit 0 direction (requests, responses), bit 1 a second pair of QPs,
//	   bits 2-7 the opcode (an index into rcOpcodes)
//	1-2: the PSN: a signed step from the direction's last PSN, or with
//	   bit 7 of byte 4 set, an absolute PSN (bytes 1-2 and 5)
//	3: the AETH syndrome, raw
//	4: bits 0-3 the MSN step, bit 4 AckReq, bit 5 repeat the last IPv4 ID
//	   of the direction (a network copy), bit 6 a bad ICRC
//	5: the payload length (0, 1, 256, 1024, 4096, odd sizes) and the
//	   READ length
//	6: the time step: 0 none, else 2^(b%32) ns
//	7: the RNR timer code / atomic value
func anyTrace(data []byte) *ht.Trace {
	t := &ht.Trace{}
	psn := [2]wire.PSN{300, 300}
	msn := uint32(0)
	ipid := [2]uint16{100, 5000}
	now := time.Duration(0)
	for len(data) >= 8 {
		b := data[:8]
		data = data[8:]
		dir := int(b[0] & 1)
		op := rcOpcodes[int(b[0]>>2)%len(rcOpcodes)]
		if b[4]&0x80 != 0 {
			psn[dir] = wire.PSN(uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[5]))
		} else {
			psn[dir] = psn[dir].Add(int(int16(uint16(b[1])<<8 | uint16(b[2]))))
		}
		msn += uint32(b[4] & 0x0F)
		var r *trace.Record
		if dir == 0 {
			r = t.Req(op, psn[dir], b[4]&0x10 != 0)
			r.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 0x42, Length: []uint32{0, 1, 256, 1024, 4096, 5000, 1 << 20, 1 << 31}[b[5]>>5]}
			r.Packet.Atomic = wire.AtomicETH{VA: 0x1000, RKey: 0x42, SwapAdd: uint64(b[7])}
		} else {
			r = t.Resp(op, psn[dir], b[3], msn&0xFFFFFF)
			r.Packet.AtomicAck = uint64(b[7])
		}
		n := []int{0, 1, 256, 1024, 4096, 3, 1000, 2048}[b[5]&7]
		r.Packet.Payload = make([]byte, n)
		r.PayloadLen = n
		if b[0]&2 != 0 {
			r.Packet.DestQP += 0x100
		}
		if b[4]&0x20 == 0 {
			ipid[dir]++
		}
		r.IPID, r.HasIPID = ipid[dir], true
		if b[4]&0x40 != 0 {
			r.ICRC = wire.ICRCBad
		}
		if b[6] != 0 {
			now += time.Duration(1) << (b[6] % 32)
		}
		r.Time = now
	}
	return t
}

// auditAny audits the trace built from data with every monitor and
// returns the result as JSON (tallies by clause, and findings), and the
// tallies.
func auditAny(t *testing.T, settings harness.Settings, exchange bool, data []byte) ([]byte, map[string]*harness.Tally) {
	t.Helper()
	build := anyTrace
	if exchange {
		build = exchangeTrace
	}
	tr := build(data)
	tallies, findings := ht.AuditAll(tr, settings)
	// The connections judged on workers of their own give the same
	// result as one auditor (harness.ShardedAuditor).
	sameSharded(t, settings, tr.Records, 3, tallies, findings)
	for id, tl := range tallies {
		if tl.Checked < 0 || tl.Violations < 0 || tl.Indeterminate < 0 || tl.Open < 0 || tl.Open > tl.Indeterminate {
			t.Fatalf("%s: inconsistent tally %+v", id, *tl)
		}
		sum := 0
		for _, k := range tl.Kinds {
			sum += k.Count
		}
		if sum != tl.Indeterminate {
			t.Fatalf("%s: undecided kinds add up to %d, not the %d undecided instances", id, sum, tl.Indeterminate)
		}
		if tl.Indeterminate > 0 && tl.Reason == "" {
			t.Fatalf("%s: %d undecided instances and no reason", id, tl.Indeterminate)
		}
	}
	for _, f := range findings {
		if f.ID == "" || f.Message == "" {
			t.Fatalf("a finding without a clause or a message: %+v", f)
		}
		if tl := tallies[f.ID]; tl == nil || tl.Violations == 0 {
			t.Fatalf("a finding of %s, whose tally counts no violation: %s", f.ID, f.Message)
		}
	}
	out, err := json.Marshal(struct {
		T map[string]*harness.Tally
		F []reports.Finding
	}{tallies, findings})
	if err != nil {
		t.Fatalf("encoding the result: %v", err)
	}
	return out, tallies
}

// FuzzAuditAnyTrace audits arbitrary sequences of RC packets: no monitor
// may panic, every tally must be consistent, and a second audit of the
// same trace must give the same result.
func FuzzAuditAnyTrace(f *testing.F) {
	rng := rand.New(rand.NewPCG(18, 95))
	for range 24 {
		data := make([]byte, 8*(1+rng.IntN(40)))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		// Keep most steps small, as real traces have them.
		for i := 0; i+8 <= len(data); i += 8 {
			data[i+1], data[i+2] = 0, byte(rng.IntN(3))
			data[i+4] &^= 0x80
		}
		f.Add(byte(rng.Uint32()), false, data)
		f.Add(byte(rng.Uint32()), true, data)
	}
	f.Fuzz(func(t *testing.T, set byte, exchange bool, data []byte) {
		if len(data) > 8*400 {
			return
		}
		s := anySettings(set)
		first, _ := auditAny(t, s, exchange, data)
		if second, _ := auditAny(t, s, exchange, data); !bytes.Equal(first, second) {
			t.Fatalf("two audits of one trace differ:\n%s\n%s", first, second)
		}
	})
}

// TestAnyTraces runs many random traces through every monitor (the
// fuzz target's checks), with a seed that a failure prints: a fixed one,
// or ANYTRACE_SEED's.
func TestAnyTraces(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 100
	}
	seeds, n := seedsFromEnv(t, "ANYTRACE", []uint64{18}, n)
	seed := seeds[0]
	rng := rand.New(rand.NewPCG(seed, 1))
	// What the traces made the monitors do, by clause: so that a
	// generator that stopped reaching them shows.
	checked, failed, undecided := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range n {
		data := make([]byte, 8*(1+rng.IntN(60)))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		exchange := i%2 == 0
		small := rng.IntN(2) == 0
		for j := 0; j+8 <= len(data); j += 8 {
			if small && !exchange {
				data[j+1], data[j+2] = 0, byte(rng.IntN(4))
				data[j+4] &^= 0x80
			}
		}
		set := byte(rng.Uint32())
		t.Run(fmt.Sprintf("seed %d trace %d", seed, i), func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic auditing settings %#x, exchange %v, trace %x (seed %d): %v", set, exchange, data, seed, p)
				}
			}()
			_, tallies := auditAny(t, anySettings(set), exchange, data)
			for id, tl := range tallies {
				checked[id] = checked[id] || tl.Checked > 0
				failed[id] = failed[id] || tl.Violations > 0
				undecided[id] = undecided[id] || tl.Indeterminate > 0
			}
		})
	}
	count := func(m map[string]bool) (k int) {
		for _, v := range m {
			if v {
				k++
			}
		}
		return k
	}
	t.Logf("seed %d, %d traces: %d clauses checked, %d failed, %d undecided somewhere", seed, n, count(checked), count(failed), count(undecided))
	// Random traces break most rules: if few clauses ever check, fail or
	// doubt anything, the generator no longer reaches the monitors.
	if count(checked) < 28 || count(failed) < 25 || count(undecided) < 20 {
		t.Errorf("the random traces reach too few monitors: %d clauses checked, %d failed, %d undecided", count(checked), count(failed), count(undecided))
	}
}

// exchangeTrace decodes data, two bytes a step, into a plausible exchange
// with deviations mixed in: messages of every kind and their answers, lost
// and copied packets, out-of-order answers, NAKs and RNR NAKs with the
// resends they cause, timeouts, duplicates, and answers bent out of shape.
// It reaches the monitors a random trace leaves undecided at once (the
// requester's retries, READ streams, duplicates).
func exchangeTrace(data []byte) *ht.Trace {
	t := &ht.Trace{}
	const mtu = 1024
	type msg struct {
		op   wire.Opcode
		psn  wire.PSN
		n    int // PSNs the message takes
		size int
	}
	next := wire.PSN(300) // the requester's next new PSN
	msn := uint32(0)
	var sent []msg    // every message, in order
	var unacked []msg // messages not acknowledged yet
	// A lost packet is marked and numbered like the others, and removed
	// at the end: its IPv4 ID leaves a gap, as a real loss does.
	lose := false
	add := func(r *trace.Record) {
		if lose {
			r.Note, lose = "lost", false
		}
	}
	numbered := 0
	ids := [2]uint16{100, 5000}
	number := func() {
		for _, r := range t.Records[numbered:] {
			if !r.HasIPID {
				d := 0
				if r.Dir == trace.ToRequester {
					d = 1
				}
				r.IPID, r.HasIPID = ids[d], true
				ids[d]++
			}
		}
		numbered = len(t.Records)
	}
	send := func(m msg) {
		switch {
		case m.op == wire.ReadRequest:
			r := t.Read(m.psn, uint32(m.size))
			add(r)
		case m.op == wire.CompareSwap || m.op == wire.FetchAdd:
			add(t.Atomic(m.op, m.psn))
		case m.n == 1:
			r := t.Req(m.op, m.psn, true)
			r.Packet.Payload = make([]byte, m.size)
			r.PayloadLen = m.size
			add(r)
		default:
			first, middle, last := wire.SendFirst, wire.SendMiddle, wire.SendLast
			if m.op == wire.WriteOnly {
				first, middle, last = wire.WriteFirst, wire.WriteMiddle, wire.WriteLast
			}
			for k := range m.n {
				op := middle
				switch k {
				case 0:
					op = first
				case m.n - 1:
					op = last
				}
				r := t.Req(op, m.psn.Add(k), k == m.n-1)
				if op == wire.WriteFirst {
					r.Packet.RETH = wire.RETH{VA: 0x1000, RKey: 0x42, Length: uint32(m.size)}
				}
				n := min(mtu, m.size-k*mtu)
				r.Packet.Payload = make([]byte, n)
				r.PayloadLen = n
				add(r)
			}
		}
	}
	answer := func(m msg) {
		switch m.op {
		case wire.ReadRequest:
			for _, r := range t.ReadStream(m.psn, m.size, mtu, msn) {
				add(r)
			}
		case wire.CompareSwap, wire.FetchAdd:
			add(t.AtomicAck(m.psn, msn, 7))
		default:
			add(t.Ack(m.psn.Add(m.n-1), msn))
		}
	}
	for len(data) >= 2 {
		op, p := data[0], data[1]
		data = data[2:]
		switch op % 14 {
		case 0, 1, 2: // a new message and, mostly, its answer
			kinds := []wire.Opcode{wire.SendOnly, wire.WriteOnly, wire.ReadRequest, wire.FetchAdd, wire.CompareSwap}
			m := msg{op: kinds[int(p)%len(kinds)], psn: next, n: 1}
			switch m.op {
			case wire.SendOnly, wire.WriteOnly:
				m.size = []int{0, 100, mtu, 2*mtu + 5, 4 * mtu}[int(p>>3)%5]
				m.n = max(1, (m.size+mtu-1)/mtu)
			case wire.ReadRequest:
				m.size = []int{0, 8, mtu, 3 * mtu, 5*mtu - 1}[int(p>>3)%5]
				m.n = max(1, (m.size+mtu-1)/mtu)
			}
			next = next.Add(m.n)
			sent = append(sent, m)
			send(m)
			msn++
			if op%14 != 2 {
				answer(m)
			} else {
				unacked = append(unacked, m)
			}
		case 3: // a coalesced ACK of everything unanswered
			if len(unacked) > 0 {
				last := unacked[len(unacked)-1]
				add(t.Ack(last.psn.Add(last.n-1), msn))
				unacked = nil
			}
		case 4: // the next packet is lost
			lose = true
		case 5: // a sequence NAK and the requester's go-back-N
			if len(unacked) > 0 {
				m := unacked[0]
				add(t.NAK(m.psn, 0, msn-uint32(len(unacked))))
				for _, u := range unacked {
					send(u)
					answer(u)
				}
				unacked = nil
			}
		case 6: // an RNR NAK, the wait, and the resend
			if len(unacked) > 0 {
				m := unacked[0]
				add(t.RNR(m.psn, p%32, msn-uint32(len(unacked))))
				t.Wait(time.Duration(p%32+1) * 100 * time.Microsecond)
				for _, u := range unacked {
					send(u)
					answer(u)
				}
				unacked = nil
			}
		case 7: // a timeout and a resend of the oldest unanswered message
			t.Wait(time.Duration(1<<(p%8)) * time.Millisecond)
			if len(unacked) > 0 {
				send(unacked[0])
				answer(unacked[0])
				unacked = unacked[1:]
			}
		case 8: // a duplicate of an earlier message, answered again
			if len(sent) > 0 {
				m := sent[len(sent)-1-int(p)%len(sent)]
				send(m)
				answer(m)
			}
		case 9: // the last two packets swap
			if n := len(t.Records); n >= 2 {
				t.Swap(n-2, n-1)
			}
		case 10: // a network copy of the last packet
			if n := len(t.Records); n >= 1 {
				t.Recopy(n - 1)
			}
		case 11: // time passes
			t.Wait(time.Duration(1) << (p % 34))
		case 12: // the last answer bent: its PSN, MSN or syndrome
			if n := len(t.Records); n >= 1 && t.Records[n-1].Dir == trace.ToRequester {
				pk := t.Records[n-1].Packet
				switch p % 3 {
				case 0:
					pk.PSN = pk.PSN.Add(int(p>>2) - 32)
				case 1:
					pk.AETH.MSN = (pk.AETH.MSN + uint32(p>>2)) & 0xFFFFFF
				case 2:
					pk.AETH.Syndrome = p
				}
			}
		case 13: // a request sent past a gap in the PSNs
			next = next.Add(1 + int(p%4))
		}
		number()
	}
	for i := len(t.Records) - 1; i >= 0; i-- {
		if t.Records[i].Note == "lost" {
			t.Remove(i)
		}
	}
	return t
}

// sameSharded fails t unless a sharded auditor with workers workers,
// fed recs, gives the tallies and findings one auditor gave.
func sameSharded(t *testing.T, settings harness.Settings, recs []*trace.Record, workers int, tallies map[string]*harness.Tally, findings []reports.Finding) {
	t.Helper()
	sink := harness.NewSink("test")
	sa := harness.NewShardedAuditor(settings, sink, workers)
	for _, r := range recs {
		sa.Observe(r)
	}
	sa.End()
	// Positions in the capture (ReasonAt, At) order a shard's first
	// instances for merging; only a sharded auditor's sink has them.
	for _, tl := range sink.Tallies {
		tl.ReasonAt = 0
		for k := range tl.Kinds {
			tl.Kinds[k].At = 0
		}
	}
	for k := range sink.Findings {
		sink.Findings[k].At = 0
	}
	one, _ := json.Marshal(tallies)
	sharded, _ := json.Marshal(sink.Tallies)
	if !bytes.Equal(one, sharded) {
		t.Fatalf("the sharded auditor's tallies differ from one auditor's:\n%s\n%s", sharded, one)
	}
	if !reflect.DeepEqual(sink.Findings, findings) {
		t.Fatalf("the sharded auditor's findings differ from one auditor's:\n%v\n%v", sink.Findings, findings)
	}
}
