// Package responses holds what the "responses" group of rules shares:
// the model of RDMA READ requests and the response streams that answer
// them (C9-96, C9-97, C9-98, C9-100/C9-112, C9-101), the model of message
// completions behind the MSN (C9-148, C9-149), the passive monitor that
// C9-100 and C9-112 share (one meaning, two clause numbers), and helpers
// the group's active scenarios use.
//
// Everything here reasons about what a responder could have seen when it
// built each packet, not about the order of lines in a capture: a model
// that cannot decide says so (the monitors turn that into indeterminate
// verdicts with a reason), and nothing is flagged that a legal responder
// could have sent given what the trace shows.
package responses
