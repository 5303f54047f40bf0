// Package metamorphic holds the metamorphic tests of the capture audit:
// real and reference traces are transformed as an independent capture
// could show them (frames lost, the capture started or stopped
// mid-connection, frames recorded twice, two captures merged, coarse
// timestamps, a short snapshot length), and the audit of the transformed
// trace may fail no clause the original does not fail. The original wire
// explains the transformed trace, violating only the original's failing
// clauses, so any new failing clause is a false violation, unless its
// finding names one of those among the clauses one of which the trace
// breaks (the transform took away what told which).
package metamorphic
