package wire

// PSN is a 24-bit packet sequence number (BTH bits 23:0 of the third word).
// All comparisons are modulo 2^24: a PSN is "after" another when the
// forward distance from the other is less than half the space (2^23), the
// serial-number arithmetic of IBTA §9.7.1.
type PSN uint32

const (
	// PSNMask keeps the 24 PSN bits.
	PSNMask = 0xFFFFFF
	// PSNSpace is the number of distinct PSNs.
	PSNSpace = 1 << 24
	// PSNHalf is half the PSN space: the largest forward distance that
	// still counts as "after".
	PSNHalf = 1 << 23
)

// Add returns p+n modulo 2^24 (n may be negative).
func (p PSN) Add(n int) PSN { return PSN((int64(p) + int64(n)) & PSNMask) }

// Next returns p+1 modulo 2^24.
func (p PSN) Next() PSN { return (p + 1) & PSNMask }

// Diff returns the signed distance p-q in [-2^23, 2^23).
func (p PSN) Diff(q PSN) int {
	d := int((uint32(p) - uint32(q)) & PSNMask)
	if d >= PSNHalf {
		d -= PSNSpace
	}
	return d
}

// Before reports whether p comes strictly before q (modulo 2^24).
func (p PSN) Before(q PSN) bool { return p.Diff(q) < 0 }

// After reports whether p comes strictly after q (modulo 2^24).
func (p PSN) After(q PSN) bool { return p.Diff(q) > 0 }

// AtOrAfter reports whether p is q or comes after it.
func (p PSN) AtOrAfter(q PSN) bool { return p.Diff(q) >= 0 }

// AtOrBefore reports whether p is q or comes before it.
func (p PSN) AtOrBefore(q PSN) bool { return p.Diff(q) <= 0 }

// InRange reports whether p lies in the inclusive range [first, last],
// walking forward from first (so the range may cross the wrap). A range
// whose last is before first is empty.
func (p PSN) InRange(first, last PSN) bool {
	span := (uint32(last) - uint32(first)) & PSNMask
	if last.Before(first) {
		return false
	}
	return (uint32(p)-uint32(first))&PSNMask <= span
}

// InWindow reports whether p lies in the n PSNs starting at start:
// start, start+1, …, start+n-1 (modulo 2^24). n is at most 2^24.
func (p PSN) InWindow(start PSN, n uint32) bool {
	return (uint32(p)-uint32(start))&PSNMask < n || n > PSNMask
}

// Valid reports whether p fits in 24 bits.
func (p PSN) Valid() bool { return p <= PSNMask }
