package rules

// The rule packages of the requester retry and RNR group: C9-140 and the
// requester rules keyed by section or topic (no public clause number).
// Importing them registers their monitors and specs.
import (
	_ "github.com/rcconform/rcconform/rules/c9_140"
	_ "github.com/rcconform/rcconform/rules/go_back_n"
	_ "github.com/rcconform/rcconform/rules/retry_counter"
	_ "github.com/rcconform/rcconform/rules/rnr_retry"
	_ "github.com/rcconform/rcconform/rules/s9_7_5_1_2"
	_ "github.com/rcconform/rcconform/rules/s9_9_2_2"
)
