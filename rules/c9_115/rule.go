// Package c9_115 checks C9-115 (§9.7.5.1.5), which shares its meaning
// with C9-106: an error met while servicing a duplicate request is never
// reported with a NAK; the duplicate is dropped silently. Which of the
// two clauses states which part is not known, so both register the same
// passive monitor, dupnak.DupErrorJudge, under their own IDs.
package c9_115

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// ID is the clause this package checks.
const ID = "C9-115"

// The monitor (shared with C9-106): see dupnak.DupErrorJudge.
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewDupError)) }
