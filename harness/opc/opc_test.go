package opc

import (
	"testing"

	"github.com/rcconform/rcconform/wire"
)

// TestSameAsWire: every answer is wire's, for every opcode value and
// every header.
func TestSameAsWire(t *testing.T) {
	for i := range 256 {
		o := wire.Opcode(i)
		if IsRequest(o) != o.IsRequest() || IsResponse(o) != o.IsResponse() || Class(o) != o.Class() ||
			Position(o) != o.Position() || StartsMessage(o) != o.StartsMessage() || EndsMessage(o) != o.EndsMessage() {
			t.Errorf("opcode 0x%02x: the table differs from wire", i)
		}
		for h := range 256 {
			if Has(o, wire.Header(h)) != o.Has(wire.Header(h)) {
				t.Errorf("opcode 0x%02x, header set 0x%02x: Has differs from wire", i, h)
			}
		}
	}
}
