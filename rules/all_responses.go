package rules

// The "responses" group: response PSNs, READ response format and
// ordering, NAK format, MSN generation, end-to-end credits and the AETH
// format (§9.7.5.1.1, §9.7.5.1.3, §9.7.5.1.5, §9.7.5.2, §9.7.7.1,
// §9.7.7.2), plus the clauses of those sections whose text is not public.
import (
	_ "github.com/rcconform/rcconform/rules/c9_100"
	_ "github.com/rcconform/rcconform/rules/c9_101"
	_ "github.com/rcconform/rcconform/rules/c9_102"
	_ "github.com/rcconform/rcconform/rules/c9_108"
	_ "github.com/rcconform/rcconform/rules/c9_109"
	_ "github.com/rcconform/rcconform/rules/c9_112"
	_ "github.com/rcconform/rcconform/rules/c9_113_a1"
	_ "github.com/rcconform/rcconform/rules/c9_117"
	_ "github.com/rcconform/rcconform/rules/c9_118"
	_ "github.com/rcconform/rcconform/rules/c9_119"
	_ "github.com/rcconform/rcconform/rules/c9_120"
	_ "github.com/rcconform/rcconform/rules/c9_123"
	_ "github.com/rcconform/rcconform/rules/c9_126"
	_ "github.com/rcconform/rcconform/rules/c9_148"
	_ "github.com/rcconform/rcconform/rules/c9_149"
	_ "github.com/rcconform/rcconform/rules/c9_150_2_1"
	_ "github.com/rcconform/rcconform/rules/c9_96"
	_ "github.com/rcconform/rcconform/rules/c9_97"
	_ "github.com/rcconform/rcconform/rules/c9_98"
	_ "github.com/rcconform/rcconform/rules/c9_99"
	_ "github.com/rcconform/rcconform/rules/o9_58"
	_ "github.com/rcconform/rcconform/rules/o9_95_2_2"
	_ "github.com/rcconform/rcconform/rules/s9_7_5_2"
	_ "github.com/rcconform/rcconform/rules/s9_7_7_2"
)
