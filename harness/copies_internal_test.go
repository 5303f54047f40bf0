package harness

import (
	"math/rand/v2"
	"testing"
)

// TestCopyRingMayHold: the word-at-a-time test says a slot holds the key
// or no ID exactly when one does, wherever the slot is, next to keys that
// differ from it in one bit (a borrow across lanes must not pass for a
// match), and on random rings.
func TestCopyRingMayHold(t *testing.T) {
	naive := func(k *CopyRing, key uint32) bool {
		for _, qk := range k.ids {
			if qk == key || qk&hasID == 0 {
				return true
			}
		}
		return false
	}
	const key = hasID | 0x1234
	full := func(f func(i int) uint32) *CopyRing {
		var k CopyRing
		for i := range k.ids {
			k.ids[i] = f(i)
		}
		return &k
	}
	cases := []struct {
		name string
		k    *CopyRing
		want bool
	}{
		{"other IDs", full(func(i int) uint32 { return hasID | uint32(i) }), false},
		{"one bit off each", full(func(i int) uint32 { return key ^ 1<<(i%16) }), false},
		{"one bit below the key", full(func(i int) uint32 { return key - 1 }), false},
		{"empty ring", &CopyRing{}, true},
	}
	for slot := range copyDepth {
		k := full(func(i int) uint32 { return key + 1 + uint32(i) })
		k.ids[slot] = key
		cases = append(cases, struct {
			name string
			k    *CopyRing
			want bool
		}{"key in slot", k, true})
		k = full(func(i int) uint32 { return key + 1 + uint32(i) })
		k.ids[slot] = 0x1234 // no ID
		cases = append(cases, struct {
			name string
			k    *CopyRing
			want bool
		}{"no ID in slot", k, true})
	}
	for _, c := range cases {
		if got := c.k.mayHold(key); got != c.want || got != naive(c.k, key) {
			t.Errorf("%s %x: mayHold %v, want %v", c.name, c.k.ids, got, c.want)
		}
	}
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 3))
	for range 100000 {
		var k CopyRing
		key := hasID | uint32(rng.IntN(8))
		for i := range k.ids {
			k.ids[i] = hasID | uint32(rng.IntN(40))
			if rng.IntN(64) == 0 {
				k.ids[i] &^= hasID
			}
		}
		if got, want := k.mayHold(key), naive(&k, key); got != want {
			t.Fatalf("seed %d: ring %x, key %x: mayHold %v, want %v", seed, k.ids, key, got, want)
		}
	}
}
