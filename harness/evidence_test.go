package harness

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// TestSentAllSince: a sender's IDs counting one by one prove the capture
// holds every packet it sent over a stretch; a gap, a sender not seen to
// count by one, or a packet without an ID proves nothing.
func TestSentAllSince(t *testing.T) {
	const none = -1        // a record without an IPv4 ID (IPv6)
	const copied = 1 << 20 // a request repeating an older one with its ID (trace.Record.Copy)
	up := func(from, n int) []int {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = (from + i) & 0xFFFF
		}
		return ids
	}
	// pairs gives n pairs of consecutive IDs, each pair step IDs after
	// the one before it.
	pairs := func(from, step, n int) []int {
		var ids []int
		for i := range n {
			ids = append(ids, up(from+i*step, 2)...)
		}
		return ids
	}
	cat := func(parts ...[]int) []int {
		var out []int
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		lead  int // records of the other direction before the sender's first
		ids   []int
		since uint64 // 0: from the first record
		want  bool
	}{
		{"one by one", 0, up(100, 12), 0, true},
		{"one by one across the wrap", 0, up(0xFFF8, 12), 0, true},
		{"too few steps to trust", 0, up(100, 5), 0, false},
		{"a copy repeats an ID", 0, cat(up(100, 6), up(105, 7)), 0, true},
		{"a gap", 0, cat(up(100, 6), up(107, 7)), 0, false},
		{"a copy of an older request among new ones", 0, cat(up(100, 6), []int{101 | copied}, up(106, 7)), 0, true},
		{"an older packet, no copy, recorded late", 0, cat(up(100, 6), []int{101}, up(106, 7)), 0, false},
		{"a gap before the stretch asked about", 0, cat(up(100, 6), up(107, 10)), 8, true},
		{"a gap inside the stretch asked about", 0, cat(up(100, 6), up(107, 10)), 5, false},
		{"random IDs", 0, []int{9, 4000, 4001, 77, 300, 301, 60000, 12, 13, 14, 15}, 8, false},
		{"a counter shared with other flows (gaps forward), asked after the last gap", 0, pairs(100, 10, 9), 17, true},
		{"a counter shared with other flows, asked across a gap", 0, pairs(100, 10, 9), 15, false},
		{"steps back as often as steps of one", 0, pairs(60000, -100, 9), 17, false},
		{"a record without an ID", 0, cat(up(100, 10), []int{none}, up(111, 3)), 0, false},
		{"one by one, but the connection's beginning not shown", 0, up(100, 12), 0, false},
		{"from before the sender's first packet, the connection's beginning shown", 3, up(100, 12), 2, true},
		{"from before the sender's first packet, the connection's beginning not shown (one before it may be missed)", 3, up(100, 12), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Conn{Settings: Settings{FromStart: !strings.Contains(tc.name, "beginning not shown")}}
			for range tc.lead {
				c.seq++
				c.runs[trace.ToRequester&1].step(&trace.Record{Dir: trace.ToRequester}, c.seq)
			}
			for _, id := range tc.ids {
				r := &trace.Record{Dir: trace.ToResponder, HasIPID: id != none, IPID: uint16(id & 0xFFFF), Copy: id&copied != 0}
				c.seq++
				c.runs[r.Dir&1].step(r, c.seq)
			}
			if got := c.SentAllSince(trace.ToResponder, tc.since); got != tc.want {
				t.Errorf("SentAllSince = %v, want %v (run %+v)", got, tc.want, c.runs[trace.ToResponder&1])
			}
			if tc.lead == 0 && c.SentAllSince(trace.ToRequester, tc.since) {
				t.Error("SentAllSince holds for a direction that sent nothing")
			}
		})
	}
}

// TestSkewMeter: a packet recorded after one its sender sent later, by a
// host counting its IDs up, shows the capture reorders that far; IDs that
// do not count up show nothing.
func TestSkewMeter(t *testing.T) {
	type pkt struct {
		src  string
		id   uint16
		usec int
	}
	counting := func(src string, from uint16, n int) []pkt {
		var out []pkt
		for i := range n {
			out = append(out, pkt{src, from + uint16(i), i})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		pkts      []pkt
		precision time.Duration // the capture's timestamp resolution, when coarse
		want      time.Duration
	}{
		{"in order", counting("10.0.0.1", 7, 20), 0, 0},
		{"in order, timestamps of a millisecond: reordered within it, for all the trace shows", counting("10.0.0.1", 7, 20), time.Millisecond, time.Millisecond},
		{"one packet recorded 30 µs late, timestamps of 10 µs", append(counting("10.0.0.1", 7, 20), pkt{"10.0.0.1", 20, 40}, pkt{"10.0.0.1", 27, 41}), 10 * time.Microsecond, 21 * time.Microsecond},
		{"one packet recorded 30 µs late", append(counting("10.0.0.1", 7, 20), pkt{"10.0.0.1", 20, 40}, pkt{"10.0.0.1", 27, 41}), 0, 21 * time.Microsecond},
		{"across the ID wrap", append(counting("10.0.0.1", 0xFFF0, 20), pkt{"10.0.0.1", 0xFFFE, 50}), 0, 31 * time.Microsecond},
		{"IDs that do not count up", []pkt{{"10.0.0.1", 9, 0}, {"10.0.0.1", 4000, 1}, {"10.0.0.1", 30000, 2}, {"10.0.0.1", 12, 3}, {"10.0.0.1", 8, 90}}, 0, 0},
		{"another host's IDs are not compared", append(counting("10.0.0.1", 500, 20), pkt{"10.0.0.2", 7, 60}, pkt{"10.0.0.2", 3, 70}), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m skewMeter
			var r *trace.Record
			for _, p := range tc.pkts {
				r = &trace.Record{Src: netip.MustParseAddr(p.src), HasIPID: true, IPID: p.id, Time: time.Duration(p.usec) * time.Microsecond}
				m.note(r, tc.precision)
			}
			if r.Skew != tc.want {
				t.Errorf("Skew = %v, want %v", r.Skew, tc.want)
			}
		})
	}
}

// raiser is a checker that raises one instance held for missed packets
// on the record of frame at, with proofs whose Since counts from the
// record of frame since.
type raiser struct {
	at, since int
	proofs    []MissedProof
	seqs      map[int]uint64
	either    bool // the instance names alternatives (ViolationUnlessMissedElse)
}

func (r *raiser) Observe(c *Conn, rec *trace.Record) {
	r.seqs[rec.Frame] = c.Seq()
	if rec.Frame != r.at {
		return
	}
	proofs := append([]MissedProof(nil), r.proofs...)
	for i := range proofs {
		if proofs[i].Since != 0 {
			proofs[i].Since = r.seqs[r.since]
		}
	}
	if r.either {
		c.ViolationUnlessMissedElse("probe", rec, "wrong", nil, "seen", "open", Either{Message: "wrong either way", Alts: []reports.Alternative{
			{ID: "probe", If: "nothing was missed"}, {ID: "other", If: "a packet was missed"}}}, proofs...)
		return
	}
	c.ViolationUnlessMissedAny("probe", rec, "wrong", nil, "seen", "open", proofs...)
}
func (*raiser) End(*Conn) {}

// TestViolationUnlessMissedAny: an instance is a violation once any of
// its proofs shows that the sender it names missed nothing over the
// stretch, where that sender is seen to number its packets one by one
// (also when the packets that show it come later); open when every
// proof fails, or the sender is never seen to count by one. An instance
// naming alternatives is, where every proof fails, one finding listed
// under each alternative clause, once its own sender (the responder) is
// seen to count its IDs up; open where it never is.
func TestViolationUnlessMissedAny(t *testing.T) {
	responder := MissedProof{Dir: trace.ToRequester, Since: 1, Now: true} // since frame 2 (raiser.since), through the instance
	requester := MissedProof{Dir: trace.ToResponder}                      // over the whole connection, through its next packet
	for _, tc := range []struct {
		name   string
		pairs  int  // request/ACK pairs; the instance is raised on the third ACK (frame 6)
		rspGap bool // the responder's IDs skip one between frames 2 and 6
		reqGap bool // the requester's IDs skip one at frame 7
		proofs []MissedProof
		want   string // "violation", "open" or "either"
		either bool
	}{
		{"alternatives, every proof broken", 12, true, true, []MissedProof{responder, requester}, "either", true},
		{"alternatives, a proof holds", 12, true, false, []MissedProof{responder, requester}, "violation", true},
		{"alternatives, the instance's sender never seen counting up", 4, true, true, []MissedProof{requester}, "open", true},
		{"responder unbroken, trusted only later", 12, false, false, []MissedProof{responder}, "violation", false},
		{"responder unbroken, never seen to count by one", 4, false, false, []MissedProof{responder}, "open", false},
		{"responder broken, requester unbroken", 12, true, false, []MissedProof{responder, requester}, "violation", false},
		{"both broken", 12, true, true, []MissedProof{responder, requester}, "open", false},
		{"requester broken alone", 12, false, true, []MissedProof{requester}, "open", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []*trace.Record
			reqID, rspID := uint16(100), uint16(5000)
			for i := range tc.pairs {
				q := req(2*i+1, wire.SendOnly, 7, wire.PSN(10+i), true)
				if tc.reqGap && 2*i+1 == 7 {
					reqID++
				}
				q.HasIPID, q.IPID = true, reqID
				reqID++
				a := ack(2*i+2, 7, wire.PSN(10+i), 0x1F, uint32(i+1))
				if tc.rspGap && 2*i+2 == 4 {
					rspID++
				}
				a.HasIPID, a.IPID = true, rspID
				rspID++
				recs = append(recs, q, a)
			}
			sink := NewSink("t")
			a := NewAuditor(Settings{FromStart: true}, sink)
			a.mons = []Monitor{{Clause: "probe", New: func(*Conn) Checker {
				return &raiser{at: 6, since: 2, proofs: tc.proofs, seqs: map[int]uint64{}, either: tc.either}
			}}}
			for _, r := range recs {
				a.Observe(r)
			}
			a.End()
			tl, other := sink.Tally("probe"), sink.Tally("other")
			got := "none"
			switch {
			case tl == nil:
			case tl.Violations == 1 && other != nil && other.Violations == 1:
				got = "either"
				for _, f := range sink.Findings {
					if len(f.Alternatives) != 2 || !strings.Contains(f.Message, "wrong either way: one of these clauses is broken") {
						t.Errorf("finding %+v does not name both alternatives", f)
					}
				}
			case tl.Violations == 1 && tl.Open == 0 && other == nil:
				got = "violation"
			case tl.Violations == 0 && tl.Open == 1:
				got = "open"
			default:
				got = fmt.Sprintf("%+v", tl)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
