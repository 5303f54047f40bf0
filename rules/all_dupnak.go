package rules

// The "duplicates and NAKs" group: §9.7.5.1.4 duplicates, §9.7.5.1.5 and
// §9.7.5.2 NAKs, and Table 58. Importing the packages registers their
// passive monitors and specs; their shared model and monitors are in
// rules/internal/dupnak.
import (
	_ "github.com/rcconform/rcconform/rules/c9_103"
	_ "github.com/rcconform/rcconform/rules/c9_104"
	_ "github.com/rcconform/rcconform/rules/c9_105"
	_ "github.com/rcconform/rcconform/rules/c9_106"
	_ "github.com/rcconform/rcconform/rules/c9_107"
	_ "github.com/rcconform/rcconform/rules/c9_110"
	_ "github.com/rcconform/rcconform/rules/c9_111"
	_ "github.com/rcconform/rcconform/rules/c9_113"
	_ "github.com/rcconform/rcconform/rules/c9_114"
	_ "github.com/rcconform/rcconform/rules/c9_115"
	_ "github.com/rcconform/rcconform/rules/c9_121"
	_ "github.com/rcconform/rcconform/rules/c9_122"
	_ "github.com/rcconform/rcconform/rules/c9_124"
	_ "github.com/rcconform/rcconform/rules/c9_125"
	_ "github.com/rcconform/rcconform/rules/o9_67"
	_ "github.com/rcconform/rcconform/rules/s9_7_5_1_5"
	_ "github.com/rcconform/rcconform/rules/table_58"
)
