package pcapdut

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
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
	frame    wire.Frame
	listed   int // frame errors listed in info.Errors
	unlisted struct{ badICRC, malformed, cut int }
	linkSkip map[uint32]int // frames skipped per unsupported link type
	cm       *cmTable       // the connection manager's handshakes (cm.go)
	noVCRC   int            // native InfiniBand frames whose VCRC the capture lacks
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
//     analysed.
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
	s := &auditState{}
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
		s.info.Connections = s.cm.connections(conns())
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

// read reads and decodes every frame of r and sends the items to out, in
// batches, ending with one that says how reading ended; it closes out when
// it returns. It stops early when stop is closed. Used batches come back
// through free.
func (s *auditState) read(r *capture.Reader, progress bool, out chan<- batch, free <-chan []item, stop <-chan struct{}) {
	defer close(out)
	items := make([]item, 0, batchLen)
	send := func(b batch) bool {
		select {
		case out <- b:
			return true
		case <-stop:
			return false
		}
	}
	defer func() {
		if p := recover(); p != nil {
			send(batch{items: items, last: true, panicked: true, value: p, stack: debug.Stack()})
		}
	}()
	var t0 int64
	var haveT0 bool
	for {
		f, err := r.Next()
		if err != nil {
			send(batch{items: items, last: true, err: err})
			return
		}
		s.info.Frames++
		ts := f.Time.UnixNano()
		if f.Time.IsZero() {
			ts = 0
		}
		if !haveT0 {
			t0, haveT0 = ts, true
		}
		rec := s.decode(f)
		if rec != nil {
			rec.Time = durationNS(ts - t0)
		}
		due := progress && s.info.Frames%progressEvery == 0
		if rec == nil && !due {
			continue
		}
		it := item{rec: rec, num: f.Num, progress: due, after: counts{
			frames: s.info.Frames, roce: s.info.RoCEFrames, skipped: s.info.Skipped,
			badICRC: s.info.BadICRC, truncated: s.info.Truncated, errors: len(s.info.Errors)}}
		if due {
			it.read = r.BytesRead()
		}
		items = append(items, it)
		if len(items) == batchLen {
			if !send(batch{items: items}) {
				return
			}
			select {
			case items = <-free:
			default:
				items = make([]item, 0, batchLen)
			}
		}
	}
}

// decode classifies one frame and returns its record, or nil when the
// frame is not to be analysed.
func (s *auditState) decode(cf *capture.Frame) *trace.Record {
	proto, off, err := capture.Network(cf.LinkType, cf.Data)
	if err != nil {
		if errors.Is(err, capture.ErrUnsupportedLinkType) {
			if s.linkSkip == nil {
				s.linkSkip = map[uint32]int{}
			}
			s.linkSkip[cf.LinkType]++
		}
		s.info.Skipped++ // also a link header cut short: nothing to decode
		return nil
	}
	f := &s.frame
	// Reset what tells a RoCE frame from others, so that a decoding error
	// can be classified from what this frame set (see isRoCE).
	f.DstPort, f.Encap = 0, encapNone
	err = f.DecodeNetwork(proto, cf.Data[off:])
	if err != nil {
		if errors.Is(err, wire.ErrNotRoCE) || !isRoCE(f) {
			// Not RoCE, or broken before it could say so (an IP or UDP
			// header cut short or malformed): not ours to judge.
			s.info.Skipped++
			return nil
		}
		return s.badRoCE(cf, err)
	}
	s.info.RoCEFrames++
	if f.Truncated {
		s.info.Truncated++
	}
	st := f.CheckICRC()
	if st == wire.ICRCBad {
		s.badICRC(cf)
		return nil
	}
	if !s.vcrcOK(cf) {
		return nil
	}
	rec := s.record(cf, st)
	if rec != nil {
		s.cm.noteRecord(rec)
	}
	return rec
}

// badICRC counts and lists a frame whose ICRC is bad.
func (s *auditState) badICRC(cf *capture.Frame) {
	f := &s.frame
	s.info.BadICRC++
	if s.listFrameError(&s.unlisted.badICRC) {
		net := f.Network()
		computed := wire.ComputeICRC(net[:len(net)-wire.ICRCLen], f.Encap)
		s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: bad ICRC (0x%08x on the wire, 0x%08x computed)", cf.Num, f.ICRC, computed))
	}
}

// vcrcOK checks a native InfiniBand frame's VCRC: a bad one is counted
// with the bad CRCs and listed (its receiver's link layer dropped it); one
// the capture does not hold is counted for a note.
func (s *auditState) vcrcOK(cf *capture.Frame) bool {
	f := &s.frame
	switch f.CheckVCRC() {
	case wire.ICRCBad:
		s.info.BadICRC++
		if s.listFrameError(&s.unlisted.badICRC) {
			s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: bad VCRC (0x%04x on the wire, 0x%04x computed)", cf.Num, f.VCRC, wire.ComputeVCRC(f.Network())))
		}
		return false
	case wire.ICRCUnverifiable:
		s.noVCRC++
	}
	return true
}

// encapNone marks a Frame whose decoding stopped before it knew its
// encapsulation.
const encapNone wire.Encap = 0xFF

// isRoCE reports whether a frame whose decoding failed had got far enough
// to be known as RoCE: a GRH naming an IBA transport, or UDP to 4791.
func isRoCE(f *wire.Frame) bool {
	return f.Encap == wire.RoCEv1 || f.Encap == wire.NativeIB || (f.Encap != encapNone && f.DstPort == wire.UDPPort)
}

// badRoCE handles a RoCE frame whose transport headers did not decode.
func (s *auditState) badRoCE(cf *capture.Frame, err error) *trace.Record {
	f := &s.frame
	s.info.RoCEFrames++
	switch {
	case errors.Is(err, wire.ErrUnknownOpcode) && f.Opcode.Transport() != wire.TransportRC:
		// UC, UD, RD/DC or CNP: RoCE, but not RC. Check the ICRC all the
		// same; the transport is outside the monitors' reach.
		if f.Truncated {
			s.info.Truncated++
		}
		if f.CheckICRC() == wire.ICRCBad {
			s.badICRC(cf)
			return nil
		}
		if s.vcrcOK(cf) && f.Opcode == wire.UDSendOnly && f.DestQP == wire.GSIQP {
			s.cm.observe(f, cf.Num) // a MAD: the CM handshake, maybe
		}
		return nil
	case (f.Truncated || cf.Truncated()) && errors.Is(err, wire.ErrShort):
		s.info.Truncated++
		if s.listFrameError(&s.unlisted.cut) {
			s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: cut by the capture's snaplen inside its transport headers (%d of %d bytes captured), not analysed: %v",
				cf.Num, len(cf.Data), cf.OrigLen, err))
		}
		return nil
	}
	if s.listFrameError(&s.unlisted.malformed) {
		s.info.Errors = append(s.info.Errors, fmt.Sprintf("frame %d: malformed RoCE frame, not analysed: %v", cf.Num, err))
	}
	return nil
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
func (s *auditState) record(cf *capture.Frame, st wire.ICRCStatus) *trace.Record {
	f := &s.frame
	op := f.Opcode
	var dir trace.Dir
	switch {
	case op.IsRequest():
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
