// Package harness is what rule specs and the capture audit use.
//
// Passive monitors (monitor.go) read the per-connection model (conn.go)
// and its reconstruction: the READ spans (reads.go), the responder's
// expected PSN, the requests it dropped and where the connection began
// (responder.go), the copies a network or capture made (copies.go), and
// what the capture's own evidence proves (evidence.go: each sender's
// IPv4 Identifications, loss, the reordering bound); an instance a later
// record decides waits on the connection (await.go). Subpackages hold
// the parts of the reconstruction that monitors share beyond it:
// harness/answers, the READ answer streams and the MSN count;
// harness/receive, the responder's NAK latch, duplicates and answers owed;
// harness/retries, the requester's request stream and retry episodes;
// harness/opc, the opcode facts every model asks. The one-pass audit
// pairs records into connections (pairing.go, reorder.go, restart.go,
// shard.go); findings and per-clause tallies become verdicts (tally.go),
// with ladder diagrams for failure messages (ladder.go). Active specs
// drive a device through the peer (peer.go, window.go: stimulus builders
// and expectations on the device's clock).
package harness
