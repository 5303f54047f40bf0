package wire

import "testing"

func TestPSNAdd(t *testing.T) {
	tests := []struct {
		p    PSN
		n    int
		want PSN
	}{
		{0, 0, 0},
		{0, 1, 1},
		{0xFFFFFF, 1, 0},
		{0xFFFFFF, 2, 1},
		{0, -1, 0xFFFFFF},
		{5, -10, 0xFFFFFB},
		{0x7FFFFF, 1, 0x800000},
		{0x800000, 0x800000, 0},
		{0x123456, PSNSpace, 0x123456},
		{0x123456, -PSNSpace, 0x123456},
		{0x123456, 2*PSNSpace + 1, 0x123457},
		{0x123456, -3*PSNSpace - 1, 0x123455},
		{0, PSNHalf - 1, 0x7FFFFF},
		{0, -PSNHalf, 0x800000},
		{0x1000000, 0, 0},       // bits above 24 are dropped
		{0xFFFFFFFF, 1, 0x0000}, // likewise
	}
	for _, tc := range tests {
		if got := tc.p.Add(tc.n); got != tc.want {
			t.Errorf("PSN(%#x).Add(%d) = %#x, want %#x", uint32(tc.p), tc.n, uint32(got), uint32(tc.want))
		}
	}
}

func TestPSNNext(t *testing.T) {
	tests := []struct{ p, want PSN }{
		{0, 1},
		{1, 2},
		{0x7FFFFF, 0x800000},
		{0xFFFFFE, 0xFFFFFF},
		{0xFFFFFF, 0},
		{0x1FFFFFF, 0}, // an invalid PSN wraps into range
	}
	for _, tc := range tests {
		if got := tc.p.Next(); got != tc.want {
			t.Errorf("PSN(%#x).Next() = %#x, want %#x", uint32(tc.p), uint32(got), uint32(tc.want))
		}
		if got := tc.p.Add(1); got != tc.want {
			t.Errorf("PSN(%#x).Add(1) = %#x, want %#x", uint32(tc.p), uint32(got), uint32(tc.want))
		}
	}
}

func TestPSNDiffBeforeAfter(t *testing.T) {
	tests := []struct {
		p, q PSN
		diff int
	}{
		{0, 0, 0},
		{1, 0, 1},
		{0, 1, -1},
		{0, 0xFFFFFF, 1},
		{0xFFFFFF, 0, -1},
		{5, 0xFFFFFB, 10},
		{0xFFFFFB, 5, -10},
		{0x7FFFFF, 0, PSNHalf - 1},
		{0, 0x7FFFFF, -(PSNHalf - 1)},
		{0x800001, 0, -(PSNHalf - 1)},
		{0, 0x800001, PSNHalf - 1},
		// Exactly half the space apart: the distance is -2^23 both
		// ways, so each PSN is "before" the other (serial-number
		// arithmetic leaves this case undefined; Diff stays in
		// [-2^23, 2^23)).
		{0x800000, 0, -PSNHalf},
		{0, 0x800000, -PSNHalf},
		{0xC00000, 0x400000, -PSNHalf},
		{0x123456, 0x123456, 0},
		{0x1000005, 3, 2}, // bits above 24 are ignored
	}
	for _, tc := range tests {
		d := tc.p.Diff(tc.q)
		if d != tc.diff {
			t.Errorf("PSN(%#x).Diff(%#x) = %d, want %d", uint32(tc.p), uint32(tc.q), d, tc.diff)
		}
		if got, want := tc.p.Before(tc.q), tc.diff < 0; got != want {
			t.Errorf("PSN(%#x).Before(%#x) = %v, want %v", uint32(tc.p), uint32(tc.q), got, want)
		}
		if got, want := tc.p.After(tc.q), tc.diff > 0; got != want {
			t.Errorf("PSN(%#x).After(%#x) = %v, want %v", uint32(tc.p), uint32(tc.q), got, want)
		}
		if got, want := tc.p.AtOrAfter(tc.q), tc.diff >= 0; got != want {
			t.Errorf("PSN(%#x).AtOrAfter(%#x) = %v, want %v", uint32(tc.p), uint32(tc.q), got, want)
		}
		if got, want := tc.p.AtOrBefore(tc.q), tc.diff <= 0; got != want {
			t.Errorf("PSN(%#x).AtOrBefore(%#x) = %v, want %v", uint32(tc.p), uint32(tc.q), got, want)
		}
	}
}

func TestPSNInRange(t *testing.T) {
	tests := []struct {
		p, first, last PSN
		want           bool
	}{
		{10, 10, 20, true},
		{15, 10, 20, true},
		{20, 10, 20, true},
		{9, 10, 20, false},
		{21, 10, 20, false},
		{5, 5, 5, true},
		{6, 5, 5, false},
		{4, 5, 5, false},
		// Across the wrap.
		{0xFFFFF0, 0xFFFFF0, 0x10, true},
		{0xFFFFFF, 0xFFFFF0, 0x10, true},
		{0, 0xFFFFF0, 0x10, true},
		{0x10, 0xFFFFF0, 0x10, true},
		{0x11, 0xFFFFF0, 0x10, false},
		{0xFFFFEF, 0xFFFFF0, 0x10, false},
		{0x800000, 0xFFFFF0, 0x10, false},
		{0xFFFFFF, 0xFFFFFF, 0, true},
		{0, 0xFFFFFF, 0, true},
		{1, 0xFFFFFF, 0, false},
		// last before first: the range is empty.
		{15, 20, 10, false},
		{20, 20, 10, false},
		{10, 20, 10, false},
		{0, 1, 0, false},
		// The widest range: 2^23 PSNs.
		{0x7FFFFF, 0, 0x7FFFFF, true},
		{0x800000, 0, 0x7FFFFF, false},
		{0xFFFFFF, 0, 0x7FFFFF, false},
		{0x400000, 0xC00000, 0x3FFFFF, false},
		{0x3FFFFF, 0xC00000, 0x3FFFFF, true},
		{0xC00000, 0xC00000, 0x3FFFFF, true},
		// 2^23+1 PSNs: last is "before" first, so empty.
		{0, 0, 0x800000, false},
	}
	for _, tc := range tests {
		if got := tc.p.InRange(tc.first, tc.last); got != tc.want {
			t.Errorf("PSN(%#x).InRange(%#x, %#x) = %v, want %v", uint32(tc.p), uint32(tc.first), uint32(tc.last), got, tc.want)
		}
	}
}

func TestPSNInWindow(t *testing.T) {
	tests := []struct {
		p, start PSN
		n        uint32
		want     bool
	}{
		{5, 5, 0, false},
		{5, 5, 1, true},
		{6, 5, 1, false},
		{4, 5, 1, false},
		{9, 5, 5, true},
		{10, 5, 5, false},
		{0xFFFFFE, 0xFFFFFE, 4, true},
		{0xFFFFFF, 0xFFFFFE, 4, true},
		{0, 0xFFFFFE, 4, true},
		{1, 0xFFFFFE, 4, true},
		{2, 0xFFFFFE, 4, false},
		{0xFFFFFD, 0xFFFFFE, 4, false},
		{0x7FFFFF, 0, PSNHalf, true},
		{0x800000, 0, PSNHalf, false},
		{0xFFFFFF, 0, PSNSpace - 1, false},
		{0xFFFFFE, 0, PSNSpace - 1, true},
		{0xFFFFFF, 0, PSNSpace, true},
		{0x123456, 0x654321, PSNSpace, true},
		{0x123456, 0x654321, PSNSpace + 7, true},
	}
	for _, tc := range tests {
		if got := tc.p.InWindow(tc.start, tc.n); got != tc.want {
			t.Errorf("PSN(%#x).InWindow(%#x, %d) = %v, want %v", uint32(tc.p), uint32(tc.start), tc.n, got, tc.want)
		}
	}
}

func TestPSNValid(t *testing.T) {
	for _, tc := range []struct {
		p    PSN
		want bool
	}{{0, true}, {0xFFFFFF, true}, {0x1000000, false}, {0xFFFFFFFF, false}} {
		if got := tc.p.Valid(); got != tc.want {
			t.Errorf("PSN(%#x).Valid() = %v, want %v", uint32(tc.p), got, tc.want)
		}
	}
}

// psnBand returns every PSN within ±70000 of centre, modulo 2^24.
func psnBand(centre int) []PSN {
	const width = 70000
	out := make([]PSN, 0, 2*width+1)
	for d := -width; d <= width; d++ {
		out = append(out, PSN(0).Add(centre+d))
	}
	return out
}

// TestPSNWrapExhaustive checks the arithmetic for every PSN near the wrap
// (0) and near the half-way point (2^23), at many distances.
func TestPSNWrapExhaustive(t *testing.T) {
	distances := []int{
		0, 1, -1, 2, -2, 3, -3, 7, -7, 255, -256, 1000, -1000, 69999, -70000, 70001,
		1 << 16, -(1 << 16), 1 << 22, -(1 << 22),
		PSNHalf - 2, -(PSNHalf - 2), PSNHalf - 1, -(PSNHalf - 1), -PSNHalf,
	}
	bands := map[string][]PSN{"0": psnBand(0), "2^23": psnBand(PSNHalf)}
	for name, band := range bands {
		fails := 0
		for _, p := range band {
			if !p.Valid() {
				t.Fatalf("band %s: PSN %#x not valid", name, uint32(p))
			}
			for _, k := range distances {
				q := p.Add(k)
				ok := q.Valid() && q.Diff(p) == k
				ok = ok && p.Add(k+PSNSpace) == q && p.Add(k-PSNSpace) == q
				ok = ok && q.After(p) == (k > 0) && q.Before(p) == (k < 0)
				ok = ok && q.AtOrAfter(p) == (k >= 0) && q.AtOrBefore(p) == (k <= 0)
				switch {
				case k == -PSNHalf:
					// Half the space apart: -2^23 both ways, and a
					// range of 2^23+1 PSNs is empty.
					ok = ok && p.Diff(q) == -PSNHalf && p.Before(q) && !p.InRange(q, p)
					ok = ok && p.InWindow(q, PSNHalf+1) && !p.InWindow(q, PSNHalf)
				case k >= 0:
					ok = ok && p.Diff(q) == -k
					ok = ok && q.InRange(p, q) && p.InRange(p, q)
					ok = ok && q.InWindow(p, uint32(k)+1) && !q.InWindow(p, uint32(k))
				default:
					ok = ok && p.Diff(q) == -k
					ok = ok && p.InRange(q, p) && q.InRange(q, p)
					ok = ok && p.InWindow(q, uint32(-k)+1) && !p.InWindow(q, uint32(-k))
				}
				if !ok {
					fails++
					if fails <= 10 {
						t.Errorf("band %s: p=%#x k=%d: q=%#x Diff(q,p)=%d Diff(p,q)=%d After=%v Before=%v",
							name, uint32(p), k, uint32(q), q.Diff(p), p.Diff(q), q.After(p), q.Before(p))
					}
				}
			}
			// p.Next walks one step, also across the wrap.
			if p.Next().Diff(p) != 1 || p.Next() != p.Add(1) {
				t.Errorf("band %s: PSN(%#x).Next() = %#x", name, uint32(p), uint32(p.Next()))
			}
			// A small range around p, which crosses the wrap for p near 0.
			first, last := p.Add(-3), p.Add(3)
			for d := -6; d <= 6; d++ {
				in := d >= -3 && d <= 3
				if got := p.Add(d).InRange(first, last); got != in {
					t.Errorf("band %s: PSN(%#x).InRange(%#x, %#x) = %v, want %v",
						name, uint32(p.Add(d)), uint32(first), uint32(last), got, in)
				}
				if got := p.Add(d).InWindow(first, 7); got != in {
					t.Errorf("band %s: PSN(%#x).InWindow(%#x, 7) = %v, want %v",
						name, uint32(p.Add(d)), uint32(first), got, in)
				}
			}
			if p.InRange(last, first) || !p.InRange(p, p) || p.Add(1).InRange(p, p) {
				t.Errorf("band %s: InRange wrong for the empty or one-PSN range at %#x", name, uint32(p))
			}
		}
		if fails > 0 {
			t.Errorf("band %s: %d failures", name, fails)
		}
	}
}
