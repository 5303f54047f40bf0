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

func TestReservedRC(t *testing.T) {
	var got []Opcode
	for o := range 256 {
		if Opcode(o).ReservedRC() {
			got = append(got, Opcode(o))
		}
	}
	want := []Opcode{0x15, 0x18, 0x19, 0x1A, 0x1B, 0x1E, 0x1F}
	if len(got) != len(want) {
		t.Fatalf("reserved RC opcodes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reserved RC opcodes %v, want %v", got, want)
		}
	}
}
