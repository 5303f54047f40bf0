// Package answers is the part of a connection's reconstruction that
// follows the responder's answers: the RDMA READ requests and the
// response streams that answer them (Tracker, reads.go: C9-96, C9-97,
// C9-98, C9-100/C9-112 and C9-101 judge its events), and the count of
// completed messages behind the MSN (MSNModel, msn.go: C9-148 and C9-149
// judge it). The monitors of a connection share one of each.
//
// Everything here reasons about what a responder could have seen when it
// built each packet, not about the order of lines in a capture: a model
// that cannot decide says so (the monitors turn that into indeterminate
// verdicts with a reason), and nothing is flagged that a legal responder
// could have sent given what the trace shows.
package answers
