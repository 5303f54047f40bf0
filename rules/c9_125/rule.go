// Package c9_125 checks C9-125 (§9.7.5.2): a NAK with code 1 (invalid
// request) carries the responder's expected PSN. It shares its meaning
// with C9-111 and C9-121 (taking C9-125 as the invalid-request case is
// inferred) and registers their shared passive monitor,
// dupnak.NAKPSNJudge, for code 1.
package c9_125

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-125"

// The monitor: see dupnak.NAKPSNJudge (code 1 only).
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewNAKPSN(wire.NAKInvalidRequest))) }
