package verdicts

import (
	"os"
	"strconv"
	"testing"
)

// seedsFromEnv returns the seeds and the traces per seed a randomized test
// runs: its defaults, or one seed from PREFIX_SEED and a count from
// PREFIX_N, so that a failure's printed seed can be run again alone.
func seedsFromEnv(t *testing.T, prefix string, seeds []uint64, n int) ([]uint64, int) {
	t.Helper()
	if v := os.Getenv(prefix + "_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s_SEED: %v", prefix, err)
		}
		seeds = []uint64{seed}
	}
	if v := os.Getenv(prefix + "_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s_N: %v", prefix, err)
		}
	}
	return seeds, n
}
