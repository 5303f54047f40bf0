//go:build !race

package sim_test

const raceOn = false
