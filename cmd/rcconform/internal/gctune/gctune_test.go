package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, Floor},
		{10 << 20, Floor},                   // a small live heap: the floor decides
		{(Floor - Slack) / 2, Floor},        // where twice the live heap reaches it
		{100 << 20, 2*(100<<20) + Slack},    // a large one: as GOGC=100, plus slack
		{1 << 30, 2*(1<<30) + int64(Slack)}, // never below twice the live heap
		{(Floor-Slack)/2 + 1, Floor + 2},    // just above: grows with it
	} {
		if got := Limit(tc.live); got != tc.want {
			t.Errorf("Limit(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

func TestStartLeavesUsersSettings(t *testing.T) {
	t.Setenv("GOGC", "100")
	if Start() {
		t.Fatal("Start changed the collector although GOGC is set")
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "1GiB")
	if Start() {
		t.Fatal("Start changed the collector although GOMEMLIMIT is set")
	}
}

func TestStart(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	defer func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	if !Start() {
		t.Fatal("Start did nothing with neither GOGC nor GOMEMLIMIT set")
	}
	if p := debug.SetGCPercent(Percent); p != Percent {
		t.Errorf("GOGC %d after Start, want %d", p, Percent)
	}
	// A live heap above half the floor: after the collections that follow,
	// the limit must follow it (else the collector would run back to back).
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	want := Limit(64 << 20)
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) < want && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs on its own goroutine
	}
	if got := debug.SetMemoryLimit(-1); got < want {
		t.Errorf("memory limit %d with a live heap over 64 MiB, want at least %d", got, want)
	}
	runtime.KeepAlive(keep)
}
