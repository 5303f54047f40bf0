// Package c9_121 checks C9-121 (§9.7.5.2): a NAK with code 0 (PSN
// sequence error) carries the responder's expected PSN. It shares its
// meaning with C9-111 and C9-125 (taking C9-121 as the sequence-error
// case is inferred) and registers their shared passive monitor,
// dupnak.NAKPSNJudge, for code 0.
package c9_121

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-121"

// The monitor: see dupnak.NAKPSNJudge (code 0 only).
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewNAKPSN(wire.NAKPSNSequence))) }
