package harness

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// This file tells the copies a network or a capture made of a packet from
// the sender's own resends, and marks the responses that may be late
// (sent before packets the capture shows earlier).

// copyDepth is how many recent packets a CopyRing compares a packet
// with.
const copyDepth = 16

// copyOf reports whether response r repeats one of the connection's
// latest responses, IPv4 Identification included, from a sender whose
// IDs change: a sender gives each packet a new ID, so the repeat is a
// copy the network made or a frame the capture recorded twice, not a
// second transmission. A copy of a response says nothing about the
// responder; a requester ignores it as a stale response.
//
// Where no IPv4 Identification tells them apart (IPv6, or a sender whose
// ID does not change), a response repeating a recent one byte for byte
// is shown to the checkers, and a violation they find on it is left
// undecided (Conn.Violation): a copy cannot be told from the responder
// sending it again.
//
// A request repeating a recent one with its IPv4 ID is shown to the
// checkers as well, and remembered as a possible copy: the capture may
// have recorded it twice (the responder received it once) or the network
// copied it (the responder received a duplicate).
func (c *Conn) copyOf(r *trace.Record) bool {
	c.idsVary[r.Dir&1].note(r)
	vary := c.IDsVary(r.Dir)
	if !opc.IsResponse(r.Packet.Opcode) {
		// A request's copy is shown to the checkers, marked: the
		// requester's model tells it from a resend by the mark.
		r.Copy = false
		if opc.IsRequest(r.Packet.Opcode) {
			if cp, _ := c.reqCopies.Check(r, vary); cp {
				r.Copy = true
				c.noteMaybeCopy(r)
			}
		}
		return false
	}
	cp, maybe := c.copies.Check(r, vary)
	if maybe {
		c.noteMaybeCopy(r)
	}
	return cp
}

// maxMaybeCopies bounds the possible copies a connection remembers
// (Conn.maybeCopies); past it the oldest are forgotten.
const maxMaybeCopies = 1024

// noteMaybeCopy remembers response r as one that may be a copy.
func (c *Conn) noteMaybeCopy(r *trace.Record) { c.noteMaybe(r, maybeCopy) }

// maybeKind says why a packet is in Conn.maybeCopies.
type maybeKind uint8

const (
	maybeCopy maybeKind = iota // it repeats a recent packet (MaybeCopy)
	lateByID                   // its IPv4 ID shows it was sent before one delivered (lateResponse)
	lateByMSN                  // its MSN is behind one delivered, no ID to tell (staleMSN)
	lateAtMSN                  // its MSN is that of one delivered with a later PSN, no ID to tell (staleMSN)

	// idAhead marks a lateByMSN or lateAtMSN response whose IPv4 ID was
	// ahead of every response delivered before it (lateResponse took it
	// as the newest): once its sender is shown to count up (DatedByID), it
	// was sent after them (Conn.violation).
	idAhead maybeKind = 0x80
)

// noteMaybe remembers r as a possible copy, or as late.
func (c *Conn) noteMaybe(r *trace.Record, kind maybeKind) {
	if c.maybeCopies == nil {
		c.maybeCopies = map[*trace.Record]maybeKind{}
	}
	if len(c.maybeOrder) == maxMaybeCopies {
		delete(c.maybeCopies, c.maybeOrder[0])
		c.maybeOrder = c.maybeOrder[1:]
	}
	c.maybeCopies[r] = kind
	c.maybeOrder = append(c.maybeOrder, r)
}

// lateResponse notes response r, about to be delivered, as late when its
// sender counts IPv4 IDs up and r's ID is behind the newest response
// already delivered: the responder sent r before that one, and the
// network or the capture delayed r past the reorder buffer (or r is a
// copy of a response whose original the capture lost). The trace's order
// then says nothing of the responder's, so a violation found on r is left
// undecided (Violation), as for a possible copy (MaybeCopy).
func (c *Conn) lateResponse(r *trace.Record) {
	if !c.haveRsp {
		c.newestRsp, c.haveRsp = r.IPID, true
		return
	}
	switch d := c.newestRsp - r.IPID; {
	case d == 0:
	case d < idStep:
		// Less than the reorder buffer asks suffices here: that r may
		// have been sent earlier (nothing shows the sender does not
		// count up) is enough to decide nothing on it.
		if o := &c.ids[r.Dir&1]; o.others*16 <= o.up {
			c.Late++
			c.noteMaybe(r, lateByID)
		}
	default:
		c.newestRsp = r.IPID
	}
}

// staleMSN notes response r, about to be delivered, as late when it
// carries an MSN behind the newest one a response delivered carried, and
// a PSN no later than that response's, where no IPv4 Identification can
// tell when it was sent (DatedByID: IPv6, a sender whose ID never
// changes, or one whose IDs change but are not shown to count up) and
// the trace is a capture that may have lost packets. A responder never lowers its MSN (C9-148), so r was
// either sent again by it (a violation) or sent before that response and
// delayed by the network or the capture, or copied from an original the
// capture lost (none): nothing in the trace tells which, so a violation
// found on r is left undecided (Violation) and r moves none of the
// connection's latest ACK, MSN or NAK. So is a response carrying the
// newest MSN while a response with that MSN counted a later PSN, where no
// message the trace shows ended between the two PSNs: it may be an older
// response of the same count. Where the sender's IDs count up,
// lateResponse decides by them instead.
func (c *Conn) staleMSN(r *trace.Record) {
	p := r.Packet
	if !opc.Has(p.Opcode, wire.HdrAETH) {
		return
	}
	msn := p.AETH.MSN & 0xFFFFFF
	defer c.noteCounted(r)
	if !c.haveMSN {
		c.newestMSN, c.newestMSNPSN, c.haveMSN = msn, p.PSN, true
		c.newestMSNTop, _ = countedAt(p)
		return
	}
	switch d := (c.newestMSN - msn) & 0xFFFFFF; {
	case d == 0:
		// The same MSN as a response with a later PSN: an older
		// response of the same count (an ACK in the middle of a message,
		// or one naming a request before a READ) unless a message the
		// trace shows ended between their PSNs (a duplicate's answer
		// going back to a READ's PSN may be a delayed ACK of that READ,
		// not one sent again), or an ACK kept shows that PSN's count was
		// never this one (countPinned). Inside a READ's range (an ACK
		// before its last PSN, a NAK past its first) no response is
		// legal at any moment: judged.
		at, nak := countedAt(p)
		if at.After(c.newestMSNTop) {
			c.newestMSNTop = at
			return
		}
		s := c.ReadSpanAt(p.PSN)
		inside := s != nil && (nak && p.PSN.After(s.First) || !nak && p.PSN.Before(s.LastMin))
		if at.Before(c.newestMSNTop) && !inside && !c.Settings.Active && !c.Settings.Complete && !c.DatedByID(r) &&
			c.endsIn(at.Next(), c.newestMSNTop, 1) == 0 && !c.countPinned(p) {
			c.noteStale(r, lateAtMSN|c.idAheadOf(r))
		}
	case d < 1<<23:
		// Behind in its PSN too: an earlier moment's response. (One
		// ahead in PSN is judged: after a response whose MSN was too
		// high, the next ones are behind it in MSN only.)
		if c.Settings.Active || c.Settings.Complete || c.DatedByID(r) || p.PSN.After(c.newestMSNPSN) || c.countPinned(p) {
			return
		}
		c.noteStale(r, lateByMSN|c.idAheadOf(r))
	default:
		c.newestMSN, c.newestMSNPSN = msn, p.PSN
		c.newestMSNTop, _ = countedAt(p)
	}
}

// NewestMSN returns the highest MSN (in the MSN's modular order) the
// connection's responses have carried so far, the record being judged
// included, and whether any carried one.
func (c *Conn) NewestMSN() (uint32, bool) { return c.newestMSN, c.haveMSN }

// countedAt is the PSN whose completion response p's MSN counts up to
// (its own; for a NAK, which names the PSN the responder expects, the
// one before), and whether p is a NAK.
func countedAt(p *wire.Packet) (wire.PSN, bool) {
	if p.Opcode == wire.Acknowledge && !p.AETH.IsACK() {
		return p.PSN.Add(-1), true
	}
	return p.PSN, false
}

// countedDepth is how many responses Conn.counted keeps (room for the
// ACKs and NAKs countPinned pairs with beside the ATOMIC and READ
// answers).
const countedDepth = 16

// noteCounted keeps r, not late, when its MSN is the count of the PSNs it
// counts up to whenever it was sent (an ACK or a NAK: neither replays an
// earlier answer), or counts them at least (countsUpTo: an ATOMIC
// acknowledgment or a READ's last response, which may replay one with
// the count of a later moment); not an ACK whose PSN no legal responder
// gives (AckPSNFault), which fixes no count. A late positive ACK is
// paired all the same (pairCounts: its count is its PSN's whenever it was
// sent, so a clash holds in any order of the packets: a duplicate's
// answer going back is no older ACK delayed where a later ACK shows no
// older ACK of its PSN carried its count), but kept for no other
// response's dating (countPinned).
func (c *Conn) noteCounted(r *trace.Record) {
	p := r.Packet
	if p.Opcode == wire.Acknowledge && p.AETH.IsACK() && c.AckPSNFault(r) != "" {
		return
	}
	if c.IsLate(r) {
		if p.Opcode == wire.Acknowledge && p.AETH.IsACK() {
			c.pairCounts(r)
		}
		return
	}
	if p.Opcode != wire.Acknowledge && !c.countsUpTo(r) {
		return
	}
	if p.AETH.IsACK() {
		c.pairCounts(r)
	}
	c.counted[c.nCounted%countedDepth] = r
	if c.nCounted == 0 || r.Packet.PSN.After(c.countedTop) {
		c.countedTop = r.Packet.PSN
	}
	c.nCounted++
}

// countPinned reports whether an ACK or a NAK kept in Conn.counted shows
// that no response counting p's PSN carried p's MSN at any moment, so p
// is no older one delayed or copied: one counted a PSN before the one p
// counts up to with an MSN that, plus the messages the trace shows ending
// between, is above p's (for example, an ACK repeated with an MSN behind,
// where the requests between show its count had risen: not left open as
// maybe late); or, p being an ACK or a NAK, one counted that PSN with an
// MSN more than one below p's, or a later PSN with an MSN that, less the
// messages ending between, is below p's. An ACK or a NAK carries the count
// of the PSNs up to the one it counts, whenever it is sent, one more at
// most (a READ right after, counted as the responder validated it, and by
// any response counting past it): p's count is higher than that PSN's ever
// was (for example, a duplicate's answer going back with the newest MSN,
// which a duplicate READ's answer had carried first, where an earlier ACK
// of that PSN showed a lower one: no older response of the same count).
func (c *Conn) countPinned(p *wire.Packet) bool {
	at, _ := countedAt(p)
	msn := p.AETH.MSN & 0xFFFFFF
	for i := range min(c.nCounted, countedDepth) {
		r := c.counted[i].Packet
		if r.Opcode != wire.Acknowledge {
			continue // its count may be a later moment's
		}
		eat, _ := countedAt(r)
		ahead := (msn - r.AETH.MSN&0xFFFFFF) & 0xFFFFFF // how far p's MSN is ahead of r's
		switch {
		case eat == at && ahead >= 1<<23 && ahead <= 0xFFFFFF-1:
			// The same PSN counted: one more at most (a READ right
			// after it, counted as the responder validated it).
			return true
		case eat.Before(at) && (ahead >= 1<<23 || c.endsIn(eat.Next(), at, int(ahead)+1) > int(ahead)):
			return true
		case p.Opcode == wire.Acknowledge && !eat.Before(at):
			// At that PSN, p's count is r's, one more at most. Past it,
			// r's count holds the messages ending between and a READ
			// right after p's PSN, which p's may hold: p's is at most
			// r's less those ending between.
			need := 1 - int(ahead) // messages between that pin p
			if ahead >= 1<<23 {
				need += 1 << 24
			}
			if eat == at {
				need++
			}
			if need <= 0 || c.endsIn(at.Next(), eat, need) >= need {
				return true
			}
		}
	}
	return false
}

// idAheadOf is idAhead where response r, being delivered, has an IPv4
// ID ahead of every response delivered before it (lateResponse took it
// as the newest), 0 otherwise.
func (c *Conn) idAheadOf(r *trace.Record) maybeKind {
	if r.HasIPID && c.haveRsp && c.newestRsp == r.IPID {
		return idAhead
	}
	return 0
}

// noteStale notes response r as late by its MSN (staleMSN), as kind
// says.
func (c *Conn) noteStale(r *trace.Record, kind maybeKind) {
	switch k, ok := c.maybeCopies[r]; {
	case !ok:
		c.Late++
		c.noteMaybe(r, kind)
	case k == maybeCopy:
		// A possible copy of an earlier response, and an earlier
		// moment's: late, so that it shapes nothing either.
		c.Late++
		c.maybeCopies[r] = kind
	}
}

// maxEndsScan bounds the PSNs endsIn looks at; past it, it counts no
// more (the response stays open, never falsely failed).
const maxEndsScan = 4096

// endsIn counts, up to limit, the requests the trace shows that end a
// message other than a READ (a SEND or WRITE Last or Only, an ATOMIC) at
// a PSN in [from, to]: the responder's count rose by as many between the
// completion of from-1 and that of to. A READ is left out: the responder
// may count it as soon as it validates it, while its newest completed PSN
// is still the one before it (C9-148).
func (c *Conn) endsIn(from, to wire.PSN, limit int) int {
	n := 0
	span := min(to.Diff(from)+1, maxEndsScan)
	for p, i := from, 0; i < span && n < limit; p, i = p.Next(), i+1 {
		if e := c.reqAt(p); e.holds(p) && e.op != wire.ReadRequest && opc.EndsMessage(e.op) {
			n++
		}
	}
	return n
}

// EndsShownIn counts the requests the trace shows that end a message other
// than a READ at a PSN in [from, to] (endsIn, up to maxEndsScan PSNs).
func (c *Conn) EndsShownIn(from, to wire.PSN) int { return c.endsIn(from, to, maxEndsScan) }

// IsLate reports whether response r came after responses its sender sent
// later (lateResponse): where it stands in the trace says nothing of the
// responder's order.
func (c *Conn) IsLate(r *trace.Record) bool {
	k, ok := c.maybeCopies[r]
	return ok && k != maybeCopy
}

// LateWhy explains why a late response (IsLate) is not judged by where
// it stands in the trace; open says a violation remains possible (the
// responder may have sent it again: no IPv4 Identification tells), so
// its clause cannot pass on it. "" when r is not late.
func (c *Conn) LateWhy(r *trace.Record) (why string, open bool) {
	switch c.maybeCopies[r] &^ idAhead {
	case lateByID:
		if !c.DatedByID(r) {
			// Its ID is behind, but its sender is not shown to count up:
			// it may have been sent again as well.
			return fmt.Sprintf("frame %d may have been sent before responses the trace shows earlier (its IPv4 Identification is behind theirs, though its sender's IDs have not been shown to count up): the network or the capture delaying it, or copying one whose original the capture lost, and the responder sending it again (a violation) both explain it", r.Frame), true
		}
		return fmt.Sprintf("frame %d was sent before responses the trace shows earlier (its IPv4 Identification shows it): the network or the capture delayed it, or copied one whose original the capture lost", r.Frame), false
	case lateByMSN:
		return fmt.Sprintf("frame %d carries an MSN behind one a response the trace shows earlier carried, and no IPv4 Identification tells when it was sent %s: the responder sending it again (a violation) and the network or the capture delaying it, or copying one whose original the capture lost (none), both explain it", r.Frame, c.undated(r)), true
	case lateAtMSN:
		return fmt.Sprintf("frame %d %s: the responder sending it again (a violation) and the network or the capture delaying it, or copying one whose original the capture lost (none), both explain it", r.Frame, c.lateAtMSNText(r)), true
	}
	return "", false
}

// lateAtMSNText says why a lateAtMSN response may be late.
func (c *Conn) lateAtMSNText(r *trace.Record) string {
	return "carries the MSN of a response with a later PSN the trace shows earlier, with no message the trace shows ending between their PSNs (so it may be an older response of the same count), and no IPv4 Identification tells when it was sent " + c.undated(r)
}

// undated says, in parentheses, why no IPv4 Identification dates r
// (DatedByID).
func (c *Conn) undated(r *trace.Record) string {
	if c.MayBeDatedByID(r) {
		return "(its sender's IDs change, but have not been shown to count up: they order none of its packets)"
	}
	return "(IPv6, or an ID that never changes)"
}

// MaybeCopy reports whether r may be a copy the capture or the network
// made of a recent packet of its sender, not a second transmission: a
// response repeating one byte for byte where no IPv4 Identification tells
// them apart, or a request repeating one with its IPv4 ID (which the
// responder received twice if the network copied it, once if the
// capture recorded it twice).
func (c *Conn) MaybeCopy(r *trace.Record) bool {
	_, ok := c.maybeCopies[r]
	return ok
}

// copyIDs is how many IPv4 Identifications a CopyRing remembers a
// fingerprint for, by their low bits: a copy of a packet whose ID came
// fewer than copyIDs IDs of its sender before is found however many of
// the connection's packets lie between (a capture of two interfaces
// writes each one's packets in batches, so a packet and its copy may be
// far apart in the file).
const copyIDs = 256

// CopyRing remembers a sender's latest packets to tell a copy of one of
// them (the same packet with the same IPv4 Identification) from a new
// transmission.
type CopyRing struct {
	recent [copyDepth]*trace.Record // a ring: the newest at head-1
	// ids holds, beside each packet of recent, its IPv4 ID with bit 16
	// set when it has one (idKey), so that the packets of other IDs are
	// passed over without reading their records.
	ids [copyDepth]uint32
	// withID counts the slots of ids that hold an ID, and byLow those
	// by the ID's low byte (setKey), for mayHold.
	withID int
	byLow  [256]uint8
	n      int // how many it holds
	head   int // where the next goes
	// byID holds, for packets with an IPv4 ID from a sender whose IDs
	// change, a fingerprint of the latest one by the ID's low bits.
	byID *[copyIDs]idPrint
	// older holds, for a sender whose IDs tell nothing (IPv6, or an ID
	// that never changes), the fingerprints of its copyIDs latest packets
	// past the ring, so that a repeat of one of them is a possible copy
	// however far back its original is.
	older *printSet
}

// printSet is a bounded set of fingerprints: the latest copyIDs added,
// the oldest forgotten first.
type printSet struct {
	ring  [copyIDs]uint64
	n     int
	head  int
	count map[uint64]int32
}

// add remembers fp, forgetting the oldest when full.
func (s *printSet) add(fp uint64) {
	if s.count == nil {
		s.count = make(map[uint64]int32, copyIDs)
	}
	if s.n == copyIDs {
		old := s.ring[s.head]
		if s.count[old]--; s.count[old] == 0 {
			delete(s.count, old)
		}
	} else {
		s.n++
	}
	s.ring[s.head] = fp
	s.head = (s.head + 1) % copyIDs
	s.count[fp]++
}

// has reports whether fp is remembered.
func (s *printSet) has(fp uint64) bool { return s.count[fp] > 0 }

// idPrint is a packet's IPv4 ID and a fingerprint of its sender, headers
// and payload.
type idPrint struct {
	id   uint16
	used bool
	fp   uint64
}

// copySeed seeds the fingerprints' payload hashes in one process.
var copySeed = maphash.MakeSeed()

// fingerprint hashes what samePacket and Check compare of r: its sender,
// headers, payload length and payload.
func fingerprint(r *trace.Record) uint64 {
	p := r.Packet
	bth := p.BTH
	src := r.Src.As16()
	// Four independent chains, joined at the end: the fields are hashed
	// side by side rather than one multiply after another.
	a := mix(1, binary.LittleEndian.Uint64(src[:8]))
	b := mix(2, binary.LittleEndian.Uint64(src[8:]))
	c := mix(3, uint64(bth.Opcode)|uint64(bth.PSN)<<8|uint64(bth.DestQP)<<32)
	d := mix(4, uint64(bth.PKey)|uint64(bth.PadCnt)<<16|uint64(bth.TVer)<<24|b2u(bth.SE)<<32|b2u(bth.M)<<33|b2u(bth.AckReq)<<34|b2u(bth.FECN)<<35|b2u(bth.BECN)<<36|uint64(bth.Resv6)<<40|uint64(bth.Resv7)<<48)
	a = mix(a, uint64(p.AETH.Syndrome)|uint64(p.AETH.MSN)<<8)
	b = mix(b, p.RETH.VA)
	c = mix(c, uint64(p.RETH.RKey)|uint64(p.RETH.Length)<<32)
	d = mix(d, p.Atomic.VA)
	a = mix(a, uint64(p.Atomic.RKey))
	b = mix(b, p.Atomic.SwapAdd)
	c = mix(c, p.Atomic.Compare)
	d = mix(d, p.AtomicAck)
	a = mix(a, uint64(p.Imm)|uint64(p.IETH)<<32)
	b = mix(b, uint64(p.FETH)|uint64(uint32(r.PayloadLen))<<32)
	if len(p.Payload) > 0 {
		c = mix(c, maphash.Bytes(copySeed, p.Payload))
	}
	return mix(mix(mix(a, b), c), d)
}

// mix folds v into the hash h (one rotate, xor and multiply: the fields
// are few and the hash only tells packets of one ID apart).
func mix(h, v uint64) uint64 {
	return (bits.RotateLeft64(h, 23) ^ v) * 0x9E3779B97F4A7C15
}

// b2u is 1 for true.
func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// The ring's index wraps with a mask.
var _ [0]struct{} = [copyDepth & (copyDepth - 1)]struct{}{}

// Copy reports whether r repeats one of the packets remembered, IPv4 ID,
// sender and packet alike, when idsVary says the sender's IDs change (a
// sender with one fixed ID may send the same packet twice); it remembers
// r otherwise.
func (k *CopyRing) Copy(r *trace.Record, idsVary bool) bool {
	cp, _ := k.Check(r, idsVary)
	return cp
}

// Check is Copy that also reports, as maybe, a packet repeating one
// remembered (sender and packet alike) where no IPv4 ID can tell: IPv6
// has none, and a sender whose ID does not change gives a second
// transmission the same one. Such a packet is remembered too.
func (k *CopyRing) Check(r *trace.Record, idsVary bool) (cp, maybe bool) {
	ids := r.HasIPID && idsVary
	key := idKey(r)
	scan := !ids || k.mayHold(key)
	for i := 1; scan && i <= k.n; i++ { // newest first
		j := (k.head - i) & (copyDepth - 1)
		if qk := k.ids[j]; ids && qk&hasID != 0 && qk != key {
			continue // another transmission (checked first: the cheap test)
		}
		q := k.recent[j]
		if q.Src != r.Src || q.PayloadLen != r.PayloadLen || !samePacket(q.Packet, r.Packet) {
			continue
		}
		if ids && q.HasIPID {
			return true, false
		}
		maybe = true
	}
	if r.HasIPID {
		// Past the ring: the fingerprint of the last packet with r's ID
		// (kept also before the sender is seen to change its IDs, so that
		// a late copy of one of its first packets is told later).
		if k.byID == nil {
			k.byID = new([copyIDs]idPrint)
		}
		fp := fingerprint(r)
		slot := &k.byID[r.IPID%copyIDs]
		if ids && slot.used && slot.id == r.IPID && slot.fp == fp {
			return true, false
		}
		*slot = idPrint{id: r.IPID, used: true, fp: fp}
	}
	if !ids {
		// Past the ring, with no ID to tell: a repeat of an older packet
		// (a capture of two interfaces writes each one's packets in
		// batches) may be a copy as well.
		if k.older == nil {
			k.older = new(printSet)
		}
		if k.n == copyDepth {
			// The packet about to leave the ring.
			k.older.add(fingerprint(k.recent[k.head]))
		}
		if !maybe && k.older.has(fingerprint(r)) {
			maybe = true
		}
	}
	k.recent[k.head] = r
	k.setKey(k.head, key)
	k.head = (k.head + 1) & (copyDepth - 1)
	if k.n < copyDepth {
		k.n++
	}
	return false, maybe
}

// mayHold reports whether a slot of the ring may hold key, or holds no
// IPv4 ID: only such a slot can stop Check's scan of a packet with an ID
// from a sender whose IDs change. The usual packet, new, finds none, and
// the scan is skipped (it read every slot). It is told from the counts of
// the slots' IDs by their low byte, which a sender counting its IDs up
// (the 16 latest packets of a connection) leaves apart from the next one's.
func (k *CopyRing) mayHold(key uint32) bool {
	return k.withID < copyDepth || k.byLow[uint8(key)] != 0
}

// setKey sets slot j of ids to key, keeping the counts of mayHold.
func (k *CopyRing) setKey(j int, key uint32) {
	if old := k.ids[j]; old&hasID != 0 {
		k.withID--
		k.byLow[uint8(old)]--
	}
	if key&hasID != 0 {
		k.withID++
		k.byLow[uint8(key)]++
	}
	k.ids[j] = key
}

// hasID marks an idKey that holds an IPv4 ID.
const hasID = 1 << 16

// idKey is r's IPv4 ID with hasID set, or 0 when r has none.
func idKey(r *trace.Record) uint32 {
	if !r.HasIPID {
		return 0
	}
	return hasID | uint32(r.IPID)
}

// samePacket reports whether two packets carry the same headers and
// payload.
func samePacket(a, b *wire.Packet) bool {
	return a.BTH == b.BTH && a.AETH == b.AETH && a.RETH == b.RETH && a.Atomic == b.Atomic &&
		a.AtomicAck == b.AtomicAck && a.Imm == b.Imm && a.IETH == b.IETH && a.FETH == b.FETH && bytes.Equal(a.Payload, b.Payload)
}
