package pcapdut

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
	"github.com/rcconform/rcconform/wire/capture"
)

// MaxListedErrors bounds the frame errors (bad ICRC, malformed RoCE, RoCE
// cut inside its headers) that CaptureInfo.Errors lists one by one; the
// rest are summed up in one more line.
const MaxListedErrors = 20

// progressEvery is how many frames pass between two progress calls.
const progressEvery = 1 << 14

// record is a trace record and its packet in one allocation of 256
// bytes, payload excluded. The auditor and its monitors keep records
// (recent packets for ladders, requests awaiting their answers), so every
// frame gets its own, and only those still referenced stay in memory.
// (Allocating records in slabs saves a tenth of the adapter's time, but a
// slab stays alive while any of its records is held, which multiplied the
// memory of monitors that keep thousands of requests.)
type record struct {
	rec trace.Record
	pkt wire.Packet
}

// PanicError reports a panic inside the auditor or a monitor, while a
// frame was audited or (Frame 0) while the auditor ended. The audit stops
// there; the auditor is not ended.
type PanicError struct {
	File  string
	Frame int // 1-based number of the frame being audited
	Value any // what was passed to panic
	Stack []byte
}

func (e *PanicError) Error() string {
	where := fmt.Sprintf("frame %d", e.Frame)
	if e.Frame == 0 {
		where = "the end of the capture"
	}
	return fmt.Sprintf("auditing %s: %s: internal error in a monitor (please report it): %v", e.File, where, e.Value)
}

// auditState is the per-capture bookkeeping of AuditReader.
type auditState struct {
	info     reports.CaptureInfo
	listed   int // frame errors listed in info.Errors
	unlisted struct{ badICRC, malformed, cut int }
	linkSkip map[uint32]int // frames skipped per unsupported link type
	cm       *cmTable       // the connection manager's handshakes (cm.go)
	noVCRC   int            // native InfiniBand frames whose VCRC the capture lacks
	// ignoreICRC: the capture did not record the ICRCs the wire carried
	// (icrc.go); a bad one is taken as unverifiable, icrcIgnored counts
	// them, icrcWhy says why.
	ignoreICRC  bool
	icrcIgnored int
	icrcWhy     string
}

// AuditReader audits the frames r has not yet returned, in one pass, and
// ends the auditor (a.End), also after a read error. progress and total are as in
// AuditFile (total may be 0 when unknown).
//
// Each frame is read once. Its network layer is found (capture.Network:
// Ethernet with VLAN tags, Linux cooked, raw IP, loopback, IPoIB, ERF
// records and native InfiniBand) and decoded into one reused wire.Frame.
// Frames that are not RoCE (nor native InfiniBand transport packets), or
// whose link type capture.Network does not support, are skipped and
// counted in Skipped. RoCE and native InfiniBand frames are counted in
// RoCEFrames and have their ICRC (and, native, their VCRC: a bad one is
// listed and counted with the bad ICRCs, a missing one noted as
// unverifiable) checked:
//   - a bad ICRC is counted (BadICRC) and listed in Errors as
//     "frame N: bad ICRC (0x… on the wire, 0x… computed)"; the frame is
//     never analysed, since its receiver dropped it;
//   - a frame cut by the capture's snaplen is counted (Truncated) and
//     analysed from the headers it has (its ICRC is unverifiable, not bad);
//     one cut inside its transport headers is listed in Errors and not
//     analysed;
//   - a malformed RoCE frame (too short for its opcode's headers, a
//     reserved RC opcode, a pad count larger than the payload, a UDP length
//     that does not fit) is listed in Errors with its frame number and not
//     analysed; so is a frame whose network header gives a length past its
//     end where the capture recorded every byte the wire carried (captured
//     length = original length, no tunnel or ERF record around it): its
//     sender left out its pad bytes or ICRC, and its receiver drops it
//     (senderCut).
//
// Frames of other InfiniBand transports (UC, UD, RD and DC, CNP) count as
// RoCE frames and are checked for their ICRC, but they are not RC, so no
// record is made for them. UD SEND Only packets to QP 1 carry the
// connection manager's MADs: their REQ, REP, RTU, REJ and DREQ/DREP give
// each connection its settings (cm.go; harness.Auditor.ConnSetup), and
// CaptureInfo.Connections lists the connections found.
//
// Native InfiniBand connections are keyed by LID (wire.LIDAddr gives
// each LID an address of its own), GRH or not.
//
// Every RC frame becomes a trace.Record: Frame is the 1-based frame
// number, Time the time since the capture's first frame, Dir ToResponder
// for request opcodes and ToRequester for response opcodes, Src and Dst
// the IP addresses (IPv4-mapped GIDs of RoCEv1 and RoCEv2/IPv6 are
// unmapped to IPv4, so that a QP one side reaches over RoCEv1 pairs with
// the other side's RoCEv2/IPv4 answers), IPID and HasIPID (IPv4 only), the
// ICRC status, Truncated, and PayloadLen (the payload length on the wire,
// from the IP length for a cut frame). The record's Packet is a copy of the
// headers without the payload: Packet.Payload is nil and PayloadLen gives
// its length. Monitors judge headers, PSNs and lengths, never data, and a
// record then costs 256 bytes whatever the MTU.
//
// A read error part-way ends the audit: the CaptureInfo describes what was
// read, its Errors end with the read error, and the error is returned
// (wrapping capture.ErrTruncated or capture.ErrCorrupt, naming file and
// frame). io.EOF is a clean end and no error. A panic in a monitor is
// returned as a *PanicError.
//
// r is read, and its frames decoded, by a goroutine of AuditReader's own,
// a little ahead of the auditor; the auditor and progress are called on
// the caller's goroutine, frame by frame in order, as a single loop would.
// r is not used once AuditReader has returned.
//
// a is a *harness.Auditor, or a *harness.ShardedAuditor to judge the
// connections on several goroutines (or only a share of them); a panic in
// one of its workers is reported as a *PanicError naming the frame the
// worker was judging.
func AuditReader(r *capture.Reader, a Observer, progress func(read, total int64), total int64) (reports.CaptureInfo, error) {
	return auditReader(r, a, progress, total)
}

// Observer is what AuditReader feeds records to, in capture order, and
// ends: a *harness.Auditor or a *harness.ShardedAuditor.
type Observer interface {
	Observe(r *trace.Record)
	End()
}

// aborter is an Observer that must be told when it will not be ended.
type aborter interface{ Abort() }

type observer = Observer

// The capture is read and decoded in a goroutine of its own (reading,
// decoding, the ICRC and the records cost about half of what the monitors
// do), which hands the records to the auditor's side in order, in
// batches: the monitors see exactly what a single loop would show them,
// and CaptureInfo ends up the same, also when a monitor panics.

// batchLen is how many items a batch carries.
const batchLen = 256

// counts is what CaptureInfo said after a frame: a panic in a monitor
// reports what was read up to the frame it was auditing.
type counts struct {
	frames, roce, skipped, badICRC, truncated, errors int
}

// item is a frame the auditor's side must act on: one with a record, or
// one after which progress is due.
type item struct {
	rec      *trace.Record
	num      int   // frame number
	read     int64 // r.BytesRead() after the frame, for progress
	progress bool
	after    counts
}

// batch is what the reading side sends: items, then, in the last batch,
// how reading ended.
type batch struct {
	items []item
	last  bool
	err   error // the error that ended reading (io.EOF: the end)
	// A panic while reading or decoding, with its stack.
	panicked bool
	value    any
	stack    []byte
}

func auditReader(r *capture.Reader, a observer, progress func(read, total int64), total int64) (info reports.CaptureInfo, err error) {
	return auditReaderWith(r, a, progress, total, icrcChoice{})
}

// auditReaderWith is auditReader with the capture's ICRCs judged as ic
// says (icrc.go).
func auditReaderWith(r *capture.Reader, a observer, progress func(read, total int64), total int64, ic icrcChoice) (info reports.CaptureInfo, err error) {
	s := &auditState{ignoreICRC: ic.ignore, icrcWhy: ic.why}
	s.info.File = r.Name()
	s.info.Format = r.Format()
	s.cm = newCMTable(r.Name())
	// Settings learnt from the handshake reach each connection as it is
	// made; the connections found are listed at the end.
	// A caller's own ConnSetup runs first; the handshake's settings then
	// fill what it left unknown, as for flags.
	var conns func() []*harness.Conn
	withCM := func(caller func(*harness.Conn)) func(*harness.Conn) {
		if caller == nil {
			return s.cm.setup
		}
		return func(c *harness.Conn) { caller(c); s.cm.setup(c) }
	}
	switch ha := a.(type) {
	case *harness.Auditor:
		ha.ConnSetup, conns = withCM(ha.ConnSetup), ha.Conns
	case *harness.ShardedAuditor:
		ha.ConnSetup, conns = withCM(ha.ConnSetup), ha.Conns
	}

	out := make(chan batch, 4)
	free := make(chan []item, 6)
	stop := make(chan struct{})
	go s.read(r, progress != nil, out, free, stop)
	stopped := false
	stopReading := func() {
		if !stopped {
			stopped = true
			close(stop)
			for range out {
			}
		}
	}

	cur := 0 // the frame being audited; 0 while the auditor ends
	var now counts
	restore := true // a panic in the auditor: report what was read up to cur's frame
	var stack []byte
	defer func() {
		// A monitor that panics is a bug in rcconform, not in the
		// capture: report it as an error naming the frame, with what
		// was audited before it.
		if p := recover(); p != nil {
			if wp, ok := p.(*harness.WorkerPanic); ok {
				// A monitor on a worker of a sharded auditor: its own
				// frame and stack.
				p, cur, stack, restore = wp.Value, wp.Frame, wp.Stack, false
			}
			if ab, ok := a.(aborter); ok {
				ab.Abort()
			}
			if stack == nil {
				stack = debug.Stack()
			}
			stopReading()
			if restore {
				s.info.Frames, s.info.RoCEFrames, s.info.Skipped = now.frames, now.roce, now.skipped
				s.info.BadICRC, s.info.Truncated = now.badICRC, now.truncated
				s.info.Errors = s.info.Errors[:now.errors]
			}
			perr := &PanicError{File: s.info.File, Frame: cur, Value: p, Stack: stack}
			s.info.Errors = append(s.info.Errors, perr.Error())
			info, err = s.info, perr
		}
	}()

	for b := range out {
		for i := range b.items {
			it := &b.items[i]
			now = it.after
			if it.rec != nil {
				cur = it.num
				a.Observe(it.rec)
			}
			if it.progress {
				progress(it.read, total)
			}
		}
		if b.last {
			if b.panicked {
				// Reading panicked: report it as the loop would have,
				// with what was read when it did.
				restore, stack = false, b.stack
				stopReading()
				panic(b.value)
			}
			err = b.err
		}
		clear(b.items)
		select {
		case free <- b.items[:0]:
		default:
		}
	}
	stopped = true // the reading goroutine has ended: out is closed

	cur = 0
	a.End()
	s.finish()
	if conns != nil {
		cs := conns()
		s.info.Connections = s.cm.connections(cs)
		for _, c := range cs {
			if c.Follows != 0 {
				s.info.Notes = append(s.info.Notes, fmt.Sprintf("connection %d takes over the addresses and responder QP 0x%06x of connection %d at frame %d: %s, which no requester of one QP sends, so the QPs were made anew with the same numbers and are audited as two connections",
					c.ID, c.ResponderQP, c.Follows, c.FollowsAt, c.FollowsWhy))
			}
		}
	}
	if progress != nil {
		progress(r.BytesRead(), total)
	}
	if errors.Is(err, io.EOF) {
		return s.info, nil
	}
	err = fmt.Errorf("%w (the %d frames before it were audited)", err, s.info.Frames)
	s.info.Errors = append(s.info.Errors, err.Error())
	return s.info, err
}

// The reading side works in two steps. decode classifies one frame and
// makes its record; it touches nothing but its decoder's own wire.Frame,
// so several goroutines can decode frames at once (readParallel). apply
// then adds what decode found to the capture's bookkeeping (counts,
// listed errors, the CM table), frame by frame in capture order, on one
// goroutine, and the emitter hands the records on in batches.

// skipKind says why a frame is not RoCE.
type skipKind uint8

const (
	notSkipped skipKind = iota
	skipOther           // not RoCE, or broken before it could say so
	skipLink            // a link type capture.Network does not support
)

// failKind says why a RoCE frame is not analysed.
type failKind uint8

const (
	failNone      failKind = iota
	failBadICRC            // its receiver dropped it
	failBadVCRC            // its receiver's link layer dropped it
	failCut                // cut by the snaplen inside its transport headers
	failMalformed          // too short for its opcode, a reserved RC opcode cut short, ...
)

// outcome is what decode found in one frame.
type outcome struct {
	rec       *trace.Record // nil: no record
	skip      skipKind
	fail      failKind
	roceTrunc bool // a RoCE frame counted in Truncated
	noVCRC    bool // a native InfiniBand frame without its VCRC
	// icrcIgnored: a bad ICRC taken as unverifiable (decoder.ignoreICRC)
	icrcIgnored bool
	icrcGood    bool // the ICRC was checked and matched
	linkType    uint32
	wireCRC     uint32 // failBadICRC, failBadVCRC: as on the wire,
	computed    uint32 // and as computed
	capLen      int    // failCut: bytes captured,
	origLen     int    // of so many on the wire
	err         error  // failCut, failMalformed
	cm          *cmFound
}

// cmFound is a MAD to QP 1: a CM message, maybe.
type cmFound struct {
	msg      wire.CMMsg
	err      error
	src, dst netip.Addr
}

// decoder decodes frames, one at a time, into a wire.Frame of its own.
type decoder struct {
	frame wire.Frame
	// ignoreICRC: the capture did not record the ICRCs the wire carried
	// (auditState.ignoreICRC).
	ignoreICRC bool
}

// decode classifies frame cf into o and makes its record.
func (d *decoder) decode(cf *capture.Frame, o *outcome) {
	*o = outcome{}
	proto, off, err := capture.Network(cf.LinkType, cf.Data)
	if err != nil {
		o.skip = skipOther // also a link header cut short: nothing to decode
		if errors.Is(err, capture.ErrUnsupportedLinkType) {
			o.skip, o.linkType = skipLink, cf.LinkType
		}
		return
	}
	f := &d.frame
	// Reset what tells a RoCE frame from others, so that a decoding error
	// can be classified from what this frame set (see isRoCE).
	f.DstPort, f.Encap = 0, encapNone
	err = f.DecodeNetwork(proto, cf.Data[off:])
	if err != nil {
		if errors.Is(err, wire.ErrNotRoCE) || !isRoCE(f) {
			// Not RoCE, or broken before it could say so (an IP or UDP
			// header cut short or malformed): not ours to judge.
			o.skip = skipOther
			return
		}
		d.badRoCE(cf, err, o)
		return
	}
	if f.Truncated && senderCut(cf) {
		o.fail, o.err = failMalformed, errSenderCut(cf)
		return
	}
	o.roceTrunc = f.Truncated
	st := d.checkICRC(o)
	if !d.crcOK(st, o) {
		return
	}
	o.rec = d.record(cf, st)
}

// checkICRC checks the frame's ICRC; where the capture did not record the
// ICRCs (ignoreICRC), a bad one is unverifiable, noted in o.
func (d *decoder) checkICRC(o *outcome) wire.ICRCStatus {
	st := d.frame.CheckICRC()
	o.icrcGood = st == wire.ICRCOK
	if st == wire.ICRCBad && d.ignoreICRC {
		st, o.icrcIgnored = wire.ICRCUnverifiable, true
	}
	return st
}

// crcOK notes a bad ICRC (st) or VCRC in o, and a VCRC the capture does
// not hold, and reports whether the frame is to be analysed: a frame
// whose ICRC or VCRC is bad never reached the transport.
func (d *decoder) crcOK(st wire.ICRCStatus, o *outcome) bool {
	f := &d.frame
	if st == wire.ICRCBad {
		net := f.Network()
		o.fail, o.wireCRC, o.computed = failBadICRC, f.ICRC, wire.ComputeICRC(net[:len(net)-wire.ICRCLen], f.Encap)
		return false
	}
	switch f.CheckVCRC() {
	case wire.ICRCBad:
		o.fail, o.wireCRC, o.computed = failBadVCRC, uint32(f.VCRC), uint32(wire.ComputeVCRC(f.Network()))
		return false
	case wire.ICRCUnverifiable:
		o.noVCRC = true
	}
	return true
}

// senderCut reports whether a frame that ends before its network header
// says (wire.Frame.Truncated) holds all the capture point saw of it: the
// capture recorded as many bytes as were on the wire, and no mirror tunnel
// (which may cut a packet without the frame's length saying so) or ERF
// record (whose own wire length the pcap length does not carry) lies
// around it. Such a packet left its sender short (without its pad bytes
// or ICRC, or with a length field too large): the sender's malformed
// packet, which its receiver drops, never one the capture cut.
func senderCut(cf *capture.Frame) bool {
	return !cf.Truncated() && cf.LinkType != capture.LinkTypeERF && !capture.Tunnelled(cf.LinkType, cf.Data)
}

// errSenderCut describes a frame senderCut found.
func errSenderCut(cf *capture.Frame) error {
	return fmt.Errorf("its network header gives a length past the frame's end, though the capture did not cut the frame (%d bytes captured of %d on the wire): the sender's malformed packet (missing pad bytes or ICRC, or a length field too large), which its receiver drops: %w", len(cf.Data), cf.OrigLen, wire.ErrMalformed)
}

// badRoCE classifies a RoCE frame whose transport headers did not decode.
func (d *decoder) badRoCE(cf *capture.Frame, err error, o *outcome) {
	f := &d.frame
	switch {
	case errors.Is(err, wire.ErrUnknownOpcode) && f.Opcode.Transport() != wire.TransportRC:
		// UC, UD, RD/DC or CNP: RoCE, but not RC. Check the ICRC all the
		// same; the transport is outside the monitors' reach.
		o.roceTrunc = f.Truncated
		if d.crcOK(d.checkICRC(o), o) && f.Opcode == wire.UDSendOnly && f.DestQP == wire.GSIQP {
			// A MAD: the CM handshake, maybe.
			c := &cmFound{src: f.Src.Unmap(), dst: f.Dst.Unmap()}
			c.msg, c.err = wire.DecodeCMPacket(&f.Packet)
			o.cm = c
		}
	case errors.Is(err, wire.ErrUnknownOpcode) && f.Opcode.ReservedRC() && !f.Truncated:
		// A request with a reserved RC opcode, which no responder can
		// execute: judged where it is answered (§9.7.5.1.5).
		st := d.checkICRC(o)
		if d.crcOK(st, o) {
			o.rec = d.record(cf, st)
		}
	case f.Truncated && senderCut(cf):
		o.fail, o.err = failMalformed, fmt.Errorf("%w: %w", errSenderCut(cf), err)
	case (f.Truncated || cf.Truncated()) && errors.Is(err, wire.ErrShort):
		o.roceTrunc = true
		o.fail, o.capLen, o.origLen, o.err = failCut, len(cf.Data), cf.OrigLen, err
	default:
		o.fail, o.err = failMalformed, err
	}
}

// apply adds what decoding frame num found to the capture's bookkeeping
// and returns the frame's record (nil when it is not to be analysed).
func (s *auditState) apply(o *outcome, num int) *trace.Record {
	switch o.skip {
	case skipLink:
		if s.linkSkip == nil {
			s.linkSkip = map[uint32]int{}
		}
		s.linkSkip[o.linkType]++
		s.info.Skipped++
		return nil
	case skipOther:
		s.info.Skipped++
		return nil
	}
	s.info.RoCEFrames++
	if o.roceTrunc {
		s.info.Truncated++
	}
	switch o.fail {
	case failBadICRC:
		s.info.BadICRC++
		if s.listFrameError(&s.unlisted.badICRC) {
			s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: bad ICRC (0x%08x on the wire, 0x%08x computed)", num, o.wireCRC, o.computed))
		}
		return nil
	case failBadVCRC:
		s.info.BadICRC++
		if s.listFrameError(&s.unlisted.badICRC) {
			s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: bad VCRC (0x%04x on the wire, 0x%04x computed)", num, o.wireCRC, o.computed))
		}
		return nil
	case failCut:
		if s.listFrameError(&s.unlisted.cut) {
			s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: cut by the capture's snaplen inside its transport headers (%d of %d bytes captured), not analysed: %v",
				num, o.capLen, o.origLen, o.err))
		}
		return nil
	case failMalformed:
		if s.listFrameError(&s.unlisted.malformed) {
			s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: malformed RoCE frame, not analysed: %v", num, o.err))
		}
		return nil
	}
	if o.noVCRC {
		s.noVCRC++
	}
	if o.icrcIgnored {
		s.icrcIgnored++
	}
	if c := o.cm; c != nil {
		s.cm.observeMsg(&c.msg, c.err, c.src, c.dst, num)
	}
	if o.rec != nil {
		s.cm.noteRecord(o.rec)
	}
	return o.rec
}

// emitter hands the records (and the progress calls due) to the auditor's
// side in batches, with the counts after each.
type emitter struct {
	s        *auditState
	out      chan<- batch
	free     <-chan []item
	stop     <-chan struct{}
	progress bool
	items    []item
	t0       int64
	haveT0   bool
}

// send sends b, unless the auditor's side has stopped.
func (e *emitter) send(b batch) bool {
	select {
	case e.out <- b:
		return true
	case <-e.stop:
		return false
	}
}

// frame takes frame num, already counted in Frames, with its timestamp
// (ns, 0 when unknown), the outcome of its decoding and the bytes read
// after it; false when the auditor's side has stopped.
func (e *emitter) frame(num int, ts int64, o *outcome, read int64) bool {
	s := e.s
	if !e.haveT0 {
		e.t0, e.haveT0 = ts, true
	}
	rec := s.apply(o, num)
	if rec != nil {
		rec.Time = durationNS(ts - e.t0)
	}
	due := e.progress && s.info.Frames%progressEvery == 0
	if rec == nil && !due {
		return true
	}
	it := item{rec: rec, num: num, progress: due, after: counts{
		frames: s.info.Frames, roce: s.info.RoCEFrames, skipped: s.info.Skipped,
		badICRC: s.info.BadICRC, truncated: s.info.Truncated, errors: len(s.info.Errors)}}
	if due {
		it.read = read
	}
	e.items = append(e.items, it)
	if len(e.items) == batchLen {
		if !e.send(batch{items: e.items}) {
			return false
		}
		select {
		case e.items = <-e.free:
		default:
			e.items = make([]item, 0, batchLen)
		}
	}
	return true
}

// frameTime returns a frame's timestamp in ns (0 when the capture has
// none).
func frameTime(f *capture.Frame) int64 {
	if f.Time.IsZero() {
		return 0
	}
	return f.Time.UnixNano()
}

// decodeWorkers returns how many goroutines decode frames besides the one
// that reads them (0: it decodes them itself). Decoding, the ICRC and the
// records cost about a third of what the monitors do: on two cores the
// reading side keeps up on one goroutine, and copying each frame out of
// the reader's buffer for another goroutine would only add work; with more
// cores, one reading goroutine would hold back the monitors' workers.
var decodeWorkers = func() int {
	n := runtime.GOMAXPROCS(0)
	if n < 4 {
		return 0
	}
	return min(n/2, 8)
}

// read reads and decodes every frame of r and sends the items to out, in
// batches, ending with one that says how reading ended; it closes out when
// it returns, and r is no longer used then. It stops early when stop is
// closed. Used batches come back through free.
func (s *auditState) read(r *capture.Reader, progress bool, out chan<- batch, free <-chan []item, stop <-chan struct{}) {
	defer close(out)
	e := &emitter{s: s, out: out, free: free, stop: stop, progress: progress, items: make([]item, 0, batchLen)}
	if n := decodeWorkers(); n > 0 {
		s.readParallel(r, e, n)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			e.send(batch{items: e.items, last: true, panicked: true, value: p, stack: debug.Stack()})
		}
	}()
	d := decoder{ignoreICRC: s.ignoreICRC}
	var o outcome
	for {
		f, err := r.Next()
		if err != nil {
			e.send(batch{items: e.items, last: true, err: err})
			return
		}
		s.info.Frames++
		d.decode(f, &o)
		if !e.frame(f.Num, frameTime(f), &o, r.BytesRead()) {
			return
		}
	}
}

// rawFrame is a frame copied out of the reader for a decoding goroutine.
type rawFrame struct {
	num      int
	ts       int64
	linkType uint32
	origLen  int
	iface    int
	off, n   int   // its bytes in the batch's data
	read     int64 // r.BytesRead() after it
}

// rawBatch is a run of frames in capture order, decoded by one goroutine.
type rawBatch struct {
	frames []rawFrame
	data   []byte
	res    []outcome
	done   chan struct{} // a token once decoded
	// After the frames: how reading ended (last), or a panic while reading
	// (readPanic) or decoding frame panicAt (decodePanic).
	last                   bool
	err                    error
	readPanic, decodePanic bool
	panicAt                int
	value                  any
	stack                  []byte
}

// Sizes of a rawBatch: frames, and bytes after which no frame is added.
const (
	rawBatchLen   = 256
	rawBatchBytes = 256 << 10
)

// readParallel is read with n goroutines decoding: one goroutine reads
// the frames into batches, the decoders decode whole batches, and this
// goroutine applies the outcomes batch by batch in capture order.
func (s *auditState) readParallel(r *capture.Reader, e *emitter, n int) {
	jobs := make(chan *rawBatch, 2*n)
	order := make(chan *rawBatch, 2*n+2)
	pool := make(chan *rawBatch, 2*n+4)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := decoder{ignoreICRC: s.ignoreICRC}
			for b := range jobs {
				d.decodeBatch(b)
				b.done <- struct{}{}
			}
		}()
	}
	go readBatches(r, jobs, order, pool, quit)
	defer func() {
		// Stop the reading goroutine and wait for it (r is not used
		// after read returns) and for the decoders.
		close(quit)
		for range order {
		}
		wg.Wait()
	}()
	for b := range order {
		<-b.done
		for i := range b.frames {
			fr := &b.frames[i]
			if b.decodePanic && i == b.panicAt {
				s.info.Frames++
				e.send(batch{items: e.items, last: true, panicked: true, value: b.value, stack: b.stack})
				return
			}
			s.info.Frames++
			if !e.frame(fr.num, fr.ts, &b.res[i], fr.read) {
				return
			}
		}
		switch {
		case b.readPanic:
			e.send(batch{items: e.items, last: true, panicked: true, value: b.value, stack: b.stack})
			return
		case b.last:
			e.send(batch{items: e.items, last: true, err: b.err})
			return
		}
		clear(b.res) // the records are the auditor's now
		select {
		case pool <- b:
		default:
		}
	}
}

// readBatches reads r into batches and hands each to the decoders (jobs)
// and, in the same order, to the goroutine that applies them (order),
// until reading ends or quit is closed. It closes both when it returns.
func readBatches(r *capture.Reader, jobs, order chan<- *rawBatch, pool <-chan *rawBatch, quit <-chan struct{}) {
	defer close(jobs)
	defer close(order)
	for {
		var b *rawBatch
		select {
		case b = <-pool:
			b.frames, b.data = b.frames[:0], b.data[:0]
		default:
			b = &rawBatch{frames: make([]rawFrame, 0, rawBatchLen), data: make([]byte, 0, rawBatchBytes),
				res: make([]outcome, rawBatchLen), done: make(chan struct{}, 1)}
		}
		b.fill(r)
		select {
		case order <- b:
		case <-quit:
			return
		}
		select {
		case jobs <- b:
		case <-quit:
			return
		}
		if b.last || b.readPanic {
			return
		}
	}
}

// fill reads frames of r into b until it is full or reading ends.
func (b *rawBatch) fill(r *capture.Reader) {
	defer func() {
		if p := recover(); p != nil {
			b.readPanic, b.value, b.stack = true, p, debug.Stack()
		}
	}()
	for len(b.frames) < rawBatchLen && len(b.data) < rawBatchBytes {
		f, err := r.Next()
		if err != nil {
			b.last, b.err = true, err
			return
		}
		off := len(b.data)
		b.data = append(b.data, f.Data...)
		b.frames = append(b.frames, rawFrame{num: f.Num, ts: frameTime(f), linkType: f.LinkType, origLen: f.OrigLen,
			iface: f.Interface, off: off, n: len(f.Data), read: r.BytesRead()})
	}
}

// decodeBatch decodes every frame of b, noting a panic in b.
func (d *decoder) decodeBatch(b *rawBatch) {
	i := 0
	defer func() {
		if p := recover(); p != nil {
			b.decodePanic, b.panicAt, b.value, b.stack = true, i, p, debug.Stack()
		}
	}()
	for ; i < len(b.frames); i++ {
		fr := &b.frames[i]
		cf := capture.Frame{Num: fr.num, LinkType: fr.linkType, Data: b.data[fr.off : fr.off+fr.n : fr.off+fr.n],
			OrigLen: fr.origLen, Interface: fr.iface}
		d.decode(&cf, &b.res[i])
	}
}

// encapNone marks a Frame whose decoding stopped before it knew its
// encapsulation.
const encapNone wire.Encap = 0xFF

// isRoCE reports whether a frame whose decoding failed had got far enough
// to be known as RoCE: a GRH naming an IBA transport, or UDP to 4791.
func isRoCE(f *wire.Frame) bool {
	return f.Encap == wire.RoCEv1 || f.Encap == wire.NativeIB || (f.Encap != encapNone && f.DstPort == wire.UDPPort)
}

// listFrameError reports whether one more frame error may be listed; when
// not, it counts the error in *unlisted.
func (s *auditState) listFrameError(unlisted *int) bool {
	if s.listed < MaxListedErrors {
		s.listed++
		return true
	}
	*unlisted++
	return false
}

// finish adds the summary lines to Errors: frame errors beyond the listed
// ones, and frames skipped for their link type.
func (s *auditState) finish() {
	u := s.unlisted
	if n := u.badICRC + u.malformed + u.cut; n > 0 {
		var parts []string
		if u.badICRC > 0 {
			parts = append(parts, fmt.Sprintf("%d bad ICRC", u.badICRC))
		}
		if u.malformed > 0 {
			parts = append(parts, fmt.Sprintf("%d malformed", u.malformed))
		}
		if u.cut > 0 {
			parts = append(parts, fmt.Sprintf("%d cut inside their headers", u.cut))
		}
		s.info.Errors = append(s.info.Errors, fmt.Sprintf("… and %d more frame errors not listed (%s)", n, strings.Join(parts, ", ")))
	}
	if s.icrcIgnored > 0 {
		s.info.Notes = append(s.info.Notes, fmt.Sprintf("%d RoCE frames carry an ICRC that does not match their headers, judged as if the ICRC were not recorded: %s", s.icrcIgnored, s.icrcWhy))
	}
	if s.noVCRC > 0 {
		s.info.Notes = append(s.info.Notes, fmt.Sprintf("%d native InfiniBand frames end without their VCRC in the capture: VCRC unverifiable", s.noVCRC))
	}
	s.info.Notes = append(s.info.Notes, s.cm.notesList()...)
	lts := make([]uint32, 0, len(s.linkSkip))
	for lt := range s.linkSkip {
		lts = append(lts, lt)
	}
	sort.Slice(lts, func(i, j int) bool { return lts[i] < lts[j] })
	for _, lt := range lts {
		s.info.Errors = append(s.info.Errors, fmt.Sprintf("%d frames of link type %d (%s) skipped: unsupported link type (rcconform reads Ethernet, Linux cooked, raw IP, loopback, IPoIB, ERF and native InfiniBand captures)",
			s.linkSkip[lt], lt, capture.LinkTypeName(lt)))
	}
}

// record builds the trace record of a decoded RC frame.
func (d *decoder) record(cf *capture.Frame, st wire.ICRCStatus) *trace.Record {
	f := &d.frame
	op := f.Opcode
	var dir trace.Dir
	switch {
	case op.IsRequest() || op.ReservedRC():
		dir = trace.ToResponder
	case op.IsResponse():
		dir = trace.ToRequester
	default:
		return nil // a known RC opcode that is neither (none today)
	}
	b := &record{}
	b.pkt = f.Packet
	b.pkt.Payload = nil
	n := len(f.Payload)
	r := &b.rec
	r.Frame = cf.Num
	r.Dir = dir
	r.Src, r.Dst = f.Src.Unmap(), f.Dst.Unmap()
	if f.Encap == wire.RoCEv2IPv4 {
		r.IPID, r.HasIPID = f.IPID, true
	}
	if f.Encap == wire.RoCEv2IPv4 || f.Encap == wire.RoCEv2IPv6 {
		r.SrcPort = f.SrcPort
	}
	r.Packet = &b.pkt
	r.ICRC = st
	r.Truncated = f.Truncated
	r.PayloadLen = n
	if f.Truncated {
		r.PayloadLen = wirePayloadLen(f)
	}
	return r
}

// wirePayloadLen returns the payload length a cut frame had on the wire,
// from the length its network header gives.
func wirePayloadLen(f *wire.Frame) int {
	net := f.Network()
	var transport int // BTH through pad
	switch f.Encap {
	case wire.RoCEv2IPv4:
		if len(net) < 20 {
			return len(f.Payload)
		}
		ihl := int(net[0]&0x0F) * 4
		transport = int(binary.BigEndian.Uint16(net[2:])) - ihl - 8 - wire.ICRCLen
	case wire.RoCEv2IPv6:
		if len(net) < 40 {
			return len(f.Payload)
		}
		transport = int(binary.BigEndian.Uint16(net[4:])) - 8 - wire.ICRCLen
	case wire.NativeIB:
		transport = 4*int(f.LRH.PktLen) - wire.LRHLen - wire.ICRCLen
		if f.HasGRH {
			transport -= wire.GRHLen
		}
	default:
		if len(net) < 40 {
			return len(f.Payload)
		}
		transport = int(binary.BigEndian.Uint16(net[4:])) - wire.ICRCLen
	}
	n := transport - wire.HeadersLen(f.Opcode) - int(f.PadCnt)
	if n < len(f.Payload) {
		return len(f.Payload)
	}
	return n
}

// durationNS converts nanoseconds to a duration, clamping a clock that
// went backwards to zero.
func durationNS(ns int64) time.Duration {
	if ns < 0 {
		return 0
	}
	return time.Duration(ns)
}
