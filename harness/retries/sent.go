package retries

import (
	"hash/crc32"
	"math/bits"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Sent is what the model remembers of one request PSN. What the request
// carried (its RETH, AtomicETH, payload length on the wire) is its first
// transmission's (First).
type Sent struct {
	PSN    wire.PSN
	Op     wire.Opcode
	End    wire.PSN // last PSN the request occupies (a READ: its last reserved PSN)
	EndOK  bool     // End is known (a READ's needs the MTU)
	Sum    uint32   // CRC-32 of the payload, when HasSum
	HasSum bool
	First  *trace.Record // first transmission seen
	Last   *trace.Record // latest transmission seen (network duplicates excluded)
	// LastSeq is Last's place among the connection's records
	// (harness.Conn.Seq), for the evidence of what was sent since.
	LastSeq uint64
	// Swept is the resend just before a go-back-N sweep passed this PSN
	// after Last without the trace showing it (ReqEvent.SweepGap): lost
	// before the capture point, its transmission came after Swept; or the
	// requester left it out. SweptSeq is Swept's place among the
	// connection's records; SweptNext the resend the trace shows next,
	// Skipped PSNs on: the requester's IPv4 IDs between the two may show
	// a packet sent for each (Conn.SentBetween).
	Swept        *trace.Record
	SweptSeq     uint64
	SweptNext    *trace.Record
	SweptSkipped int
	Sends        int
	// Done: acknowledged (SEND/WRITE), answered (ATOMIC), or every
	// response received (READ).
	Done bool
	// AckedBy is the response that made the PSN Done where that response
	// was in sequence (it passed no READ or ATOMIC left unanswered and
	// skipped no READ response PSN): a requester that received it held
	// the PSN acknowledged. Nil when an out-of-sequence response did,
	// which a requester may set aside whole. AckedSeq is its place among
	// the connection's records.
	AckedBy  *trace.Record
	AckedSeq uint64
	// ReadNext is, for a READ, the first response PSN not yet received.
	ReadNext wire.PSN
}

// IsReadOrAtomic reports whether the request waits for a response of its
// own (so that a later acknowledgment passing it is an implied NAK).
func (s *Sent) IsReadOrAtomic() bool {
	return s.Op == wire.ReadRequest || opc.Class(s.Op) == wire.ClassAtomic
}

// Outstanding is the oldest PSN of s still unanswered.
func (s *Sent) Outstanding() wire.PSN {
	if s.Op == wire.ReadRequest {
		return s.ReadNext
	}
	return s.PSN
}

// setStart marks entry i as one that may begin a run of live entries.
func (t *Tracker) setStart(i int) { t.starts[i>>6] |= 1 << (uint(i) & 63) }

// clearStart unmarks entry i.
func (t *Tracker) clearStart(i int) { t.starts[i>>6] &^= 1 << (uint(i) & 63) }

// nextStart returns the first marked entry at or after i (len(t.ents) if
// none).
func (t *Tracker) nextStart(i int) int {
	n := len(t.ents)
	if i >= n {
		return n
	}
	if t.exhaustive {
		return i
	}
	w := i >> 6
	word := t.starts[w] &^ (1<<(uint(i)&63) - 1)
	for word == 0 {
		w++
		if w >= len(t.starts) {
			return n
		}
		word = t.starts[w]
	}
	if j := w<<6 + bits.TrailingZeros64(word); j < n {
		return j
	}
	return n
}

// set stores s in entry i and marks it and the entry after it (whose
// predecessor changed) as possible run starts. An entry filled behind the
// base (a PSN first sent after acknowledgments passed its empty slot: a
// resend whose first transmission the capture missed) moves the base
// back to it, so that the responses after it still cover it.
func (t *Tracker) set(i int, s *Sent) {
	t.ents[i] = s
	if s != nil && !s.Done && i < t.base {
		t.base = i
	}
	t.setStart(i)
	if i+1 < len(t.ents) {
		t.setStart(i + 1)
	}
}

// resizeStarts fits starts to len(t.ents), clearing the bits of entries
// that are gone.
func (t *Tracker) resizeStarts() {
	n := len(t.ents)
	words := (n + 63) >> 6
	for len(t.starts) < words {
		t.starts = append(t.starts, 0)
	}
	t.starts = t.starts[:words]
	if n&63 != 0 {
		t.starts[words-1] &= 1<<(uint(n)&63) - 1
	}
}

// dropStarts shifts starts down by drop entries (as trim shifts ents).
func (t *Tracker) dropStarts(drop int) {
	w, b := drop>>6, uint(drop)&63
	src := t.starts
	k := 0
	for i := w; i < len(src); i++ {
		v := src[i] >> b
		if b != 0 && i+1 < len(src) {
			v |= src[i+1] << (64 - b)
		}
		src[k] = v
		k++
	}
	t.starts = src[:k]
	t.resizeStarts()
	if len(t.ents) > 0 {
		t.setStart(0)
	}
}

// PayloadSum returns a CRC-32 of the record's payload, unless the
// capture cut it short.
func PayloadSum(r *trace.Record) (uint32, bool) {
	if r.Truncated || len(r.Packet.Payload) != r.PayloadLen {
		return 0, false
	}
	return crc32.ChecksumIEEE(r.Packet.Payload), true
}
