// Package annotate writes an audit's findings back into the captures it
// judged (`rcconform audit --annotate`): one pcapng file holding every
// frame of the captures, in the order given, with a packet comment on
// each frame that carries a finding or an undecided instance (its clause,
// verdict and one line saying what was expected and what was seen) and
// on the first frame of each connection (its settings and where they came
// from). Wireshark shows the comments in the packet details and filters
// on them (frame.comment contains "C9-95").
//
// The frames are read again with the reader the audit used
// (wire/capture), so frame N of a capture, as the result names it, is
// the N-th frame written for that capture whatever its format (gzip
// included). The captures' frames follow one another: in the output,
// frame N of the k-th capture is frame N plus the frames of the captures
// before it, and with several captures each comment also names its
// capture and frame. Each capture gets one interface per link type it
// uses, named after the file.
package annotate

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire/capture"
)

// Capture is what to write on the frames of one capture.
type Capture struct {
	Path        string
	Findings    []reports.Finding
	Connections []reports.Connection
	// Undecided holds the capture's undecided instances (see Undecided).
	Undecided *Undecided
	// Frames, when not nil, are the capture's frames, numbered from 1,
	// and Path only names it (a suite scenario's trace, which is no
	// file).
	Frames []capture.Frame
	// Notes are comments of the caller's own by frame (a scenario's
	// steps and expectations), written before the findings' and without
	// the prefix every comment begins with.
	Notes map[int][]string
}

// Undecided collects a capture's undecided instances as an audit counts
// them (its Add is a harness.Sink's Undecided hook): per clause, the
// Max at the earliest frames (0: every one), the same whatever order
// concurrent workers add them in. Safe for concurrent use.
type Undecided struct {
	Max int
	mu  sync.Mutex
	by  map[string][]instance
}

// instance is one undecided instance of a clause.
type instance struct {
	frame  int
	open   bool
	reason string
}

func (a instance) compare(b instance) int {
	if c := cmp.Compare(a.frame, b.frame); c != 0 {
		return c
	}
	if a.open != b.open {
		if a.open {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.reason, b.reason)
}

// Add counts one undecided instance of clause, seen at frame (0: none,
// not written).
func (u *Undecided) Add(clause, reason string, open bool, frame int) {
	if frame <= 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.by == nil {
		u.by = map[string][]instance{}
	}
	l := append(u.by[clause], instance{frame, open, reason})
	if u.Max > 0 && len(l) >= 2*u.Max {
		l = u.keep(l)
	}
	u.by[clause] = l
}

// keep sorts l and cuts it to Max.
func (u *Undecided) keep(l []instance) []instance {
	slices.SortFunc(l, instance.compare)
	if u.Max > 0 && len(l) > u.Max {
		clear(l[u.Max:])
		l = l[:u.Max]
	}
	return l
}

// Comment texts. Every comment begins with "rcconform: "; a finding's
// then names its clause and "fail", an undecided instance's its clause
// and "undecided", a connection's "connection N".
const prefix = "rcconform: "

// FindingComment is the comment a finding puts on its frame.
func FindingComment(f reports.Finding) string {
	return prefix + f.ID + " fail: " + f.Evidence()
}

func undecidedComment(clause string, in instance) string {
	if in.open {
		return prefix + clause + " undecided (keeps the clause from passing): " + in.reason
	}
	return prefix + clause + " undecided: " + in.reason
}

func connectionComment(c reports.Connection) string {
	f := c.Fields()
	s := fmt.Sprintf("%sconnection %d begins: requester %s, responder %s, first PSN %s (requester/responder); MTU %s, SRQ %s, ACK timeout %s, retry count %s, RNR retry %s, responder resources %s; held from its start: %s; CM: %s",
		prefix, c.ID, f.Requester, f.Responder, f.FirstPSN, f.MTU, f.SRQ, f.AckTimeout, f.RetryCnt, f.RNRRetry,
		f.ResponderResources, f.Complete, f.Handshake)
	if c.Follows != 0 {
		s += fmt.Sprintf("; takes over from connection %d (QPs made anew with the same numbers)", c.Follows)
	}
	return s + " (settings: cm = the connection manager's handshake, flag = given by the user, observed = from the traffic; ? unknown)"
}

// comments returns what to write on each frame of c, by frame number:
// the connections beginning there, then its findings, then its undecided
// instances (those the result's clauses name as a kind's first instance
// among them, see clauses), each list in a fixed order. With tag set
// (several captures), each comment names the capture and frame.
func (c *Capture) comments(clauses []reports.ClauseResult, tag bool) map[int][]string {
	out := map[int][]string{}
	add := func(frame int, s string) {
		if tag {
			s += fmt.Sprintf(" [%s frame %d]", c.Path, frame)
		}
		out[frame] = append(out[frame], s)
	}
	for frame, l := range c.Notes {
		for _, s := range l {
			add(frame, prefix+s)
		}
	}
	for _, cn := range c.Connections {
		if cn.FirstFrame > 0 {
			add(cn.FirstFrame, connectionComment(cn))
		}
	}
	for _, f := range c.Findings {
		if f.Frame > 0 {
			add(f.Frame, FindingComment(f))
		}
	}
	var by map[string][]instance
	if c.Undecided != nil {
		c.Undecided.mu.Lock()
		by = map[string][]instance{}
		for clause, l := range c.Undecided.by {
			by[clause] = c.Undecided.keep(l)
		}
		c.Undecided.mu.Unlock()
	}
	// Every first instance the result names is written, kept or not.
	for _, cr := range clauses {
		for _, k := range cr.UndecidedKinds {
			in := instance{k.Frame, k.Open, k.Reason}
			if k.Frame > 0 && !slices.Contains(by[cr.ID], in) {
				if by == nil {
					by = map[string][]instance{}
				}
				by[cr.ID] = append(by[cr.ID], in)
			}
		}
	}
	ids := make([]string, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := by[id]
		slices.SortFunc(l, instance.compare)
		for _, in := range l {
			add(in.frame, undecidedComment(id, in))
		}
	}
	return out
}

// Write writes the captures, in order, to the pcapng file out, each frame
// with the comments res (the audit's result) and caps give it. caps[i]
// is the i-th capture the audit read; res.Clauses name the first
// undecided instance of each kind. The file is written whole or not at
// all: a frame pcapng cannot hold (see capture.ErrUnwritable) ends the
// writing with an error naming the capture and frame, and out is left as
// it was. A capture that cannot be read to its end is written up to the
// damage, as the audit judged it; the read errors are returned, joined,
// with the file written.
func Write(out, comment string, caps []Capture, clauses []reports.ClauseResult) error {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return fmt.Errorf("annotating: writing %q: %w", out, err)
	}
	tmp := f.Name()
	readErrs, err := write(f, comment, caps, clauses)
	if err == nil {
		if err = f.Chmod(0o644); err != nil { // as the other outputs, not CreateTemp's 0600
			err = fmt.Errorf("annotating: writing %q: %w", out, err)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("annotating: writing %q: %w", out, cerr)
	}
	if err == nil {
		if err = os.Rename(tmp, out); err != nil {
			err = fmt.Errorf("annotating: writing %q: %w", out, err)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return readErrs
}

// write writes the pcapng to w; it returns the captures' read errors
// (frames up to each were written), and the error that stopped it.
func write(w io.Writer, comment string, caps []Capture, clauses []reports.ClauseResult) (readErrs, err error) {
	nw, err := capture.NewNgWriter(w, comment)
	if err != nil {
		return nil, fmt.Errorf("annotating: %w", err)
	}
	var errs []error
	for i := range caps {
		c := &caps[i]
		var mine []reports.ClauseResult
		for _, cr := range clauses {
			if cr.Capture == c.Path {
				mine = append(mine, cr)
			}
		}
		rerr, err := c.write(nw, c.comments(mine, len(caps) > 1))
		if err != nil {
			return nil, err
		}
		if rerr != nil {
			errs = append(errs, rerr)
		}
	}
	if err := nw.Flush(); err != nil {
		return nil, fmt.Errorf("annotating: %w", err)
	}
	return errors.Join(errs...), nil
}

// write copies c's frames to nw with their comments; it returns the
// error that ended reading early (the frames before it were written), or
// the error that stopped writing.
func (c *Capture) write(nw *capture.NgWriter, notes map[int][]string) (readErr, err error) {
	i := 0
	next := func() (*capture.Frame, error) {
		if i == len(c.Frames) {
			return nil, io.EOF
		}
		i++
		return &c.Frames[i-1], nil
	}
	if c.Frames == nil {
		r, err := capture.Open(c.Path)
		if err != nil {
			return fmt.Errorf("annotating: %w", err), nil
		}
		defer r.Close()
		next = r.Next
	}
	ifaces := map[uint32]int{} // link type -> interface written
	for {
		fr, err := next()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return fmt.Errorf("annotating: the frames before the damage were written: %w", err), nil
		}
		id, ok := ifaces[fr.LinkType]
		if !ok {
			id, err = nw.AddInterface(fr.LinkType, filepath.Base(c.Path), fmt.Sprintf("%s, link type %d", c.Path, fr.LinkType))
			if err != nil {
				return nil, fmt.Errorf("annotating %q: frame %d: %w", c.Path, fr.Num, err)
			}
			ifaces[fr.LinkType] = id
		}
		comments := notes[fr.Num]
		if len(fr.Comments) > 0 { // the capture's own come first
			comments = append(slices.Clip(fr.Comments), comments...)
		}
		if err := nw.WritePacket(id, fr.Time, fr.Data, fr.OrigLen, comments); err != nil {
			return nil, fmt.Errorf("annotating %q: frame %d: %w", c.Path, fr.Num, err)
		}
	}
}
