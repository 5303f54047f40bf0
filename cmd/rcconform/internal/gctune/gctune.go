// Package gctune sets the Go garbage collector for a long audit: fewer
// collections while the live heap is small, bounded memory always.
//
// With the default GOGC=100 the collector runs whenever the heap has
// doubled since the last collection. An audit keeps a small live heap (a
// few tens of MB: each connection's recent packets) and allocates a
// record per frame, so it collects every ~20 MB allocated: 19 times per
// million frames. Each collection has a fixed cost, paid several times
// over with more than one core (the runtime's idle and fractional mark
// workers spin on the otherwise idle cores): with GOMAXPROCS=2 the
// collector was most of the extra CPU two cores took over one.
//
// Start raises GOGC (Percent) and sets a soft memory limit instead: the
// collector runs when the process's Go memory reaches Floor, or twice the
// live heap plus Slack when that is more (what GOGC=100 would allow, so a
// large live heap, as with many connections, never makes the collector run
// back to back). After each collection the limit is recomputed from the
// live heap then.
//
// Memory therefore stays under about Floor while the live heap is below
// half of it, whatever the capture's length, and grows as with the default
// beyond. A user's own GOGC or GOMEMLIMIT is left as it is.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Defaults for Start.
const (
	Percent = 400      // GOGC while the limit decides
	Floor   = 72 << 20 // soft memory limit, bytes, at least
	Slack   = 16 << 20 // added to twice the live heap
)

// Limit returns the soft memory limit for a live heap of live bytes.
func Limit(live uint64) int64 {
	return max(int64(Floor), 2*int64(live)+Slack)
}

var once sync.Once

// Start sets the collector as the package comment says and keeps the limit
// up to date after every collection, unless GOGC or GOMEMLIMIT is set in
// the environment. It reports whether it did; calling it again does
// nothing more.
func Start() bool {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	once.Do(func() {
		debug.SetMemoryLimit(Limit(0))
		debug.SetGCPercent(Percent)
		arm()
	})
	return true
}

// sentinel is an object whose finalizer runs after the collection that
// finds it unreachable: one per collection.
type sentinel struct {
	_ *int
	_ [16]byte
}

func arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		debug.SetMemoryLimit(Limit(liveHeap()))
		arm()
	})
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// liveHeap returns the heap marked live by the latest collection.
func liveHeap() uint64 {
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return liveSample[0].Value.Uint64()
}
