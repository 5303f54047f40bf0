package metamorphic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// frame is one record of a capture, kept whole in memory.
type frame struct {
	t    time.Time
	link uint32
	data []byte
	orig int // length on the wire
	tags tag // what the frame is, for choosing cut points
}

// tag marks frames where a capture starting or ending matters most.
type tag uint8

const (
	tagRequest  tag = 1 << iota // an RC request
	tagAckReq                   // a request asking for an acknowledgment
	tagResend                   // a request whose QP and PSN were seen before
	tagNAK                      // a NAK or an RNR NAK
	tagReadPart                 // a READ response First or Middle (its Last still to come)
	tagResponse                 // any RC response
)

// load reads every frame of a capture and tags it.
func load(name string, b []byte) ([]frame, error) {
	r, err := capture.NewReader(bytes.NewReader(b), name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	defer r.Close()
	var out []frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		out = append(out, frame{t: f.Time, link: f.LinkType, data: bytes.Clone(f.Data), orig: f.OrigLen})
	}
	classify(out)
	return out, nil
}

// decode decodes f as RoCE; ok is false for anything else.
func decode(f *frame, wf *wire.Frame) (netOff int, ok bool) {
	proto, off, err := capture.Network(f.link, f.data)
	if err != nil {
		return 0, false
	}
	if err := wf.DecodeNetwork(proto, f.data[off:]); err != nil {
		return 0, false
	}
	return off, true
}

func classify(fs []frame) {
	type key struct {
		qp  uint32
		psn wire.PSN
		dst netip.Addr
	}
	seen := map[key]bool{}
	var wf wire.Frame
	for i := range fs {
		if _, ok := decode(&fs[i], &wf); !ok {
			continue
		}
		op := wf.BTH.Opcode
		switch {
		case op.IsRequest():
			fs[i].tags |= tagRequest
			if wf.BTH.AckReq {
				fs[i].tags |= tagAckReq
			}
			k := key{wf.BTH.DestQP, wf.BTH.PSN, wf.Dst}
			if seen[k] {
				fs[i].tags |= tagResend
			}
			seen[k] = true
		case op.IsResponse():
			fs[i].tags |= tagResponse
			if op.Has(wire.HdrAETH) && !wf.AETH.IsACK() {
				fs[i].tags |= tagNAK
			}
			if op == wire.ReadResponseFirst || op == wire.ReadResponseMiddle {
				fs[i].tags |= tagReadPart
			}
		}
	}
}

// encode writes frames as a pcapng file: one interface per link type,
// nanosecond timestamps.
func encode(fs []frame) []byte {
	le := binary.LittleEndian
	var b []byte
	block := func(typ uint32, body []byte) {
		n := uint32(12 + len(body))
		b = le.AppendUint32(b, typ)
		b = le.AppendUint32(b, n)
		b = append(b, body...)
		b = le.AppendUint32(b, n)
	}
	var body []byte
	body = le.AppendUint32(body, 0x1A2B3C4D)
	body = le.AppendUint16(body, 1)
	body = le.AppendUint16(body, 0)
	body = le.AppendUint64(body, ^uint64(0))
	block(0x0A0D0D0A, body)
	ifaces := map[uint32]uint32{}
	for _, f := range fs {
		if _, ok := ifaces[f.link]; ok {
			continue
		}
		ifaces[f.link] = uint32(len(ifaces))
		body = body[:0]
		body = le.AppendUint16(body, uint16(f.link))
		body = le.AppendUint16(body, 0)
		body = le.AppendUint32(body, 0)                         // snaplen: none
		body = append(body, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0) // if_tsresol 9, opt_endofopt
		block(1, body)
	}
	for _, f := range fs {
		body = body[:0]
		ts := uint64(f.t.UnixNano())
		body = le.AppendUint32(body, ifaces[f.link])
		body = le.AppendUint32(body, uint32(ts>>32))
		body = le.AppendUint32(body, uint32(ts))
		body = le.AppendUint32(body, uint32(len(f.data)))
		body = le.AppendUint32(body, uint32(f.orig))
		body = append(body, f.data...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		block(6, body)
	}
	return b
}

// A transform turns a trace into one an independent capture of the same
// wire could have recorded. It returns nil when it does not apply.
type transform struct {
	name string
	fn   func(rng *rand.Rand, fs []frame) []frame
	// pair transforms take a second trace (merge); fn is then unused.
	pair func(rng *rand.Rand, a, b []frame) []frame
}

func drop(fs []frame, gone func(i int) bool) []frame {
	var out []frame
	for i, f := range fs {
		if !gone(i) {
			out = append(out, f)
		}
	}
	return out
}

// lossRate drops each frame with probability p.
func lossRate(p float64) transform {
	return transform{name: fmt.Sprintf("loss %g%%", p*100), fn: func(rng *rand.Rand, fs []frame) []frame {
		return drop(fs, func(int) bool { return rng.Float64() < p })
	}}
}

// burstLoss drops one to three runs of consecutive frames.
var burstLoss = transform{name: "burst loss", fn: func(rng *rand.Rand, fs []frame) []frame {
	if len(fs) < 3 {
		return nil
	}
	gone := make([]bool, len(fs))
	for range 1 + rng.IntN(3) {
		at, n := rng.IntN(len(fs)), 2+rng.IntN(min(20, len(fs)))
		for i := at; i < min(len(fs), at+n); i++ {
			gone[i] = true
		}
	}
	return drop(fs, func(i int) bool { return gone[i] })
}}

// cutPoint picks where a capture starts or ends: any frame, or (half the
// time, when the trace has one) a frame with one of the tags.
func cutPoint(rng *rand.Rand, fs []frame, want tag) int {
	if want != 0 {
		var at []int
		for i, f := range fs {
			if f.tags&want != 0 {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			return at[rng.IntN(len(at))]
		}
	}
	return rng.IntN(len(fs))
}

// cutStart starts the capture at a frame (after a tagged frame, or at it).
func cutStart(name string, want tag, after bool) transform {
	return transform{name: "cut start " + name, fn: func(rng *rand.Rand, fs []frame) []frame {
		if len(fs) < 2 {
			return nil
		}
		i := cutPoint(rng, fs, want)
		if after {
			i++
		}
		return fs[i:]
	}}
}

// cutEnd ends the capture at a frame (right after a tagged frame, or
// right before it).
func cutEnd(name string, want tag, after bool) transform {
	return transform{name: "cut end " + name, fn: func(rng *rand.Rand, fs []frame) []frame {
		if len(fs) < 2 {
			return nil
		}
		i := cutPoint(rng, fs, want)
		if after {
			i++
		}
		return fs[:i]
	}}
}

// duplicate records some frames twice: the copy right after the frame, or
// a few frames later (stamped with the time of the frame it follows).
func duplicate(later bool) transform {
	name := "duplicate adjacent"
	if later {
		name = "duplicate later"
	}
	return transform{name: name, fn: func(rng *rand.Rand, fs []frame) []frame {
		if len(fs) == 0 {
			return nil
		}
		n := 1 + rng.IntN(max(1, len(fs)/20))
		out := slices.Clone(fs)
		for range n {
			i := rng.IntN(len(out))
			j := i + 1
			if later {
				j = min(len(out), i+1+rng.IntN(5))
			}
			c := out[i]
			c.t = out[j-1].t
			out = slices.Insert(out, j, c)
		}
		return out
	}}
}

// microseconds rounds every timestamp down to the microsecond, as a
// classic pcap records it.
var microseconds = transform{name: "microsecond timestamps", fn: func(_ *rand.Rand, fs []frame) []frame {
	out := slices.Clone(fs)
	for i := range out {
		out[i].t = out[i].t.Truncate(time.Microsecond)
	}
	return out
}}

// snaplen cuts every frame's recorded bytes at n (the wire length stays).
func snaplen(n int) transform {
	return transform{name: fmt.Sprintf("snaplen %d", n), fn: func(_ *rand.Rand, fs []frame) []frame {
		out := slices.Clone(fs)
		for i := range out {
			if len(out[i].data) > n {
				out[i].data = out[i].data[:n]
			}
		}
		return out
	}}
}

// merge interleaves two captures by timestamp, the second moved to start
// within the first and its addresses changed so that its connections are
// its own. It returns nil when the second holds a RoCE frame whose
// addresses it cannot change.
var merge = transform{name: "merge", pair: func(rng *rand.Rand, a, b []frame) []frame {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	b = slices.Clone(b)
	shift := a[rng.IntN(len(a))].t.Sub(b[0].t)
	var wf wire.Frame
	for i := range b {
		b[i].t = b[i].t.Add(shift)
		off, ok := decode(&b[i], &wf)
		if !ok {
			continue
		}
		d := bytes.Clone(b[i].data)
		if !remap(d[off:], &wf) {
			return nil
		}
		b[i].data = d
	}
	out := make([]frame, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || (i < len(a) && !b[j].t.Before(a[i].t)) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}}

// remap flips a bit of both IP addresses of a RoCEv2 or RoCEv1 packet (net
// is its network header on) and mends the IPv4 checksum and the ICRC
// (when the captured one was right and whole).
func remap(net []byte, wf *wire.Frame) bool {
	goodICRC := !wf.Truncated && wf.CheckICRC() == wire.ICRCOK
	n := len(wf.Network())
	switch wf.Encap {
	case wire.RoCEv2IPv4:
		net[15] ^= 0x40
		net[19] ^= 0x40
		net[10], net[11] = 0, 0
		var sum uint32
		for k := 0; k < 20; k += 2 {
			sum += uint32(binary.BigEndian.Uint16(net[k:]))
		}
		for sum > 0xFFFF {
			sum = sum&0xFFFF + sum>>16
		}
		binary.BigEndian.PutUint16(net[10:], ^uint16(sum))
	case wire.RoCEv2IPv6, wire.RoCEv1:
		net[23] ^= 0x40
		net[39] ^= 0x40
	default:
		return false
	}
	if goodICRC && n <= len(net) {
		binary.LittleEndian.PutUint32(net[n-wire.ICRCLen:], wire.ComputeICRC(net[:n-wire.ICRCLen], wf.Encap))
	}
	return true
}

// transforms are the single-trace transforms, then merge.
var transforms = []transform{
	lossRate(0.01), lossRate(0.05), lossRate(0.20), burstLoss,
	cutStart("anywhere", 0, false),
	cutStart("after a NAK", tagNAK, true),
	cutStart("mid-READ-response", tagReadPart, true),
	cutStart("at a resend", tagResend, false),
	cutStart("after an AckReq", tagAckReq, true),
	cutEnd("anywhere", 0, false),
	cutEnd("after a NAK", tagNAK, true),
	cutEnd("mid-READ-response", tagReadPart, true),
	cutEnd("mid-retry", tagResend, true),
	cutEnd("after an AckReq", tagAckReq, true),
	duplicate(false), duplicate(true),
	microseconds,
	snaplen(128),
	merge,
}
