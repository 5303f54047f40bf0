package verdicts

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/harness"
	ht "github.com/rcconform/rcconform/harness/harnesstest"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Item 6 of issue 12: each class of verdict, judged on the same
// behaviour captured at different points of the path. One request of
// every trace is lost in the network between requester and responder;
// where the capture point lies decides whether the trace shows it:
//
//   - at the requester: the lost request is in the trace (lost after the
//     capture point), and nothing says the capture holds the responder's
//     view;
//   - at the responder: the lost request is not in it (lost before the
//     capture point), and the trace is the responder's view (--complete);
//   - in the middle, the loss before the capture point (not in it) or
//     after it (in it), with nothing asserted.
//
// Reordered: the network swapped two ACKs after the responder sent them
// (its IPv4 Identification counts up, as Linux soft-RoCE's does); a
// capture at the requester or in the middle shows them swapped.

// capturePoint is where a variant's capture was taken.
type capturePoint uint8

const (
	atRequester capturePoint = iota
	atResponder
	middleLossBefore
	middleLossAfter
)

func (p capturePoint) String() string {
	return [...]string{"capture at the requester", "capture at the responder",
		"capture in the middle, loss before it", "capture in the middle, loss after it"}[p]
}

// variant is one capture of a class's behaviour.
type variant struct {
	at      capturePoint
	reorder bool
}

func (v variant) String() string {
	if v.reorder {
		return v.at.String() + ", ACKs reordered after the responder"
	}
	return v.at.String()
}

// variants lists every capture of a behaviour: each capture point, and
// reordered where the capture point lies after the network.
func variants() []variant {
	var out []variant
	for _, at := range []capturePoint{atRequester, atResponder, middleLossBefore, middleLossAfter} {
		out = append(out, variant{at: at})
		if at != atResponder {
			out = append(out, variant{at: at, reorder: true})
		}
	}
	return out
}

// showsLost reports whether the trace shows the request lost between
// requester and responder.
func (v variant) showsLost() bool { return v.at == atRequester || v.at == middleLossAfter }

// settings are what the audit is told: only a capture at the responder
// is asserted to be its complete view.
func (v variant) settings(mtu int) harness.Settings {
	if v.at == atResponder {
		return complete(mtu)
	}
	return capture(mtu)
}

// lostReq adds a request that the network lost on its way to the
// responder, when the capture point lies before the loss.
func (v variant) lostReq(t *ht.Trace, op wire.Opcode, psn wire.PSN, ackReq bool) {
	r := t.Req(op, psn, ackReq)
	if !v.showsLost() {
		r.Note = noteLost // numbered, then left out of the capture (finish)
	}
}

// showsLostResp reports whether the trace shows a response lost between
// responder and requester.
func (v variant) showsLostResp() bool { return v.at == atResponder || v.at == middleLossAfter }

// lostResp keeps record r (a response the network lost on its way to the
// requester) only when the capture point lies before the loss.
func (v variant) lostResp(t *ht.Trace, r *trace.Record) {
	if !v.showsLostResp() {
		r.Note = noteLost // numbered, then left out of the capture (finish)
	}
}

// goBackN is the common loss: SEND 100 acknowledged (MSN 11), SEND 101
// lost on its way to the responder, SEND 102 answered by a sequence NAK
// naming 101, both resent and acknowledged (MSN 13).
func goBackN(t *ht.Trace, v variant) {
	lossNAK(t, v, 101)
	resend(t)
	t.Ack(102, 13)
}

// lossNAK is goBackN up to its sequence NAK, which names x.
func lossNAK(t *ht.Trace, v variant, x wire.PSN) {
	t.Req(wire.SendOnly, 100, true)
	t.Ack(100, 11)
	v.lostReq(t, wire.SendOnly, 101, false)
	t.Req(wire.SendOnly, 102, true)
	t.NAK(x, wire.NAKPSNSequence, 11)
}

// resend is goBackN's resend of 101 and 102.
func resend(t *ht.Trace) {
	t.Req(wire.SendOnly, 101, false)
	t.Req(wire.SendOnly, 102, true)
}

// onlyAtResponder: the violation is proven where the trace is the
// responder's view; elsewhere clause stays open (its reason names the
// legal explanation).
func onlyAtResponder(clause string) func(variant) verdict {
	return func(v variant) verdict {
		if v.at == atResponder {
			return verdict{fail: clause}
		}
		return verdict{undecided: clause}
	}
}

// warm opens the connection: SENDs 90–99, then their ACKs with MSN 1–10
// (the connection's start is in the trace). Both sides count their IPv4
// Identification up (set by finish).
func warm(t *ht.Trace) {
	for i := range 10 {
		t.Req(wire.SendOnly, wire.PSN(90+i), true)
	}
	for i := range 10 {
		t.Ack(wire.PSN(90+i), uint32(1+i))
	}
}

// finish numbers the IPv4 IDs as counting-up senders do and, for a
// reordered variant, swaps two of warm's ACKs (records 14 and 15).
func (v variant) finish(t *ht.Trace) {
	t.IPIDs(1000, 5000)
	if v.reorder && v.at != atResponder {
		t.Swap(14, 15)
	}
	for i := len(t.Records) - 1; i >= 0; i-- {
		if t.Records[i].Note == noteLost {
			t.Remove(i) // its sender numbered it: its ID leaves a gap
		}
	}
}

// verdict is what a variant must come out as: the clauses that fail
// (exactly), and the clause, if any, that must be indeterminate.
type verdict struct {
	fail      string
	undecided string
}

// vclass is one class of behaviour with what each variant must give.
type vclass struct {
	name  string
	mtu   int
	build func(t *ht.Trace, v variant)
	want  func(v variant) verdict
	// tune, when set, adjusts the settings (the requester's retry
	// counts).
	tune func(s *harness.Settings)
}

func always(fail string) func(variant) verdict {
	return func(variant) verdict { return verdict{fail: fail} }
}

var vclasses = []vclass{
	{
		// The seed's walk (the specification's Response Generation text),
		// shifted past warm: every capture of it is clean.
		name: "seed walk", mtu: 4096, want: always(""),
		build: func(t *ht.Trace, v variant) {
			t.Req(wire.SendOnly, 100, false)
			t.Req(wire.WriteOnly, 101, false)
			t.Read(102, 8192)
			t.ReadResp(wire.ReadResponseFirst, 102, 12, 4096)
			t.ReadResp(wire.ReadResponseLast, 103, 13, 4096)
			v.lostReq(t, wire.SendOnly, 104, false)
			t.Req(wire.SendOnly, 105, true)
			t.NAK(104, wire.NAKPSNSequence, 13)
			t.Req(wire.SendOnly, 104, false)
			t.Req(wire.SendOnly, 105, true)
			t.Ack(105, 15)
		},
	},
	{
		// A sequence NAK naming the lost request, and go-back-N from it.
		name: "sequence NAK at the expected PSN", mtu: 1024, want: always(""),
		build: goBackN,
	},
	{
		// A sequence NAK naming PSN 100, which the responder had already
		// acknowledged: its expected PSN was past it on any capture.
		name: "sequence NAK behind an acknowledged PSN", mtu: 1024, want: always("C9-111,C9-121"),
		build: func(t *ht.Trace, v variant) { lossNAK(t, v, 100) },
	},
	{
		// After go-back-N, an ACK naming PSN 104, which no request
		// carried: the trace holds the connection from its start, but a
		// capture that is not the responder's view may have dropped the
		// requests at 103 and 104 (a capture need not report its drops).
		name: "ACK naming a request never sent", mtu: 1024, want: onlyAtResponder("C9-95"),
		build: func(t *ht.Trace, v variant) {
			lossNAK(t, v, 101)
			resend(t)
			t.Ack(104, 13)
		},
	},
	{
		// After go-back-N, a duplicate of SEND 100 answered with a NAK
		// (an error met on a duplicate is never NAKed).
		name: "NAK about a duplicate", mtu: 1024, want: always("C9-106,C9-115"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 100, true)
			t.NAK(100, wire.NAKRemoteAccess, 13)
		},
	},
	{
		// An RNR NAK naming PSN 104, which no request carried. Only the
		// responder's view proves it; a capture elsewhere that shows the
		// connection's start leaves one explanation, a request the
		// capture dropped without saying so.
		name: "RNR NAK naming no request", mtu: 1024, want: onlyAtResponder("C9-113"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 103, true)
			t.RNR(104, 1, 13)
		},
	},
	{
		name: "RNR NAK at the refused request", mtu: 1024, want: always(""),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 103, true)
			t.RNR(103, 1, 13)
		},
	},
	{
		name: "remote access NAK at the failed request", mtu: 1024, want: always(""),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.WriteOnly, 103, true)
			t.NAK(103, wire.NAKRemoteAccess, 13)
		},
	},
	{
		// An ATOMIC Acknowledge one PSN past the ATOMIC's: no request
		// carried 104; only the responder's view shows every request (an
		// ATOMIC at 104 the capture dropped explains it elsewhere).
		name: "Atomic Acknowledge with the wrong PSN", mtu: 1024, want: onlyAtResponder("o9-58"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Atomic(wire.FetchAdd, 103)
			t.AtomicAck(104, 14, 7)
		},
	},
	{
		name: "Atomic Acknowledge at the ATOMIC's PSN", mtu: 1024, want: always(""),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Atomic(wire.FetchAdd, 103)
			t.AtomicAck(103, 14, 7)
		},
	},
	{
		// A 3 KiB READ (MTU 1024, not told to the audit) whose Last
		// carries the MSN its First did: the READ is never counted.
		name: "READ whose MSN never moves", mtu: 0, want: always("C9-148"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Read(103, 3*1024)
			t.ReadResp(wire.ReadResponseFirst, 103, 13, 1024)
			t.ReadResp(wire.ReadResponseMiddle, 104, 0, 1024)
			t.ReadResp(wire.ReadResponseLast, 105, 13, 1024)
		},
	},
	{
		name: "READ counted", mtu: 0, want: always(""),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Read(103, 3*1024)
			t.ReadResp(wire.ReadResponseFirst, 103, 13, 1024)
			t.ReadResp(wire.ReadResponseMiddle, 104, 0, 1024)
			t.ReadResp(wire.ReadResponseLast, 105, 14, 1024)
		},
	},
	{
		// A 5 KiB READ at MTU 1024 whose Middle 105 the network lost on
		// its way to the requester; the requester asks again from 105 and
		// the responder answers that partial retry from 105 with First.
		name: "READ response Middle lost, partial retry", mtu: 1024, want: always(""),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Read(103, 5*1024)
			t.ReadResp(wire.ReadResponseFirst, 103, 13, 1024)
			t.ReadResp(wire.ReadResponseMiddle, 104, 0, 1024)
			v.lostResp(t, t.ReadResp(wire.ReadResponseMiddle, 105, 0, 1024))
			t.ReadResp(wire.ReadResponseMiddle, 106, 0, 1024)
			t.ReadResp(wire.ReadResponseLast, 107, 14, 1024)
			r := t.Read(105, 3*1024)
			r.Packet.RETH.VA += 2 * 1024
			t.ReadStream(105, 3*1024, 1024, 14)
			t.Req(wire.SendOnly, 108, true)
			t.Ack(108, 15)
		},
	},
	{
		// A duplicate READ (the requester's retry after its answer was
		// lost) whose replay starts at 104 instead of its own PSN 103.
		// Off the responder's view, a partial retry from 104 the capture
		// dropped explains the replay.
		name: "duplicate READ replay starting late", mtu: 1024, want: onlyAtResponder("C9-107"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Read(103, 3*1024)
			t.ReadStream(103, 3*1024, 1024, 14)
			t.Read(103, 3*1024)
			t.ReadResp(wire.ReadResponseFirst, 104, 14, 1024)
			t.ReadResp(wire.ReadResponseLast, 105, 14, 1024)
		},
	},
	{
		// A SEND Middle with no message in progress, NAKed as an invalid
		// request naming 102, which the responder had acknowledged.
		name: "invalid request NAK behind an acknowledged PSN", mtu: 1024, want: always("C9-111,C9-125"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendMiddle, 103, true)
			t.NAK(102, wire.NAKInvalidRequest, 13)
		},
	},
	{
		name: "invalid request NAK at the request", mtu: 1024, want: always(""),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendMiddle, 103, true)
			t.NAK(103, wire.NAKInvalidRequest, 13)
		},
	},
	{
		// A new SEND with AckReq and no answer: only the responder's
		// view proves none was sent; elsewhere the answer may have been
		// lost before the capture point.
		name: "AckReq left unanswered", mtu: 1024, want: onlyAtResponder("C9-116"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 103, true)
		},
	},
	{
		// The requester retries a WRITE after a remote access NAK.
		// Elsewhere than where the user says nothing is lost, the NAK may
		// not have reached the requester, whose timer then resends.
		name: "retry after a remote access NAK", mtu: 1024, want: onlyAtResponder("§9.9.2.2"),
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.WriteOnly, 103, true)
			t.NAK(103, wire.NAKRemoteAccess, 13)
			t.Wait(5 * time.Millisecond)
			t.Req(wire.WriteOnly, 103, true)
		},
	},
	{
		// An RNR NAK asking for 10.24 ms (code 20), the resend 2 ms
		// later.
		name: "RNR resend sooner than the delay", mtu: 1024, want: onlyAtResponder("rnr-retry"),
		tune: func(s *harness.Settings) { s.RNRRetry = 7 },
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 103, true)
			t.RNR(103, 20, 13)
			t.Wait(2 * time.Millisecond)
			t.Req(wire.SendOnly, 103, true)
			t.Ack(103, 14)
		},
	},
	{
		name: "RNR resend after the delay", mtu: 1024, want: always(""),
		tune: func(s *harness.Settings) { s.RNRRetry = 7 },
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 103, true)
			t.RNR(103, 20, 13)
			t.Wait(12 * time.Millisecond)
			t.Req(wire.SendOnly, 103, true)
			t.Ack(103, 14)
		},
	},
	{
		// Four resends after RNR NAKs where the RNR retry count is 2.
		name: "more RNR retries than allowed", mtu: 1024, want: onlyAtResponder("rnr-retry"),
		tune: func(s *harness.Settings) { s.RNRRetry = 2 },
		build: func(t *ht.Trace, v variant) {
			goBackN(t, v)
			t.Req(wire.SendOnly, 103, true)
			for range 4 {
				t.RNR(103, 1, 13)
				t.Wait(time.Millisecond)
				t.Req(wire.SendOnly, 103, true)
			}
			t.Ack(103, 14)
		},
	},
	{
		// The requester answers the sequence NAK naming 101 by resending
		// from 102. Only the responder's view (--complete) proves that the
		// NAK reached the requester; on the other captures it may have
		// been lost after the capture point, and the requester's resends
		// then follow its own timer: indeterminate, with that reason.
		name: "go-back-N skipping the NAK's PSN", mtu: 1024,
		want: func(v variant) verdict {
			if v.at == atResponder {
				return verdict{fail: "go-back-n"}
			}
			return verdict{undecided: "go-back-n"}
		},
		build: func(t *ht.Trace, v variant) {
			t.Req(wire.SendOnly, 100, true)
			t.Ack(100, 11)
			v.lostReq(t, wire.SendOnly, 101, false)
			t.Req(wire.SendOnly, 102, false)
			t.Req(wire.SendOnly, 103, true)
			t.NAK(101, wire.NAKPSNSequence, 11)
			t.Wait(2 * time.Millisecond)
			t.Req(wire.SendOnly, 102, false)
			t.Req(wire.SendOnly, 103, true)
		},
	},
}

// unknownMTU repeats the classes that concern READs with the path MTU
// not told to the audit: the spans come from the responses that close
// them (and from First packets, which carry exactly one MTU).
func unknownMTU() []vclass {
	var out []vclass
	for _, k := range vclasses {
		if strings.Contains(k.name, "READ") && k.mtu != 0 {
			k.name += ", MTU unknown"
			k.mtu = 0
			out = append(out, k)
		}
	}
	return out
}

func TestVerdictVariants(t *testing.T) {
	for _, k := range append(vclasses, unknownMTU()...) {
		for _, v := range variants() {
			t.Run(k.name+"/"+v.String(), func(t *testing.T) {
				tr := &ht.Trace{}
				warm(tr)
				k.build(tr, v)
				v.finish(tr)
				want := k.want(v)
				settings := v.settings(k.mtu)
				if k.tune != nil {
					k.tune(&settings)
				}
				ts, fs := ht.AuditAll(tr, settings)
				failed := clauses(ts, func(x *harness.Tally) bool { return x.Violations > 0 })
				var wantFail []string
				if want.fail != "" {
					wantFail = strings.Split(want.fail, ",")
				}
				if fmt.Sprint(failed) != fmt.Sprint(sorted(wantFail)) {
					var msgs []string
					for _, f := range fs {
						msgs = append(msgs, f.ID+": "+f.Message)
					}
					t.Errorf("failed %v, want %v\n  %s", failed, sorted(wantFail), strings.Join(msgs, "\n  "))
				}
				for _, id := range wantFail {
					if ts[id] == nil || ts[id].Verdict() != "fail" {
						t.Errorf("%s: not failed", id)
					}
				}
				if want.undecided != "" {
					if tl := ts[want.undecided]; tl == nil || tl.Verdict() != "indeterminate" {
						t.Errorf("%s: verdict %v, want indeterminate (tally %+v)", want.undecided, verdictOf(tl), tl)
					}
				}
			})
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sortStrings(out)
	return out
}

func verdictOf(t *harness.Tally) string {
	if t == nil {
		return "not exercised"
	}
	return string(t.Verdict())
}

func sortStrings(s []string) { sort.Strings(s) }
