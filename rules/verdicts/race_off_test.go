//go:build !race

package verdicts

// raceEnabled: the race detector is on (go test -race).
const raceEnabled = false
