package reference

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// workload is a random mix of work requests one QP posts toward the other.
type workload struct {
	wrs      []dut.WR
	sendData map[uint64][]byte // SEND id → data
	writes   map[uint64][]byte // WRITE id → data (at RemoteVA)
	reads    map[uint64][]byte // READ id → expected data
	adds     uint64            // sum of FetchAdds on the counter
}

const (
	remoteBase = 0x100000
	remoteSize = 1 << 20
	counterOff = 0 // FetchAdd counter
	readOff    = 1 << 19
	localBase  = 0x900000
)

// makeWorkload builds n WRs. WRITEs go to the first half of the remote
// region (distinct slots), READs read the second half, which stays
// untouched; FetchAdds hit one counter.
func makeWorkload(rng *rand.Rand, idBase uint64, n int, rkey uint32, remote []byte) *workload {
	wl := &workload{sendData: map[uint64][]byte{}, writes: map[uint64][]byte{}, reads: map[uint64][]byte{}}
	for i := 0; i < n; i++ {
		id := idBase + uint64(i)
		size := []int{0, 1, 3, 100, 1023, 1024, 1025, 2048, 3000, 5000}[rng.Intn(10)]
		data := make([]byte, size)
		rng.Read(data)
		switch k := rng.Intn(10); {
		case k < 4:
			op := []dut.Op{dut.OpSend, dut.OpSendImm}[rng.Intn(2)]
			wl.wrs = append(wl.wrs, dut.WR{ID: id, Op: op, Data: data, Imm: uint32(id)})
			wl.sendData[id] = data
		case k < 6:
			va := uint64(remoteBase + 8 + i*8192)
			op := []dut.Op{dut.OpWrite, dut.OpWriteImm}[rng.Intn(2)]
			wl.wrs = append(wl.wrs, dut.WR{ID: id, Op: op, Data: data, RemoteVA: va, RKey: rkey, Imm: uint32(id)})
			wl.writes[id] = data
			if op == dut.OpWriteImm {
				wl.sendData[id] = nil
			}
		case k < 9:
			off := readOff + rng.Intn(1<<18)
			wl.wrs = append(wl.wrs, dut.WR{ID: id, Op: dut.OpRead, Length: size, RemoteVA: uint64(remoteBase + off), RKey: rkey})
			wl.reads[id] = append([]byte(nil), remote[off:off+size]...)
		default:
			add := uint64(rng.Intn(1000) + 1)
			wl.wrs = append(wl.wrs, dut.WR{ID: id, Op: dut.OpFetchAdd, CompareAdd: add, RemoteVA: remoteBase + counterOff, RKey: rkey})
			wl.adds += add
		}
	}
	return wl
}

func runLossy(t *testing.T, seed int64) (total Stats) {
	rng := rand.New(rand.NewSource(seed))
	loss := 0.01 + 0.09*rng.Float64()
	p := newPair(t, time.Microsecond, seed, func(a, b *Config) {
		for _, c := range []*Config{a, b} {
			c.Timeout = 6 // 262 µs
			c.RetryCnt = 7
			c.MinRNRTimer = 1
			c.AckPolicy = AckPolicy(rng.Intn(3))
			c.MSNAtReadEnd = rng.Intn(2) == 0
			c.AckReqEvery = rng.Intn(3)
			c.MaxRdAtomic = 4
			c.MaxDestRdAtomic = 4
			c.MTU = []int{256, 1024, 4096}[rng.Intn(3)]
			c.PacketGap = time.Duration(rng.Intn(500)) * time.Nanosecond
			if rng.Intn(4) == 0 {
				c.SRQ = NewSRQ()
			}
		}
		b.MTU = a.MTU
		a.SendPSN = 0xFFFFF0 // cross the PSN wrap
		b.ExpectedPSN = a.SendPSN
	})
	p.link.AddRule(Impairment{Action: Drop, Prob: loss * lossScale})
	p.link.AddRule(Impairment{Action: Duplicate, Prob: 0.02 * lossScale})
	p.link.AddRule(Impairment{Action: Reorder, Prob: 0.02 * lossScale})
	p.link.AddRule(Impairment{Action: Delay, Prob: 0.01 * lossScale, Delay: 3 * time.Microsecond})

	// Audit every frame that enters the link: the responses' format, and
	// their MSN never going back.
	var lastMSN [2]uint32
	var seenMSN [2]bool
	srq := [2]bool{p.a.cfg.SRQ != nil, p.b.cfg.SRQ != nil}
	p.link.OnTransmit = func(from Side, _ int, frame []byte) {
		var f wire.Frame
		if err := f.DecodeEthernet(frame); err != nil {
			t.Errorf("seed %d: undecodable frame: %v", seed, err)
			return
		}
		if !f.Opcode.Has(wire.HdrAETH) {
			return
		}
		checkFormat(t, &f.Packet, srq[from])
		m := f.AETH.MSN
		if seenMSN[from] && wire.PSN(m).Before(wire.PSN(lastMSN[from])) {
			t.Errorf("seed %d: side %v: MSN went back from %d to %d in %v", seed, from, lastMSN[from], m, &f.Packet)
		}
		lastMSN[from], seenMSN[from] = m, true
	}

	qps := []*QP{p.a, p.b}
	var wls [2]*workload
	var remote, local [2]*MR
	for i, q := range qps {
		remote[i] = q.Memory().Register(remoteBase, remoteSize, AllRemote)
		rng.Read(remote[i].Bytes()[readOff:])
		binary.LittleEndian.PutUint64(remote[i].Bytes()[counterOff:], 1000)
		local[i] = q.Memory().Register(localBase, 1<<20, LocalWrite)
	}
	for i, q := range qps {
		other := 1 - i
		for j := 0; j < 40; j++ {
			if err := qps[other].PostRecv(uint64(10000*other+j), 8192); err != nil {
				t.Fatal(err)
			}
		}
		wls[i] = makeWorkload(rng, uint64(1000*(i+1)), 30, remote[other].RKey, remote[other].Bytes()[0:])
		for k, wr := range wls[i].wrs {
			lva := uint64(localBase + k*8192)
			if err := q.PostSendLocal(wr, lva); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := func() bool {
		return len(qps[0].s.sq) == 0 && len(qps[1].s.sq) == 0
	}
	for !done() && p.clock.Now() < 5*time.Second {
		if !p.clock.Step() {
			break
		}
	}
	if !done() {
		t.Fatalf("seed %d (loss %.3f): not finished at %v: A %d left, B %d left; A %+v B %+v",
			seed, loss, p.clock.Now(), len(p.a.s.sq), len(p.b.s.sq), p.a.Stats(), p.b.Stats())
	}
	p.clock.RunUntil(p.clock.Now() + 10*time.Millisecond)
	var recvs [2][]dut.Completion
	for i, q := range qps {
		if q.State() != dut.StateRTS {
			if testing.Verbose() {
				dump(t, p.link)
			}
			var bad []dut.Completion
			for _, c := range q.cq {
				if c.Status != dut.StatusSuccess && c.Status != dut.StatusFlushed {
					bad = append(bad, c)
				}
			}
			t.Fatalf("seed %d: QP %d in %v (errors %+v); stats %+v", seed, i, q.State(), bad, q.Stats())
		}
		cs := q.PollCQ()
		sendDone := map[uint64]int{}
		for _, c := range cs {
			if c.Recv {
				recvs[i] = append(recvs[i], c)
				continue
			}
			sendDone[c.ID]++
			if c.Status != dut.StatusSuccess {
				t.Errorf("seed %d: QP %d WR %d (%v): %v", seed, i, c.ID, c.Op, c.Status)
			}
		}
		wl := wls[i]
		for k, wr := range wl.wrs {
			if sendDone[wr.ID] != 1 {
				t.Errorf("seed %d: QP %d WR %d completed %d times", seed, i, wr.ID, sendDone[wr.ID])
			}
			switch wr.Op {
			case dut.OpRead:
				got := local[i].Bytes()[k*8192 : k*8192+wr.Length]
				if !bytes.Equal(got, wl.reads[wr.ID]) {
					t.Errorf("seed %d: QP %d READ %d: wrong data", seed, i, wr.ID)
				}
			case dut.OpWrite, dut.OpWriteImm:
				off := int(wr.RemoteVA - remoteBase)
				if got := remote[1-i].Bytes()[off : off+len(wr.Data)]; !bytes.Equal(got, wr.Data) {
					t.Errorf("seed %d: QP %d WRITE %d: wrong data in memory", seed, i, wr.ID)
				}
			}
		}
		if got, wantv := binary.LittleEndian.Uint64(remote[1-i].Bytes()[counterOff:]), 1000+wl.adds; got != wantv {
			t.Errorf("seed %d: QP %d's FetchAdds: counter %d, want %d", seed, i, got, wantv)
		}
	}
	// Receive completions: each side got exactly the other's SENDs and
	// WRITEs with immediate, once each, in order, with their data.
	for i, q := range qps {
		wl := wls[1-i]
		var want []dut.WR
		for _, wr := range wl.wrs {
			if _, ok := wl.sendData[wr.ID]; ok {
				want = append(want, wr)
			}
		}
		var got []dut.Completion
		for _, c := range recvs[i] {
			got = append(got, c)
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: QP %d has %d receive completions, want %d", seed, i, len(got), len(want))
		}
		for k, wr := range want {
			c := got[k]
			wantOp := wr.Op
			if c.Status != dut.StatusSuccess || c.Op != wantOp || c.Bytes != len(wr.Data) || c.ID != uint64(10000*i+k) {
				t.Errorf("seed %d: QP %d receive %d: %+v, want %v of %d bytes into WQE %d", seed, i, k, c, wantOp, len(wr.Data), 10000*i+k)
			}
			if (wr.Op == dut.OpSendImm || wr.Op == dut.OpWriteImm) && c.Imm != wr.Imm {
				t.Errorf("seed %d: QP %d receive %d: immediate %#x, want %#x", seed, i, k, c.Imm, wr.Imm)
			}
			if wr.Op != dut.OpWriteImm && !bytes.Equal(q.RecvData(c.ID), wr.Data) {
				t.Errorf("seed %d: QP %d receive %d: wrong data", seed, i, k)
			}
		}
	}
	for _, q := range qps {
		addStats(&total, q.Stats())
	}
	return total
}

func addStats(t *Stats, s Stats) {
	t.Retries += s.Retries
	t.Timeouts += s.Timeouts
	t.ImpliedNAKs += s.ImpliedNAKs
	t.SeqNAKsSent += s.SeqNAKsSent
	t.Duplicates += s.Duplicates
	t.Preempted += s.Preempted
	t.DuplicateDrops += s.DuplicateDrops
	t.LatchedDrops += s.LatchedDrops
	t.GhostResponses += s.GhostResponses
	t.Retransmits += s.Retransmits
	t.PacketsSent += s.PacketsSent
}

var lossySeeds = flag.Int("lossy-seeds", 200, "seeds for TestLossyBackToBack (40 with -short)")

// lossScale multiplies every impairment probability (for stress runs).
var lossScale = 1.0

func TestLossyBackToBack(t *testing.T) {
	n := *lossySeeds
	if testing.Short() {
		n = min(n, 40)
	}
	var total Stats
	for seed := int64(1); seed <= int64(n); seed++ {
		addStats(&total, runLossy(t, seed))
		if t.Failed() {
			t.Fatalf("stopping at seed %d", seed)
		}
	}
	t.Logf("%d seeds: %d packets, %d retransmitted, %d retries (%d timeouts, %d implied NAKs), %d sequence NAKs, "+
		"%d duplicates (%d dropped, %d preemptions), %d latched drops, %d ghost responses",
		n, total.PacketsSent, total.Retransmits, total.Retries, total.Timeouts, total.ImpliedNAKs, total.SeqNAKsSent,
		total.Duplicates, total.DuplicateDrops, total.Preempted, total.LatchedDrops, total.GhostResponses)
	// The impairments must have exercised recovery.
	if total.Retries == 0 || total.Timeouts == 0 || total.SeqNAKsSent == 0 || total.Duplicates == 0 || total.ImpliedNAKs == 0 {
		t.Errorf("recovery paths not exercised: %+v", total)
	}
}
