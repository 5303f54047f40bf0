package answers

import (
	"testing"

	"github.com/rcconform/rcconform/wire"
)

// TestMsgEndPacked: a message end keeps its PSN (all 24 bits) and whether
// it is a READ in 4 bytes, and the count reads them back.
func TestMsgEndPacked(t *testing.T) {
	for _, tc := range []struct {
		psn  wire.PSN
		read bool
	}{{0, false}, {0, true}, {wire.PSNMask, false}, {wire.PSNMask, true}, {0x800000, true}, {12345, false}} {
		e := newEnd(tc.psn, tc.read)
		if e.psn() != tc.psn || e.read() != tc.read {
			t.Errorf("newEnd(%d, %v) gives %d, %v", tc.psn, tc.read, e.psn(), e.read())
		}
	}
	var m MSNModel
	for i, p := range []wire.PSN{wire.PSNMask - 1, 3, wire.PSNMask, 1} { // wraps; 3 and 1 out of order
		m.addEnd(p, i%2 == 0)
	}
	// Ends, ascending: 2^24-2 (READ), 2^24-1 (READ), 1, 3; non-READ: 1, 3.
	for _, tc := range []struct {
		p             wire.PSN
		incl, nonRead bool
		want          int
	}{{wire.PSNMask, true, false, 2}, {wire.PSNMask, false, false, 1}, {2, true, false, 3}, {3, true, false, 4}, {3, true, true, 2}, {2, true, true, 1}} {
		if n, ok := m.count(tc.p, tc.incl, tc.nonRead); !ok || n != tc.want {
			t.Errorf("count(%d, incl %v, nonRead %v) = %d, %v; want %d", tc.p, tc.incl, tc.nonRead, n, ok, tc.want)
		}
	}
}
