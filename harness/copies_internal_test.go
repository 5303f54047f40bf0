package harness

import (
	"math/rand/v2"
	"testing"
)

// TestCopyRingMayHold: mayHold says a slot may hold the key whenever one
// holds it or no ID, wherever the slot is, and says none does on a ring
// of IDs whose low bytes all differ from the key's (the next IDs of a
// sender counting up), also after slots were set again; on random rings
// it is never wrong where it says none does.
func TestCopyRingMayHold(t *testing.T) {
	holds := func(k *CopyRing, key uint32) bool {
		for _, qk := range k.ids {
			if qk == key || qk&hasID == 0 {
				return true
			}
		}
		return false
	}
	// apart tells whether every slot holds an ID whose low byte is not
	// key's.
	apart := func(k *CopyRing, key uint32) bool {
		for _, qk := range k.ids {
			if qk&hasID == 0 || uint8(qk) == uint8(key) {
				return false
			}
		}
		return true
	}
	const key = hasID | 0x1234
	full := func(f func(i int) uint32) *CopyRing {
		var k CopyRing
		for i := range k.ids {
			k.setKey(i, hasID|0x55) // set again below: the counts follow
		}
		for i := range k.ids {
			k.setKey(i, f(i))
		}
		return &k
	}
	cases := []struct {
		name string
		k    *CopyRing
		want bool
	}{
		{"the sender's previous IDs", full(func(i int) uint32 { return key - 1 - uint32(i) }), false},
		{"other IDs", full(func(i int) uint32 { return hasID | uint32(i) }), false},
		{"the key's low byte", full(func(i int) uint32 { return key + 0x100 }), true},
		{"empty ring", &CopyRing{}, true},
	}
	for slot := range copyDepth {
		k := full(func(i int) uint32 { return key + 1 + uint32(i) })
		k.setKey(slot, key)
		cases = append(cases, struct {
			name string
			k    *CopyRing
			want bool
		}{"key in slot", k, true})
		k = full(func(i int) uint32 { return key + 1 + uint32(i) })
		k.setKey(slot, 0x1234) // no ID
		cases = append(cases, struct {
			name string
			k    *CopyRing
			want bool
		}{"no ID in slot", k, true})
	}
	for _, c := range cases {
		if got := c.k.mayHold(key); got != c.want {
			t.Errorf("%s %x: mayHold %v, want %v", c.name, c.k.ids, got, c.want)
		}
	}
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 3))
	for range 100000 {
		var k CopyRing
		key := hasID | uint32(rng.IntN(8))
		for range 2 * copyDepth {
			qk := hasID | uint32(rng.IntN(40)) | uint32(rng.IntN(4))<<8
			if rng.IntN(64) == 0 {
				qk &^= hasID
			}
			k.setKey(rng.IntN(copyDepth), qk)
		}
		got := k.mayHold(key)
		if !got && holds(&k, key) || got && apart(&k, key) {
			t.Fatalf("seed %d: ring %x, key %x: mayHold %v", seed, k.ids, key, got)
		}
	}
}
