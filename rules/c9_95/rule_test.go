package c9_95

import (
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

func TestMonitor(t *testing.T) {
	fresh := ht.Fresh(100) // an active run on a QP whose responder expects PSN 100
	millis := ht.Capture() // a capture stamping packets to the millisecond
	millis.TimePrecision = time.Millisecond
	fromStart := ht.Capture() // a capture showing the connection's handshake
	fromStart.FromStart = true
	// behind: a SEND's First and Middle acknowledged one by one, then an
	// ACK back at the First with the latest MSN (no message ended
	// between them: it may have been sent first).
	behind := func(tr *ht.Trace) {
		tr.Req(wire.SendFirst, 10, true)
		tr.Req(wire.SendMiddle, 11, true)
		tr.Ack(11, 1)
		tr.Ack(10, 1)
	}
	// readCounted: nine requests acknowledged one by one (the
	// responder's IDs shown to count), a SEND, a one-packet READ and a
	// SEND, then an ACK naming the first SEND whose MSN counts the READ
	// too (validated, its answer still to come), then one past the READ.
	// gapBefore skips a responder ID before the first ACK (the READ's
	// answer may have gone out there), gapAfter one between the two ACKs
	// (it may have gone out after the first), answer records the READ's
	// answer between them. atomic makes the ninth request an ATOMIC, its
	// answer shown 3µs after it (how long the responder takes to begin
	// one), and held how much longer than 2µs before the ACK the READ
	// was captured.
	readCounted := func(gapBefore, gapAfter, answer, atomic bool, held time.Duration) func(tr *ht.Trace) {
		return func(tr *ht.Trace) {
			for p := range wire.PSN(9) {
				if atomic && p == 8 {
					tr.Atomic(wire.FetchAdd, p)
					tr.Wait(2 * time.Microsecond)
					tr.AtomicAck(p, uint32(p)+1, 0)
					continue
				}
				tr.Req(wire.SendOnly, p, true)
				tr.Ack(p, uint32(p)+1)
			}
			tr.Req(wire.SendOnly, 9, true)
			tr.Read(10, 8)
			tr.Wait(held)
			tr.Req(wire.SendOnly, 11, true)
			first := tr.Ack(9, 11)
			if answer {
				tr.ReadResp(wire.ReadResponseOnly, 10, 11, 8)
			}
			second := tr.Ack(11, 12)
			tr.IPIDs(100, 500)
			for _, r := range tr.Records {
				if r.Dir == trace.ToRequester && gapBefore && r.Frame >= first.Frame {
					r.IPID++
				}
				if r.Dir == trace.ToRequester && gapAfter && r.Frame >= second.Frame {
					r.IPID++
				}
			}
		}
	}
	cases := []struct {
		name     string
		settings harness.Settings
		build    func(tr *ht.Trace)
		want     reports.Verdict
	}{
		{"coalesced ACK naming the newest request", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, false)
			tr.Req(wire.SendOnly, 11, false)
			tr.Req(wire.SendOnly, 12, true)
			tr.Ack(12, 3)
		}, reports.Pass},
		{"ACK for a PSN never sent, complete trace", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(12, 1)
		}, reports.Fail},
		{"ACK behind an ATOMIC acknowledgment, its count past the ATOMIC", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 9, true)
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 2, 0)
			tr.Ack(9, 3) // counts the ATOMIC: sent after it completed
		}, reports.Fail},
		{"ACK behind an ATOMIC acknowledgment, no count past it: it may have been sent first", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 9, true)
			tr.Atomic(wire.FetchAdd, 10)
			tr.AtomicAck(10, 2, 0)
			tr.Ack(9, 1)
		}, reports.Indeterminate},
		// A NAK acknowledges every PSN before the one it names: an ACK
		// sent after it names that PSN's predecessor or a later one.
		{"ACK behind a sequence NAK, the responder's IDs dating it after", ht.Capture(), func(tr *ht.Trace) {
			behindNAK(tr)
			tr.IPIDs(100, 200)
		}, reports.Fail},
		{"ACK behind a sequence NAK, no ID: it may have been sent first", ht.Capture(), behindNAK, reports.Indeterminate},
		{"ACK inside the range of a READ resent from before the capture's first request", ht.CaptureMTU(256), func(tr *ht.Trace) {
			tr.Read(294, 0)
			tr.Read(291, 768) // PSNs 291..293 at a 256-byte path MTU
			tr.Ack(292, 1)
		}, reports.Fail},
		{"ACK whose MSN counts the READ after it, a response past the READ next with no answer between, the responder's IDs unbroken since the ACK", ht.Capture(), readCounted(true, false, false, false, 0), reports.Fail},
		{"ACK whose MSN counts the READ after it, a response past the READ next, the responder's IDs broken between: its answer may have been lost", ht.Capture(), readCounted(true, true, false, false, 0), reports.Indeterminate},
		{"ACK whose MSN counts the READ after it, the READ's answer next", ht.Capture(), readCounted(true, false, true, false, 0), reports.Pass},
		{"ACK whose MSN counts the READ after it, the READ's answer next, the READ captured as soon before it as the responder answers an ATOMIC", ht.Capture(), readCounted(true, false, true, true, 0), reports.Pass},
		{"ACK whose MSN counts the READ after it, the READ's answer next, the READ captured a millisecond before it, the responder answering an ATOMIC in 3µs: legal only if that READ was lost", ht.Capture(), readCounted(true, false, true, true, time.Millisecond), reports.Indeterminate},
		{"ACK whose MSN counts the READ after it, the responder's IDs unbroken since the READ: its answer went out before this ACK or never", ht.Capture(), readCounted(false, false, false, false, 0), reports.Fail},
		{"ACK inside a READ's range, the READ before it resent from behind it once the path MTU showed", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Read(14, 3072) // the READ at 11 lost before the capture point
			tr.NAK(11, wire.NAKPSNSequence, 1)
			tr.Read(11, 3072)
			tr.ReadStream(11, 3072, 1024, 2) // the path MTU: 1024, the READ at 14 spans 14..16
			tr.Read(14, 3072)
			tr.Ack(15, 2)
			tr.ReadStream(14, 3072, 1024, 3)
		}, reports.Fail},
		{"ACK inside a READ's range, a READ behind it resent asking as many bytes", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Read(14, 3072) // the READ at 11 lost before the capture point
			tr.Ack(15, 1)
			tr.Req(wire.SendOnly, 17, true)
			tr.NAK(11, wire.NAKPSNSequence, 1)
			tr.Read(11, 3072) // not a retry of the READ at 14: it asks for as much
			tr.Read(14, 3072)
			tr.Req(wire.SendOnly, 17, true)
			tr.ReadStream(11, 3072, 1024, 2)
			tr.ReadStream(14, 3072, 1024, 3)
			tr.Ack(17, 4)
		}, reports.Fail},
		{"ACK going back to a duplicate's PSN with the count of a later ACK, messages ending between: dated after it by its count", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Req(wire.SendOnly, 10, true) // a duplicate
			tr.Req(wire.SendOnly, 11, true)
			tr.Req(wire.SendOnly, 12, true)
			tr.Ack(12, 3)
			tr.Ack(10, 3)
		}, reports.Fail},
		{"ACK going back to a duplicate's PSN with its own count: may have been sent first, left to C9-105", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Req(wire.SendOnly, 10, true)
			tr.Req(wire.SendOnly, 11, true)
			tr.Req(wire.SendOnly, 12, true)
			tr.Ack(12, 3)
			tr.Ack(10, 1)
		}, reports.Pass},
		{"ACK at the first PSN of a READ whose answer took three PSNs, after that answer", ht.Capture(), func(tr *ht.Trace) {
			tr.Read(17, 768)
			tr.Req(wire.SendOnly, 20, true)
			tr.ReadStream(17, 768, 256, 6)
			tr.Ack(17, 6)
			tr.Ack(20, 7)
		}, reports.Fail},
		{"ACK at the PSN of a READ whose answer took one, after that answer", ht.Capture(), func(tr *ht.Trace) {
			tr.Read(17, 256)
			tr.Req(wire.SendOnly, 18, true)
			tr.ReadStream(17, 256, 256, 6)
			tr.Ack(17, 6)
			tr.Ack(18, 7)
		}, reports.Pass},
		{"ACK for a PSN before the capture's first request that no READ covers: may name a request sent before it began", ht.CaptureMTU(256), func(tr *ht.Trace) {
			tr.Read(294, 0)
			tr.Read(291, 768)
			tr.Ack(290, 1)
		}, reports.Indeterminate},
		{"ACK for a PSN never sent, ordinary capture: could be capture loss", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(11, 1)
			tr.Req(wire.SendOnly, 12, true)
		}, reports.Indeterminate},
		{"ACK covering requests the capture shows 50 µs later: open, so no pass", ht.Capture(), func(tr *ht.Trace) {
			// Legal only if the capture dropped the requests or began
			// during their resend (the capture shows no reordering that
			// long): nothing it shows.
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(12, 3)
			tr.Wait(50 * time.Microsecond)
			tr.Req(wire.SendOnly, 11, false)
			tr.Req(wire.SendOnly, 12, true)
		}, reports.Indeterminate},
		{"ACK covering requests the capture shows 500 µs later, its timestamps of a millisecond: capture reordering", millis, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(12, 3)
			tr.Wait(500 * time.Microsecond)
			tr.Req(wire.SendOnly, 11, false)
			tr.Req(wire.SendOnly, 12, true)
		}, reports.Pass},
		{"ACK covering requests the capture shows within its timestamps' precision: capture reordering", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(11, 2)
			tr.Req(wire.SendOnly, 11, true)
		}, reports.Pass},
		{"ACK covering requests the capture shows 50 µs later, within reordering it shows elsewhere", ht.Capture(), func(tr *ht.Trace) {
			// The requester's IDs show a packet recorded 60 µs after
			// one it sent later: the capture reorders that far.
			for p := range wire.PSN(9) {
				tr.Req(wire.SendOnly, p, false)
			}
			tr.Wait(60 * time.Microsecond)
			tr.Req(wire.SendOnly, 9, false)
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 11)
			tr.Ack(12, 13)
			tr.Wait(50 * time.Microsecond)
			tr.Req(wire.SendOnly, 11, false)
			tr.Req(wire.SendOnly, 12, true)
			tr.IPIDs(100, 500)
			tr.Records[8].IPID, tr.Records[9].IPID = tr.Records[9].IPID, tr.Records[8].IPID
		}, reports.Pass},
		{"ACK ahead of every request, a request behind it at once, then nothing reaching it: open, so no pass", ht.Capture(), func(tr *ht.Trace) {
			// The request that follows within the capture's precision
			// does not carry the ACK's PSN: no reordering explains the
			// ACK, only requests the capture missed.
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(14, 5)
			tr.Req(wire.SendOnly, 11, true)
			tr.Wait(50 * time.Microsecond)
			tr.Req(wire.SendOnly, 12, true)
		}, reports.Indeterminate},
		{"ACK ahead of every request, a READ recorded at once that reaches its PSN only at the smallest path MTU, its answer then showing a larger one: open", ht.Capture(), func(tr *ht.Trace) {
			// 3072 bytes take 12 PSNs at MTU 256 (11..22), 3 at 1024.
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(20, 2)
			tr.Read(11, 3072)
			tr.ReadStream(11, 3072, 1024, 2)
		}, reports.Indeterminate},
		{"the same, its answer showing MTU 256: the READ reaches the ACK's PSN, and capture reordering explains it", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(22, 2)
			tr.Read(11, 3072)
			tr.ReadStream(11, 3072, 256, 2)
		}, reports.Pass},
		{"ACK ahead of every request as a capture begun mid-connection ends: requests reordered past the end explain it", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 57) // MSN 57: not a new QP's first message
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(12, 59) // counts the message at 12 the capture did not show
		}, reports.Pass},
		{"the same, the ACK's MSN counting no message past the requests shown: only requests nothing shows explain it, open", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 57)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(12, 58) // the count once 11 completed, not 12
		}, reports.Indeterminate},
		{"the same, the capture showing a request after the ACK: open", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 57)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(14, 61)
			tr.Req(wire.SendOnly, 12, true)
		}, reports.Indeterminate},
		{"ACK whose MSN counts the message a later request ends: the responder completed it, so its PSN is behind (or its MSN wrong)", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Req(wire.SendFirst, 11, false)
			tr.Req(wire.SendLast, 12, true)
			tr.Ack(11, 2)
		}, reports.Fail},
		{"the same, the later request a READ: counted when validated, perhaps before it completes", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Req(wire.SendOnly, 11, true)
			tr.Read(12, 8)
			tr.Ack(11, 3)
		}, reports.Pass},
		{"the same, the later PSN not in the capture: it may be a READ", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(11, 3)
			tr.Req(wire.SendOnly, 13, true)
			tr.Ack(13, 4)
		}, reports.Pass},
		{"ACK PSN going backwards within a message, the responder's IDs counting (as its later packets show)", ht.Capture(), func(tr *ht.Trace) {
			behind(tr)
			for p := range wire.PSN(9) {
				tr.Req(wire.SendOnly, 12+p, true)
				tr.Ack(12+p, 3+uint32(p))
			}
			tr.IPIDs(100, 500)
		}, reports.Fail},
		{"ACK PSN going backwards within a message, the responder's IDs shown to count before it", ht.Capture(), func(tr *ht.Trace) {
			for p := range wire.PSN(10) {
				tr.Req(wire.SendOnly, p, true)
				tr.Ack(p, uint32(p)+1)
			}
			tr.Req(wire.SendFirst, 10, true)
			tr.Req(wire.SendMiddle, 11, true)
			tr.Ack(11, 10)
			tr.Ack(10, 10)
			tr.IPIDs(100, 500)
		}, reports.Fail},
		{"ACK PSN going backwards within a message, the same MSN, few packets, the responder host's one ID counter shown to count up on another connection", ht.Capture(), func(tr *ht.Trace) {
			for p := range wire.PSN(9) {
				tr.Req(wire.SendOnly, 500+p, true)
				tr.Ack(500+p, 1+uint32(p))
			}
			for _, r := range tr.Records { // another QP pair between the two hosts
				r.Packet.DestQP += 0x100
			}
			behind(tr)
			tr.IPIDs(100, 500)
		}, reports.Fail},
		{"ACK PSN going backwards within a message, the same MSN, the responder's IDs changing but too few to show it counts: open", ht.Capture(), func(tr *ht.Trace) {
			behind(tr)
			tr.IPIDs(100, 500)
		}, reports.Indeterminate},
		{"ACK PSN going backwards within a message, the same MSN, no IDs: it may have been sent first and delayed, open", ht.Capture(), func(tr *ht.Trace) {
			behind(tr)
		}, reports.Indeterminate},
		{"ACK PSN going backwards, the same MSN, no IDs, a message ending between them: its count is too high for its PSN", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(11, 2)
			tr.Ack(10, 2)
		}, reports.Fail},
		{"ACK going back to a PSN before the first request the capture shows", ht.Capture(), func(tr *ht.Trace) {
			// The SEND at 12 ends a message: an ACK naming 10 carries
			// a count below 5, so this one was sent after the first.
			tr.Req(wire.SendOnly, 12, true)
			tr.Ack(12, 5)
			tr.Ack(10, 5)
		}, reports.Fail},
		{"ACK PSN going backwards, no IDs, its MSN above the earlier ACK's: sent after it", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(11, 2)
			tr.Req(wire.SendOnly, 12, false)
			tr.Ack(10, 3)
		}, reports.Fail},
		{"ACK PSN going backwards, no IDs, the latest ACK's MSN but above an older ACK's past it", ht.Capture(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(11, 2)
			tr.Req(wire.SendFirst, 12, true)
			tr.Ack(12, 2) // mid-message: the count stays
			tr.Req(wire.SendLast, 13, true)
			tr.Ack(13, 3)
			tr.Ack(10, 3) // behind 13 at its MSN (maybe late), behind 11 and 12 above theirs
		}, reports.Fail},
		{"ACK inside an outstanding READ's range", harness.Settings{MTU: 256, AckTimeout: -1, RetryCnt: -1, RNRRetry: -1}, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, false)
			tr.Read(11, 1024) // PSNs 11..14
			tr.Ack(12, 1)
		}, reports.Fail},
		{"ACKs across the 2^24 wrap", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 0xFFFFFF, true)
			tr.Ack(0xFFFFFF, 1)
			tr.Req(wire.SendOnly, 0, true)
			tr.Ack(0, 2)
		}, reports.Pass},
		{"ACK before any request: capture began mid-connection", ht.Capture(), func(tr *ht.Trace) {
			tr.Ack(5, 1)
		}, reports.Indeterminate},
		{"a duplicate on a fresh QP answered with the PSN before the first expected one: it covers nothing", fresh, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(99, 0)
		}, reports.NotExercised},
		{"complete capture: a first ACK just past the only request, as a fresh QP answers a duplicate", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(99, 0)
		}, reports.Indeterminate},
		{"complete capture: a first ACK just past the only request, counting a message a fresh QP taking duplicates never completed", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(99, 1)
		}, reports.Fail},
		{"complete capture: a first ACK just past every request, after an ATOMIC's answer counted it", ht.Complete(), func(tr *ht.Trace) {
			tr.Atomic(wire.FetchAdd, 97)
			tr.Req(wire.SendOnly, 98, true)
			tr.AtomicAck(97, 1, 5)
			tr.Ack(99, 1)
		}, reports.Fail},
		{"capture from the QP's start: a first ACK just past every request, counting a message, where the capture may have dropped the request it names", fromStart, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(99, 1)
		}, reports.Indeterminate},
		{"complete capture: a second ACK past every request", ht.Complete(), func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(99, 0)
			tr.Req(wire.SendOnly, 99, true)
			tr.Ack(101, 0)
		}, reports.Fail},
		{"a duplicate on a fresh QP answered with the first expected PSN, never sent", fresh, func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 98, true)
			tr.Ack(100, 0)
		}, reports.Fail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &ht.Trace{}
			c.build(tr)
			tally, fs := ht.Audit(tr, ID, c.settings)
			if got := tally.Verdict(); got != c.want {
				t.Fatalf("verdict %s, want %s (tally %+v, findings %+v)", got, c.want, tally, fs)
			}
			if c.want == reports.Fail && (len(fs) == 0 || len(fs[0].Ladder) == 0 || fs[0].Frame == 0) {
				t.Fatalf("a violation without a finding, ladder or frame: %+v", fs)
			}
		})
	}
}

// TestInsideAREADOnACapture: on a capture whose path MTU is not known,
// an ACK inside the PSNs a READ reserves even at the largest MTU fails at
// once; one that may lie past the READ's end is held until the READ's
// answer shows its last PSN (inside: a violation; past it: no request the
// capture shows, undecided); one inside the range of a READ whose last
// PSN the path MTU, shown since, fixes fails; and one inside the range
// of a READ answered before it fails too.
func TestInsideAREADOnACapture(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(tr *ht.Trace)
		want  reports.Verdict
	}{
		{"inside at any MTU", func(tr *ht.Trace) {
			tr.Read(10, 3*4096)
			tr.Ack(11, 1)
		}, reports.Fail},
		{"held, the answer ends after it", func(tr *ht.Trace) {
			tr.Read(10, 2048)
			tr.Ack(12, 1)
			tr.ReadStream(10, 2048, 512, 1) // four packets: 10..13
		}, reports.Fail},
		{"held, the answer ends before it", func(tr *ht.Trace) {
			tr.Read(10, 2048)
			tr.Ack(12, 1)
			tr.ReadStream(10, 2048, 1024, 1) // two packets: 10..11
		}, reports.Indeterminate},
		{"held, the answer never seen", func(tr *ht.Trace) {
			tr.Read(10, 2048)
			tr.Ack(12, 1)
		}, reports.Indeterminate},
		{"the MTU shown after the READ, before the ACK", func(tr *ht.Trace) {
			tr.Read(10, 3072) // 10..12 at MTU 1024, 10 alone at 4096
			f := tr.Req(wire.SendFirst, 13, false)
			f.Packet.Payload, f.PayloadLen = make([]byte, 1024), 1024 // a full First: MTU 1024
			tr.Req(wire.SendLast, 14, true)
			tr.Ack(11, 1)
		}, reports.Fail},
		{"inside a READ answered before", func(tr *ht.Trace) {
			tr.Read(10, 2048)
			tr.ReadStream(10, 2048, 512, 1)
			tr.Ack(11, 1)
		}, reports.Fail},
	} {
		var tr ht.Trace
		tc.build(&tr)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict(); got != tc.want {
			t.Errorf("%s: %s (%+v, %v), want %s", tc.name, got, tallies[ID], findings, tc.want)
		}
	}
}

// TestAnswerBehindAnAckAhead: an ACK names a PSN past every request, and
// an ACK sent after it (a higher MSN) goes back behind it to answer a
// request the capture shows since. Either the first named requests the
// responder had not completed (C9-95), or the request was a duplicate,
// answered behind the newest completed PSN (C9-105): one finding names
// both. So it does where the latest ACK had moved back already (undated:
// the same MSN), the later one behind the ACK ahead only.
func TestAnswerBehindAnAckAhead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(tr *ht.Trace)
	}{
		{"behind the latest ACK", func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(14, 2) // past every request
			tr.Req(wire.SendOnly, 11, true)
			tr.Ack(11, 3)
		}},
		{"behind the ACK ahead only", func(tr *ht.Trace) {
			tr.Req(wire.SendOnly, 10, true)
			tr.Ack(10, 1)
			tr.Ack(14, 2) // past every request
			tr.Req(wire.SendFirst, 11, true)
			tr.Req(wire.SendLast, 12, true)
			tr.Ack(11, 2) // the same MSN: maybe sent first, open
			tr.Ack(12, 3)
		}},
	} {
		var tr ht.Trace
		tc.build(&tr)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		for _, id := range []string{ID, "C9-105"} {
			if got := tallies[id].Verdict(); got != reports.Fail {
				t.Errorf("%s: %s %s (%+v), want fail", tc.name, id, got, findings)
			}
		}
		if len(findings) == 0 || len(findings[0].Alternatives) != 2 {
			t.Errorf("%s: want one finding naming C9-95 and C9-105, got %+v", tc.name, findings)
		}
	}
}

// TestSameCountBehind: three SENDs resent (their first answers lost
// before the capture), an ACK naming the PSN before them, then one naming
// the last of them with the same MSN: the first ACK's count already held
// the three messages, so it names a PSN behind what had completed (or a
// count is wrong): one finding on it names C9-95, C9-105 (the SENDs were
// sent again) and C9-148. With a count three lower it is an older ACK.
func TestSameCountBehind(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{5, true}, {2, false}} {
		var tr ht.Trace
		for range 2 {
			tr.Req(wire.SendOnly, 11, true)
			tr.Req(wire.SendOnly, 12, true)
			tr.Req(wire.SendOnly, 13, true)
		}
		behind := tr.Ack(10, tc.msn)
		tr.Ack(13, 5)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		for _, id := range []string{ID, "C9-105", "C9-148"} {
			if got := tallies[id].Verdict() == reports.Fail; got != tc.fail {
				t.Errorf("MSN %d: %s %s (%+v), want fail %v", tc.msn, id, tallies[id].Verdict(), findings, tc.fail)
			}
		}
		if tc.fail && (len(findings) == 0 || findings[0].Frame != behind.Frame) {
			t.Errorf("MSN %d: the finding is not the first ACK's: %+v", tc.msn, findings)
		}
	}
}

// TestCountClash: a SEND and an ATOMIC, both sent twice (their first
// answers lost before a capture at the requester), then an ACK naming the
// PSN before them and an ATOMIC acknowledgment whose count rose by less
// than the two messages between: the ACK's count already held the SEND,
// so it names a PSN behind it (or a count is wrong): one finding on the
// ACK names C9-95, C9-105 (the SEND was sent again) and C9-148 (listed
// under each). The other order too: the ATOMIC acknowledged first, then
// an ACK behind its PSN counting past it, before the first request the
// capture shows. With counts that leave room for the messages between,
// nothing fails.
func TestCountClash(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ackMSN, atMSN uint32
		ackFirst      bool
		fail          bool
	}{
		{"ACK then a count too low", 7, 8, true, true},
		{"ACK then the count of both", 7, 9, true, false},
		{"ATOMIC acknowledged, then an ACK behind counting past it", 9, 8, false, true},
		{"ATOMIC acknowledged, then an older ACK", 6, 8, false, false},
	} {
		var tr ht.Trace
		for range 2 {
			tr.Req(wire.SendOnly, 11, true)
			tr.Atomic(wire.FetchAdd, 12)
		}
		var ack *trace.Record
		if tc.ackFirst {
			ack = tr.Ack(10, tc.ackMSN)
			tr.AtomicAck(12, tc.atMSN, 1)
		} else {
			tr.AtomicAck(12, tc.atMSN, 1)
			ack = tr.Ack(10, tc.ackMSN)
		}
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		ids := []string{ID, "C9-148"}
		if tc.ackFirst {
			ids = append(ids, "C9-105")
		}
		for _, id := range ids {
			if got := tallies[id].Verdict() == reports.Fail; got != tc.fail {
				t.Errorf("%s: %s %s (%+v), want fail %v", tc.name, id, tallies[id].Verdict(), findings, tc.fail)
			}
		}
		for _, f := range findings {
			if f.Frame != ack.Frame || len(f.Alternatives) != 3 {
				t.Errorf("%s: want the one finding on the ACK, naming three clauses: %+v", tc.name, f)
			}
		}
	}
}

// TestCountClashWithARead: a SEND sent twice, an ACK naming the PSN
// before it, then a READ (not right after the ACK's PSN) answered with a
// count one above the ACK's: the READ's answer counts the SEND and the
// READ, so the ACK's count already held the SEND (or a count is wrong).
// With the count of both, nothing fails; a READ right after the ACK's PSN
// may have been counted as the responder validated it, before the ACK.
func TestCountClashWithARead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ackPSN    wire.PSN
		answerMSN uint32
		fail      bool
	}{
		{"the READ two past: too low", 10, 6, true},
		{"the READ two past: both counted", 10, 7, false},
		{"the READ right after: it may be counted at the ACK", 11, 6, false},
	} {
		var tr ht.Trace
		for range 2 {
			tr.Req(wire.SendOnly, 11, true)
		}
		tr.Ack(tc.ackPSN, 5)
		tr.Read(12, 0)
		tr.ReadResp(wire.ReadResponseOnly, 12, tc.answerMSN, 0)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if got := tallies[ID].Verdict() == reports.Fail; got != tc.fail {
			t.Errorf("%s: %s %s (%+v), want fail %v", tc.name, ID, tallies[ID].Verdict(), findings, tc.fail)
		}
	}
}

// TestCountPastOwnPSN: an ACK whose MSN has risen from an earlier ACK's
// by more than the SENDs between can end, one more for a READ that may
// follow it: it counts messages past its own PSN (the capture may not
// show them), so it names a PSN behind them, or a count is wrong: one
// finding names C9-95 and C9-148. Up to that one more, nothing fails.
func TestCountPastOwnPSN(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{10, true}, {9, false}, {8, false}} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, 5)
		tr.Req(wire.SendOnly, 11, false)
		tr.Req(wire.SendOnly, 12, false)
		tr.Req(wire.SendOnly, 13, true)
		ack := tr.Ack(13, tc.msn)
		wantACKFound(t, tc.msn, tc.fail, &tr, ack, ht.Capture())
	}
}

// wantACKFound audits tr and wants C9-95 and C9-148 to fail (fail) or
// not, every finding being the one on ack, naming the two clauses.
func wantACKFound(t *testing.T, msn uint32, fail bool, tr *ht.Trace, ack *trace.Record, s harness.Settings) {
	t.Helper()
	tallies, findings := ht.AuditAll(tr, s)
	for _, id := range []string{ID, "C9-148"} {
		if got := tallies[id].Verdict() == reports.Fail; got != fail {
			t.Errorf("MSN %d: %s %s (%+v), want fail %v", msn, id, tallies[id].Verdict(), findings, fail)
		}
	}
	for _, f := range findings {
		if f.Frame != ack.Frame || len(f.Alternatives) != 2 {
			t.Errorf("MSN %d: want the one finding on the ACK, naming two clauses: %+v", msn, f)
		}
	}
}

// TestBehindWithALaterCountComplete: on a complete trace, an ACK naming
// a PSN behind requests the trace shows before it may have been sent
// before they reached the responder, and an MSN above the count its PSN
// allows may be the count of a later moment, but not both: an ACK of PSN
// 11 whose MSN counts the SENDs at 12 and 13 as well breaks C9-95 or
// C9-148, and one finding names both (not C9-105: the complete trace shows
// the resend of PSN 11, after an RNR NAK, was new). With the count of its
// own PSN it passes.
func TestBehindWithALaterCountComplete(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{4, true}, {2, false}} {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, 1)
		tr.Req(wire.SendOnly, 11, true)
		tr.RNR(11, 1, 1)
		tr.Wait(time.Millisecond)
		for psn := wire.PSN(11); psn <= 13; psn++ {
			tr.Req(wire.SendOnly, psn, true)
		}
		ack := tr.Ack(11, tc.msn)
		wantACKFound(t, tc.msn, tc.fail, &tr, ack, ht.Complete())
	}
}

// TestAheadPastAREADResent: an ACK names a PSN past every request; a
// READ resent next, within the reordering the capture shows, has a known
// range ending short of it, so it does not explain the ACK: open, not
// "capture reordering explains it". So does a READ asked again from inside
// its range (a partial retry, which opens no range of its own): with the
// path MTU known, what its length needs ends short of the ACK's PSN too.
func TestAheadPastAREADResent(t *testing.T) {
	for _, partial := range []bool{false, true} {
		var tr ht.Trace
		tr.Read(10, 3*1024)
		tr.ReadStream(10, 3*1024, 1024, 1)
		tr.Req(wire.SendOnly, 13, true)
		tr.Ack(13, 2)
		tr.Ack(20, 3) // past every request
		if partial {
			retry := tr.Read(11, 2*1024)
			retry.Packet.RETH.VA += 1024
		} else {
			tr.Read(10, 3*1024)
		}
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		if tl := tallies[ID]; tl == nil || tl.Open == 0 {
			t.Errorf("partial retry %v: the ACK ahead is not left open: %+v, %+v", partial, tl, findings)
		}
	}
}

// TestAheadOnceTheREADEnds: an ACK whose PSN may lie inside a READ's
// range while the path MTU is unknown; the READ's answer then shows its
// range ends before it, and no request ever reaches it: an ACK ahead of
// every request, open (a violation unless requests escaped the capture),
// not merely unchecked.
func TestAheadOnceTheREADEnds(t *testing.T) {
	var tr ht.Trace
	tr.Read(10, 3*1024)
	tr.Ack(20, 1)
	tr.ReadStream(10, 3*1024, 1024, 1) // 10..12
	tr.Req(wire.SendOnly, 13, true)
	tallies, findings := ht.AuditAll(&tr, ht.Capture())
	if tl := tallies[ID]; tl == nil || tl.Open == 0 {
		t.Errorf("the ACK ahead is not left open: %+v, %+v", tl, findings)
	}
}

// An ACK whose MSN goes back, left open as maybe late (no IPv4 ID dates
// it), still counts the messages up to its PSN whenever it was sent: the
// next ACK, one PSN on, counting three messages past it where one ended
// (its other counts start below READs, which may be counted early),
// names a PSN behind messages it counted, or a count is wrong: one
// finding naming C9-95 and C9-148 (recall test, seed 17, "C9-148 MSN
// goes back": missed).
func TestCountPastALateACK(t *testing.T) {
	tr := &ht.Trace{}
	tr.Req(wire.SendOnly, 10, true)
	tr.Ack(10, 5)
	tr.Read(11, 8)
	tr.Read(12, 8)
	tr.ReadResp(wire.ReadResponseOnly, 11, 6, 8)
	tr.ReadResp(wire.ReadResponseOnly, 12, 7, 8)
	tr.Ack(12, 5) // went back: late, or the fault
	tr.Req(wire.SendOnly, 13, true)
	tr.Ack(13, 8)
	for _, r := range tr.Records {
		r.HasIPID = false
	}
	tally, fs := ht.Audit(tr, ID, ht.Capture())
	if tally.Verdict() != reports.Fail || len(fs) != 1 || fs[0].Frame != 9 ||
		!strings.Contains(fs[0].Message, "from the response with PSN 12 (MSN 5)") {
		t.Fatalf("want the last ACK failed, counting from the late one: tally %+v, findings %+v", tally, fs)
	}
	named := false
	for _, a := range fs[0].Alternatives {
		named = named || a.ID == "C9-148"
	}
	if !named {
		t.Fatalf("want C9-148 among the alternatives: %+v", fs[0].Alternatives)
	}
}

// TestDuplicateAnsweredBehindAnAckAheadDatedLater: a SEND resent as a
// duplicate, an ACK naming a PSN past every request, then an ACK of the
// same count answering the duplicate. When it comes, too few of the
// responder's packets have shown that its IDs count up; the later ones
// show it, and the answer's ID dates it after the ACK ahead: either that
// ACK named requests the responder had not completed (C9-95) or the
// duplicate was answered behind the newest completed PSN (C9-105). Where
// the IDs do not count, nothing dates the two and the answer stays with
// C9-105, which does not fail it.
func TestDuplicateAnsweredBehindAnAckAheadDatedLater(t *testing.T) {
	build := func(counting bool) *ht.Trace {
		var tr ht.Trace
		tr.Req(wire.SendOnly, 10, true)
		tr.Ack(10, 1)
		tr.Req(wire.SendOnly, 10, true) // a duplicate
		tr.Ack(30, 1)                   // past every request
		tr.Ack(10, 1)                   // the duplicate's answer
		for i := range 3 {
			psn := wire.PSN(11 + 2*i)
			tr.Read(psn, 8)
			tr.ReadResp(wire.ReadResponseOnly, psn, uint32(2+2*i), 8)
			tr.Atomic(wire.FetchAdd, psn.Next())
			tr.AtomicAck(psn.Next(), uint32(3+2*i), 0)
		}
		if counting {
			tr.IPIDs(100, 500)
		} else {
			tr.IPIDs(100, 500)
			for _, r := range tr.Records {
				if r.Dir == trace.ToRequester {
					r.IPID = 7
				}
			}
		}
		return &tr
	}
	tallies, findings := ht.AuditAll(build(true), ht.Capture())
	for _, id := range []string{ID, "C9-105"} {
		if got := tallies[id].Verdict(); got != reports.Fail {
			t.Errorf("IDs counting: %s %s (%+v), want fail", id, got, findings)
		}
	}
	if len(findings) == 0 || len(findings[0].Alternatives) != 2 || findings[0].Frame != 5 {
		t.Errorf("IDs counting: want a finding at frame 5 naming C9-95 and C9-105, got %+v", findings)
	}
	tallies, findings = ht.AuditAll(build(false), ht.Capture())
	if got := tallies["C9-105"].Verdict(); got == reports.Fail {
		t.Errorf("IDs fixed: C9-105 %s (%+v), want no failure", got, findings)
	}
}

// TestCountClashOfALateACK: a READ and a SEND, both resent, and a SEND
// after them; the READ's answer counts the first SEND (a duplicate READ
// answered with the count of now); then an ACK naming the PSN before the
// READ with that same count, which, no IPv4 Identification dating it,
// may be an older ACK delayed; then an ACK of the last SEND whose count
// rose by one only. An ACK carries its PSN's count whenever it is sent,
// so the two clash in any order: the first one's count held the SEND
// after the READ, so it names a PSN behind it (or a count is wrong): one
// finding on it names C9-95, C9-105 and C9-148. With a count two lower
// it is an older ACK.
func TestCountClashOfALateACK(t *testing.T) {
	for _, tc := range []struct {
		msn  uint32
		fail bool
	}{{6, true}, {4, false}} {
		var tr ht.Trace
		for range 2 {
			tr.Read(11, 8)
			tr.Req(wire.SendOnly, 12, true)
		}
		tr.Req(wire.SendOnly, 13, true)
		tr.ReadResp(wire.ReadResponseOnly, 11, 6, 8)
		behind := tr.Ack(10, tc.msn)
		tr.Ack(13, 7)
		tallies, findings := ht.AuditAll(&tr, ht.Capture())
		for _, id := range []string{ID, "C9-105", "C9-148"} {
			if got := tallies[id].Verdict() == reports.Fail; got != tc.fail {
				t.Errorf("MSN %d: %s %s (%+v), want fail %v", tc.msn, id, tallies[id].Verdict(), findings, tc.fail)
			}
		}
		for _, f := range findings {
			if f.Frame != behind.Frame || len(f.Alternatives) != 3 {
				t.Errorf("MSN %d: want the one finding on the first ACK, naming three clauses: %+v", tc.msn, f)
			}
		}
	}
}

// TestACKAtAnAnsweredAtomicsPSN: an ATOMIC is answered with an ATOMIC
// Acknowledge, so a plain ACK naming its PSN afterwards answers only a
// duplicate SEND or WRITE at or before it. With none in the trace, it
// fails where the requester's IPv4 IDs ran on unbroken from the ATOMIC
// (nothing the capture missed could have prompted it), and is open where
// they skip a packet; a WRITE sent again before it makes it that
// duplicate's answer.
func TestACKAtAnAnsweredAtomicsPSN(t *testing.T) {
	for _, tc := range []struct {
		name string
		skip bool // the requester's IDs skip one after the ATOMIC
		dup  bool // a WRITE before the ATOMIC sent again
		want reports.Verdict
	}{
		{"nothing missed", false, false, reports.Fail},
		{"a packet missed", true, false, reports.Indeterminate},
		{"a duplicate to answer", false, true, reports.Pass},
	} {
		var tr ht.Trace
		for i := range wire.PSN(9) { // the requester counts its IDs up
			tr.Req(wire.WriteOnly, 10+i, true)
			tr.Ack(10+i, uint32(1+i))
		}
		tr.Atomic(wire.CompareSwap, 19)
		tr.AtomicAck(19, 10, 7)
		tr.Req(wire.SendFirst, 20, false)
		if tc.dup {
			tr.Req(wire.WriteOnly, 18, true)
		}
		tr.Ack(19, 10)
		tr.IPIDs(100, 500)
		if tc.skip {
			for _, r := range tr.Records[20:] {
				if r.Dir == trace.ToResponder {
					r.IPID++
				}
			}
		}
		tl, findings := ht.Audit(&tr, ID, ht.Capture())
		if got := tl.Verdict(); got != tc.want {
			t.Errorf("%s: %s (%+v, %v), want %s", tc.name, got, tl, findings, tc.want)
		}
	}
}

// behindNAK builds acknowledged SENDs, then two more and a third past a
// lost one, the sequence NAK naming the lost one, and an ACK naming the
// PSN two before it, with the count of that PSN.
func behindNAK(tr *ht.Trace) {
	for psn := wire.PSN(1); psn < 8; psn++ {
		tr.Req(wire.SendOnly, psn, true)
		tr.Ack(psn, uint32(psn))
	}
	tr.Req(wire.SendOnly, 8, false)
	tr.Req(wire.SendOnly, 9, false)
	tr.Req(wire.SendOnly, 11, true)
	tr.NAK(10, wire.NAKPSNSequence, 9)
	tr.Ack(8, 8)
}
