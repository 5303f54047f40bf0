package wire

import (
	"math/rand/v2"
	"testing"
)

// TestComputeICRCLayouts: the ICRC of random packets of every RoCE
// encapsulation, IPv4 headers of every length (the IHL nibble is random)
// and lengths around the masked headers' ends agrees with refICRC, the
// masked copy: the headers read in place with their masks ORed in
// (crcMasked), and short or odd layouts through icrcHeaders.
func TestComputeICRCLayouts(t *testing.T) {
	const seed = 20261205
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, encap := range []Encap{RoCEv2IPv4, RoCEv2IPv6, RoCEv1} {
		for n := 0; n <= maxMaskedLen+40; n++ {
			for range 20 {
				pkt := make([]byte, n)
				for i := range pkt {
					pkt[i] = byte(rng.Uint32())
				}
				if got, want := ComputeICRC(pkt, encap), refICRC(pkt, encap); got != want {
					t.Fatalf("seed %d: ComputeICRC(%x, %v) = %#08x, reference %#08x", seed, pkt, encap, got, want)
				}
			}
		}
	}
}
