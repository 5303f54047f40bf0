package reference

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/wire"
)

// rstep is one exchange with a responder: what the test does, how long
// it waits, and the exact packets the QP must send meanwhile.
type rstep struct {
	act  func(p *peer)
	wait time.Duration // default 100 µs
	want []want
}

type rcase struct {
	name  string
	cfg   func(c *Config)
	setup func(p *peer)
	steps []rstep
	after func(t *testing.T, p *peer)
}

func sendAll(pk ...wire.Packet) func(p *peer) {
	return func(p *peer) {
		for _, x := range pk {
			p.send(x)
		}
	}
}

func (c rcase) run(t *testing.T) *peer {
	t.Helper()
	p := newPeer(t, c.cfg)
	if c.setup != nil {
		c.setup(p)
	}
	for i, s := range c.steps {
		if s.act != nil {
			s.act(p)
		}
		d := s.wait
		if d == 0 {
			d = 100 * time.Microsecond
		}
		got := p.run(d)
		if s.want != nil {
			if t.Failed() {
				break
			}
			expectStep(t, i, got, s.want)
		}
	}
	if c.after != nil && !t.Failed() {
		c.after(t, p)
	}
	return p
}

func expectStep(t *testing.T, step int, got []*wire.Packet, ws []want) {
	t.Helper()
	sub := &stepT{TB: t, step: step}
	expect(sub, got, ws...)
}

type stepT struct {
	testing.TB
	step int
}

func (s *stepT) Errorf(format string, args ...any) {
	s.TB.Helper()
	s.TB.Errorf("step %d: "+format, append([]any{s.step}, args...)...)
}

const e = wire.PSN(100) // the peer QP's first expected PSN

func postRecvs(n, size int) func(p *peer) {
	return func(p *peer) {
		for i := 0; i < n; i++ {
			p.qp.PostRecv(uint64(i+1), size)
		}
	}
}

func none() []want { return []want{} }

func TestResponder(t *testing.T) {
	M := 1024
	cases := []rcase{
		{
			name:  "ack only on AckReq (C9-95, C9-116)",
			setup: postRecvs(8, 4096),
			steps: []rstep{
				{act: sendAll(sendOnly(e, false)), want: none()},
				{act: sendAll(sendOnly(e+1, false), sendOnly(e+2, true)), want: []want{w(wire.Acknowledge, e+2, int(wire.SynACK(wire.CreditCode(5))), 3)}},
			},
		},
		{
			name:  "multi-packet SEND acknowledged at its Last",
			setup: postRecvs(2, 4096),
			steps: []rstep{
				{act: sendAll(pkt(wire.SendFirst, e, false, buf(M, 1)), pkt(wire.SendMiddle, e+1, false, buf(M, 2)),
					pkt(wire.SendLast, e+2, true, buf(10, 3))), want: []want{ackW(e+2, 1)}},
			},
			after: func(t *testing.T, p *peer) {
				cs := p.qp.PollCQ()
				if len(cs) != 1 || cs[0].Bytes != 2*M+10 || !cs[0].Recv {
					t.Errorf("completions %+v", cs)
				}
				want := append(append(buf(M, 1), buf(M, 2)...), buf(10, 3)...)
				if !bytes.Equal(p.qp.RecvData(1), want) {
					t.Errorf("received data differs")
				}
			},
		},
		{
			name:  "ack every N",
			cfg:   func(c *Config) { c.AckPolicy, c.AckEveryN = AckEveryN, 3 },
			setup: postRecvs(8, 4096),
			steps: []rstep{
				{act: sendAll(sendOnly(e, false), sendOnly(e+1, false)), want: none()},
				{act: sendAll(sendOnly(e+2, false)), want: []want{ackW(e+2, 3)}},
				{act: sendAll(sendOnly(e+3, true)), want: []want{ackW(e+3, 4)}},
			},
		},
		{
			name:  "ack after a coalescing delay",
			cfg:   func(c *Config) { c.AckPolicy, c.AckDelay = AckAfterDelay, 20*time.Microsecond },
			setup: postRecvs(8, 4096),
			steps: []rstep{
				{act: sendAll(sendOnly(e, false), sendOnly(e+1, false)), wait: 15 * time.Microsecond, want: none()},
				{wait: 20 * time.Microsecond, want: []want{ackW(e+1, 2)}},
			},
		},
		{
			name: "READ responses, MSN at validation (C9-96, C9-97, C9-98, C9-148)",
			setup: func(p *peer) {
				copy(p.mr.Bytes(), buf(1<<14, 9))
			},
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, 0)) }, want: []want{{op: wire.ReadResponseOnly, psn: e, syn: anyACK, msn: 1, paylen: 0}}},
				{act: func(p *peer) { p.send(p.read(e+1, 0, 1)) }, want: []want{{op: wire.ReadResponseOnly, psn: e + 1, syn: anyACK, msn: 2, paylen: 1}}},
				{act: func(p *peer) { p.send(p.read(e+2, 0, uint32(M))) }, want: []want{{op: wire.ReadResponseOnly, psn: e + 2, syn: anyACK, msn: 3, paylen: M}}},
				{act: func(p *peer) { p.send(p.read(e+3, 5, uint32(M+1))) }, want: []want{
					{op: wire.ReadResponseFirst, psn: e + 3, syn: anyACK, msn: 4, paylen: M},
					{op: wire.ReadResponseLast, psn: e + 4, syn: anyACK, msn: 4, paylen: 1}}},
				{act: func(p *peer) { p.send(p.read(e+5, 0, uint32(3*M))) }, want: []want{
					w(wire.ReadResponseFirst, e+5, anyACK, 5), w(wire.ReadResponseMiddle, e+6, -1, -1), w(wire.ReadResponseLast, e+7, anyACK, 5)}},
			},
			after: func(t *testing.T, p *peer) {
				g := p.got
				if !bytes.Equal(g[1].Payload, buf(1<<14, 9)[:1]) || !bytes.Equal(g[3].Payload, buf(1<<14, 9)[5:5+M]) ||
					!bytes.Equal(g[4].Payload, buf(1<<14, 9)[5+M:5+M+1]) {
					t.Errorf("READ payloads differ from memory")
				}
			},
		},
		{
			name: "READ responses, MSN after the last response (C9-148)",
			cfg:  func(c *Config) { c.MSNAtReadEnd = true },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(3*M))) }, want: []want{
					w(wire.ReadResponseFirst, e, anyACK, 0), w(wire.ReadResponseMiddle, e+1, -1, -1), w(wire.ReadResponseLast, e+2, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.read(e+3, 0, 8)) }, want: []want{w(wire.ReadResponseOnly, e+3, anyACK, 2)}},
			},
		},
		{
			name: "READ across the PSN wrap",
			cfg:  func(c *Config) { c.ExpectedPSN = 0xFFFFFE },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(0xFFFFFE, 0, uint32(4*M))) }, want: []want{
					w(wire.ReadResponseFirst, 0xFFFFFE, anyACK, 1), w(wire.ReadResponseMiddle, 0xFFFFFF, -1, -1),
					w(wire.ReadResponseMiddle, 0, -1, -1), w(wire.ReadResponseLast, 1, anyACK, 1)}},
				{act: sendAll(wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, PSN: 2, AckReq: true}}), want: []want{ackW(2, 2)}},
			},
		},
		{
			name: "ATOMIC acknowledgments (o9-58)",
			setup: func(p *peer) {
				binary.LittleEndian.PutUint64(p.mr.Bytes()[8:], 5)
				binary.LittleEndian.PutUint64(p.mr.Bytes()[16:], 40)
			},
			steps: []rstep{
				{act: func(p *peer) { p.send(p.atomic(wire.CompareSwap, e, 8, 77, 5)) }, want: []want{w(wire.AtomicAcknowledge, e, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.atomic(wire.CompareSwap, e+1, 8, 99, 5)) }, want: []want{w(wire.AtomicAcknowledge, e+1, anyACK, 2)}},
				{act: func(p *peer) { p.send(p.atomic(wire.FetchAdd, e+2, 16, 2, 0)) }, want: []want{w(wire.AtomicAcknowledge, e+2, anyACK, 3)}},
			},
			after: func(t *testing.T, p *peer) {
				if p.got[0].AtomicAck != 5 || p.got[1].AtomicAck != 77 || p.got[2].AtomicAck != 40 {
					t.Errorf("original values %d %d %d", p.got[0].AtomicAck, p.got[1].AtomicAck, p.got[2].AtomicAck)
				}
				if v := binary.LittleEndian.Uint64(p.mr.Bytes()[8:]); v != 77 {
					t.Errorf("CmpSwap target %d, want 77", v)
				}
				if v := binary.LittleEndian.Uint64(p.mr.Bytes()[16:]); v != 42 {
					t.Errorf("FetchAdd target %d, want 42", v)
				}
			},
		},
		{
			name: "the NAK latch (C9-114, C9-122) and a duplicate under it (C9-105)",
			setup: func(p *peer) {
				postRecvs(8, 64)(p)
			},
			steps: []rstep{
				{act: sendAll(sendOnly(e, true)), want: []want{ackW(e, 1)}},
				{act: sendAll(sendOnly(e+2, true), sendOnly(e+3, true), sendOnly(e+4, true)), want: []want{nakW(e+1, wire.NAKPSNSequence, 1)}},
				{act: sendAll(sendOnly(e, true)), want: []want{ackW(e, 1)}},
				{act: sendAll(sendOnly(e+3, true)), want: none()},
				{act: sendAll(sendOnly(e+1, false), sendOnly(e+2, true)), want: []want{ackW(e+2, 3)}},
				{act: sendAll(sendOnly(e+4, true)), want: []want{nakW(e+3, wire.NAKPSNSequence, 3)}},
			},
			after: func(t *testing.T, p *peer) {
				if n := len(p.qp.PollCQ()); n != 3 {
					t.Errorf("%d receive completions, want 3", n)
				}
			},
		},
		{
			name:  "a duplicate never moves the expected PSN (C9-103)",
			setup: postRecvs(16, 64),
			steps: []rstep{
				{act: sendAll(sendOnly(e, false), sendOnly(e+1, false), sendOnly(e+2, false), sendOnly(e+3, false), sendOnly(e+4, true)), want: []want{ackW(e+4, 5)}},
				{act: sendAll(sendOnly(e+2, false)), want: []want{ackW(e+4, 5)}},
				{act: sendAll(sendOnly(e+6, true)), want: []want{nakW(e+5, wire.NAKPSNSequence, 5)}},
				{act: sendAll(sendOnly(e+5, true)), want: []want{ackW(e+5, 6)}},
			},
		},
		{
			name:  "duplicate SEND: the ACK carries the newest completed PSN, no re-execution (C9-105)",
			setup: postRecvs(16, 64),
			steps: []rstep{
				{act: sendAll(sendOnly(e, false), sendOnly(e+1, false), sendOnly(e+2, false), sendOnly(e+3, false), sendOnly(e+4, false), sendOnly(e+5, true)), want: []want{ackW(e+5, 6)}},
				{act: func(p *peer) { p.qp.PollCQ(); p.send(sendOnly(e+2, true)) }, want: []want{ackW(e+5, 6)}},
			},
			after: func(t *testing.T, p *peer) {
				if cs := p.qp.PollCQ(); len(cs) != 0 {
					t.Errorf("the duplicate was executed again: %+v", cs)
				}
			},
		},
		{
			name: "duplicate READ executed again, full and partial (C9-107)",
			setup: func(p *peer) {
				copy(p.mr.Bytes(), buf(8*M, 1))
			},
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(4*M))) }, want: []want{
					w(wire.ReadResponseFirst, e, anyACK, 1), w(wire.ReadResponseMiddle, e+1, -1, -1), w(wire.ReadResponseMiddle, e+2, -1, -1), w(wire.ReadResponseLast, e+3, anyACK, 1)}},
				{act: func(p *peer) { copy(p.mr.Bytes(), buf(8*M, 50)); p.send(p.read(e, 0, uint32(4*M))) }, want: []want{
					w(wire.ReadResponseFirst, e, anyACK, 1), w(wire.ReadResponseMiddle, e+1, -1, -1), w(wire.ReadResponseMiddle, e+2, -1, -1), w(wire.ReadResponseLast, e+3, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.read(e+2, uint64(2*M), uint32(2*M))) }, want: []want{
					w(wire.ReadResponseFirst, e+2, anyACK, 1), w(wire.ReadResponseLast, e+3, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.read(e+3, uint64(3*M), uint32(M))) }, want: []want{w(wire.ReadResponseOnly, e+3, anyACK, 1)}},
			},
			after: func(t *testing.T, p *peer) {
				if !bytes.Equal(p.got[4].Payload, buf(8*M, 50)[:M]) {
					t.Errorf("the replay did not read memory again")
				}
				if !bytes.Equal(p.got[9].Payload, buf(8*M, 50)[3*M:4*M]) {
					t.Errorf("partial replay data")
				}
				if p.qp.ExpectedPSN() != e+4 {
					t.Errorf("expected PSN %d", p.qp.ExpectedPSN())
				}
			},
		},
		{
			name: "an error on a duplicate READ is a silent drop (C9-106, C9-115)",
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(2*M))) }, want: []want{w(wire.ReadResponseFirst, e, anyACK, 1), w(wire.ReadResponseLast, e+1, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(3*M))) }, want: none()},             // RETH beyond the original
				{act: func(p *peer) { p.send(p.read(e+1, uint64(M)+8, uint32(M-8))) }, want: none()}, // VA not at the PSN's offset
				{act: func(p *peer) { p.mr.Invalidate(); p.send(p.read(e, 0, uint32(2*M))) }, want: none()},
				{act: sendAll(wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, PSN: e + 2, AckReq: true}}), want: []want{ackW(e+2, 2)}},
			},
			after: func(t *testing.T, p *peer) {
				if p.qp.State() != dut.StateRTS {
					t.Errorf("state %v", p.qp.State())
				}
			},
		},
		{
			name: "duplicate ATOMIC replays the saved value (o9-66) or is dropped (o9-67)",
			cfg:  func(c *Config) { c.MaxDestRdAtomic = 2 },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0)) }, want: []want{w(wire.AtomicAcknowledge, e, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0)) }, want: []want{w(wire.AtomicAcknowledge, e, anyACK, 1)}},
				{act: func(p *peer) {
					p.send(p.atomic(wire.FetchAdd, e+1, 0, 1, 0))
					p.send(p.atomic(wire.FetchAdd, e+2, 0, 1, 0))
				},
					want: []want{w(wire.AtomicAcknowledge, e+1, anyACK, 2), w(wire.AtomicAcknowledge, e+2, anyACK, 3)}},
				{act: func(p *peer) { p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0)) }, want: none()},
			},
			after: func(t *testing.T, p *peer) {
				if p.got[0].AtomicAck != 0 || p.got[1].AtomicAck != 0 || p.got[3].AtomicAck != 2 {
					t.Errorf("original values %d %d %d", p.got[0].AtomicAck, p.got[1].AtomicAck, p.got[3].AtomicAck)
				}
				if v := binary.LittleEndian.Uint64(p.mr.Bytes()); v != 3 {
					t.Errorf("counter %d, want 3", v)
				}
			},
		},
		{
			name: "an older duplicate preempts a streaming answer (C9-104, C9-110)",
			cfg:  func(c *Config) { c.PacketGap = time.Microsecond },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(4*M))); p.send(p.read(e+4, 0, uint32(8*M))) }},
				{act: func(p *peer) { p.send(p.read(e+4, 0, uint32(8*M))) }, wait: 4500 * time.Nanosecond, want: []want{
					w(wire.ReadResponseFirst, e+4, anyACK, 2), w(wire.ReadResponseMiddle, e+5, -1, -1), w(wire.ReadResponseMiddle, e+6, -1, -1)}},
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(4*M))) }, want: []want{
					// on the wire before the older duplicate arrived; the rest of B is never sent
					w(wire.ReadResponseMiddle, e+7, -1, -1), w(wire.ReadResponseMiddle, e+8, -1, -1),
					w(wire.ReadResponseFirst, e, anyACK, 2), w(wire.ReadResponseMiddle, e+1, -1, -1), w(wire.ReadResponseMiddle, e+2, -1, -1), w(wire.ReadResponseLast, e+3, anyACK, 2)}},
			},
		},
		{
			name: "an ACK waits for a preempted READ to be answered again (C9-101 after C9-110)",
			cfg:  func(c *Config) { c.PacketGap = time.Microsecond },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, 8)) }, want: []want{w(wire.ReadResponseOnly, e, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.read(e+1, 0, uint32(4*M))) }, wait: 2500 * time.Nanosecond, want: []want{w(wire.ReadResponseFirst, e+1, anyACK, 2)}},
				{act: func(p *peer) { p.send(p.read(e, 0, 8)) }, want: []want{
					w(wire.ReadResponseMiddle, e+2, -1, -1), w(wire.ReadResponseMiddle, e+3, -1, -1), w(wire.ReadResponseOnly, e, anyACK, 2)}},
				{act: func(p *peer) { p.send(p.write(wire.WriteOnly, e+5, true, 0, 4, []byte("abcd"))) }, want: none()},
				{act: func(p *peer) { p.send(p.read(e+4, uint64(3*M), uint32(M))) }, want: []want{
					w(wire.ReadResponseOnly, e+4, anyACK, 3), ackW(e+5, 3)}}, // a replay carries the current MSN
			},
		},
		{
			name: "no READ resources at all (Table 58)",
			cfg:  func(c *Config) { c.MaxDestRdAtomic = 0 },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, 8)) }, want: []want{nakW(e, wire.NAKInvalidRequest, 0)}},
			},
		},
		{
			name: "duplicates waiting are answered oldest first (C9-104)",
			cfg:  func(c *Config) { c.ResponseDelay = 10 * time.Microsecond },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, 8)); p.send(p.read(e+1, 0, 8)); p.send(p.read(e+2, 0, 8)) }},
				{act: func(p *peer) { p.send(p.read(e+2, 0, 8)); p.send(p.read(e+1, 0, 8)); p.send(p.read(e, 0, 8)) }, want: []want{
					w(wire.ReadResponseOnly, e, anyACK, 3), w(wire.ReadResponseOnly, e+1, anyACK, 3), w(wire.ReadResponseOnly, e+2, anyACK, 3)}},
			},
		},
		{
			name: "no ACK overtakes a READ response (C9-101)",
			setup: func(p *peer) {
				p.qp.cfg.PacketGap = time.Microsecond
			},
			steps: []rstep{
				{act: func(p *peer) {
					p.send(p.read(e, 0, uint32(6*M)))
					p.send(p.write(wire.WriteOnly, e+6, true, 0, 4, []byte("abcd")))
				}, want: []want{
					w(wire.ReadResponseFirst, e, anyACK, 1), w(wire.ReadResponseMiddle, e+1, -1, -1), w(wire.ReadResponseMiddle, e+2, -1, -1),
					w(wire.ReadResponseMiddle, e+3, -1, -1), w(wire.ReadResponseMiddle, e+4, -1, -1), w(wire.ReadResponseLast, e+5, anyACK, 1),
					ackW(e+6, 2)}},
			},
		},
		{
			name:  "sequence, RNR and invalid-request NAKs carry the MSN (C9-149)",
			setup: postRecvs(2, 64),
			steps: []rstep{
				{act: sendAll(sendOnly(e, false), sendOnly(e+1, true)), want: []want{ackW(e+1, 2)}},
				{act: sendAll(sendOnly(e+3, true)), want: []want{nakW(e+2, wire.NAKPSNSequence, 2)}},
				{act: sendAll(sendOnly(e+2, true)), want: []want{w(wire.Acknowledge, e+2, int(wire.SynRNR(12)), 2)}},
				{act: sendAll(pkt(wire.SendMiddle, e+2, true, buf(M, 0))), want: []want{nakW(e+2, wire.NAKInvalidRequest, 2)}},
			},
			after: func(t *testing.T, p *peer) {
				if p.qp.State() != dut.StateError {
					t.Errorf("state %v after an invalid request, want ERROR", p.qp.State())
				}
			},
		},
		{
			name: "RNR NAK: the refused request's PSN, the First of a multi-packet SEND (C9-113)",
			cfg:  func(c *Config) { c.MinRNRTimer = 7 },
			steps: []rstep{
				{act: sendAll(pkt(wire.SendFirst, e, false, buf(M, 0)), pkt(wire.SendMiddle, e+1, false, buf(M, 0)), pkt(wire.SendLast, e+2, true, buf(1, 0))),
					want: []want{w(wire.Acknowledge, e, int(wire.SynRNR(7)), 0)}},
				{act: func(p *peer) {
					p.qp.PostRecv(1, 4096)
					sendAll(pkt(wire.SendFirst, e, false, buf(M, 0)), pkt(wire.SendMiddle, e+1, false, buf(M, 0)), pkt(wire.SendLast, e+2, true, buf(1, 0)))(p)
				}, want: []want{w(wire.Acknowledge, e+2, int(wire.SynACK(0)), 1)}},
			},
		},
		{
			name: "RNR NAK for a WRITE with immediate",
			steps: []rstep{
				{act: func(p *peer) { p.send(p.write(wire.WriteOnlyImm, e, true, 0, 4, []byte("abcd"))) }, want: []want{w(wire.Acknowledge, e, int(wire.SynRNR(12)), 0)}},
			},
		},
		{
			name: "invalid request: Middle with no First, NAK with the expected PSN (C9-111, C9-125)",
			steps: []rstep{
				{act: sendAll(pkt(wire.WriteMiddle, e, true, buf(M, 0))), want: []want{nakW(e, wire.NAKInvalidRequest, 0)}},
				{act: sendAll(sendOnly(e, true)), want: none()},
			},
		},
		{
			name: "invalid request: an ATOMIC to a QP without remote atomics",
			cfg:  func(c *Config) { c.RemoteAtomic = false },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.atomic(wire.FetchAdd, e, 0, 1, 0)) }, want: []want{nakW(e, wire.NAKInvalidRequest, 0)}},
			},
		},
		{
			name: "invalid request: a misaligned ATOMIC",
			steps: []rstep{
				{act: func(p *peer) { p.send(p.atomic(wire.FetchAdd, e, 4, 1, 0)) }, want: []want{nakW(e, wire.NAKInvalidRequest, 0)}},
			},
		},
		{
			name: "remote access: WRITE with a bad R_Key (C9-124)",
			steps: []rstep{
				{act: func(p *peer) {
					pk := p.write(wire.WriteOnly, e, true, 0, 4, []byte("abcd"))
					pk.RETH.RKey++
					p.send(pk)
				}, want: []want{nakW(e, wire.NAKRemoteAccess, 0)}},
			},
			after: func(t *testing.T, p *peer) {
				if p.qp.State() != dut.StateError {
					t.Errorf("state %v", p.qp.State())
				}
			},
		},
		{
			name: "remote access: the 3rd packet of a WRITE overruns the region; NAK with its PSN (C9-124)",
			steps: []rstep{
				{act: func(p *peer) {
					off := uint64(p.mr.Len() - 2*M - 10)
					p.send(p.write(wire.WriteFirst, e, false, off, 4*M, buf(M, 0)))
					p.send(pkt(wire.WriteMiddle, e+1, false, buf(M, 0)))
					p.send(pkt(wire.WriteMiddle, e+2, false, buf(M, 0)))
					p.send(pkt(wire.WriteLast, e+3, true, buf(M, 0)))
				}, want: []want{nakW(e+2, wire.NAKRemoteAccess, 0)}},
			},
		},
		{
			name: "remote access: READ beyond the region",
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, uint64(p.mr.Len()-10), 11)) }, want: []want{nakW(e, wire.NAKRemoteAccess, 0)}},
			},
		},
		{
			name: "zero-length READ and WRITE need no valid R_Key",
			steps: []rstep{
				{act: func(p *peer) {
					p.send(wire.Packet{BTH: wire.BTH{Opcode: wire.ReadRequest, PSN: e}, RETH: wire.RETH{VA: 1, RKey: 0xdead}})
					p.send(wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, PSN: e + 1, AckReq: true}, RETH: wire.RETH{VA: 1, RKey: 0xdead}})
				}, want: []want{{op: wire.ReadResponseOnly, psn: e, syn: anyACK, msn: 1, paylen: 0}, ackW(e+1, 2)}},
			},
		},
		{
			name:  "remote operational error: a SEND longer than the receive buffer",
			setup: postRecvs(1, 100),
			steps: []rstep{
				{act: sendAll(pkt(wire.SendOnly, e, true, buf(101, 0))), want: []want{nakW(e, wire.NAKRemoteOp, 0)}},
			},
			after: func(t *testing.T, p *peer) {
				cs := p.qp.PollCQ()
				if len(cs) != 1 || cs[0].Status != dut.StatusLocalError || p.qp.State() != dut.StateError {
					t.Errorf("completions %+v, state %v", cs, p.qp.State())
				}
			},
		},
		{
			name: "a READ failing mid-stream: Acknowledge NAK with the refused packet's PSN (C9-100, C9-112, C9-113.a1)",
			cfg:  func(c *Config) { c.PacketGap = time.Microsecond },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, uint32(8*M))) }, wait: 3500 * time.Nanosecond, want: []want{
					w(wire.ReadResponseFirst, e, anyACK, 1), w(wire.ReadResponseMiddle, e+1, -1, -1)}},
				{act: func(p *peer) { p.mr.Invalidate() }, want: []want{w(wire.ReadResponseMiddle, e+2, -1, -1), nakW(e+3, wire.NAKRemoteAccess, 1)}},
			},
			after: func(t *testing.T, p *peer) {
				if p.qp.State() != dut.StateError {
					t.Errorf("state %v", p.qp.State())
				}
			},
		},
		{
			name: "too many outstanding READs: NAK invalid request with the expected PSN, then ERROR (Table 58)",
			cfg:  func(c *Config) { c.MaxDestRdAtomic, c.PacketGap = 2, time.Microsecond },
			steps: []rstep{
				{act: func(p *peer) {
					p.send(p.read(e, 0, uint32(4*M)))
					p.send(p.read(e+4, 0, uint32(4*M)))
					p.send(p.read(e+8, 0, uint32(4*M)))
				}, want: []want{
					w(wire.ReadResponseFirst, e, anyACK, 1), w(wire.ReadResponseMiddle, e+1, -1, -1), w(wire.ReadResponseMiddle, e+2, -1, -1), w(wire.ReadResponseLast, e+3, anyACK, 1),
					w(wire.ReadResponseFirst, e+4, anyACK, 2), w(wire.ReadResponseMiddle, e+5, -1, -1), w(wire.ReadResponseMiddle, e+6, -1, -1), w(wire.ReadResponseLast, e+7, anyACK, 2),
					nakW(e+8, wire.NAKInvalidRequest, 2)}},
			},
			after: func(t *testing.T, p *peer) {
				if p.qp.State() != dut.StateError {
					t.Errorf("state %v", p.qp.State())
				}
			},
		},
		{
			name: "READs within the responder resources once earlier ones are answered",
			cfg:  func(c *Config) { c.MaxDestRdAtomic = 1 },
			steps: []rstep{
				{act: func(p *peer) { p.send(p.read(e, 0, 8)) }, want: []want{w(wire.ReadResponseOnly, e, anyACK, 1)}},
				{act: func(p *peer) { p.send(p.read(e+1, 0, 8)) }, want: []want{w(wire.ReadResponseOnly, e+1, anyACK, 2)}},
			},
		},
		{
			name: "credits follow the posted receive WQEs (C9-150.2.1)",
			setup: func(p *peer) {
				postRecvs(5, 64)(p)
			},
			steps: []rstep{
				{act: sendAll(sendOnly(e, true)), want: []want{w(wire.Acknowledge, e, int(wire.CreditCode(4)), 1)}},
				{act: sendAll(sendOnly(e+1, true)), want: []want{w(wire.Acknowledge, e+1, int(wire.CreditCode(3)), 2)}},
				{act: func(p *peer) { p.send(p.read(e+2, 0, 4)) }, want: []want{w(wire.ReadResponseOnly, e+2, int(wire.CreditCode(3)), 3)}},
				{act: sendAll(sendOnly(e+3, true)), want: []want{w(wire.Acknowledge, e+3, int(wire.CreditCode(2)), 4)}},
				{act: sendAll(sendOnly(e+4, true)), want: []want{w(wire.Acknowledge, e+4, int(wire.CreditCode(1)), 5)}},
				{act: sendAll(sendOnly(e+5, true)), want: []want{w(wire.Acknowledge, e+5, 0, 6)}},
				{act: sendAll(sendOnly(e+6, true)), want: []want{w(wire.Acknowledge, e+6, int(wire.SynRNR(12)), 6)}},
			},
		},
		{
			name:  "unsolicited ACK: the latest ACK again with the new credits (§9.7.7.2)",
			cfg:   func(c *Config) { c.UnsolicitedACK = true },
			setup: postRecvs(1, 64),
			steps: []rstep{
				{act: func(p *peer) { p.qp.PostRecv(9, 64) }, want: none()}, // nothing acknowledged yet
				{act: sendAll(sendOnly(e, false), sendOnly(e+1, true)), want: []want{w(wire.Acknowledge, e+1, 0, 2)}},
				{act: func(p *peer) { p.qp.PostRecv(10, 64); p.qp.PostRecv(11, 64); p.qp.PostRecv(12, 64) },
					want: []want{w(wire.Acknowledge, e+1, int(wire.CreditCode(3)), 2)}},
			},
		},
		{
			name: "an SRQ QP sends credit code 0x1F (o9-95.2.2)",
			cfg:  func(c *Config) { c.SRQ = NewSRQ() },
			setup: func(p *peer) {
				postRecvs(5, 64)(p)
			},
			steps: []rstep{
				{act: sendAll(sendOnly(e, true)), want: []want{w(wire.Acknowledge, e, int(wire.CreditInvalid), 1)}},
			},
		},
		{
			name: "SEND with invalidate invalidates the R_Key",
			setup: func(p *peer) {
				postRecvs(2, 64)(p)
			},
			steps: []rstep{
				{act: func(p *peer) {
					pk := pkt(wire.SendOnlyInvalidate, e, true, []byte("x"))
					pk.IETH = p.mr.RKey
					p.send(pk)
				}, want: []want{ackW(e, 1)}},
				{act: func(p *peer) { p.send(p.read(e+1, 0, 4)) }, want: []want{nakW(e+1, wire.NAKRemoteAccess, 1)}},
			},
		},
		{
			name: "ERROR sends nothing more",
			setup: func(p *peer) {
				postRecvs(2, 64)(p)
				p.qp.Modify(dut.StateError)
			},
			steps: []rstep{
				{act: sendAll(sendOnly(e, true)), want: none()},
			},
			after: func(t *testing.T, p *peer) {
				cs := p.qp.PollCQ()
				if len(cs) != 2 || cs[0].Status != dut.StatusFlushed {
					t.Errorf("flushed completions %+v", cs)
				}
			},
		},
		{
			name: "IPv6",
			cfg: func(c *Config) {
				c.LocalIP, c.RemoteIP = mustAddr("fd00::1"), mustAddr("fd00::2")
			},
			setup: postRecvs(1, 64),
			steps: []rstep{
				{act: sendAll(sendOnly(e, true)), want: []want{ackW(e, 1)}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t) })
	}
}
