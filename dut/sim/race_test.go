//go:build race

package sim_test

// raceOn: the tests run under the race detector (CI's second pass), where
// TestSuiteThroughSim takes a few defects, not all: the suite binary it
// runs is the same either way.
const raceOn = true
