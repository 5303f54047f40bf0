// Package verdicts holds cross-clause tests of the passive monitors:
// hand-built traces (harness/harnesstest) run through every registered
// monitor at once, each expected to fail exactly the clause it breaks and
// no other, with a clean counterpart that fails nothing.
package verdicts
