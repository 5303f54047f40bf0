// Package c9_104 checks C9-104 (§9.7.5.1.4): duplicate requests are
// answered in PSN order, oldest first. C9-104 shares its meaning with
// C9-110 (the source gives the two numbers one meaning without saying
// which half each states), so both register the same passive monitor,
// dupnak.OrderJudge, under their own IDs.
package c9_104

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// ID is the clause this package checks.
const ID = "C9-104"

// The monitor (shared with C9-110): answers that name their request (READ
// response streams, ATOMIC acknowledgments) come in PSN order among the
// requests waiting for them — a logically earlier request that arrived
// first is never answered after a later one — and an answer interrupted
// by another is never resumed. See dupnak.OrderJudge for what a capture
// cannot decide.
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewOrder)) }
