package harness

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness/trace"
)

// TestSentAllSince: a sender's IDs counting one by one prove the capture
// holds every packet it sent over a stretch; a gap, a sender not seen to
// count by one, or a packet without an ID proves nothing.
func TestSentAllSince(t *testing.T) {
	const none = -1 // a record without an IPv4 ID (IPv6)
	up := func(from, n int) []int {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = (from + i) & 0xFFFF
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
		ids   []int
		since uint64 // 0: from the first record
		want  bool
	}{
		{"one by one", up(100, 12), 0, true},
		{"one by one across the wrap", up(0xFFF8, 12), 0, true},
		{"too few steps to trust", up(100, 5), 0, false},
		{"a copy repeats an ID", cat(up(100, 6), up(105, 7)), 0, true},
		{"a gap", cat(up(100, 6), up(107, 7)), 0, false},
		{"a gap before the stretch asked about", cat(up(100, 6), up(107, 10)), 8, true},
		{"a gap inside the stretch asked about", cat(up(100, 6), up(107, 10)), 5, false},
		{"random IDs", []int{9, 4000, 4001, 77, 300, 301, 60000, 12, 13, 14, 15}, 8, false},
		{"a record without an ID", cat(up(100, 10), []int{none}, up(111, 3)), 0, false},
		{"one by one, but the connection's beginning not shown", up(100, 12), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Conn{Settings: Settings{FromStart: !strings.Contains(tc.name, "beginning not shown")}}
			for _, id := range tc.ids {
				r := &trace.Record{Dir: trace.ToResponder, HasIPID: id != none, IPID: uint16(id)}
				c.seq++
				c.runs[r.Dir&1].step(r, c.seq)
			}
			if got := c.SentAllSince(trace.ToResponder, tc.since); got != tc.want {
				t.Errorf("SentAllSince = %v, want %v (run %+v)", got, tc.want, c.runs[trace.ToResponder&1])
			}
			if c.SentAllSince(trace.ToRequester, tc.since) {
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
		name string
		pkts []pkt
		want time.Duration
	}{
		{"in order", counting("10.0.0.1", 7, 20), 0},
		{"one packet recorded 30 µs late", append(counting("10.0.0.1", 7, 20), pkt{"10.0.0.1", 20, 40}, pkt{"10.0.0.1", 27, 41}), 21 * time.Microsecond},
		{"across the ID wrap", append(counting("10.0.0.1", 0xFFF0, 20), pkt{"10.0.0.1", 0xFFFE, 50}), 31 * time.Microsecond},
		{"IDs that do not count up", []pkt{{"10.0.0.1", 9, 0}, {"10.0.0.1", 4000, 1}, {"10.0.0.1", 30000, 2}, {"10.0.0.1", 12, 3}, {"10.0.0.1", 8, 90}}, 0},
		{"another host's IDs are not compared", append(counting("10.0.0.1", 500, 20), pkt{"10.0.0.2", 7, 60}, pkt{"10.0.0.2", 3, 70}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m skewMeter
			var r *trace.Record
			for _, p := range tc.pkts {
				r = &trace.Record{Src: netip.MustParseAddr(p.src), HasIPID: true, IPID: p.id, Time: time.Duration(p.usec) * time.Microsecond}
				m.note(r)
			}
			if r.Skew != tc.want {
				t.Errorf("Skew = %v, want %v", r.Skew, tc.want)
			}
		})
	}
}
