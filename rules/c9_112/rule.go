// Package c9_112 checks C9-112 (§9.7.5.1.5): when an RDMA READ fails after
// some of its response packets went out, the responder sends none of the
// faulty data; the packet that would have carried it goes out instead as an
// Acknowledge (opcode 0x11) with a NAK syndrome, carrying that packet's PSN,
// and no more of the response follows. The specification's Response
// Generation text gives C9-112 and C9-100 this one meaning without saying
// which number states which part, so both clauses are checked by the same
// monitor (rules/internal/responses) and by the same scenarios; rules/c9_100
// is the other.
package c9_112

import "github.com/rcconform/rcconform/rules/internal/responses"

// ID is the clause this package checks.
const ID = "C9-112"

func init() { responses.RegisterMidStreamMonitor(ID) }
