// Package c9_111 checks C9-111 (§9.7.5.1.5): a NAK for a PSN sequence
// error or for an invalid request carries the responder's expected PSN in
// its BTH, so the requester knows where to resume. C9-111, C9-121 and
// C9-125 share this meaning; taking C9-111 as the general rule (both
// codes) and C9-121 (sequence error) and C9-125 (invalid request) as its
// cases is inferred. The three register the same passive monitor,
// dupnak.NAKPSNJudge, for their codes.
package c9_111

import (
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/wire"
)

// ID is the clause this package checks.
const ID = "C9-111"

// The monitor: every NAK with code 0 or 1 names an expected PSN the
// responder could have had when it built it (complete traces), or at
// least is not behind a PSN it had already acknowledged (other traces).
func init() {
	harness.RegisterMonitor(dupnak.Monitor(ID, dupnak.NewNAKPSN(wire.NAKPSNSequence, wire.NAKInvalidRequest)))
}
