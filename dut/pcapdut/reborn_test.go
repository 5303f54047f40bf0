package pcapdut_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// rocev2 reports whether Ethernet frame d is RoCEv2 over IPv4 (the rxe
// captures' form): BTH at 42.
func rocev2(d []byte) bool {
	return len(d) > 42+12 && d[12] == 8 && d[13] == 0 && d[23] == 17 && binary.BigEndian.Uint16(d[36:]) == 4791
}

// reICRC recomputes the ICRC of the RoCEv2 IPv4 Ethernet frame d.
func reICRC(d []byte) {
	net := d[14 : 14+int(binary.BigEndian.Uint16(d[16:]))]
	binary.LittleEndian.PutUint32(net[len(net)-4:], wire.ComputeICRC(net[:len(net)-4], wire.RoCEv2IPv4))
}

// rerun returns the capture's frames followed, a second later, by the
// same traffic again as QPs made anew with the same numbers would send
// it: every PSN moved by shift, the IPv4 IDs counted on.
func rerun(frames []capture.Frame, shift uint32) []capture.Frame {
	out := append([]capture.Frame(nil), frames...)
	last := frames[len(frames)-1].Time
	for _, f := range frames {
		g := f
		g.Data = bytes.Clone(f.Data)
		g.Time = last.Add(time.Second + f.Time.Sub(frames[0].Time))
		if d := g.Data; rocev2(d) {
			psn := (binary.BigEndian.Uint32(d[42+8:]) + shift) & 0xffffff
			d[42+9], d[42+10], d[42+11] = byte(psn>>16), byte(psn>>8), byte(psn)
			binary.BigEndian.PutUint16(d[18:], binary.BigEndian.Uint16(d[18:])+7777)
			reICRC(d)
		}
		out = append(out, g)
	}
	return out
}

func failing(s *harness.Sink) []string {
	var out []string
	for id, tl := range s.Tallies {
		if tl.Violations > 0 {
			out = append(out, id)
		}
	}
	return out
}

// TestQPsMadeAnew: a capture holding two runs of the same traffic, the
// second on QPs made anew with the same numbers and a new random starting
// PSN (no handshake in the capture tells). Audited as one connection,
// the second run's requests were duplicates of the first's and its MSNs
// went back (C9-105, C9-148, o9-66, go-back-n failed); audited as what it
// is, two connections, nothing fails that the single run does not fail,
// a single and a sharded auditor agree, and a deviation in the second run
// is still caught.
func TestQPsMadeAnew(t *testing.T) {
	for _, src := range sources(t, "rxe/send-4k-mtu1024.pcap", "rxe/read-8k-mtu1024.pcap", "rxe/write-8k-mtu1024.pcap", "rxe/atomic-cas.pcap") {
		t.Run(src.name, func(t *testing.T) {
			frames := src.frames
			_, once := auditFrames(t, frames, nil, 0)
			for _, shift := range []uint32{0x345678, 0xffffff - 0x50000} { // ahead, behind
				both := rerun(frames, shift)
				info, sink := auditFrames(t, both, nil, 0)
				if got, want := failing(sink), failing(once); !reflect.DeepEqual(got, want) {
					t.Errorf("shift %#x: failing %v, the single run fails %v", shift, got, want)
				}
				if len(info.Connections) != 2 || info.Connections[1].Follows != 1 {
					t.Fatalf("shift %#x: connections %+v", shift, info.Connections)
				}
				if len(info.Notes) != 1 || !strings.Contains(info.Notes[0], "connection 2 takes over") {
					t.Errorf("notes %q", info.Notes)
				}
				sinfo, ssink := auditFrames(t, both, nil, 2)
				if d := harness.DiffSinks(sink, ssink); d != "" || !reflect.DeepEqual(info, sinfo) {
					t.Errorf("shift %#x: a sharded auditor differs: %s", shift, d)
				}
			}
		})
	}
	for _, src := range sources(t, "rxe/send-4k-mtu1024.pcap") {
		t.Run(src.name+", late and deviant", func(t *testing.T) { madeAnewLateAndDeviant(t, src.frames) })
	}
}

// madeAnewLateAndDeviant: in two runs of the SEND capture frames, a
// request of the first run recorded late, among the second run's first
// packets, goes back to the first run's connection (still two); an ACK of
// the second run whose MSN went back fails C9-148.
func madeAnewLateAndDeviant(t *testing.T, frames []capture.Frame) {
	late := rerun(frames, 0x345678)
	for i := len(late)/2 - 1; i > 0; i-- {
		if d := late[i].Data; rocev2(d) && d[42] != byte(wire.Acknowledge) {
			r := late[i]
			late = slices.Insert(slices.Delete(late, i, i+1), len(late)/2+120, r)
			break
		}
	}
	info, sink := auditFrames(t, late, nil, 0)
	if len(info.Connections) != 2 {
		t.Errorf("a late request of the first run: %d connections", len(info.Connections))
	}
	if f := failing(sink); len(f) != 0 {
		t.Errorf("a late request of the first run: %v fail", f)
	}
	if _, ssink := auditFrames(t, late, nil, 3); harness.DiffSinks(sink, ssink) != "" {
		t.Errorf("a late request of the first run: a sharded auditor differs: %s", harness.DiffSinks(sink, ssink))
	}
	// A deviation in the second run: an ACK whose MSN went back.
	frames = rerun(frames, 0x345678)
	acks := 0
	for i := len(frames) / 2; i < len(frames); i++ {
		if d := frames[i].Data; rocev2(d) && d[42] == byte(wire.Acknowledge) {
			if acks++; acks == 50 {
				msn := binary.BigEndian.Uint32(d[42+12:]) & 0xffffff
				binary.BigEndian.PutUint32(d[42+12:], uint32(d[42+12])<<24|(msn-5))
				reICRC(d)
				_, sink := auditFrames(t, frames, nil, 0)
				if f := failing(sink); !reflect.DeepEqual(f, []string{"C9-148"}) {
					t.Errorf("an MSN gone back in the second run fails %v, want C9-148", f)
				}
				return
			}
		}
	}
	t.Fatal("no 50th ACK in the second run")
}
