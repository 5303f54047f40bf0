package go_back_n

import (
	"fmt"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/retries"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/internal/requester"
	"github.com/rcconform/rcconform/rules/internal/requester/realtime"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/wire"
)

// go-back-n, in our words: when the requester learns that packets were
// lost (its transport timer expires, or a sequence-error NAK names the
// PSN the responder expects), it goes back to the oldest unacknowledged
// PSN (for a NAK, the NAK's PSN) and resends from there in order, every
// packet with the PSN, opcode, headers and payload it had the first time;
// a multi-packet message resumes mid-message with the right Middle/Last
// opcodes. A partly answered RDMA READ may be re-requested whole or for
// its missing part only, as an exact subset: the PSN of a response packet
// not yet received (at the latest the first missing one) and the RETH's
// address and length moved by whole MTUs. The harness plays the responder
// and loses packets at every position.

// timeout is the device's local ACK timeout here (4.2 ms).
const timeout = 10

func scenario(mtu int, start wire.PSN) rulekit.Scenario {
	return rulekit.Scenario{
		Config: dut.ConnConfig{MTU: mtu, DevicePSN: start, ExpectedPSN: 1, SetPSNs: true,
			Timeout: timeout, RetryCnt: 7, RNRRetry: 7},
		Needs:             rulekit.Needs{PostWR: true, Completions: true, VirtualTime: true},
		DeviceIsRequester: true,
	}
}

// transmission collects the first transmission of n request packets from
// start on.
func transmission(rs *requester.Responder, start wire.PSN, n int) []*trace.Record {
	var round []*trace.Record
	for i := 0; i < n; i++ {
		round = append(round, rs.ExpectPSN("the first transmission, in order", requester.Liveness, start.Add(i)))
	}
	return round
}

// resendAfterNAK expects the go-back-N answering a sequence NAK sent at
// nakAt: packets that were already on their way (first transmissions of
// PSNs not sent before, within the in-flight allowance) may arrive first;
// then every packet from from onwards, in order, repeating the originals
// (orig, by PSN) — up to and including last.
func resendAfterNAK(rs *requester.Responder, nakAt time.Duration, orig map[wire.PSN]*trace.Record, high wire.PSN, from, last wire.PSN) []*trace.Record {
	var out []*trace.Record
	want := from
	for {
		rec := rs.Next(requester.Upper(wire.AckTimeout(timeout)))
		if rec == nil {
			rs.Fail([]string{fmt.Sprintf("the go-back-N resend of PSN %d", want)}, "nothing", nil)
			return out
		}
		k := rec.Packet
		if len(out) == 0 && k.PSN.After(high) && rec.Time-nakAt <= retries.ActiveReaction {
			// Sent before the NAK arrived.
			orig[k.PSN] = rec
			high = k.PSN
			continue
		}
		if k.PSN != want {
			rs.Fail([]string{fmt.Sprintf("the go-back-N resend of PSN %d, in order", want)}, k.String(), rec)
		}
		if o := orig[k.PSN]; o != nil {
			if ok, diff := requester.Same(o.Packet, k); !ok {
				rs.Fail([]string{fmt.Sprintf("PSN %d resent as it was first sent", k.PSN)}, diff, rec)
			}
		}
		out = append(out, rec)
		if want == last {
			return out
		}
		want = want.Next()
	}
}

func index(recs []*trace.Record) map[wire.PSN]*trace.Record {
	m := map[wire.PSN]*trace.Record{}
	for _, r := range recs {
		m[r.Packet.PSN] = r
	}
	return m
}

var _ = rulekit.Rule(ID, func(r *rulekit.R) {
	realtime.Scenarios(r) // the same rules on a real clock (live devices)
	// Loss at every position of a 4-packet message, discovered by a NAK
	// (the harness NAKs when the next packet arrives) or by the transport
	// timer (the harness acknowledges what it got before the lost packet,
	// then stays silent).
	type msgCase struct {
		name  string
		op    dut.Op
		mtu   int
		start wire.PSN
	}
	for _, mc := range []msgCase{
		{"SEND, MTU 256", dut.OpSend, 256, 5000},
		{"RDMA WRITE, MTU 4096", dut.OpWrite, 4096, 0x123456},
		{"SEND across the 2^24 wrap, MTU 1024", dut.OpSend, 1024, 0xFFFFFE},
		{"RDMA WRITE, MTU 512", dut.OpWrite, 512, 0xFFFFFD},
		{"SEND, MTU 2048", dut.OpSend, 2048, 17},
	} {
		for lost := 0; lost < 4; lost++ {
			for _, byNAK := range []bool{true, false} {
				mc, lost, byNAK := mc, lost, byNAK
				if byNAK && lost == 3 {
					continue // nothing follows the last packet to reveal its loss
				}
				how := "the transport timer"
				if byNAK {
					how = "a sequence NAK"
				}
				r.Active(fmt.Sprintf("%s: packet %d of 4 lost, found by %s: resumed from it with the same PSNs and opcodes", mc.name, lost+1, how),
					scenario(mc.mtu, mc.start), func(p *harness.Peer) {
						rs := requester.NewResponder(p)
						wr := requester.SendWR(1, 4*mc.mtu-7)
						if mc.op == dut.OpWrite {
							wr = rs.WriteWR(1, 4*mc.mtu-7, 0)
						}
						rs.Post(wr)
						round := transmission(rs, mc.start, 4)
						lostPSN := mc.start.Add(lost)
						if byNAK {
							rs.NAK(lostPSN, wire.NAKPSNSequence)
							rs.ExpectRound(round[lost:], requester.Liveness, fmt.Sprintf("the go-back-N from the NAKed PSN %d", lostPSN))
						} else {
							if lost > 0 {
								rs.ACK(lostPSN.Add(-1))
							}
							rs.ExpectRound(round[lost:], requester.Upper(wire.AckTimeout(timeout)), fmt.Sprintf("the go-back-N from the oldest unacknowledged PSN %d", lostPSN))
						}
						rs.Answer(round[3])
						rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the resent message was acknowledged")
					})
			}
		}
	}

	// The device's receive side on a shared receive queue changes nothing
	// for its requester.
	srq := scenario(1024, 0xFFFFFF)
	srq.Config.SRQ, srq.Needs.SRQ = true, true
	r.Active("with the device's QP on an SRQ: a 3-packet WRITE whose second packet is NAKed is resumed from it", srq, func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		round := rs.PostAndReceive(0xFFFFFF, rs.WriteWR(1, 2500, 0))
		rs.NAK(0, wire.NAKPSNSequence)
		again := rs.ExpectRound(round[1:], requester.Liveness, "the go-back-N from the NAKed PSN 0")
		rs.Answer(again[len(again)-1])
		rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the resent message was acknowledged")
	})

	// Several messages in flight: the NAK names the first packet of the
	// second; everything from there is resent, messages after it too.
	r.Active("a NAK naming the second of three messages: the second and third are resent, in order", scenario(1024, 0xFFFFFF), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		rs.Post(requester.SendWR(1, 100), rs.WriteWR(2, 2000, 0), requester.SendWR(3, 10))
		round := transmission(rs, 0xFFFFFF, 4)
		rs.NAK(0, wire.NAKPSNSequence)
		again := rs.ExpectRound(round[1:], requester.Liveness, "the go-back-N from PSN 0")
		rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "the NAK with a later PSN acknowledges the first message")
		rs.Answer(again[len(again)-1])
		rs.ExpectStatus(2, dut.StatusSuccess, requester.Liveness, "acknowledged")
		rs.ExpectStatus(3, dut.StatusSuccess, requester.Liveness, "acknowledged")
	})

	// A NAK whose PSN is beyond the oldest unacknowledged one: the
	// requester resumes at the NAK's PSN exactly.
	r.Active("a NAK naming the fourth of six SENDs: resumed exactly at its PSN", scenario(1024, 800), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		for i := 1; i <= 6; i++ {
			rs.Post(requester.SendWR(uint64(i), 20))
		}
		round := transmission(rs, 800, 6)
		rs.NAK(803, wire.NAKPSNSequence)
		again := rs.ExpectRound(round[3:], requester.Liveness, "the go-back-N from the NAKed PSN 803")
		rs.Answer(again[len(again)-1])
		for i := 1; i <= 6; i++ {
			rs.ExpectStatus(uint64(i), dut.StatusSuccess, requester.Liveness, "acknowledged")
		}
	})

	// A partial ACK, then silence: the timer's go-back-N resumes at the
	// oldest PSN still unacknowledged, not at the first one sent.
	r.Active("four SENDs, the first two acknowledged, then silence: resumed at the third", scenario(1024, 0xFFFFFE), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		for i := 1; i <= 4; i++ {
			rs.Post(requester.SendWR(uint64(i), 20))
		}
		round := transmission(rs, 0xFFFFFE, 4)
		rs.ACK(0xFFFFFF)
		again := rs.ExpectRound(round[2:], requester.Upper(wire.AckTimeout(timeout)), "the go-back-N from PSN 0, the oldest unacknowledged")
		rs.Answer(again[len(again)-1])
		for i := 1; i <= 4; i++ {
			rs.ExpectStatus(uint64(i), dut.StatusSuccess, requester.Liveness, "acknowledged")
		}
	})

	// The NAK latch with many packets in flight: 32 SENDs go out back to
	// back; the harness NAKs the 11th as lost when the 12th arrives and
	// ignores what is still arriving; the requester resends from the 11th
	// to the end, packets sent before the NAK reached it aside.
	r.Active("32 SENDs in flight, one NAK for the 11th: resent from it to the end", scenario(1024, 0xFFFFF8), func(p *harness.Peer) {
		rs := requester.NewResponder(p)
		const n = 32
		for i := 1; i <= n; i++ {
			rs.Post(requester.SendWR(uint64(i), 8))
		}
		start := wire.PSN(0xFFFFF8)
		round := transmission(rs, start, 12)
		at := rs.NAK(start.Add(10), wire.NAKPSNSequence)
		orig := index(round)
		again := resendAfterNAK(rs, at, orig, start.Add(11), start.Add(10), start.Add(n-1))
		rs.Answer(again[len(again)-1])
		for i := 1; i <= n; i++ {
			rs.ExpectStatus(uint64(i), dut.StatusSuccess, requester.Liveness, "acknowledged")
		}
	})

	// Partly answered READs: the re-request is the whole READ or an exact
	// subset starting no later than the first missing response.
	for _, rc := range []struct {
		name     string
		mtu      int
		length   int
		answered []int // indices of the response packets the harness sends
		start    wire.PSN
	}{
		{"a 4-MTU READ with two responses received", 1024, 4 * 1024, []int{0, 1}, 7000},
		{"an 8-MTU READ at MTU 256 with three responses received", 256, 8 * 256, []int{0, 1, 2}, 0xFFFFFE},
		{"an (MTU+1)-byte READ with its first response received", 4096, 4097, []int{0}, 31},
		{"a 4-MTU READ whose second response was lost (first and third received)", 512, 4*512 - 5, []int{0, 2}, 0xFFFFFF},
		{"a 3-MTU READ with no response at all", 2048, 3 * 2048, nil, 90},
	} {
		rc := rc
		r.Active(rc.name+": re-requested as an exact subset from no later than the first missing response", scenario(rc.mtu, rc.start), func(p *harness.Peer) {
			rs := requester.NewResponder(p)
			rs.Post(rs.ReadWR(1, rc.length, 64))
			req := rs.ExpectPSN("the READ request", requester.Liveness, rc.start)
			resp := rs.ReadResponses(req.Packet, req.Packet.PSN, -1)
			missing := len(resp)
			for i, k := range resp {
				if contains(rc.answered, i) {
					rs.SendAll(k)
				} else if i < missing {
					missing = i
				}
			}
			again := rs.Expect("a re-request of the READ", requester.Upper(wire.AckTimeout(timeout)), func(k *wire.Packet) bool { return k.Opcode.IsRequest() })
			checkSubset(rs, req, again, missing)
			rs.SendAll(rs.ReadResponses(again.Packet, again.Packet.PSN, -1)...)
			c := rs.ExpectStatus(1, dut.StatusSuccess, requester.Liveness, "every response of the READ has arrived")
			if c.Bytes != rc.length {
				rs.Fail([]string{fmt.Sprintf("a READ completion of %d bytes", rc.length)}, fmt.Sprintf("%d bytes", c.Bytes), nil)
			}
		})
	}
})

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkSubset checks that again re-requests the READ req as an exact
// subset starting at a response PSN no later than the missing-th.
func checkSubset(rs *requester.Responder, req, again *trace.Record, missing int) {
	o, k := req.Packet, again.Packet
	mtu := rs.Info.MTU
	d := k.PSN.Diff(o.PSN)
	ok := k.Opcode == wire.ReadRequest && d >= 0 && d <= missing
	if ok {
		off := uint64(d) * uint64(mtu)
		ok = uint64(o.RETH.Length) > off || (d == 0)
		ok = ok && k.RETH == wire.RETH{VA: o.RETH.VA + off, RKey: o.RETH.RKey, Length: o.RETH.Length - uint32(min(off, uint64(o.RETH.Length)))}
	}
	if !ok {
		var want []string
		for i := 0; i <= missing; i++ {
			off := uint64(i) * uint64(mtu)
			if i > 0 && off >= uint64(o.RETH.Length) {
				break
			}
			want = append(want, fmt.Sprintf("READ PSN %d va=0x%x rkey=0x%x len=%d", o.PSN.Add(i), o.RETH.VA+off, o.RETH.RKey, o.RETH.Length-uint32(off)))
		}
		rs.Fail(want, k.String(), again)
	}
}
