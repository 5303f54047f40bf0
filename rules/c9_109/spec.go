// Package c9_109 registers C9-109, whose text is not public: the suite reports
// it as text-unavailable and checks nothing under it. Its content is not
// known to the project, so no check is attributed to it and none is
// invented (docs/interpretations.md, "Text not public").
package c9_109

import "github.com/rcconform/rcconform/rules/rulekit"

// ID is the clause this package registers.
const ID = "C9-109"

var _ = rulekit.Rule(ID, func(*rulekit.R) {})
