// Package traces holds the test of the suite's --traces: every scenario's
// trace saved as one annotated pcapng file, read back with wire/capture
// and held to what crossed the reference's link and to the run's result.
package traces
