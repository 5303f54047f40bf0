package rules

// The rule packages, one per clause; importing them registers their
// monitors and specs.
import (
	_ "github.com/rcconform/rcconform/rules/c9_95"
)
