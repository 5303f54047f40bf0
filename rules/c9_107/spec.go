package c9_107

import (
	"bytes"
	"fmt"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/dupnak"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// C9-107, in our words: a duplicate READ is carried out again — memory is
// read anew and the response starts at the duplicate's PSN — while the
// responder still holds the original READ's resources.
//
// Each scenario completes a READ, has the device change the memory it
// read, and replays the READ: whole (from its PSN) or in part (from a
// later response PSN, with the RETH moved and shortened to match, as a
// requester retrying the missing part does). The replay must carry the
// new data, in exactly the packets the duplicate's length needs, numbered
// from the duplicate's PSN, opcodes First … Last (or Only) as for a new
// READ (the opcodes of a partial replay are the project's reading:
// docs/interpretations.md, "Opcodes of a partial READ replay").

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	type tc struct {
		mtu     int
		length  func(m int) int
		lname   string
		from    int // replay from this response packet (0: whole)
		start   wire.PSN
		earlier int // READs completed after the original, before its replay
	}
	lengths := []struct {
		name string
		f    func(m int) int
	}{
		{"0 bytes", func(int) int { return 0 }},
		{"1 byte", func(int) int { return 1 }},
		{"one MTU", func(m int) int { return m }},
		{"one MTU + 1", func(m int) int { return m + 1 }},
		{"4 MTUs", func(m int) int { return 4 * m }},
		{"16 MTUs - 3", func(m int) int { return 16*m - 3 }},
	}
	var cases []tc
	psn := wire.PSN(100)
	for _, m := range dupnak.MTUs {
		for _, l := range lengths {
			cases = append(cases, tc{m, l.f, l.name, 0, psn, 0})
			psn = psn.Add(1000)
		}
		cases = append(cases,
			tc{m, lengths[4].f, lengths[4].name, 2, psn, 0},
			tc{m, lengths[5].f, lengths[5].name, 15, psn.Add(500), 0},
			tc{m, lengths[3].f, lengths[3].name, 1, psn.Add(700), 0})
		psn = psn.Add(1000)
	}
	cases = append(cases,
		tc{1024, lengths[4].f, lengths[4].name, 0, 0xFFFFFE, 0},
		tc{256, lengths[5].f, lengths[5].name, 3, 0xFFFFF8, 0},
		tc{512, lengths[4].f, lengths[4].name, 0, 9000, 3},
		tc{2048, lengths[4].f, lengths[4].name, 1, 9500, 2},
	)
	for _, c := range cases {
		c := c
		what := "the whole READ"
		if c.from > 0 {
			what = fmt.Sprintf("the READ from its response packet %d", c.from)
		}
		name := fmt.Sprintf("a duplicate of a %s READ replays %s with fresh data (MTU %d, PSNs from %d", c.lname, what, c.mtu, c.start)
		if c.earlier > 0 {
			name += fmt.Sprintf(", %d READs in between", c.earlier)
		}
		r.Active(name+")", rulekit.Scenario{Config: dupnak.Cfg(c.mtu, c.start), Needs: rulekit.Needs{Memory: true}},
			func(p *harness.Peer) {
				m := p.MTU()
				length := c.length(m)
				const off = 8192
				dupnak.SetMemory(p, off, dupnak.Pattern(0x11, length))
				orig := dupnak.CompleteRead(p, length, off)
				for i := 0; i < c.earlier; i++ {
					dupnak.CompleteRead(p, 2*m, 65536+4*m*i)
				}
				fresh := dupnak.Pattern(0x80, length)
				dupnak.SetMemory(p, off, fresh)
				d := dupnak.Dup(orig, true)
				d.PSN = d.PSN.Add(c.from)
				d.RETH.VA += uint64(c.from * m)
				d.RETH.Length -= uint32(c.from * m)
				p.Send(d)
				replay(p, d, fresh[c.from*m:])
				dupnak.Alive(p, "the connection goes on after the replay")
			})
	}
})

// replay expects the answer to duplicate READ d: packets from d's PSN, as
// many as its length needs, opcodes First … Last or Only, carrying want.
func replay(p *harness.Peer, d *wire.Packet, want []byte) {
	m := p.MTU()
	n := wire.ReadResponsePackets(d.RETH.Length, m)
	last := d.PSN.Add(n - 1)
	desc := fmt.Sprintf("the duplicate READ at PSN %d replayed: %d packet(s), PSNs %s", d.PSN, n, dupnak.PSNRange(d.PSN, n))
	end, skipped := p.Expect(desc, dupnak.Liveness, func(k *wire.Packet) bool {
		return k.Opcode == wire.Acknowledge && !k.AETH.IsACK() ||
			k.Opcode.Class() == wire.ClassReadResponse && k.PSN == last && k.Opcode.EndsMessage()
	})
	if k := end.Packet; k.Opcode == wire.Acknowledge {
		p.Fail([]string{desc}, k.String(), end)
	}
	var got []*trace.Record
	for _, r := range append(skipped, end) {
		if r.Packet.Opcode.Class() == wire.ClassReadResponse {
			got = append(got, r)
		}
	}
	if len(got) != n {
		p.Fail([]string{desc}, fmt.Sprintf("%d READ response packets", len(got)), end)
	}
	for i, r := range got {
		k := r.Packet
		wantOp := wire.ReadResponseOp(i, n)
		if k.PSN != d.PSN.Add(i) || k.Opcode != wantOp {
			// Responses to new READs that already break the opcode
			// rules make it C9-97's or C9-98's finding, not a replay's.
			if c := dupnak.ReadOpcodeClause(p); c != "" && k.PSN == d.PSN.Add(i) {
				p.Setup(c, "the device's READ responses open with a First and close with a Last", func() {
					p.Fail([]string{fmt.Sprintf("%s with PSN %d (packet %d of the replay, which starts at the duplicate's PSN)", wantOp, d.PSN.Add(i), i+1)}, k.String(), r)
				})
			}
			p.Fail([]string{fmt.Sprintf("%s with PSN %d (packet %d of the replay, which starts at the duplicate's PSN)", wantOp, d.PSN.Add(i), i+1)}, k.String(), r)
		}
		lo, hi := i*m, (i+1)*m
		if hi > len(want) {
			hi = len(want)
		}
		if !bytes.Equal(k.Payload, want[lo:hi]) {
			p.Fail([]string{fmt.Sprintf("the data the memory holds now (the device changed it after the original READ): memory is read again for a duplicate, bytes %d..%d", lo, hi)},
				fmt.Sprintf("%s carrying other data (% x…)", k, head(k.Payload)), r)
		}
	}
}

func head(b []byte) []byte {
	if len(b) > 8 {
		return b[:8]
	}
	return b
}
