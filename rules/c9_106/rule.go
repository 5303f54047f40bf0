// Package c9_106 checks C9-106 (§9.7.5.1.4): if the responder meets an
// error while answering a duplicate request, it sends no NAK; it drops the
// duplicate silently, because a NAK about an old request could be taken
// for a NAK about a new one. C9-106 shares its meaning with C9-115 (which
// clause states which part is not known), so both register the same
// passive monitor, dupnak.DupErrorJudge, under their own IDs.
package c9_106

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// ID is the clause this package checks.
const ID = "C9-106"

// The monitor (shared with C9-115) flags an invalid-request, remote-access
// or remote-operational NAK about a duplicate: one naming a duplicate's
// PSN that the responder had already passed whenever it could have built
// the NAK, or falling inside a duplicate READ's replay. A mid-stream
// failure of a new READ is C9-100's case, a NAK for a duplicate ATOMIC
// o9-67's. A capture cannot tell why a duplicate went unanswered.
func init() { harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewDupError)) }
