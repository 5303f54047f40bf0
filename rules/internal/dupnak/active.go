package dupnak

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Liveness bounds how long a scenario waits for the device's answers.
// The clauses set no deadline; this is the harness's own bound, on the
// device's clock (cheap on the reference's virtual clock).
const Liveness = 100 * time.Millisecond

// Short is how long a scenario waits for silence it expects (a dropped
// duplicate, a latched responder).
const Short = 20 * time.Millisecond

// MTUs are the path MTUs the scenarios sweep.
var MTUs = []int{256, 1024, 4096}

// Cfg returns a connection configuration with the device's expected PSN
// set to start.
func Cfg(mtu int, start wire.PSN) dut.ConnConfig {
	return dut.ConnConfig{MTU: mtu, ExpectedPSN: start, SetPSNs: true}
}

// Dup returns a copy of request k (a duplicate when sent again), with
// AckReq as given.
func Dup(k *wire.Packet, ackReq bool) *wire.Packet {
	d := k.Clone()
	d.AckReq = ackReq
	return d
}

// Write builds a single-packet RDMA WRITE of n bytes at offset off.
func Write(p *harness.Peer, n, off int, ackReq bool) *wire.Packet {
	return p.Message(wire.WriteOnly, n, off, ackReq)[0]
}

// Send builds a single-packet SEND of n bytes.
func Send(p *harness.Peer, n int, ackReq bool) *wire.Packet {
	return p.Message(wire.SendOnly, n, 0, ackReq)[0]
}

// ExpectAck waits for a positive ACK whose PSN is psn (Peer.ExpectAck,
// within Liveness).
func ExpectAck(p *harness.Peer, psn wire.PSN, what string) *trace.Record {
	ginkgo.GinkgoHelper()
	return p.ExpectAck(psn, what, Liveness)
}

// ExpectNAK waits for the first NAK or RNR NAK and fails unless it has
// syndrome syn and PSN psn. Positive responses before it are returned in
// before.
func ExpectNAK(p *harness.Peer, syn uint8, psn wire.PSN, what string) (nak *trace.Record, before []*trace.Record) {
	ginkgo.GinkgoHelper()
	want := fmt.Sprintf("an Acknowledge with %s and PSN %d (%s)", wire.SyndromeString(syn), psn, what)
	rec, skipped := p.Expect(want, Liveness, func(k *wire.Packet) bool {
		return k.Opcode == wire.Acknowledge && !k.AETH.IsACK()
	})
	k := rec.Packet
	if k.AETH.Syndrome&0xE0 == 0x20 && syn&0xE0 == 0x20 {
		if k.PSN != psn || k.AETH.Syndrome != syn {
			p.Fail([]string{want}, k.String(), rec)
		}
	} else if k.AETH.Syndrome != syn || k.PSN != psn {
		p.Fail([]string{want}, k.String(), rec)
	}
	return rec, skipped
}

// NoNAK fails the spec if any of recs is a NAK or RNR NAK. Unless the
// scenario declares otherwise this is a setup step about duplicates: a
// NAK met answering a duplicate is a finding of C9-106; a sequence NAK
// means the responder's expected PSN is not where the scenario put it,
// which this step cannot blame on any one clause (indeterminate).
func NoNAK(p *harness.Peer, recs []*trace.Record, why string) {
	ginkgo.GinkgoHelper()
	for _, r := range recs {
		if k := r.Packet; k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
			clause := "C9-106"
			if k.AETH.IsNAK(wire.NAKPSNSequence) || k.AETH.IsRNR() {
				clause = ""
			}
			p.Step(clause, "the device answers the duplicates without a NAK", func() {
				p.Fail([]string{"no NAK: " + why}, k.String(), r)
			})
		}
	}
}

// DupUnanswered fails, as a setup step, an expectation that a duplicate
// READ (or ATOMIC, atomic) is answered, when none of recs answers it: a
// duplicate left unanswered is C9-107's finding (o9-66's for an ATOMIC),
// unless the device NAKed instead (its expected PSN is not where the
// scenario put it: undecided).
func DupUnanswered(p *harness.Peer, recs []*trace.Record, atomic bool, want, seen string) {
	ginkgo.GinkgoHelper()
	clause := "C9-107"
	if atomic {
		clause = "o9-66"
	}
	for _, r := range recs {
		if k := r.Packet; k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
			clause = ""
		}
	}
	p.Step(clause, "the device answers the duplicate", func() { p.Fail([]string{want}, seen, nil) })
}

// Acks returns the positive ACKs among recs.
func Acks(recs []*trace.Record) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		if harness.IsAck(r.Packet) {
			out = append(out, r)
		}
	}
	return out
}

// NAKs returns the NAKs with syndrome syn among recs.
func NAKs(recs []*trace.Record, syn uint8) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		if k := r.Packet; k.Opcode == wire.Acknowledge && k.AETH.Syndrome == syn {
			out = append(out, r)
		}
	}
	return out
}

// ReadResponses returns the READ response packets among recs whose PSN
// lies in [first, last].
func ReadResponses(recs []*trace.Record, first, last wire.PSN) []*trace.Record {
	var out []*trace.Record
	for _, r := range recs {
		if k := r.Packet; k.Opcode.Class() == wire.ClassReadResponse && k.PSN.InRange(first, last) {
			out = append(out, r)
		}
	}
	return out
}

// RecvCompletions returns the number of receive completions the device
// has produced since the last call (failing the spec on an adapter error).
func RecvCompletions(p *harness.Peer) int {
	ginkgo.GinkgoHelper()
	cs, err := p.Conn.Completions()
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("reading the device's completions: %v", err))
	}
	n := 0
	for _, c := range cs {
		if c.Recv {
			n++
		}
	}
	return n
}

// Memory reads n bytes of the device's region at off.
func Memory(p *harness.Peer, off, n int) []byte {
	ginkgo.GinkgoHelper()
	b, err := p.Conn.ReadMemory(off, n)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("reading the device's memory: %v", err))
	}
	return b
}

// SetMemory writes data into the device's region at off.
func SetMemory(p *harness.Peer, off int, data []byte) {
	ginkgo.GinkgoHelper()
	if err := p.Conn.WriteMemory(off, data); err != nil {
		ginkgo.Fail(fmt.Sprintf("writing the device's memory: %v", err))
	}
}

// Pattern returns n bytes counting from seed.
func Pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// Alive sends a SEND Only with AckReq at the next PSN and expects its ACK:
// the responder is still working and expects exactly that PSN.
func Alive(p *harness.Peer, why string) {
	ginkgo.GinkgoHelper()
	k := Send(p, 16, true)
	p.Send(k)
	ExpectAck(p, k.PSN, why)
}

// AliveWrite is Alive with a WRITE (for responders without posted
// receive WQEs).
func AliveWrite(p *harness.Peer, off int, why string) {
	ginkgo.GinkgoHelper()
	k := Write(p, 16, off, true)
	p.Send(k)
	ExpectAck(p, k.PSN, why)
}

// CompleteRead sends a READ of length bytes at off and waits for its whole
// response stream, returning the request. Unless the scenario declares
// otherwise this is a setup step; when the stream does not end as it
// should, the finding goes to the clause the stream breaks (ReadClause).
func CompleteRead(p *harness.Peer, length, off int) *wire.Packet {
	ginkgo.GinkgoHelper()
	rd := p.Read(length, off)
	p.Send(rd)
	n := wire.ReadResponsePackets(uint32(length), p.MTU())
	last := rd.PSN.Add(n - 1)
	var got []*trace.Record
	p.Step("", fmt.Sprintf("the device completes the READ at PSN %d (%d response packets)", rd.PSN, n), func() {
		want := fmt.Sprintf("the READ's last response packet, PSN %d", last)
		for {
			rec, ok := p.Conn.Recv(Liveness)
			if !ok {
				break
			}
			got = append(got, rec)
			if k := rec.Packet; k.Opcode.Class() == wire.ClassReadResponse && k.PSN == last && k.Opcode.EndsMessage() {
				return
			}
		}
		clause, hi := ReadClause(rd, got, n)
		p.Refine(clause, func() { p.Fail([]string{want + fmt.Sprintf(" within %v", Liveness)}, harness.SeenText(got), hi) })
	})
	return rd
}

// ReadClause names the clause a READ's incomplete response stream breaks
// (got: the device's packets after the request; n: the packets the
// response must have): none at all C9-116 (a valid request with AckReq
// gets a response); a response packet outside the READ's PSNs C9-96; a
// first packet that is not First/Only C9-97; a last one that is not
// Last/Only C9-98; "" when the stream shows no such cause.
func ReadClause(rd *wire.Packet, got []*trace.Record, n int) (string, *trace.Record) {
	last := rd.PSN.Add(n - 1)
	var resp []*trace.Record
	for _, r := range got {
		if k := r.Packet; k.Opcode.Class() == wire.ClassReadResponse {
			if !k.PSN.InRange(rd.PSN, last) {
				return "C9-96", r
			}
			resp = append(resp, r)
		}
	}
	if len(resp) == 0 {
		for _, r := range got {
			if k := r.Packet; k.Opcode.IsResponse() && k.PSN.AtOrAfter(rd.PSN) {
				return "", r
			}
		}
		return "C9-116", nil
	}
	for _, r := range resp {
		k := r.Packet
		if k.PSN == rd.PSN && !k.Opcode.StartsMessage() {
			return "C9-97", r
		}
		if k.PSN == last && !k.Opcode.EndsMessage() {
			return "C9-98", r
		}
	}
	return "", nil
}

// ExpectResponseStart waits for the first READ response packet answering
// READ rd, at rd's own PSN (dup: rd is a duplicate, answered by a
// replay). Unless the scenario declares otherwise this is a setup step:
// READ responses at other PSNs are a finding of C9-96 (how responses are
// numbered), none at all one of C9-107 for a duplicate (it is executed
// again) or C9-116 for a new READ (it is answered).
func ExpectResponseStart(p *harness.Peer, rd *wire.Packet, dup bool) *trace.Record {
	ginkgo.GinkgoHelper()
	want := fmt.Sprintf("the first packet answering the READ at PSN %d", rd.PSN)
	var got []*trace.Record
	for {
		rec, ok := p.Conn.Recv(Liveness)
		if !ok {
			break
		}
		got = append(got, rec)
		if k := rec.Packet; k.Opcode.Class() == wire.ClassReadResponse && k.PSN == rd.PSN {
			return rec
		}
	}
	clause := "C9-116"
	if dup {
		clause = "C9-107"
	}
	var hi *trace.Record
	for _, r := range got {
		if r.Packet.Opcode.Class() == wire.ClassReadResponse {
			clause, hi = "C9-96", r
			break
		}
	}
	p.Step(clause, "the device answers the READ at PSN "+fmt.Sprint(rd.PSN), func() {
		p.Fail([]string{want + fmt.Sprintf(" within %v", Liveness)}, harness.SeenText(got), hi)
	})
	return nil
}

// ReadOpcodeClause tells whether the device's answers to new READs (not
// duplicates) in the connection's trace already break the opcode rules of
// every READ response: a multi-packet response not opening with a First
// (C9-97) or not closing with a Last (C9-98). A replay showing the same
// is then that clause's finding, not a duplicate rule's.
func ReadOpcodeClause(p *harness.Peer) string {
	resp := map[wire.PSN]wire.Opcode{}
	var reads []*wire.Packet
	inside := func(psn wire.PSN) bool { // within a READ already sent: a duplicate
		for _, rd := range reads {
			if psn.InRange(rd.PSN, rd.PSN.Add(wire.ReadResponsePackets(rd.RETH.Length, p.MTU())-1)) {
				return true
			}
		}
		return false
	}
	for _, r := range p.Conn.Trace() {
		k := r.Packet
		switch {
		case k.Opcode == wire.ReadRequest && !inside(k.PSN):
			reads = append(reads, k)
		case k.Opcode.Class() == wire.ClassReadResponse:
			if _, ok := resp[k.PSN]; !ok {
				resp[k.PSN] = k.Opcode
			}
		}
	}
	for _, rd := range reads {
		n := wire.ReadResponsePackets(rd.RETH.Length, p.MTU())
		if n < 2 {
			continue
		}
		if op, ok := resp[rd.PSN]; ok && op != wire.ReadResponseFirst {
			return "C9-97"
		}
		if op, ok := resp[rd.PSN.Add(n-1)]; ok && op != wire.ReadResponseLast {
			return "C9-98"
		}
	}
	return ""
}

// AtomicAckClause names the clause broken when ATOMIC request q found no
// ATOMIC Acknowledge with its PSN among the device's packets recs: o9-58
// when an ATOMIC Acknowledge came with another PSN, C9-116 when nothing
// at all answered at or after q's PSN, "" otherwise.
func AtomicAckClause(q *wire.Packet, recs []*trace.Record) string {
	answered := false
	for _, r := range recs {
		k := r.Packet
		if k.Opcode == wire.AtomicAcknowledge && k.PSN != q.PSN {
			return "o9-58"
		}
		answered = answered || k.Opcode.IsResponse() && k.PSN.AtOrAfter(q.PSN)
	}
	if !answered {
		return "C9-116"
	}
	return ""
}

// PSNRange renders first..last.
func PSNRange(first wire.PSN, n int) string {
	if n <= 1 {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d..%d", first, first.Add(n-1))
}

// DupErrorKinds are the errors the C9-106/C9-115 scenarios provoke while
// the responder answers a duplicate.
var DupErrorKinds = map[string]string{
	"read-invalid-rkey":  "a duplicate READ after the memory region's R_Key was invalidated",
	"read-beyond":        "a duplicate READ whose length goes beyond the original READ",
	"read-misplaced":     "a partial duplicate READ whose address does not match its PSN",
	"read-wrong-rkey":    "a duplicate READ with another R_Key than the original",
	"write-invalid-rkey": "a duplicate WRITE after the memory region's R_Key was invalidated",
	"read-invalid-mid":   "a duplicate READ whose memory is invalidated during its replay",
}

// DupErrorScenario runs one C9-106/C9-115 scenario: complete an original
// request, make answering its duplicate fail, send the duplicate, and
// expect no NAK (the duplicate dropped, or answered as usual) and a
// responder still working.
func DupErrorScenario(p *harness.Peer, kind string) {
	ginkgo.GinkgoHelper()
	m := p.MTU()
	s := Send(p, 8, true)
	p.Send(s)
	ExpectAck(p, s.PSN, "a SEND before the original request")
	var orig *wire.Packet
	if kind == "write-invalid-rkey" {
		orig = Write(p, 100, 512, true)
		p.Send(orig)
		ExpectAck(p, orig.PSN, "the original WRITE")
	} else {
		orig = CompleteRead(p, 4*m, 0)
	}
	last := orig.PSN.Add(wire.ReadResponsePackets(orig.RETH.Length, m) - 1)
	// Requests after the original, so that a duplicate asking for more
	// than the original names only PSNs already used (a requester never
	// sends a PSN ahead of its newest), and is a duplicate throughout.
	var more []*wire.Packet
	for i := 0; i < 8; i++ {
		more = append(more, Send(p, 8, i == 7))
	}
	p.Send(more...)
	ExpectAck(p, more[7].PSN, "eight SENDs after the original request")
	d := Dup(orig, true)
	switch kind {
	case "read-invalid-rkey", "write-invalid-rkey":
		if err := p.Conn.InvalidateRKey(); err != nil {
			ginkgo.Fail(fmt.Sprintf("invalidating the device's R_Key: %v", err))
		}
	case "read-beyond":
		d.RETH.Length = 8 * uint32(m)
	case "read-misplaced":
		d.PSN = d.PSN.Add(2)
		d.RETH.Length = 2 * uint32(m)
	case "read-wrong-rkey":
		d.RETH.RKey ^= 0x5A5A
	}
	p.Send(d)
	var recs []*trace.Record
	if kind == "read-invalid-mid" {
		first := ExpectResponseStart(p, d, true)
		if err := p.Conn.InvalidateRKey(); err != nil {
			ginkgo.Fail(fmt.Sprintf("invalidating the device's R_Key: %v", err))
		}
		recs = append([]*trace.Record{first}, p.Collect(Liveness)...)
	} else {
		recs = p.Collect(Liveness)
	}
	for _, r := range recs {
		k := r.Packet
		if k.Opcode == wire.Acknowledge && !k.AETH.IsACK() {
			p.Fail([]string{fmt.Sprintf("no NAK: the error met answering the duplicate at PSN %d is not reported, the duplicate is dropped silently", d.PSN),
				"the duplicate answered as usual"}, k.String(), r)
		}
		if k.Opcode.Class() == wire.ClassReadResponse && !k.PSN.InRange(orig.PSN, last) {
			p.Fail([]string{fmt.Sprintf("no READ response outside the original READ's PSNs %d..%d", orig.PSN, last)}, k.String(), r)
		}
	}
	Alive(p, "the duplicate was dropped and the connection goes on")
}

// LatchKinds are the NAK-latch scenarios (C9-114/C9-122).
var LatchKinds = map[string]string{
	"burst3":       "three SENDs after a lost one",
	"burst32":      "32 SENDs in flight after a lost one",
	"first-lost":   "a four-packet SEND whose First is lost, and a SEND after it",
	"mixed":        "a WRITE, a READ and a SEND after a lost SEND",
	"dup-latched":  "a duplicate sent while the latch holds",
	"two-gaps":     "two gaps before the resend",
	"bursts-twice": "two bursts of out-of-sequence requests",
	"new-gap":      "a new gap after the first one was repaired",
}

// LatchWQEs is the receive WQEs a latch scenario posts: exactly the
// SENDs that must be taken (three to establish, the messages after).
func LatchWQEs(kind string) int {
	switch kind {
	case "burst32":
		return 3 + 33
	case "first-lost":
		return 3 + 2
	case "mixed":
		return 3 + 2
	case "two-gaps", "bursts-twice", "new-gap":
		return 3 + 9
	}
	return 3 + 4
}

// LatchScenario runs one NAK-latch scenario: establish the expected PSN
// e, lose the request at e, send what follows (one sequence NAK with PSN
// e must come, nothing executed past the gap, no further sequence NAK),
// then send from e again and expect every request taken, with exactly as
// many receive completions as SENDs (out-of-sequence SENDs consume no
// receive WQE: the device has no spare ones).
func LatchScenario(p *harness.Peer, kind string) {
	ginkgo.GinkgoHelper()
	establish(p)
	prev := p.PSN.Add(-1)
	RecvCompletions(p)
	e := p.PSN
	var pk []*wire.Packet
	sends := 0
	switch kind {
	case "first-lost":
		pk = p.Message(wire.SendOnly, 3*p.MTU()+1, 0, true)
		pk = append(pk, Send(p, 16, true))
		sends = 2
	case "mixed":
		pk = []*wire.Packet{Send(p, 16, true), Write(p, 64, 1024, true), p.Read(8, 1024), Send(p, 16, true)}
		sends = 2
	default:
		n := LatchWQEs(kind) - 3
		for i := 0; i < n; i++ {
			pk = append(pk, Send(p, 16, true))
		}
		sends = n
	}
	one := func(recs []*trace.Record, gap wire.PSN, what string) {
		ginkgo.GinkgoHelper()
		naks := NAKs(recs, wire.SynNAK(wire.NAKPSNSequence))
		if len(naks) == 0 {
			// The trigger: a sequence NAK for the gap. Another answer
			// leaves the latch unexercised; an invalid-request NAK that
			// does not name the expected PSN is C9-125's finding.
			clause, why := "", ""
			var hi *trace.Record
			for _, r := range recs {
				if k := r.Packet; k.Opcode == wire.Acknowledge && k.AETH.IsNAK(wire.NAKInvalidRequest) && k.PSN != gap {
					clause, hi, why = "C9-125", r, fmt.Sprintf("an invalid request NAK with PSN %d, the responder's expected PSN", gap)
					break
				}
			}
			p.Trigger(clause, fmt.Sprintf("NAK %s with a PSN sequence error NAK", what), func() {
				want := []string{fmt.Sprintf("a PSN sequence error NAK with PSN %d for %s", gap, what)}
				if why != "" {
					want = []string{why}
				}
				p.Fail(want, harness.SeenText(recs), hi)
			})
		}
		if len(naks) == 1 && naks[0].Packet.PSN != gap {
			// One NAK, as the latch wants, naming another PSN: C9-121's.
			p.Setup("C9-121", "the sequence NAK names the expected PSN", func() {
				p.Fail([]string{fmt.Sprintf("a PSN sequence error NAK with PSN %d, the expected PSN", gap)}, naks[0].Packet.String(), naks[0])
			})
		}
		if len(naks) != 1 || naks[0].Packet.PSN != gap {
			seen := fmt.Sprintf("%d sequence NAKs", len(naks))
			var hi *trace.Record
			if len(naks) > 0 {
				hi = naks[len(naks)-1]
				seen += fmt.Sprintf(" (the last: %s)", hi.Packet)
			}
			p.Fail([]string{fmt.Sprintf("exactly one PSN sequence error NAK, with PSN %d, for %s: once it is sent the responder is latched and sends no other until PSN %d arrives", gap, what, gap)}, seen, hi)
		}
		for _, r := range recs {
			k := r.Packet
			if harness.IsAck(k) && k.PSN.AtOrAfter(gap) || k.Opcode.Class() == wire.ClassReadResponse && k.PSN.AtOrAfter(gap) {
				p.Fail([]string{fmt.Sprintf("no new request executed past the gap at PSN %d while the latch holds (only duplicates are answered)", gap)}, k.String(), r)
			}
		}
	}
	from := func(lo int, skip ...int) []*wire.Packet {
		var out []*wire.Packet
		for i := lo; i < len(pk); i++ {
			keep := true
			for _, s := range skip {
				if i == s {
					keep = false
				}
			}
			if keep {
				out = append(out, pk[i])
			}
		}
		return out
	}
	what := LatchKinds[kind]
	switch kind {
	case "two-gaps":
		p.Send(pk[1], pk[3], pk[5])
		one(p.Collect(Short), e, what)
	case "bursts-twice":
		p.Send(pk[1:5]...)
		recs := p.Collect(Short)
		p.Send(pk[5:]...)
		one(append(recs, p.Collect(Short)...), e, what)
	case "dup-latched":
		p.Send(pk[1:]...)
		recs := p.Collect(Short)
		d := p.Packet(wire.SendOnly, prev)
		d.Payload, d.AckReq = Pattern(1, 16), true
		p.Send(d)
		got := p.Collect(Short)
		if a := Acks(got); len(a) == 0 || a[0].Packet.PSN != prev {
			p.Fail([]string{fmt.Sprintf("the duplicate at PSN %d answered while the latch holds: an ACK with PSN %d (duplicates are still answered)", prev, prev)},
				fmt.Sprintf("%d ACKs", len(a)), nil)
		}
		one(append(recs, got...), e, what)
	case "new-gap":
		p.Send(pk[1])
		one(p.Collect(Short), e, what)
		p.Send(from(0, 3)...)
		recs := p.Collect(Short)
		one(recs, pk[3].PSN, "a new gap after the first was repaired (a new sequence NAK is due)")
		if a := Acks(recs); len(a) == 0 || a[len(a)-1].Packet.PSN != pk[2].PSN {
			p.Fail([]string{fmt.Sprintf("the requests before the new gap acknowledged, up to PSN %d", pk[2].PSN)}, fmt.Sprintf("%d ACKs", len(a)), nil)
		}
		p.Send(from(3)...)
		ExpectAck(p, pk[len(pk)-1].PSN, "the requests resent from the new gap")
		if n := RecvCompletions(p); n != sends {
			p.Fail([]string{fmt.Sprintf("%d receive completions, one per SEND taken", sends)}, fmt.Sprintf("%d", n), nil)
		}
		return
	default:
		p.Send(pk[1:]...)
		one(p.Collect(Short), e, what)
	}
	p.Send(pk...)
	ExpectAck(p, pk[len(pk)-1].PSN, fmt.Sprintf("the requests resent from PSN %d, all taken in sequence", e))
	p.Collect(Short)
	if n := RecvCompletions(p); n != sends {
		p.Fail([]string{fmt.Sprintf("%d receive completions, one per SEND taken: the out-of-sequence SENDs consumed no receive WQE", sends)}, fmt.Sprintf("%d", n), nil)
	}
}
