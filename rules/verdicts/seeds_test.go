package verdicts

import (
	"os"
	"strconv"
	"testing"
)

// seedsFromEnv returns the seeds and the traces per seed a randomized test
// runs: its defaults, or one seed from PREFIX_SEED and a count from
// PREFIX_N, so that a failure's printed seed can be run again alone.
//
// Under the race detector the defaults shrink to the first seed and at
// most raceTraces traces: the generators' code paths are the same, the
// full run without it checks the verdicts, and CI runs every package's
// race test at once, where this package's full load would starve the
// live tests' real-time scenarios of CPU.
func seedsFromEnv(t *testing.T, prefix string, seeds []uint64, n int) ([]uint64, int) {
	t.Helper()
	if raceEnabled {
		seeds, n = seeds[:1], min(n, raceTraces)
	}
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

// raceTraces bounds the traces per seed under the race detector.
const raceTraces = 300
