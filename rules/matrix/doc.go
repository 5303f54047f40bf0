// Package matrix holds the defect matrix: a test that runs the rule suite
// against the clean reference transport, in several configurations of the
// choices the specification leaves open, and against every defect in the
// reference's catalogue, and checks that the clean runs pass every clause
// and that each defect fails the clauses it names.
package matrix
