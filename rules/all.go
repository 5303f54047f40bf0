package rules

// The rule packages of the harness issue; the other groups' imports are
// in all_*.go. Importing them registers their monitors and specs.
import (
	_ "github.com/rcconform/rcconform/rules/c9_116"
	_ "github.com/rcconform/rcconform/rules/c9_95"
	_ "github.com/rcconform/rcconform/rules/o9_66"
)
