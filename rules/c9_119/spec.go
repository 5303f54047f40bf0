// Package c9_119 registers C9-119, whose text is not public: the suite reports
// it as text-unavailable and checks nothing under it. Its content is not
// known to the project, so no check is attributed to it and none is
// invented (docs/interpretations.md, "Text not public").
//
// The AETH format facts that the specification's Response Generation text
// states for §9.7.5.2 without a clause number (syndrome bit 7 reserved and
// zero, syndrome kind 10 reserved, NAK codes 4–31 reserved on RC) are checked
// under the section key §9.7.5.2 (rules/s9_7_5_2), never under C9-119.
package c9_119

import "github.com/rcconform/rcconform/rules/rulekit"

// ID is the clause this package registers.
const ID = "C9-119"

var _ = rulekit.Rule(ID, func(*rulekit.R) {})
