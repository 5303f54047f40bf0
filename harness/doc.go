// Package harness is what rule specs and the capture audit use: the
// per-connection model that passive monitors read (Conn, with the one
// reconstruction of each connection in recon.go: READ spans, the
// responder's expected PSN and the requests it dropped, whether the trace
// shows the connection's start, and each sender's own order by its IPv4
// Identification; in evidence.go, what consecutive Identifications prove
// about loss), the monitor registry and the one-pass audit of a
// trace, the findings and per-clause tallies that become verdicts, the
// ladder diagrams of failure messages, and the peer (stimulus builders
// and expectations on the device's clock) that active specs drive a
// device with.
package harness
