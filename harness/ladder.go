package harness

import (
	"fmt"

	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// Rungs converts records to ladder rungs, highlighting hi.
func Rungs(recs []*trace.Record, hi *trace.Record, frames bool) []reports.Rung {
	out := make([]reports.Rung, 0, len(recs))
	for _, r := range recs {
		out = append(out, Rung(r, r == hi, frames))
	}
	return out
}

// Rung converts one record to a ladder rung.
func Rung(r *trace.Record, highlight, frames bool) reports.Rung {
	p := r.Packet
	g := reports.Rung{TimeNS: int64(r.Time), Dir: r.Dir.String(), Opcode: p.Opcode.ShortName(),
		PSN: uint32(p.PSN), AckReq: p.AckReq, QP: p.DestQP, Highlight: highlight, Note: r.Note}
	if frames {
		g.Frame = r.Frame
	}
	if p.Opcode.Has(wire.HdrAETH) {
		g.Syndrome = p.AETH.String()
		m := p.AETH.MSN
		g.MSN = &m
	}
	if p.Opcode.Has(wire.HdrAtomicAckETH) {
		g.Note = joinNote(g.Note, fmt.Sprintf("orig=0x%x", p.AtomicAck))
	}
	if p.Opcode.Has(wire.HdrRETH) {
		g.Note = joinNote(g.Note, fmt.Sprintf("len=%d", p.RETH.Length))
	}
	return g
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Ladder renders records as a text ladder for failure messages.
func Ladder(recs []*trace.Record, hi *trace.Record, frames bool) string {
	return reports.LadderText(Rungs(recs, hi, frames))
}
