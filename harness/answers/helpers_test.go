package answers_test

import (
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// resp adds a response with an AETH (syn, msn) carrying n payload bytes.
func resp(t *ht.Trace, op wire.Opcode, psn wire.PSN, syn uint8, msn uint32, n int) *trace.Record {
	r := t.Resp(op, psn, syn, msn)
	r.Packet.Payload = make([]byte, n)
	r.PayloadLen = n
	return r
}
