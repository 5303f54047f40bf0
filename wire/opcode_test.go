package wire

import "testing"

func TestReadResponseOp(t *testing.T) {
	for _, tc := range []struct {
		i, n int
		want Opcode
	}{
		{0, 1, ReadResponseOnly}, {0, 2, ReadResponseFirst}, {1, 2, ReadResponseLast},
		{0, 3, ReadResponseFirst}, {1, 3, ReadResponseMiddle}, {2, 3, ReadResponseLast},
	} {
		if got := ReadResponseOp(tc.i, tc.n); got != tc.want {
			t.Errorf("packet %d of %d: %v, want %v", tc.i, tc.n, got, tc.want)
		}
	}
}
