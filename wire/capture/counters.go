package capture

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// What a capture file records of its own completeness: pcapng interface
// statistics blocks (ISB) count the packets an interface or the
// operating system dropped, and a packet record may say how many packets
// were lost just before it (an enhanced packet block's epb_dropcount, an
// obsolete packet block's drops count, an ERF record's loss counter). The
// reader notes them as it reads (Reader.Counters); ScanCounters reads a
// whole file for them before an audit begins.

// pcapng options and blocks the counters come from.
const (
	blockISB = 0x00000005 // interface statistics

	optISBStartTime = 2 // isb_starttime
	optISBEndTime   = 3 // isb_endtime
	optISBIfDrop    = 5 // isb_ifdrop: dropped by the interface for lack of resources (4 is isb_ifrecv)
	optISBOSDrop    = 7 // isb_osdrop: dropped by the operating system
	optEPBDropCount = 4 // epb_dropcount: lost between this packet and the one before

	// opbDropsUnknown is an obsolete packet block's drops count when it
	// has none.
	opbDropsUnknown = 0xFFFF
)

// Count is a counter a capture file may give. Known is false where the
// file leaves it out: unknown, which is not zero.
type Count struct {
	N     uint64
	Known bool
}

func (c Count) String() string {
	if !c.Known {
		return "unknown"
	}
	return fmt.Sprint(c.N)
}

// Interface is what a pcapng file declares of one of its interfaces
// (interface description block) and what the last interface statistics
// block naming it reports (the counts run from the capture's start).
type Interface struct {
	Section  int // 0-based section of the file
	Index    int // the interface's number in its section, as packet blocks name it
	LinkType uint32
	// TSResol is if_tsresol as the file gives it (6, microseconds, when
	// it does not): timestamps count units of 10^-TSResol s, or of
	// 2^-(TSResol&0x7f) s when the top bit is set.
	TSResol uint8
	// Stats says an interface statistics block named the interface.
	// IfDrop (isb_ifdrop: dropped by the interface for lack of
	// resources) and OSDrop (isb_osdrop: dropped by the operating system)
	// are unknown where it leaves them out; Start and End (isb_starttime,
	// isb_endtime) are zero then.
	Stats          bool
	IfDrop, OSDrop Count
	Start, End     time.Time
}

// Dropped reports whether the interface's statistics count a dropped
// packet.
func (i *Interface) Dropped() bool { return i.IfDrop.N > 0 || i.OSDrop.N > 0 }

// Loss is a packet record reporting Count packets lost on its interface
// between the frame before it and itself, frame Frame.
type Loss struct {
	Frame     int
	Interface int // the frame's interface (Frame.Interface)
	Count     uint64
	Source    string // "epb_dropcount", "drops count" (obsolete packet block) or "ERF lctr"
}

// MaxListedLosses bounds Counters.Losses; LossReports and Lost count every
// loss.
const MaxListedLosses = 20

// Counters is what a capture file has said of its own completeness.
type Counters struct {
	// Interfaces are a pcapng file's interfaces, section by section (nil
	// for a classic pcap file).
	Interfaces []Interface
	// Losses are the first MaxListedLosses packet records reporting a
	// loss; LossReports counts them all, Lost the packets they report
	// lost (at most 2^64-1).
	Losses      []Loss
	LossReports int
	Lost        uint64
}

// Precision returns the coarsest timestamp resolution the file's
// interfaces declare (if_tsresol), at least a nanosecond; 0 for a file
// that declares none (a classic pcap file: microseconds or nanoseconds).
func (c *Counters) Precision() time.Duration {
	var p time.Duration
	for i := range c.Interfaces {
		p = max(p, c.Interfaces[i].Precision())
	}
	return p
}

// Precision returns the interface's timestamp resolution (if_tsresol),
// at least a nanosecond.
func (i *Interface) Precision() time.Duration {
	v := i.TSResol
	if v&0x80 != 0 {
		e := v & 0x7f
		if e >= 30 {
			return time.Nanosecond
		}
		return max(time.Second>>e, time.Nanosecond)
	}
	d := time.Second
	for range min(v, 9) {
		d /= 10
	}
	return d
}

// Dropped reports whether the file reports any packet dropped: an
// interface's statistics count one, or a packet record reports a loss. A
// file that gives no count, or leaves one out, is not taken as reporting
// none: Dropped is false there, and nothing is known.
func (c *Counters) Dropped() bool {
	if c.LossReports > 0 {
		return true
	}
	for i := range c.Interfaces {
		if c.Interfaces[i].Dropped() {
			return true
		}
	}
	return false
}

// DropSummary describes the drops the file reports, for a note or an
// error ("" when Dropped is false): each interface whose statistics count
// one, with both its counts, and the packet records reporting a loss.
func (c *Counters) DropSummary() string {
	var parts []string
	for i := range c.Interfaces {
		in := &c.Interfaces[i]
		if !in.Dropped() {
			continue
		}
		name := fmt.Sprintf("interface %d", in.Index)
		if in.Section > 0 {
			name += fmt.Sprintf(" of section %d", in.Section+1)
		}
		parts = append(parts, fmt.Sprintf("%s's statistics: %s dropped by the interface (isb_ifdrop), %s by the operating system (isb_osdrop)",
			name, in.IfDrop, in.OSDrop))
	}
	if c.LossReports > 0 {
		l := c.Losses[0]
		s := fmt.Sprintf("%d packets lost before frame %d (%s)", l.Count, l.Frame, l.Source)
		if c.LossReports > 1 {
			s = fmt.Sprintf("%d packet records report %d packets lost, the first %s", c.LossReports, c.Lost, s)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// clone returns a copy of c sharing nothing with it.
func (c *Counters) clone() Counters {
	out := *c
	out.Interfaces = append([]Interface(nil), c.Interfaces...)
	out.Losses = append([]Loss(nil), c.Losses...)
	return out
}

// Counters returns what the file has said of its own completeness in the
// blocks and records read so far: an interface statistics block usually
// comes at the end of a file, so read it to its end first (or use
// ScanCounters).
func (r *Reader) Counters() Counters { return r.counters.clone() }

// ScanCounters reads the capture at path to its end for what it records
// of its own completeness (see Counters), so that an audit knows it before
// its first frame. A classic pcap file records nothing of the kind unless
// its records are ERF records, and is not read past its header. On damage
// it returns what was read before it, with the error.
func ScanCounters(path string) (Counters, error) {
	r, err := Open(path)
	if err != nil {
		return Counters{}, err
	}
	defer r.Close()
	return r.scanCounters()
}

// scanCounters reads the rest of r for ScanCounters.
func (r *Reader) scanCounters() (Counters, error) {
	if r.format != formatPcapng && r.linkType != LinkTypeERF {
		return Counters{}, nil
	}
	r.scan = true
	for {
		if _, err := r.Next(); err != nil {
			if err == io.EOF {
				err = nil
			}
			return r.Counters(), err
		}
	}
}

// loss notes a loss that frame f's record reports.
func (r *Reader) loss(f *Frame, n uint64, source string) {
	c := &r.counters
	if len(c.Losses) < MaxListedLosses {
		c.Losses = append(c.Losses, Loss{Frame: f.Num, Interface: f.Interface, Count: n, Source: source})
	}
	c.LossReports++
	if c.Lost+n < c.Lost {
		c.Lost = ^uint64(0)
	} else {
		c.Lost += n
	}
}

// erfLoss notes the loss an ERF record's loss counter reports. The
// coloured record types carry a colour in its place.
func (r *Reader) erfLoss(f *Frame) {
	if len(f.Data) < erfHeaderLen {
		return // Network reports the short record
	}
	switch f.Data[8] & 0x7F {
	case erfTypeColorHDLCPoS, erfTypeColorEth, erfTypeDSMColorHDLCPoS, erfTypeDSMColorEth,
		erfTypeColorMCHDLCPoS, erfTypeColorHashPoS, erfTypeColorHash:
		return
	}
	if n := bigEndian.u16(f.Data[12:]); n > 0 { // after the timestamp, type, flags and record length
		r.loss(f, uint64(n), "ERF lctr")
	}
}
