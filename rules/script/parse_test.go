package script

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// TestParseErrors: every bad script gets an error naming the file, the
// line and the column, and saying what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line, col  int
		want       string
	}{
		{"unknown field", "< SEND_ONLY lenn=4\n> ACK psn=1 [C9-95]", 1, 13, `unknown field "lenn"`},
		{"field the opcode lacks", "< SEND_ONLY len=4\n> ACK psn=1 rkey=5 [C9-95]", 2, 13, "ACK carries no header"},
		{"impossible PSN", "< SEND_ONLY psn=16777216\n> ACK psn=1 [C9-95]", 1, 17, "impossible PSN 16777216"},
		{"impossible PSN in a range", "< SEND_ONLY\n> ACK psn=1..99999999 [C9-95]", 2, 14, "impossible PSN 99999999"},
		{"impossible start PSN", "qp epsn=0x1000000\n> ACK [C9-95]", 1, 9, "impossible PSN"},
		{"unknown clause", "< SEND_ONLY\n> ACK psn=1 [C9-999]", 2, 13, `no clause "C9-999"`},
		{"clause without text", "< SEND_ONLY\n> ACK psn=1 [C9-99]", 2, 13, "not public"},
		{"bound that cannot hold", "< SEND_ONLY\n> ACK not-before 5ms within 2ms [C9-95]", 2, 1, "cannot hold"},
		{"absolute bound before the line", "< SEND_ONLY\n@10ms > ACK within @2ms [C9-95]", 2, 1, "cannot hold"},
		{"check without a clause", "< SEND_ONLY\n> ACK psn=1", 2, 1, "stands for no clause"},
		{"tagged injection", "< SEND_ONLY [C9-95]\n> ACK [C9-95]", 1, 1, "only checks stand for a clause"},
		{"unknown opcode", "< SEND_ONY\n> ACK [C9-95]", 1, 3, `unknown opcode "SEND_ONY"`},
		{"unknown command", "send it\n> ACK [C9-95]", 1, 1, `unknown command "send"`},
		{"bad duration", "< SEND_ONLY\n> ACK within 5parsecs [C9-95]", 2, 14, "not a duration"},
		{"bad time prefix", "@soon < SEND_ONLY\n> ACK [C9-95]", 1, 2, "not a duration"},
		{"response without PSN", "< ACK\n> ACK [C9-95]", 1, 3, "psn= is needed"},
		{"range injected", "< SEND_ONLY psn=1..4\n> ACK [C9-95]", 1, 17, "not a range"},
		{"next in an expectation", "< SEND_ONLY\n> ACK psn=next [C9-95]", 2, 11, "only an injected packet's psn"},
		{"PSN base on a non-PSN", "< SEND_ONLY\n> ACK msn=epsn [C9-95]", 2, 11, "not a PSN"},
		{"value out of range", "< SEND_ONLY\n> ACK msn=16777216 [C9-95]", 2, 11, "out of range"},
		{"empty range", "< SEND_ONLY\n> ACK msn=5..3 [C9-95]", 2, 11, "empty range"},
		{"unknown qp setting", "qp mtu=1024 speed=fast\n> ACK [C9-95]", 1, 13, `unknown qp setting "speed"`},
		{"bad MTU", "qp mtu=1000\n> ACK [C9-95]", 1, 8, "not a path MTU"},
		{"qp after a step", "< SEND_ONLY\nqp mtu=1024\n> ACK [C9-95]", 2, 1, "before the first step"},
		{"two qp lines", "qp mtu=1024\nqp mtu=512\n> ACK [C9-95]", 2, 1, "one qp line"},
		{"bad side", "side middle\n> ACK [C9-95]", 1, 1, "requester or responder"},
		{"unknown state", "state DEAD [§9.9.2.2]", 1, 7, `unknown QP state "DEAD"`},
		{"unknown status", "completion id=1 status=oops [§9.9.2.2]", 1, 24, `unknown status "oops"`},
		{"completion without id", "completion status=success [§9.9.2.2]", 1, 1, "id=N"},
		{"read without len", "post read id=1\n> ACK [C9-95]", 1, 1, "post read needs len="},
		{"unknown post argument", "post send id=1 colour=red\n> ACK [C9-95]", 1, 16, `unknown argument "colour=red"`},
		{"bad hex", "mem-write off=0 data=xyz\n> ACK [C9-95]", 1, 22, "not hex"},
		{"malformed tag", "< SEND_ONLY\n> ACK [C9-95\n", 2, 7, "clause tag"},
		{"tag in the middle", "< SEND_ONLY\n> ACK [C9-95] psn=1", 2, 7, "clause tag"},
		{"only setup checks", "< SEND_ONLY\n> ACK [setup C9-95]", 1, 1, "checks nothing"},
		{"empty", "# nothing\n", 1, 1, "no steps"},
		{"nothing with not-before", "> nothing not-before 1ms [C9-95]", 1, 1, "only a within bound"},
		{"invalid R_Key expected", "< SEND_ONLY\n> READ_REQUEST rkey=invalid [C9-95]", 2, 21, "for injected packets"},
		{"field twice", "< SEND_ONLY len=1 len=2\n> ACK [C9-95]", 1, 19, "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.rcs", tc.text)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a parse error", err)
			}
			if pe.File != "t.rcs" || pe.Line != tc.line || pe.Col != tc.col || !strings.Contains(pe.Msg, tc.want) {
				t.Errorf("got %q, want t.rcs:%d:%d: …%s…", err, tc.line, tc.col, tc.want)
			}
		})
	}
}

// TestParse reads each kind of line into the step it stands for.
func TestParse(t *testing.T) {
	s, err := Parse("t.rcs", `
side requester              # the device requests
qp mtu=512 epsn=10 dpsn=0xFFFFFE timeout=10 retry=3 srq=yes recv=none mem=64K rd-atomic=2
clause go-back-n
post send id=7 len=100
+1ms > SEND_FIRST|SEND_ONLY psn=dpsn..dpsn+2 len=* not-before 4ms within @20ms
>> * psn=dpsn [trigger C9-140]
< ACK psn=dpsn+1 syndrome=rnr credit=3 msn=1
> nothing within 2ms [setup retry-counter]
completion id=7 status=retry-exceeded within 50ms [retry-counter]
state ERROR
wait 1ms
`)
	if err != nil {
		t.Fatal(err)
	}
	want := dut.ConnConfig{MTU: 512, ExpectedPSN: 10, DevicePSN: 0xFFFFFE, SetPSNs: true, SetRetry: true,
		Timeout: 10, RetryCnt: 3, RNRRetry: 7, MinRNRTimer: 12, SRQ: true, RecvWQEs: -1, MemorySize: 64 << 10, MaxDestRdAtomic: 2}
	if !s.DeviceIsRequester || s.Config != want {
		t.Errorf("config %+v (requester %v), want %+v", s.Config, s.DeviceIsRequester, want)
	}
	if len(s.Steps) != 8 {
		t.Fatalf("%d steps, want 8", len(s.Steps))
	}
	post, exp, any, ack, nothing, cq, st, wait := s.Steps[0], s.Steps[1], s.Steps[2], s.Steps[3], s.Steps[4], s.Steps[5], s.Steps[6], s.Steps[7]
	if post.Kind != Post || post.WR.ID != 7 || post.WR.Op != dut.OpSend || len(post.WR.Data) != 100 {
		t.Errorf("post: %+v", post)
	}
	if exp.Kind != Expect || !exp.Strict || len(exp.Ops) != 2 || exp.Clause != "go-back-n" || exp.Role != Check ||
		exp.At != (Time{Set: true, D: time.Millisecond}) || exp.NotBefore != (Time{Set: true, D: 4 * time.Millisecond}) ||
		exp.Within != (Time{Set: true, Abs: true, D: 20 * time.Millisecond}) {
		t.Errorf("expect: %+v", exp)
	}
	if f := exp.Fields[0]; f.Name != "psn" || !f.Pat.Range || f.Pat.Lo != (Num{Base: DPSN}) || f.Pat.Hi != (Num{Base: DPSN, Off: 2}) {
		t.Errorf("psn range: %+v", f)
	}
	if !exp.Fields[1].Pat.Any {
		t.Errorf("len=*: %+v", exp.Fields[1])
	}
	if any.Strict || any.Ops != nil || any.Role != Trigger || any.Clause != "C9-140" {
		t.Errorf(">> *: %+v", any)
	}
	if ack.Kind != Inject || ack.Ops[0] != wire.Acknowledge || len(ack.Fields) != 4 {
		t.Errorf("inject: %+v", ack)
	}
	if nothing.Kind != Nothing || nothing.Role != Setup || nothing.Clause != "retry-counter" || nothing.Within.D != 2*time.Millisecond {
		t.Errorf("nothing: %+v", nothing)
	}
	if cq.Kind != Completion || cq.WR.ID != 7 || !cq.HasStatus || cq.Status != dut.StatusRetryExceeded || cq.Within.D != 50*time.Millisecond {
		t.Errorf("completion: %+v", cq)
	}
	if st.Kind != State || st.QPState != dut.StateError || st.Clause != "go-back-n" || st.Within.D != DefaultWithin {
		t.Errorf("state: %+v", st)
	}
	if wait.Kind != Wait || wait.Wait != time.Millisecond {
		t.Errorf("wait: %+v", wait)
	}
	if got := s.Clauses(); strings.Join(got, ",") != "go-back-n,retry-counter" {
		t.Errorf("clauses %v", got)
	}
	if got := s.Governing(); strings.Join(got, ",") != "go-back-n,retry-counter,C9-140" {
		t.Errorf("governing %v", got)
	}
}

// TestOpcodeNames: every RC opcode has a script name, and the names
// read back to it.
func TestOpcodeNames(t *testing.T) {
	for o := wire.Opcode(0); o < 0x20; o++ {
		if !o.Known() {
			continue
		}
		if got := opcodes[OpcodeName(o)]; got != o {
			t.Errorf("%v: name %q reads back as %v", o, OpcodeName(o), got)
		}
	}
	for name, o := range map[string]wire.Opcode{"SEND_LAST_IMM": wire.Opcode(0x03), "WRITE_ONLY_IMM": wire.Opcode(0x0B),
		"SEND_ONLY_INV": wire.Opcode(0x17), "READ_RESPONSE_MIDDLE": wire.Opcode(0x0E), "ACK": wire.Acknowledge, "FETCHADD": wire.Opcode(0x14)} {
		if opcodes[name] != o {
			t.Errorf("%s is %v, want %v", name, opcodes[name], o)
		}
	}
}

// FuzzParse: any text is parsed or refused with a positioned error,
// never a panic; a parsed script names at least one clause it checks.
func FuzzParse(f *testing.F) {
	f.Add("qp mtu=1024 epsn=1000\nclause C9-95\n< SEND_ONLY len=64 ackreq\n>> ACK syndrome=ack psn=1000 within 100ms\n")
	f.Add("side requester\nqp dpsn=5 timeout=10\npost send id=1 len=32\n> SEND_ONLY psn=5 [trigger]\n> SEND_ONLY psn=5 not-before 4ms within @20ms [C9-140]\n< ACK psn=5 msn=1\ncompletion id=1 status=success [setup]\nstate RTS [§9.9.2.2]\n")
	f.Add("< READ_REQUEST len=3000\n> READ_RESPONSE_FIRST|READ_RESPONSE_ONLY psn=epsn..epsn+2 len=* data=00ff [C9-96]\n> nothing ACK within 1ms [C9-116]\n")
	f.Add("mem-write off=0 data=0011\n< FETCHADD psn=next+1 add=3\nmem-expect off=0 data=0011 [o9-66]\n@5ms wait 1ms\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse("f.rcs", text)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Col < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if len(s.Clauses()) == 0 {
			t.Fatalf("a parsed script that checks no clause")
		}
		s.Needs()
	})
}

// TestSyndromePatterns: each named syndrome of an expectation matches
// the syndromes it stands for and no other; an injected one carries its
// value.
func TestSyndromePatterns(t *testing.T) {
	all := []uint8{wire.SynACK(0), wire.SynACK(5), wire.SynACK(wire.CreditInvalid), wire.SynRNR(0), wire.SynRNR(12),
		wire.SynNAK(wire.NAKPSNSequence), wire.SynNAK(wire.NAKInvalidRequest), wire.SynNAK(wire.NAKRemoteAccess), wire.SynNAK(wire.NAKRemoteOp)}
	for name, want := range map[string][]uint8{
		"ack":        all[:3],
		"rnr":        all[3:5],
		"nak":        all[5:],
		"nak-seq":    all[5:6],
		"nak-inv":    all[6:7],
		"nak-access": all[7:8],
		"nak-op":     all[8:9],
		"0x62":       all[7:8],
	} {
		s, err := Parse("t.rcs", "> ACK syndrome="+name+" [C9-95]\n")
		if err != nil {
			t.Fatal(err)
		}
		r := &runner{}
		for _, syn := range all {
			k := &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge}, AETH: wire.AETH{Syndrome: syn}}
			if got, exp := r.match(s.Steps[0], k), contains(want, syn); got != exp {
				t.Errorf("syndrome=%s on %s: match %v, want %v", name, wire.SyndromeString(syn), got, exp)
			}
		}
	}
	s, err := Parse("t.rcs", "< ACK psn=1 syndrome=rnr credit=12\n< ACK psn=1 syndrome=nak-access\n> ACK [C9-95]\n")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{}
	for i, want := range []uint8{wire.SynRNR(12), wire.SynNAK(wire.NAKRemoteAccess)} {
		k := &wire.Packet{BTH: wire.BTH{Opcode: wire.Acknowledge}}
		if r.fill(k, s.Steps[i]); k.AETH.Syndrome != want {
			t.Errorf("injected line %d: syndrome %s, want %s", i+1, wire.SyndromeString(k.AETH.Syndrome), wire.SyndromeString(want))
		}
	}
}

func contains(s []uint8, v uint8) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestNeeds: what a script needs of the adapter follows from its lines.
func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		text                                      string
		postWR, completions, memory, atomics, srq bool
	}{
		{"< SEND_ONLY\n> ACK [C9-95]", false, false, false, false, false},
		{"post send len=1\n> SEND_ONLY [go-back-n]", true, false, false, false, false},
		{"post-recv\ncompletion recv [C9-95]", true, true, false, false, false},
		{"mem-write off=0 data=00\nmem-expect off=0 data=00 [C9-105]", false, false, true, false, false},
		{"< FETCHADD\n> ATOMIC_ACK [o9-58]", false, false, false, true, false},
		{"qp atomics=no\n< FETCHADD\n> ACK syndrome=nak-inv [C9-125]", false, false, false, false, false},
		{"qp srq=yes\n< SEND_ONLY\n> ACK [o9-95.2.2]", false, false, false, false, true},
	} {
		s, err := Parse("t.rcs", tc.text)
		if err != nil {
			t.Fatal(err)
		}
		n, cfg := s.Needs()
		if n.PostWR != tc.postWR || n.Completions != tc.completions || n.Memory != tc.memory || n.Atomics != tc.atomics ||
			cfg.Atomics != tc.atomics || n.SRQ != tc.srq {
			t.Errorf("%q: needs %+v, atomics granted %v", tc.text, n, cfg.Atomics)
		}
	}
}

// TestSixtyFourBitOperands: ATOMIC operands and original values take all
// 64 bits (a capture's CmpSwap returns such values), ranges of them too.
func TestSixtyFourBitOperands(t *testing.T) {
	s, err := Parse("t.rcs", "< CMPSWAP off=0 compare=18446744073709551615 swap=0x8000000000000000\n> ATOMIC_ACK orig=0x8000000000000000..18446744073709551615 [o9-58]\n")
	if err != nil {
		t.Fatal(err)
	}
	f := map[string]Pattern{}
	for _, st := range s.Steps {
		for _, x := range st.Fields {
			f[x.Name] = x.Pat
		}
	}
	if uint64(f["compare"].Lo.Off) != 1<<64-1 || uint64(f["swap"].Lo.Off) != 1<<63 || uint64(f["orig"].Hi.Off) != 1<<64-1 || !f["orig"].Range {
		t.Errorf("fields %+v", f)
	}
	if _, err := Parse("t.rcs", "< CMPSWAP off=0\n> ATOMIC_ACK orig=18446744073709551615..1 [o9-58]\n"); err == nil || !strings.Contains(err.Error(), "empty range") {
		t.Errorf("a range from 2^64-1 down to 1: %v, want an empty range", err)
	}
}
