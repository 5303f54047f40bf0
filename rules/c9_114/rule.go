// Package c9_114 checks C9-114 (§9.7.5.1.5): after sending a PSN sequence
// error NAK, the responder consumes no receive WQE for the out-of-sequence
// request and disregards every new request until one arrives carrying
// exactly the expected PSN; meanwhile it sends no further sequence error
// NAK, yet it goes on answering duplicates (the "NAK latch"). C9-114
// shares its meaning with C9-122 (which clause states which part is not
// known), so both register the same passive monitor, dupnak.LatchJudge,
// under their own IDs.
package c9_114

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// ID is the clause this package checks.
const ID = "C9-114"

// The monitor (shared with C9-122): between a sequence NAK with PSN x and
// the arrival of a request with PSN x, no second sequence NAK and no new
// request executed past the gap; and no second sequence NAK naming x again
// after x arrived. See dupnak.LatchJudge for capture order, network
// duplicates and what a capture missing packets cannot decide. Receive
// WQE consumption is visible only on the device: the active scenarios
// post exactly as many receive WQEs as the requests that must be taken.
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewLatch)) }
