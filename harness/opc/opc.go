// Package opc answers the questions the monitors ask about RC opcodes on
// every packet (is it a request, which class, which headers) from a table
// built once from package wire: the same answers as wire.Opcode's methods,
// for every opcode value, at the cost of one load.
package opc

import "github.com/rcconform/rcconform/wire"

type facts struct {
	class    wire.Class
	position wire.Position
	headers  wire.Header
	request  bool
	response bool
	starts   bool
	ends     bool
}

var table = func() (t [256]facts) {
	for i := range t {
		o := wire.Opcode(i)
		info, _ := o.Info()
		t[i] = facts{
			class:    o.Class(),
			position: o.Position(),
			headers:  info.Headers,
			request:  o.IsRequest(),
			response: o.IsResponse(),
			starts:   o.StartsMessage(),
			ends:     o.EndsMessage(),
		}
	}
	return t
}()

// IsRequest is o.IsRequest().
func IsRequest(o wire.Opcode) bool { return table[o].request }

// IsResponse is o.IsResponse().
func IsResponse(o wire.Opcode) bool { return table[o].response }

// Class is o.Class().
func Class(o wire.Opcode) wire.Class { return table[o].class }

// Position is o.Position().
func Position(o wire.Opcode) wire.Position { return table[o].position }

// Has is o.Has(h).
func Has(o wire.Opcode, h wire.Header) bool { return table[o].headers&h != 0 }

// StartsMessage is o.StartsMessage().
func StartsMessage(o wire.Opcode) bool { return table[o].starts }

// EndsMessage is o.EndsMessage().
func EndsMessage(o wire.Opcode) bool { return table[o].ends }
