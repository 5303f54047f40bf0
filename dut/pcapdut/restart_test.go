package pcapdut_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// undecidedBy reports whether clause's tally in s counts an undecided
// instance whose reason contains what.
func undecidedBy(s *harness.Sink, clause, what string) bool {
	t := s.Tallies[clause]
	if t == nil {
		return false
	}
	for _, k := range t.Kinds {
		if strings.Contains(k.Reason, what) {
			return true
		}
	}
	return false
}

// TestQPsMadeAnewNearby: two runs of the same traffic in one capture, the
// second on QPs made anew with the same numbers starting at, or near, the
// first run's PSNs (a device that starts every QP at the same PSN, or a
// random start that falls close): closer than the pairing splits
// connections at, so the second run's requests look like resends of the
// first's. Before, every one of these captures failed on conformant
// traffic (C9-105 with 74-128 violations, C9-95, C9-148, o9-66 with 900,
// go-back-n with up to 469). The responder's MSN going back tells QPs
// made anew from resends, so the second run's findings are left
// undecided, with that reason, and nothing fails; nothing passes either
// that does not pass where the runs are split (once the MSN shows QPs made
// anew, the old model counts no check: it took the second run for
// resends, and passed C9-106 and C9-115 on duplicates there are not); a
// single and a sharded auditor agree. A deviation in the second run leaves
// its clause undecided, never passed.
func TestQPsMadeAnewNearby(t *testing.T) {
	for _, src := range sources(t, "rxe/send-4k-mtu1024.pcap", "rxe/read-8k-mtu1024.pcap", "rxe/write-8k-mtu1024.pcap", "rxe/atomic-cas.pcap") {
		t.Run(src.name, func(t *testing.T) {
			frames := src.frames
			_, once := auditFrames(t, frames, nil, 0)
			if f := failing(once); len(f) != 0 {
				t.Fatalf("the single run fails %v", f)
			}
			_, split := auditFrames(t, rerun(frames, 0x345678), nil, 0)
			for _, shift := range []uint32{0, 100, 0xffffff - 99, 5000} { // same, behind the old next PSN, before the lowest, ahead
				both := rerun(frames, shift)
				info, sink := auditFrames(t, both, nil, 0)
				if f := failing(sink); len(f) != 0 {
					t.Errorf("shift %d: %v fail", shift, f)
				}
				// Nothing passes on checks a model made of the second run
				// that took it for resends (the duplicate clauses, say):
				// what passes passes where the pairing splits the runs.
				for id, tl := range sink.Tallies {
					if w := split.Tallies[id]; tl.Verdict() == reports.Pass && (w == nil || w.Verdict() != reports.Pass) {
						t.Errorf("shift %d: %s passes (%d checked), not where the runs are split", shift, id, tl.Checked)
					}
				}
				if len(info.Connections) != 1 {
					t.Errorf("shift %d: %d connections", shift, len(info.Connections))
				}
				sinfo, ssink := auditFrames(t, both, nil, 3)
				if d := harness.DiffSinks(sink, ssink); d != "" || !reflect.DeepEqual(info, sinfo) {
					t.Errorf("shift %d: a sharded auditor differs: %s", shift, d)
				}
			}
		})
	}
	for _, src := range sources(t, "rxe/send-4k-mtu1024.pcap") {
		t.Run(src.name+", undecided and deviant", func(t *testing.T) { madeAnewNearbyUndecided(t, src.frames) })
	}
}

// madeAnewNearbyUndecided: in two runs of the SEND capture frames at the
// same PSNs, the undecided instances say why, and an ACK of the second
// run whose MSN went back leaves C9-148 not passed.
func madeAnewNearbyUndecided(t *testing.T, frames []capture.Frame) {
	_, sink := auditFrames(t, rerun(frames, 0), nil, 0)
	if !undecidedBy(sink, "C9-105", "QPs destroyed and made anew") {
		t.Errorf("C9-105 %+v: no instance left undecided for QPs made anew", sink.Tallies["C9-105"])
	}
	// A deviation in the second run: an ACK whose MSN went back by 5.
	both := rerun(frames, 0)
	acks := 0
	for i := len(both) / 2; i < len(both); i++ {
		if d := both[i].Data; rocev2(d) && d[42] == byte(wire.Acknowledge) {
			if acks++; acks == 50 {
				msn := binary.BigEndian.Uint32(d[42+12:]) & 0xffffff
				binary.BigEndian.PutUint32(d[42+12:], uint32(d[42+12])<<24|(msn-5))
				reICRC(d)
				break
			}
		}
	}
	_, sink = auditFrames(t, both, nil, 0)
	if tl := sink.Tallies["C9-148"]; tl == nil || tl.Open == 0 && tl.Violations == 0 {
		t.Errorf("an MSN gone back in the second run leaves C9-148 %+v: passed", tl)
	}
}

// isMessageStart reports whether the RoCEv2 request in d is a First or
// Only packet.
func isMessageStart(d []byte) bool {
	if !rocev2(d) {
		return false
	}
	op := wire.Opcode(d[42])
	pos := op.Position()
	return op.IsRequest() && (pos == wire.PosFirst || pos == wire.PosOnly)
}

// resendTail returns frames followed, 100 ms later, by the requester
// resending the last message
// and the responder acknowledging the duplicate as a responder of the same
// QPs does: the last ACK again, with its MSN, under new IPv4 IDs. This is
// what a capture taken before the point where the last ACK was lost shows.
// edit, if not nil, changes the resent requests and the ACK.
func resendTail(t *testing.T, frames []capture.Frame, edit func(reqs [][]byte, ack []byte)) []capture.Frame {
	t.Helper()
	lastReq, lastAck := -1, -1
	for i, f := range frames {
		if d := f.Data; rocev2(d) {
			if d[42] == byte(wire.Acknowledge) {
				lastAck = i
			} else {
				lastReq = i
			}
		}
	}
	first := lastReq
	for first >= 0 && !isMessageStart(frames[first].Data) {
		first--
	}
	if lastAck < lastReq || first < 0 {
		t.Fatal("no message acknowledged at the end")
	}
	at := frames[len(frames)-1].Time.Add(100 * time.Millisecond)
	out := append([]capture.Frame(nil), frames...)
	var reqs [][]byte
	for i := first; i <= lastReq; i++ {
		if d := frames[i].Data; rocev2(d) && d[42] != byte(wire.Acknowledge) {
			reqs = append(reqs, bytes.Clone(d))
		}
	}
	ack := bytes.Clone(frames[lastAck].Data)
	if edit != nil {
		edit(reqs, ack)
	}
	for i, d := range append(reqs, ack) {
		binary.BigEndian.PutUint16(d[18:], binary.BigEndian.Uint16(d[18:])+1000)
		reICRC(d)
		out = append(out, capture.Frame{Time: at.Add(time.Duration(i) * time.Microsecond), LinkType: capture.LinkTypeEthernet, Data: d})
	}
	return out
}

// TestResendAfterTheLastACK: the requester resends the last message after
// the capture showed it acknowledged (the ACK was lost after the capture
// point), and the responder acknowledges the duplicate with the MSN it
// had. Such a resend begins a message at an acknowledged PSN, as QPs made
// anew may: the findings on it wait for the next response's MSN, which
// kept its place, so they are judged as ever. Clean, nothing fails; an ACK
// to the duplicate whose MSN moved on fails C9-148; a resend with another
// payload length fails go-back-n.
func TestResendAfterTheLastACK(t *testing.T) {
	for _, src := range sources(t, "rxe/send-4k-mtu1024.pcap") {
		t.Run(src.name, func(t *testing.T) { resendAfterTheLastACK(t, src.frames) })
	}
}

// resendAfterTheLastACK is TestResendAfterTheLastACK on the frames of one
// RC connection's SENDs, every RoCE frame RoCEv2 over IPv4 with a UDP
// checksum of 0.
func resendAfterTheLastACK(t *testing.T, frames []capture.Frame) {
	clean := resendTail(t, frames, nil)
	_, sink := auditFrames(t, clean, nil, 0)
	if f := failing(sink); len(f) != 0 {
		t.Errorf("clean resend: %v fail", f)
	}
	for _, c := range []struct {
		name, clause string
		edit         func(reqs [][]byte, ack []byte)
	}{
		{"the duplicate's ACK counts a message", "C9-148", func(_ [][]byte, ack []byte) {
			msn := binary.BigEndian.Uint32(ack[42+12:]) & 0xffffff
			binary.BigEndian.PutUint32(ack[42+12:], uint32(ack[42+12])<<24|(msn+1))
		}},
		{"a resend with another length", "go-back-n", func(reqs [][]byte, _ []byte) {
			d := reqs[0]
			// Cut 4 bytes of payload: IPv4 total length, header checksum,
			// UDP length (the UDP checksum is 0 in these captures).
			binary.BigEndian.PutUint16(d[16:], binary.BigEndian.Uint16(d[16:])-4)
			binary.BigEndian.PutUint16(d[38:], binary.BigEndian.Uint16(d[38:])-4)
			d[24], d[25] = 0, 0
			var sum uint32
			for i := 14; i < 34; i += 2 {
				sum += uint32(binary.BigEndian.Uint16(d[i:]))
			}
			for sum>>16 != 0 {
				sum = sum&0xffff + sum>>16
			}
			binary.BigEndian.PutUint16(d[24:], ^uint16(sum))
			reqs[0] = d[:len(d)-4]
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			frames := resendTail(t, frames, c.edit)
			_, sink := auditFrames(t, frames, nil, 0)
			if f := failing(sink); !reflect.DeepEqual(f, []string{c.clause}) {
				t.Errorf("%v fail, want %s", f, c.clause)
			}
		})
	}
}
