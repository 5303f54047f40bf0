package answers_test

import (
	"github.com/rcconform/rcconform/harness"
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

// active returns the settings of an active run at mtu.
func active(mtu int) harness.Settings {
	s := harness.UnknownSettings()
	s.Active, s.MTU, s.SRQ = true, mtu, harness.SRQNone
	return s
}

// capture returns the settings of a capture audit: nothing known but mtu
// (0 unknown).
func capture(mtu int) harness.Settings {
	s := harness.UnknownSettings()
	s.MTU = mtu
	return s
}
