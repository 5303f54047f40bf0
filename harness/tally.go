package harness

import (
	"fmt"
	"strings"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
)

// Violation reports that r violates clause. Where r is a response that
// may be a copy (MaybeCopy), the instance is left undecided instead: the
// copy the capture or the network made is legal, the responder sending it
// again may not be, and the trace cannot tell which.
func (c *Conn) Violation(clause string, r *trace.Record, message string, expected []string, seen string) {
	c.violation(clause, r, message, expected, seen, nil)
}

// ViolationInAnyOrder is Violation for an instance that no order of the
// packets makes legal (two answers to one request that differ): a
// response that may have been delayed is judged all the same. (A copy
// the network made repeats its original, so it breaks no such instance.)
func (c *Conn) ViolationInAnyOrder(clause string, r *trace.Record, message string, expected []string, seen string) {
	c.raise(clause, r, message, expected, seen, nil, c.recent)
}

// ViolationOnAnyQPs is Violation for an instance that QPs made anew with
// the same numbers would leave as illegal as the old ones (a READ's
// answer opening without its AETH answers the READ the trace shows on
// either): a request that may have begun such QPs (restartStep) does not
// hold it back.
func (c *Conn) ViolationOnAnyQPs(clause string, r *trace.Record, message string, expected []string, seen string) {
	phase := c.rs.phase
	c.rs.phase = restartNone
	c.violation(clause, r, message, expected, seen, nil)
	c.rs.phase = phase
}

// Judged is the moment a monitor judged record r, kept to raise the
// finding later (a violation held until the connection ends, say): r
// and the connection's latest records then (Conn.Judging).
type Judged struct {
	r      *trace.Record
	recent []*trace.Record
}

// Judging returns the moment of record r, the one being observed.
func (c *Conn) Judging(r *trace.Record) Judged {
	return Judged{r: r, recent: append([]*trace.Record(nil), c.recent...)}
}

// JudgedAt tells the connection that the findings a monitor raises until
// it calls the function returned were judged at moment j, from its record
// and the records before it: their ladders show the records of that
// moment, and where its record came before a request that may have begun
// QPs made anew, they concern the old QPs alone, and the restart holds
// none of them back.
func (c *Conn) JudgedAt(j Judged) (done func()) {
	c.judged = &j
	return func() { c.judged = nil }
}

// raise records a violation of clause by r, shown among recent (or the
// records of the moment it was judged at, JudgedAt), unless a restart of
// the QPs the trace may show holds it (restartHold).
func (c *Conn) raise(clause string, r *trace.Record, message string, expected []string, seen string, alts []reports.Alternative, recent []*trace.Record) {
	if c.judged != nil {
		recent = c.judged.recent
	}
	if c.rs.phase != restartNone && c.restartHold(clause, r, message, expected, seen, alts, recent) {
		return
	}
	if c.blamed(r, clause, false) {
		// One record, one finding under a clause: a second look at the
		// same fault (two monitors, or two later packets, each showing
		// it) adds nothing.
		return
	}
	c.sink.violationIn(c, clause, r, message, expected, seen, alts, recent)
	c.blame(r, clause, false)
}

// blame remembers that a finding blamed r under clause (Blamed): its own
// finding, or one on another packet naming r's field as one alternative
// (byOther; ViolationEitherOn).
func (c *Conn) blame(r *trace.Record, clause string, byOther bool) {
	if r != nil {
		c.found[c.nFound%maxFound] = blame{r, clause, byOther}
		c.nFound++
	}
}

// RestsOnBlamed is the reason an instance is left undecided when what it
// would fail rests on a field of r that a finding already blamed under
// clause (Blamed): the same root cause, reported once. message is the
// violation it would otherwise be, what names r's field.
func RestsOnBlamed(message, what string, r *trace.Record, clause string) string {
	return fmt.Sprintf("%s; that rests on the %s of frame %d, already reported under %s (one root cause, one finding)", message, what, r.Frame, clause)
}

// blame is one record a finding blamed, and the clause it named; byOther
// where the finding was another packet's, naming r's field as one of its
// alternatives.
type blame struct {
	rec     *trace.Record
	clause  string
	byOther bool
}

// maxFound bounds the findings Blamed remembers per connection.
const maxFound = 32

// Blamed reports whether a finding of the connection already blamed r
// under clause (alone, or as one of the clauses it names): a conclusion
// resting on what r carries under that clause (its count, say) is then
// the same root cause, not another one. It remembers the latest
// maxFound findings.
func (c *Conn) Blamed(r *trace.Record, clause string) bool {
	return c.blamed(r, clause, true)
}

// blamed is Blamed, counting the findings of other packets that named r's
// field as an alternative where byOther is set. (Those do not stop r's
// own finding, which names its clause alone.)
func (c *Conn) blamed(r *trace.Record, clause string, byOther bool) bool {
	for i := range min(c.nFound, maxFound) {
		if b := c.found[i]; b.rec == r && b.clause == clause && (byOther || !b.byOther) {
			return true
		}
	}
	return false
}

// ViolationEither reports that r breaks one of several clauses and the
// trace cannot tell which: every explanation its evidence leaves open
// makes r illegal, each under the clause it names (alts). The one
// finding, naming them all, is listed under each, so that none of them
// passes (one root cause, its clause not known: the finding says so).
func (c *Conn) ViolationEither(r *trace.Record, message string, expected []string, seen string, alts ...reports.Alternative) {
	for _, a := range alts {
		c.ViolationOf(a.ID, r, message, expected, seen, alts...)
	}
}

// ViolationEitherOn is ViolationEither for a finding one of whose
// alternatives is that another response, other, carried a wrong field
// under otherClause (an earlier count that r's disagrees with, say):
// where the finding is raised, other counts as blamed under otherClause
// too (Blamed), so that what later rests on that field alone is the same
// root cause, reported once (RestsOnBlamed), not a second finding.
func (c *Conn) ViolationEitherOn(other *trace.Record, otherClause string, r *trace.Record, message string, expected []string, seen string, alts ...reports.Alternative) {
	n := c.nFound
	c.ViolationEither(r, message, expected, seen, alts...)
	if c.nFound != n && !c.Blamed(other, otherClause) {
		c.blame(other, otherClause, true)
	}
}

// ViolationEitherInAnyOrder is ViolationEither for an instance that no
// order of the packets makes legal (ViolationInAnyOrder): a response that
// may have been delayed, or copied, is judged all the same.
func (c *Conn) ViolationEitherInAnyOrder(r *trace.Record, message string, expected []string, seen string, alts ...reports.Alternative) {
	for _, a := range alts {
		c.raise(a.ID, r, message+": "+EitherText(alts), expected, seen, alts, c.recent)
	}
}

// ViolationOf is the finding ViolationEither makes, as listed under one
// of its clauses (clause, one of alts): for a root cause that the
// monitors of several clauses see alike, each of which lists the one
// finding under its own clause, so that the finding is whole in a full
// audit and still there when only some of them run.
func (c *Conn) ViolationOf(clause string, r *trace.Record, message string, expected []string, seen string, alts ...reports.Alternative) {
	c.violation(clause, r, message+": "+EitherText(alts), expected, seen, alts)
}

// EitherText says, in one clause of a sentence, which clause each
// alternative breaks and when.
func EitherText(alts []reports.Alternative) string {
	parts := make([]string, len(alts))
	for i, a := range alts {
		parts[i] = a.ID + " if " + a.If
	}
	return "one of these clauses is broken, and the capture does not tell which: " + strings.Join(parts, "; ")
}

// violation is Violation for a finding that may name alternatives.
func (c *Conn) violation(clause string, r *trace.Record, message string, expected []string, seen string, alts []reports.Alternative) {
	if kind, ok := c.maybeCopies[r]; r != nil && ok {
		if kind&idAhead != 0 && c.DatedByID(r) {
			// Sent after every response delivered before it, as its ID
			// shows now its sender is seen to count up.
			c.raise(clause, r, message, expected, seen, alts, c.recent)
			return
		}
		ahead := kind&idAhead != 0
		kind &^= idAhead
		what := "repeats an earlier response byte for byte and no IPv4 Identification tells a copy the capture or the network made (no violation) from the responder sending it again"
		switch {
		case kind == lateByID:
			what = "was sent before responses the trace shows earlier, as its IPv4 Identification shows: the network or the capture delayed it (or copied one whose original the capture lost), so where it stands in the trace says nothing of the responder's order"
		case kind == lateByMSN:
			what = "carries an MSN behind one a response the trace shows earlier carried, and no IPv4 Identification tells " + c.undated(r) + " whether the responder sent it again (a violation) or the network or the capture delayed it, or copied one whose original the capture lost (none)"
		case kind == lateAtMSN:
			what = c.lateAtMSNText(r) + ": the responder may have sent it again (a violation), or the network or the capture delayed it, or copied one whose original the capture lost (none)"
		case opc.IsRequest(r.Packet.Opcode):
			what = "repeats an earlier request with its IPv4 Identification: a copy the capture or the network made (no violation), not the requester sending it again"
		}
		why := fmt.Sprintf("frame %d %s: %s", r.Frame, what, message)
		if ahead && c.MayBeDatedByID(r) {
			c.awaitDated(clause, r, message, expected, seen, alts, why)
			return
		}
		c.Unresolved(clause, why)
		return
	}
	c.raise(clause, r, message, expected, seen, alts, c.recent)
}

// awaitDated holds a violation by r, which its MSN left open as maybe
// late (staleMSN) while its IPv4 Identification was ahead of every
// response delivered before it (idAhead) and its sender's IDs change
// without having been shown yet to count up: once they are (DatedByID),
// r was sent after those responses and the violation stands; if the
// trace ends first, it stays open (why).
func (c *Conn) awaitDated(clause string, r *trace.Record, message string, expected []string, seen string, alts []reports.Alternative, why string) {
	recent := append([]*trace.Record(nil), c.recent...)
	c.Await(func(c *Conn, next *trace.Record) bool {
		switch {
		case c.DatedByID(r):
			cur := c.cur
			c.cur = r
			c.raise(clause, r, message, expected, seen, alts, recent)
			c.cur = cur
		case next == nil:
			c.Unresolved(clause, why)
		default:
			return false
		}
		return true
	})
}

// Unresolved records an instance of clause the trace leaves open where
// it matters to the verdict: a legal explanation remains (reason names
// it), but so does a violation, so the clause cannot pass while it is
// open. It counts as undecided (Tally.Indeterminate) and keeps the
// verdict at indeterminate unless a violation fails it.
func (c *Conn) Unresolved(clause, reason string) {
	t := c.sink.tally(clause)
	t.Indeterminate++
	t.Open++
	if t.Reason == "" || t.Open == 1 {
		t.Reason, t.ReasonAt = reason, c.sink.At
	}
	frame := c.frameNow()
	t.addKind(reason, true, frame, c.sink.At)
	if c.sink.Undecided != nil {
		c.sink.Undecided(clause, reason, true, frame)
	}
}

// Checked counts one instance of clause that was checked and held.
func (c *Conn) Checked(clause string) {
	if c.rs.phase == restartAnew {
		return // a model that takes new QPs' records for resends checks nothing (restart.go)
	}
	c.sink.tally(clause).Checked++
}

// Indeterminate records that an instance of clause could not be decided.
func (c *Conn) Indeterminate(clause, reason string) {
	t := c.sink.tally(clause)
	t.Indeterminate++
	if t.Reason == "" {
		t.Reason, t.ReasonAt = reason, c.sink.At
	}
	frame := c.frameNow()
	t.addKind(reason, false, frame, c.sink.At)
	if c.sink.Undecided != nil {
		c.sink.Undecided(clause, reason, false, frame)
	}
}

// frameNow is the capture frame of the record the connection's monitors
// are judging (0 on an active run, whose records have no capture frame).
func (c *Conn) frameNow() int {
	if c.Settings.Active || c.cur == nil {
		return 0
	}
	return c.cur.Frame
}

// Tally counts what happened to one clause.
type Tally struct {
	Checked    int
	Violations int
	// Indeterminate counts every undecided instance (the report's
	// "undecided"); Open those of them that block a pass (Unresolved).
	Indeterminate int
	Open          int
	Reason        string
	// ReasonAt is the sink's At when Reason was set (see Sink.At).
	ReasonAt int64
	// Kinds lists every undecided instance by the kind of its reason
	// (reports.ReasonKind), in order of first appearance: the count
	// of each and its first instance, so that no doubt is hidden
	// behind the one Reason. Their counts add up to Indeterminate.
	Kinds      []reports.UndecidedKind
	kindAt     map[string]int // kind key -> index in Kinds
	lastReason string         // the last reason given, and its index in Kinds
	lastKind   int
}

// Empty reports whether nothing was counted in the tally.
func (t *Tally) Empty() bool {
	return t.Checked == 0 && t.Violations == 0 && t.Indeterminate == 0 && t.Open == 0 && t.Reason == "" && len(t.Kinds) == 0
}

// addKind counts one undecided instance under its reason's kind.
func (t *Tally) addKind(reason string, open bool, frame int, at int64) {
	if len(t.Kinds) > 0 && reason == t.lastReason && t.Kinds[t.lastKind].Open == open {
		t.Kinds[t.lastKind].Count++
		return
	}
	key := reports.ReasonKind(reason, open)
	i, ok := t.kindAt[key]
	if !ok {
		if t.kindAt == nil {
			t.kindAt = map[string]int{}
		}
		i = len(t.Kinds)
		t.kindAt[key] = i
		t.Kinds = append(t.Kinds, reports.UndecidedKind{Reason: reason, Open: open, Frame: frame, At: at})
	}
	t.Kinds[i].Count++
	t.lastReason, t.lastKind = reason, i
}

// mergeKinds sets t's kinds from several tallies' (shard workers'), as
// one tally fed every instance in trace order would hold them
// (reports.MergeUndecidedKinds).
func (t *Tally) mergeKinds(from []*Tally) {
	lists := make([][]reports.UndecidedKind, len(from))
	for i, o := range from {
		lists[i] = o.Kinds
	}
	t.Kinds, t.kindAt, t.lastReason = reports.MergeUndecidedKinds(lists), map[string]int{}, ""
	for i, k := range t.Kinds {
		t.kindAt[reports.ReasonKind(k.Reason, k.Open)] = i
	}
}

// Verdict turns a tally into a verdict: any violation fails; otherwise an
// open instance (Unresolved) leaves it indeterminate; otherwise a checked
// instance passes (with its undecided instances counted beside it);
// otherwise an undecided one is indeterminate; otherwise the clause was
// not exercised.
func (t *Tally) Verdict() reports.Verdict {
	switch {
	case t == nil:
		return reports.NotExercised
	case t.Violations > 0:
		return reports.Fail
	case t.Open > 0:
		return reports.Indeterminate
	case t.Checked > 0:
		return reports.Pass
	case t.Indeterminate > 0:
		return reports.Indeterminate
	}
	return reports.NotExercised
}

// Sink collects findings and tallies.
type Sink struct {
	Capture  string
	Tallies  map[string]*Tally
	Findings []reports.Finding
	// MaxFindings bounds the findings kept per clause (the count goes on).
	MaxFindings int
	perClause   map[string]int
	// Text gives the clause in our words for findings.
	Text func(clause string) string
	// At is where in the trace the sink's auditor is, as set by a caller
	// that merges sinks (ShardedAuditor): each tally's ReasonAt records
	// it, so that merged tallies keep the reason a single auditor would
	// have kept (the first one given). Zero when unused.
	At int64
	// Undecided, when set, is told of every undecided instance as it is
	// counted: its clause, its reason, whether it is open (Unresolved)
	// and the capture frame it was seen at (0 on an active run), as the
	// tally's Kinds record the first of each kind. A ShardedAuditor's
	// workers call it from their goroutines: it must be safe for
	// concurrent use.
	Undecided func(clause, reason string, open bool, frame int)
	// tallyCache caches tallies of Tallies by clause (every record tallies a
	// few clauses, and a map lookup costs more than a comparison): a small
	// open-addressed table, so that clauses whose slots collide (the
	// clause IDs differ in a digit or two) each keep an entry.
	tallyCache [tallyCacheLen]cachedTally
}

// tallyCacheLen is the size of Sink.tallyCache: over twice the clauses
// the suite tallies, so that probes stay short. Clauses beyond its
// tallyProbes-long runs go to the map.
const (
	tallyCacheBits = 7
	tallyCacheLen  = 1 << tallyCacheBits
	tallyProbes    = 8
)

type cachedTally struct {
	clause string
	t      *Tally
}

// tallySlot returns where the search for clause's cached tally begins:
// its length and three of its bytes (the last two tell the clause numbers
// C9-1xy apart), mixed by a Fibonacci multiplication into the table's
// index bits; cheaper than hashing the clause whole.
func tallySlot(clause string) int {
	n := len(clause)
	if n < 2 {
		return n
	}
	x := uint64(n) | uint64(clause[n-1])<<8 | uint64(clause[n-2])<<16 | uint64(clause[n/2])<<24
	return int(x * 0x9E3779B97F4A7C15 >> (64 - tallyCacheBits))
}

// NewSink returns an empty sink.
func NewSink(capture string) *Sink {
	return &Sink{Capture: capture, Tallies: map[string]*Tally{}, MaxFindings: 50, perClause: map[string]int{}}
}

func (s *Sink) tally(clause string) *Tally {
	var free *cachedTally
	for i, k := tallySlot(clause), 0; k < tallyProbes; i, k = (i+1)&(tallyCacheLen-1), k+1 {
		e := &s.tallyCache[i]
		if e.t == nil {
			free = e
			break
		}
		if e.clause == clause {
			return e.t
		}
	}
	t := s.Tallies[clause]
	if t == nil {
		t = &Tally{}
		s.Tallies[clause] = t
	}
	if free != nil {
		free.clause, free.t = clause, t
	}
	return t
}

// Tally returns the tally of clause (nil if nothing happened to it).
func (s *Sink) Tally(clause string) *Tally { return s.Tallies[clause] }

// violationIn is violation with the connection's latest records as they
// were when the violation was found (its ladder).
func (s *Sink) violationIn(c *Conn, clause string, r *trace.Record, message string, expected []string, seen string, alts []reports.Alternative, recent []*trace.Record) {
	s.tally(clause).Violations++
	s.perClause[clause]++
	if s.MaxFindings > 0 && s.perClause[clause] > s.MaxFindings {
		return
	}
	f := reports.Finding{
		ID: clause, Capture: s.Capture, QP: c.ResponderQP,
		Message: message, Expected: expected, Seen: seen, Alternatives: alts,
	}
	if r != nil {
		f.PSN = uint32(r.Packet.PSN)
		if c.Settings.Active {
			f.Frame = 0
		} else {
			f.Frame = r.Frame
		}
	}
	if s.Text != nil {
		f.Clause = s.Text(clause)
	}
	recs := append([]*trace.Record(nil), recent...)
	if r != nil && (len(recs) == 0 || recs[len(recs)-1] != r) {
		recs = append(recs, r)
	}
	f.Ladder = Rungs(recs, r, !c.Settings.Active)
	s.Findings = append(s.Findings, f)
}
