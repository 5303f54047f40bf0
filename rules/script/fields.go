package script

import (
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// opcodes maps the script names of the RC opcodes ("SEND_ONLY",
// "WRITE_LAST_IMM", "READ_RESPONSE_FIRST", "ACK", …) to the opcodes:
// the wire's names, upper case, words joined by _, "RDMA " left out,
// "with Immediate" and "with Invalidate" shortened to IMM and INV.
var opcodes = func() map[string]wire.Opcode {
	m := map[string]wire.Opcode{}
	r := strings.NewReplacer("RDMA ", "", " with Immediate", "_IMM", " with Invalidate", "_INV", " ", "_")
	for o := wire.Opcode(0); o < 0x20; o++ {
		if info, ok := o.Info(); ok {
			m[strings.ToUpper(r.Replace(info.Name))] = o
		}
	}
	m["ACK"], m["ATOMIC_ACK"] = wire.Acknowledge, wire.AtomicAcknowledge
	return m
}()

// OpcodeName returns the script name of o.
func OpcodeName(o wire.Opcode) string {
	best := ""
	for n, x := range opcodes {
		if x == o && (best == "" || len(n) < len(best)) {
			best = n
		}
	}
	if best == "" {
		return fmt.Sprintf("0x%02x", uint8(o))
	}
	return best
}

// env is what a field's value is taken against: the connection's PSNs,
// the peer's next request PSN, and the memory region that `off` counts
// from (the device's for injected packets, the peer's for the device's).
type env struct {
	epsn, dpsn, next wire.PSN
	base             uint64
	rkey             uint32
}

func (e *env) eval(n Num) uint64 {
	switch n.Base {
	case EPSN:
		return uint64(e.epsn.Add(int(n.Off)))
	case DPSN:
		return uint64(e.dpsn.Add(int(n.Off)))
	case Next:
		return uint64(e.next.Add(int(n.Off)))
	case BadKey:
		return uint64(^e.rkey)
	}
	return uint64(n.Off)
}

// fieldDef is one field a packet line may name.
type fieldDef struct {
	hdr wire.Header // the header the opcode must carry (0: any packet)
	psn bool        // compared modulo 2^24, ranges wrapping
	max uint64
	get func(k *wire.Packet, e *env) uint64
	set func(k *wire.Packet, e *env, v uint64)
}

// syndromes are the named AETH syndromes: the value an injected packet
// carries, and the range an expected one may take.
var syndromes = map[string]struct{ inject, lo, hi uint8 }{
	"ack":        {wire.SynACK(wire.CreditInvalid), wire.SynACK(0), wire.SynACK(0x1F)},
	"rnr":        {wire.SynRNR(0), wire.SynRNR(0), wire.SynRNR(0x1F)},
	"nak":        {wire.SynNAK(0), wire.SynNAK(0), wire.SynNAK(0x1F)},
	"nak-seq":    {wire.SynNAK(wire.NAKPSNSequence), wire.SynNAK(wire.NAKPSNSequence), wire.SynNAK(wire.NAKPSNSequence)},
	"nak-inv":    {wire.SynNAK(wire.NAKInvalidRequest), wire.SynNAK(wire.NAKInvalidRequest), wire.SynNAK(wire.NAKInvalidRequest)},
	"nak-access": {wire.SynNAK(wire.NAKRemoteAccess), wire.SynNAK(wire.NAKRemoteAccess), wire.SynNAK(wire.NAKRemoteAccess)},
	"nak-op":     {wire.SynNAK(wire.NAKRemoteOp), wire.SynNAK(wire.NAKRemoteOp), wire.SynNAK(wire.NAKRemoteOp)},
}

func vaOf(k *wire.Packet) *uint64 {
	if k.Opcode.Has(wire.HdrAtomicETH) {
		return &k.Atomic.VA
	}
	return &k.RETH.VA
}

func rkeyOf(k *wire.Packet) *uint32 {
	if k.Opcode.Has(wire.HdrAtomicETH) {
		return &k.Atomic.RKey
	}
	return &k.RETH.RKey
}

const u32 = 1<<32 - 1

var fieldDefs = map[string]fieldDef{
	"psn": {psn: true, max: uint64(wire.PSNMask),
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.PSN) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.PSN = wire.PSN(v) }},
	"ackreq": {max: 1,
		get: func(k *wire.Packet, _ *env) uint64 { return b2u(k.AckReq) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.AckReq = v == 1 }},
	"se": {max: 1,
		get: func(k *wire.Packet, _ *env) uint64 { return b2u(k.SE) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.SE = v == 1 }},
	"destqp": {max: 1<<24 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.DestQP) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.DestQP = uint32(v) }},
	"pkey": {max: 1<<16 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.PKey) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.PKey = uint16(v) }},
	"len": {max: maxLen,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(len(k.Payload)) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.Payload = pattern(int(v)) }},
	"off": {hdr: wire.HdrRETH | wire.HdrAtomicETH, max: 1<<63 - 1,
		get: func(k *wire.Packet, e *env) uint64 { return *vaOf(k) - e.base },
		set: func(k *wire.Packet, e *env, v uint64) { *vaOf(k) = e.base + v }},
	"va": {hdr: wire.HdrRETH | wire.HdrAtomicETH, max: 1<<64 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return *vaOf(k) },
		set: func(k *wire.Packet, _ *env, v uint64) { *vaOf(k) = v }},
	"rkey": {hdr: wire.HdrRETH | wire.HdrAtomicETH, max: u32,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(*rkeyOf(k)) },
		set: func(k *wire.Packet, _ *env, v uint64) { *rkeyOf(k) = uint32(v) }},
	"dmalen": {hdr: wire.HdrRETH, max: u32,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.RETH.Length) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.RETH.Length = uint32(v) }},
	"imm": {hdr: wire.HdrImmDt, max: u32,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.Imm) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.Imm = uint32(v) }},
	"ieth": {hdr: wire.HdrIETH, max: u32,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.IETH) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.IETH = uint32(v) }},
	"swap": {hdr: wire.HdrAtomicETH, max: 1<<64 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return k.Atomic.SwapAdd },
		set: func(k *wire.Packet, _ *env, v uint64) { k.Atomic.SwapAdd = v }},
	"add": {hdr: wire.HdrAtomicETH, max: 1<<64 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return k.Atomic.SwapAdd },
		set: func(k *wire.Packet, _ *env, v uint64) { k.Atomic.SwapAdd = v }},
	"compare": {hdr: wire.HdrAtomicETH, max: 1<<64 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return k.Atomic.Compare },
		set: func(k *wire.Packet, _ *env, v uint64) { k.Atomic.Compare = v }},
	"syndrome": {hdr: wire.HdrAETH, max: 0xFF,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.AETH.Syndrome) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.AETH.Syndrome = uint8(v) }},
	"credit": {hdr: wire.HdrAETH, max: 0x1F,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.AETH.Value()) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.AETH.Syndrome = k.AETH.Syndrome&^0x1F | uint8(v) }},
	"msn": {hdr: wire.HdrAETH, max: 1<<24 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return uint64(k.AETH.MSN) },
		set: func(k *wire.Packet, _ *env, v uint64) { k.AETH.MSN = uint32(v) }},
	"orig": {hdr: wire.HdrAtomicAckETH, max: 1<<64 - 1,
		get: func(k *wire.Packet, _ *env) uint64 { return k.AtomicAck },
		set: func(k *wire.Packet, _ *env, v uint64) { k.AtomicAck = v }},
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// pattern is the payload of n bytes an injected packet carries with len=n.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func fieldNames() string {
	var n []string
	for k := range fieldDefs {
		n = append(n, k)
	}
	return strings.Join(sorted(append(n, "data")), ", ")
}

// packet reads a packet line's opcode(s) and fields.
func (p *parser) packet(st *Step, args []token) error {
	if len(args) == 0 {
		return p.errf(st.Col, "a packet line needs an opcode (SEND_ONLY, ACK, READ_REQUEST, …)")
	}
	op := args[0]
	if op.s == "*" && st.Kind != Inject {
		st.Ops = nil
	} else {
		for _, name := range strings.Split(op.s, "|") {
			o, ok := opcodes[strings.ToUpper(name)]
			if !ok {
				return p.errf(op.col, "unknown opcode %q (names like SEND_ONLY, WRITE_FIRST, READ_REQUEST, READ_RESPONSE_LAST, ACK, ATOMIC_ACK, CMPSWAP, FETCHADD; * for any)", name)
			}
			st.Ops = append(st.Ops, o)
		}
		if st.Kind == Inject && len(st.Ops) != 1 {
			return p.errf(op.col, "an injected packet has one opcode")
		}
	}
	seen := map[string]bool{}
	for _, t := range args[1:] {
		k, v, ok := strings.Cut(t.s, "=")
		if !ok {
			v = "1" // a bare flag: ackreq, se
		}
		vt := token{v, t.col + len(k) + 1}
		if seen[k] {
			return p.errf(t.col, "field %s given twice", k)
		}
		seen[k] = true
		f := Field{Name: k, Raw: v, Col: t.col}
		if k == "data" {
			b, err := p.hex(vt)
			if err != nil {
				return err
			}
			f.Data = b
			st.Fields = append(st.Fields, f)
			continue
		}
		def, known := fieldDefs[k]
		if !known {
			return p.errf(t.col, "unknown field %q (fields: %s)", k, fieldNames())
		}
		if !ok && def.max != 1 {
			return p.errf(t.col, "field %s needs a value (%s=…)", k, k)
		}
		if def.hdr != 0 && len(st.Ops) > 0 {
			carried := false
			for _, o := range st.Ops {
				carried = carried || o.Has(def.hdr)
			}
			if !carried {
				return p.errf(t.col, "field %s: %s carries no header with it", k, op.s)
			}
		}
		pat, err := p.pattern(vt, k, def, st.Kind == Inject)
		if err != nil {
			return err
		}
		f.Pat = pat
		st.Fields = append(st.Fields, f)
	}
	if st.Kind == Inject {
		return p.checkInject(st, op)
	}
	return nil
}

// pattern reads a field's value: for an injected packet one value, for
// an expected one also * or LO..HI.
func (p *parser) pattern(t token, name string, def fieldDef, inject bool) (Pattern, error) {
	if name == "syndrome" {
		if r, ok := syndromes[t.s]; ok {
			if inject {
				return Pattern{Lo: Num{Off: int64(r.inject)}}, nil
			}
			return Pattern{Lo: Num{Off: int64(r.lo)}, Hi: Num{Off: int64(r.hi)}, Range: r.lo != r.hi}, nil
		}
	}
	if t.s == "*" {
		if inject {
			return Pattern{}, p.errf(t.col, "an injected packet's field takes a value, not *")
		}
		return Pattern{Any: true}, nil
	}
	if name == "rkey" && t.s == "invalid" {
		if !inject {
			return Pattern{}, p.errf(t.col, "rkey=invalid is for injected packets")
		}
		return Pattern{Lo: Num{Base: BadKey}}, nil
	}
	lo, hi, isRange := strings.Cut(t.s, "..")
	if isRange && inject {
		return Pattern{}, p.errf(t.col, "an injected packet's field takes a value, not a range")
	}
	var out Pattern
	for i, s := range []string{lo, hi} {
		if i == 1 && !isRange {
			break
		}
		n, err := num(s)
		col := t.col
		if i == 1 {
			col += len(lo) + 2
		}
		switch {
		case err != nil:
			return Pattern{}, p.errf(col, "field %s: not a number (or epsn, dpsn, next with +N or -N): %q", name, s)
		case n.Base == Next && !(inject && name == "psn"):
			return Pattern{}, p.errf(col, "next is the PSN of the peer's next request: only an injected packet's psn takes it")
		case n.Base != Lit && !def.psn:
			return Pattern{}, p.errf(col, "field %s is not a PSN: it takes no %s", name, s)
		case n.Base == Lit && uint64(n.Off) > def.max && def.psn:
			return Pattern{}, p.errf(col, "impossible PSN %s: PSNs have 24 bits (0 to %d)", s, wire.PSNMask)
		case n.Base == Lit && uint64(n.Off) > def.max:
			return Pattern{}, p.errf(col, "field %s: %s is out of range (at most %d)", name, s, def.max)
		}
		if i == 0 {
			out.Lo = n
		} else {
			out.Hi, out.Range = n, true
		}
	}
	if out.Range && !def.psn && uint64(out.Lo.Off) > uint64(out.Hi.Off) {
		return Pattern{}, p.errf(t.col, "field %s: an empty range %s", name, t.s)
	}
	return out, nil
}

// checkInject checks what an injected packet needs.
func (p *parser) checkInject(st *Step, op token) error {
	o := st.Ops[0]
	has := map[string]bool{}
	for _, f := range st.Fields {
		has[f.Name] = true
	}
	if !has["psn"] && !o.IsRequest() {
		return p.errf(op.col, "psn= is needed: only requests take the peer's next PSN by default")
	}
	if has["len"] && has["data"] {
		return p.errf(op.col, "len and data both give the payload: use one")
	}
	info, _ := o.Info()
	if (has["len"] || has["data"]) && !info.Payload && !o.Has(wire.HdrRETH) {
		return p.errf(op.col, "%s carries no payload", op.s)
	}
	if has["data"] && !info.Payload {
		return p.errf(op.col, "%s carries no payload", op.s)
	}
	return nil
}

// post reads `post OP key=value…`.
func (p *parser) post(st *Step, args []token) error {
	if len(args) == 0 {
		return p.errf(st.Col, "post needs an operation (send, send-imm, send-inv, write, write-imm, read, cmpswap, fetchadd)")
	}
	ops := map[string]dut.Op{"send": dut.OpSend, "send-imm": dut.OpSendImm, "send-inv": dut.OpSendInv,
		"write": dut.OpWrite, "write-imm": dut.OpWriteImm, "read": dut.OpRead, "cmpswap": dut.OpCmpSwap, "fetchadd": dut.OpFetchAdd}
	o, ok := ops[args[0].s]
	if !ok {
		return p.errf(args[0].col, "unknown operation %q (send, send-imm, send-inv, write, write-imm, read, cmpswap, fetchadd)", args[0].s)
	}
	p.nextID++
	st.WR = dut.WR{ID: p.nextID, Op: o}
	w := &st.WR
	length := -1
	want := map[string]func(token) error{
		"id":  func(t token) error { n, err := p.uint(t, 1<<63); w.ID = n; return err },
		"off": func(t token) error { n, err := p.uint(t, maxLen); st.Off = int64(n); return err },
		"len": func(t token) error { n, err := p.uint(t, maxLen); length = int(n); return err },
		"data": func(t token) error {
			b, err := p.hex(t)
			w.Data = b
			return err
		},
		"rkey": func(t token) error { n, err := p.uint(t, u32); w.RKey = uint32(n); return err },
	}
	switch o {
	case dut.OpSendImm, dut.OpWriteImm:
		want["imm"] = func(t token) error { n, err := p.uint(t, u32); w.Imm = uint32(n); return err }
	case dut.OpSendInv:
		want["inv"] = func(t token) error { n, err := p.uint(t, u32); w.RKey = uint32(n); return err }
		delete(want, "rkey")
	case dut.OpCmpSwap:
		want["compare"] = func(t token) error { n, err := p.uint(t, 1<<64-1); w.CompareAdd = n; return err }
		want["swap"] = func(t token) error { n, err := p.uint(t, 1<<64-1); w.Swap = n; return err }
	case dut.OpFetchAdd:
		want["add"] = func(t token) error { n, err := p.uint(t, 1<<64-1); w.CompareAdd = n; return err }
	}
	if err := p.keys(args[1:], want); err != nil {
		return err
	}
	if w.Data != nil && length >= 0 {
		return p.errf(st.Col, "len and data both give the payload: use one")
	}
	switch o {
	case dut.OpRead:
		if length < 0 {
			return p.errf(st.Col, "post read needs len=")
		}
		w.Length = length
	case dut.OpCmpSwap, dut.OpFetchAdd:
		if length >= 0 || w.Data != nil {
			return p.errf(st.Col, "an ATOMIC carries no payload")
		}
	default:
		if w.Data == nil {
			w.Data = pattern(max(length, 0))
		}
	}
	return nil
}

// completion reads `completion [recv] [id=N] [status=S] [op=OP]
// [bytes=N] [imm=N] [within T]`.
func (p *parser) completion(st *Step, args []token) error {
	args, err := p.bounds(st, args)
	if err != nil {
		return err
	}
	if st.NotBefore.Set {
		return p.errf(st.Col, "completion takes only a within bound")
	}
	if len(args) > 0 && args[0].s == "recv" {
		st.Recv, args = true, args[1:]
	}
	hasID := false
	statuses := map[string]dut.Status{"success": dut.StatusSuccess, "retry-exceeded": dut.StatusRetryExceeded,
		"rnr-retry-exceeded": dut.StatusRNRRetryExceeded, "remote-access-error": dut.StatusRemoteAccessError,
		"remote-invalid-request": dut.StatusRemoteInvalidRequest, "remote-operational-error": dut.StatusRemoteOperationalError,
		"flushed": dut.StatusFlushed, "local-error": dut.StatusLocalError}
	ops := map[string]dut.Op{"send": dut.OpSend, "send-imm": dut.OpSendImm, "send-inv": dut.OpSendInv,
		"write": dut.OpWrite, "write-imm": dut.OpWriteImm, "read": dut.OpRead, "cmpswap": dut.OpCmpSwap, "fetchadd": dut.OpFetchAdd}
	err = p.keys(args, map[string]func(token) error{
		"id": func(t token) error { n, err := p.uint(t, 1<<63); st.WR.ID, hasID = n, true; return err },
		"status": func(t token) error {
			s, ok := statuses[t.s]
			if !ok {
				var names []string
				for n := range statuses {
					names = append(names, n)
				}
				return p.errf(t.col, "unknown status %q (%s)", t.s, strings.Join(sorted(names), ", "))
			}
			st.Status, st.HasStatus = s, true
			return nil
		},
		"op": func(t token) error {
			o, ok := ops[t.s]
			if !ok {
				return p.errf(t.col, "unknown operation %q", t.s)
			}
			st.WR.Op, st.HasOp = o, true
			return nil
		},
		"bytes": func(t token) error { n, err := p.uint(t, maxLen); st.Bytes, st.HasByte = int(n), true; return err },
		"imm":   func(t token) error { n, err := p.uint(t, u32); st.WR.Imm, st.HasImm = uint32(n), true; return err },
	})
	if err != nil {
		return err
	}
	if !hasID && !st.Recv {
		return p.errf(st.Col, "a send completion names its work request: id=N (or completion recv …)")
	}
	if hasID && st.Recv {
		return p.errf(st.Col, "receive completions are matched in order, not by id")
	}
	return nil
}
