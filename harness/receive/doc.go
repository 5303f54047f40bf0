// Package receive is the part of a connection's reconstruction that
// follows the responder's receive side for the duplicate and NAK clauses
// (§9.7.5.1.4 duplicates, §9.7.5.1.5 NAKs, §9.7.5.2 NAK PSNs, Table 58):
// what it expected and how it classified each request (read from
// harness.Conn's window), the NAK latch, the requests that were
// duplicates when they arrived, and the READ and ATOMIC requests waiting
// for an answer (new or duplicate) with the response streams that answer
// them (Tracker, model.go; answers.go).
//
// The model reasons about what a responder could have seen when it built
// each response, never about the order of lines in a trace. A request is
// seen at the capture point before the responder receives it, and a
// response is built before it is seen, so a response may be seen after
// requests the responder had not yet received when it built it. The model
// therefore keeps, for the next response, the window of expected PSNs the
// responder could have had when building it: from the point the latest
// response proves the responder had reached, to every request seen since.
//
// Exact judgments are made only on complete traces (active runs, or
// captures audited with --complete), where every request seen reached the
// responder in the order seen and nothing was missed, and only once a
// positive response has confirmed where the responder's expected PSN
// stood. Elsewhere the model keeps only a lower bound on the expected PSN
// (from positive responses) and the monitors flag only what that bound
// alone proves, reporting indeterminate otherwise.
package receive
