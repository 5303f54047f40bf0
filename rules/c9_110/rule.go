// Package c9_110 checks C9-110 (§9.7.5.1.4): the responder answers
// requests strictly in PSN order, logically earliest first, and when a
// duplicate with a logically earlier PSN arrives while it is answering
// another request (new or duplicate), it abandons that answer and answers
// the earlier request. C9-110 shares its meaning with C9-104, so both
// register the same passive monitor, dupnak.OrderJudge, under their own
// IDs.
package c9_110

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// ID is the clause this package checks.
const ID = "C9-110"

// The monitor (shared with C9-104): an answer interrupted by a logically
// earlier duplicate's answer never resumes, and answers come in PSN order
// among the requests waiting. A stream that goes on for a while after the
// earlier duplicate arrived may have been in flight, so only the active
// scenarios (which know when they sent it) bound how long it may go on.
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewOrder)) }
