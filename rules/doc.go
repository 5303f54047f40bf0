// Package rules is the conformance suite: one sub-package per clause
// (rules/c9_95, rules/c9_116, …) holding the clause's passive monitor and
// its Ginkgo spec file, all imported by the one suite in this folder.
//
// Run it with `go tool ginkgo run ./rules` (the reference DUT), or with
// flags after `--`: --dut, --defect, --capture, --seed, --junit, --json.
// A vendor can import this package's rule packages into their own Ginkgo
// tree and register their own adapter (see package dut).
package rules
