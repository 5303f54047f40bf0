package reference

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"time"

	"github.com/rcconform/rcconform/wire"
)

// Side names one end of a Link.
type Side uint8

// The two ends of a link.
const (
	SideA Side = iota
	SideB
)

func (s Side) String() string {
	if s == SideA {
		return "A"
	}
	return "B"
}

// Direction selects which frames an impairment applies to.
type Direction uint8

// Directions; the zero value means both.
const (
	BothDirections Direction = iota
	AtoB                     // frames sent by side A
	BtoA                     // frames sent by side B
)

func (d Direction) matches(from Side) bool {
	switch d {
	case AtoB:
		return from == SideA
	case BtoA:
		return from == SideB
	}
	return true
}

// Action is what an impairment does to a selected frame.
type Action uint8

// Impairment actions.
const (
	// Drop loses the frame.
	Drop Action = iota
	// Duplicate delivers the frame twice (Copies extra copies, default 1).
	Duplicate
	// Reorder holds the frame until Hold later frames in the same direction
	// (default 1) have been delivered, then delivers it; it is delivered
	// after MaxHold (default 10 latencies + 10 µs) if no later frame comes.
	Reorder
	// Delay adds Delay to the frame's latency (it may then arrive after
	// later frames).
	Delay
)

func (a Action) String() string {
	return [...]string{"drop", "duplicate", "reorder", "delay"}[a%4]
}

// Impairment is one rule applied to frames entering a link.
//
// A rule selects frames in its direction by, in this order of precedence:
// ByIndex (the Index-th frame of that direction, 0-based); ByOpcode (frames
// with that BTH opcode, optionally only the Nth occurrence, 1-based, and
// optionally only with PSN when ByPSN is also set); ByPSN alone; Prob (each
// frame independently with that probability, drawn from the link's seed);
// and with no selector and Prob zero, every frame. Times bounds how often
// the rule fires (0: no bound).
type Impairment struct {
	Dir    Direction
	Action Action

	ByIndex  bool
	Index    int
	ByOpcode bool
	Opcode   wire.Opcode
	Nth      int
	ByPSN    bool
	PSN      wire.PSN
	Prob     float64
	Times    int

	Delay   time.Duration // Delay: the added latency; Reorder: MaxHold
	Hold    int           // Reorder: how many later frames overtake it
	Copies  int           // Duplicate: extra copies
	matched int           // opcode occurrences seen
	fired   int
}

// CapturedFrame is one frame that entered the link.
type CapturedFrame struct {
	Time time.Duration
	From Side
	Data []byte
}

type heldFrame struct {
	idx   int
	data  []byte
	left  int
	timer *Timer
	done  bool
}

// Link is a simulated point-to-point link between two ports, A and B,
// running on a Clock. Frames are delivered after a fixed latency in the
// order they were sent, unless an impairment drops, duplicates, reorders or
// delays them. Every frame that enters the link is kept for WritePcapng.
type Link struct {
	clock   *Clock
	latency time.Duration
	rng     *rand.Rand
	recv    [2]func([]byte) // recv[SideA] receives frames sent by B
	rules   []*Impairment
	count   [2]int // frames sent per side
	held    [2][]*heldFrame
	frames  []CapturedFrame
	noCap   bool
	dec     wire.Frame
	// OnTransmit, when set, is called for every frame entering the link
	// with the link's own copy of it, which is also the slice delivered.
	OnTransmit func(from Side, index int, frame []byte)
	// Stats.
	Dropped, Duplicated, Reordered, Delayed int
}

// NewLink returns a link on clock c with the given one-way latency; seed
// drives probabilistic impairments.
func NewLink(c *Clock, latency time.Duration, seed int64) *Link {
	return &Link{clock: c, latency: latency, rng: rand.New(rand.NewSource(seed))}
}

// Connect sets the receivers: a receives the frames side B sends, b those
// side A sends.
func (l *Link) Connect(a, b func(frame []byte)) {
	l.recv[SideA] = a
	l.recv[SideB] = b
}

// AddRule adds an impairment; rules apply in the order they were added.
func (l *Link) AddRule(r Impairment) {
	rr := r
	rr.matched, rr.fired = 0, 0
	l.rules = append(l.rules, &rr)
}

// ClearRules removes every impairment.
func (l *Link) ClearRules() { l.rules = nil }

// Latency returns the link's one-way latency.
func (l *Link) Latency() time.Duration { return l.latency }

// SendA transmits a frame from side A to side B.
func (l *Link) SendA(frame []byte) { l.send(SideA, frame) }

// SendB transmits a frame from side B to side A.
func (l *Link) SendB(frame []byte) { l.send(SideB, frame) }

// SetCapture turns the recording of frames for Frames and WritePcapng on
// (the default) or off, for long runs.
func (l *Link) SetCapture(on bool) { l.noCap = !on }

// Frames returns every frame that entered the link so far.
func (l *Link) Frames() []CapturedFrame { return l.frames }

func (l *Link) send(from Side, frame []byte) {
	data := append([]byte(nil), frame...)
	idx := l.count[from]
	l.count[from]++
	if !l.noCap {
		l.frames = append(l.frames, CapturedFrame{Time: l.clock.Now(), From: from, Data: data})
	}
	if l.OnTransmit != nil {
		l.OnTransmit(from, idx, data)
	}
	delay := l.latency
	copies := 1
	reorder := (*Impairment)(nil)
	decoded := false
	for _, r := range l.rules {
		if !r.Dir.matches(from) || (r.Times > 0 && r.fired >= r.Times) {
			continue
		}
		if !l.selects(r, idx, data, &decoded) {
			continue
		}
		r.fired++
		switch r.Action {
		case Drop:
			copies = 0
		case Duplicate:
			n := r.Copies
			if n <= 0 {
				n = 1
			}
			copies += n
		case Delay:
			delay += r.Delay
		case Reorder:
			reorder = r
		}
	}
	if copies == 0 {
		l.Dropped++
		return
	}
	if copies > 1 {
		l.Duplicated += copies - 1
	}
	if delay != l.latency {
		l.Delayed++
	}
	to := SideB
	if from == SideB {
		to = SideA
	}
	if reorder != nil {
		l.Reordered++
		hold := reorder.Hold
		if hold <= 0 {
			hold = 1
		}
		maxHold := reorder.Delay
		if maxHold <= 0 {
			maxHold = 10*l.latency + 10*time.Microsecond
		}
		h := &heldFrame{idx: idx, data: data, left: hold}
		h.timer = l.clock.AfterFunc(delay+maxHold, func() { l.release(to, h) })
		l.held[from] = append(l.held[from], h)
		for i := 1; i < copies; i++ {
			l.schedule(from, to, idx, data, delay)
		}
		return
	}
	for i := 0; i < copies; i++ {
		l.schedule(from, to, idx, data, delay)
	}
}

func (l *Link) selects(r *Impairment, idx int, data []byte, decoded *bool) bool {
	switch {
	case r.ByIndex:
		return idx == r.Index
	case r.ByOpcode || r.ByPSN:
		if !*decoded {
			if err := l.dec.DecodeEthernet(data); err != nil {
				return false
			}
			*decoded = true
		}
		if r.ByPSN && l.dec.PSN != r.PSN {
			return false
		}
		if !r.ByOpcode {
			return true
		}
		if l.dec.Opcode != r.Opcode {
			return false
		}
		r.matched++
		return r.Nth <= 0 || r.matched == r.Nth
	case r.Prob > 0:
		return l.rng.Float64() < r.Prob
	}
	return true
}

func (l *Link) schedule(from, to Side, idx int, data []byte, delay time.Duration) {
	l.clock.AfterFunc(delay, func() {
		if f := l.recv[to]; f != nil {
			f(data)
		}
		l.overtaken(from, to, idx)
	})
}

// overtaken counts the delivery of frame idx against the frames sent
// before it and held for reordering, releasing those whose count is done.
func (l *Link) overtaken(from, to Side, idx int) {
	hs := l.held[from]
	if len(hs) == 0 {
		return
	}
	keep := hs[:0]
	var release []*heldFrame
	for _, h := range hs {
		if h.done {
			continue
		}
		if h.idx >= idx {
			keep = append(keep, h)
			continue
		}
		h.left--
		if h.left <= 0 {
			release = append(release, h)
			continue
		}
		keep = append(keep, h)
	}
	for i := len(keep); i < len(hs); i++ {
		hs[i] = nil
	}
	l.held[from] = keep
	for _, h := range release {
		h.timer.Stop()
		h := h
		l.clock.AfterFunc(0, func() { l.release(to, h) })
	}
}

func (l *Link) release(to Side, h *heldFrame) {
	if h.done {
		return
	}
	h.done = true
	if f := l.recv[to]; f != nil {
		f(h.data)
	}
}

// pcapng block types and options (pcapng specification, IETF draft
// draft-ietf-opsawg-pcapng).
const (
	pcapngSHB       = 0x0A0D0D0A
	pcapngIDB       = 0x00000001
	pcapngEPB       = 0x00000006
	pcapngByteOrder = 0x1A2B3C4D
	linkTypeEther   = 1
	optIfTsresol    = 9
	optEpbFlags     = 2
)

// WritePcapng writes every frame that entered the link, both directions,
// as a pcapng file: one section, one Ethernet interface with nanosecond
// timestamps taken from the clock, and one enhanced packet block per frame
// whose epb_flags say outbound (sent by side A) or inbound (sent by B).
func (l *Link) WritePcapng(w io.Writer) error {
	le := binary.LittleEndian
	var b []byte
	// Section header block.
	b = le.AppendUint32(b, pcapngSHB)
	b = le.AppendUint32(b, 28)
	b = le.AppendUint32(b, pcapngByteOrder)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint64(b, 0xFFFFFFFFFFFFFFFF)
	b = le.AppendUint32(b, 28)
	// Interface description block with if_tsresol = 9 (nanoseconds).
	b = le.AppendUint32(b, pcapngIDB)
	b = le.AppendUint32(b, 32)
	b = le.AppendUint16(b, linkTypeEther)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, 0) // snaplen: no limit
	b = le.AppendUint16(b, optIfTsresol)
	b = le.AppendUint16(b, 1)
	b = append(b, 9, 0, 0, 0)
	b = le.AppendUint32(b, 0) // opt_endofopt
	b = le.AppendUint32(b, 32)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("writing pcapng header: %w", err)
	}
	for i, f := range l.frames {
		b = b[:0]
		n := len(f.Data)
		padded := (n + 3) &^ 3
		total := 28 + padded + 12 + 4
		ts := uint64(f.Time)
		b = le.AppendUint32(b, pcapngEPB)
		b = le.AppendUint32(b, uint32(total))
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, uint32(ts>>32))
		b = le.AppendUint32(b, uint32(ts))
		b = le.AppendUint32(b, uint32(n))
		b = le.AppendUint32(b, uint32(n))
		b = append(b, f.Data...)
		for j := n; j < padded; j++ {
			b = append(b, 0)
		}
		flags := uint32(2) // outbound, from side A's point of view
		if f.From == SideB {
			flags = 1 // inbound
		}
		b = le.AppendUint16(b, optEpbFlags)
		b = le.AppendUint16(b, 4)
		b = le.AppendUint32(b, flags)
		b = le.AppendUint32(b, 0) // opt_endofopt
		b = le.AppendUint32(b, uint32(total))
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("writing pcapng frame %d: %w", i+1, err)
		}
	}
	return nil
}
