package rulekit

import "github.com/onsi/ginkgo/v2"

// IndeterminatePrefix starts the skip message of an active scenario that
// ran but could not decide its clause; see Indeterminate.
const IndeterminatePrefix = "indeterminate: "

// Indeterminate ends an active scenario as indeterminate with reason: it
// ran, but what happened cannot decide the clause either way (for
// example, on a real clock the device finished before the harness's
// stimulus could reach it). The clause is indeterminate unless another
// scenario decides it.
func Indeterminate(reason string) {
	ginkgo.Skip(IndeterminatePrefix + reason)
}
