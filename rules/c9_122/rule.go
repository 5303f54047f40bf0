// Package c9_122 checks C9-122 (§9.7.5.2): at most one PSN sequence error
// NAK may be outstanding: once the responder has sent one, it sends no
// other until a request carrying the expected PSN arrives. C9-122 shares
// its meaning with C9-114, so both register the same passive monitor,
// dupnak.LatchJudge, under their own IDs.
package c9_122

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// ID is the clause this package checks.
const ID = "C9-122"

// The monitor (shared with C9-114): see dupnak.LatchJudge.
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewLatch)) }
