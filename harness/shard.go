package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
)

// ShardedAuditor runs the monitors of an Auditor on several goroutines
// (workers), and can judge only a share of the connections (Shard of
// Shards) so that several processes can split one capture among
// themselves. Its findings, tallies and verdicts are those a single
// Auditor fed the same records would give, in the same order.
//
// Connections are independent: every monitor judges one connection from
// that connection's records alone. So each connection is given to one
// worker, which sees its records in trace order. Which connection a
// record belongs to is decided on the caller's goroutine, in trace order,
// by an Auditor running no monitor (Auditor.Assign): it pairs responses
// with requests exactly as a single Auditor would, however many
// connections share one address pair. Once a connection has seen both
// directions, its records are routed by table lookup, without the model.
//
// Each connection is judged by an Auditor of its own (holding that one
// connection), run by its worker and writing into the worker's Sink. End
// merges the workers' sinks into Sink: tallies add, each clause keeps the
// reason first given in trace order, and findings come in the order a
// single Auditor would have produced them, cut to Sink.MaxFindings per
// clause as it would have been.
//
// Observe and End must be called from one goroutine.
type ShardedAuditor struct {
	Settings Settings
	Sink     *Sink
	Only     map[string]bool // if non-nil, run only these clauses' monitors
	// Workers is how many goroutines judge connections; 1 (or less)
	// judges them on the caller's goroutine.
	Workers int
	// Shard and Shards, when Shards > 1, judge only the connections c
	// with ShardOf(c.ID, Shards) == Shard; the others are paired and
	// numbered as usual but never judged.
	Shard, Shards int
	// ConnSetup, when set, adjusts the Settings of a new connection
	// (Auditor.ConnSetup): it is called on the caller's goroutine, in
	// trace order, with the pairing model's new connection (made by the
	// record being observed, before that record is absorbed), and the
	// Settings it leaves become those of the connection both in the
	// pairing model and in the auditor that judges it, whose connection
	// has the same ID. It is the seam for settings learnt from the
	// capture itself (a connection-manager handshake seen before the
	// connection's first packet); a single Auditor given the same function
	// judges alike.
	ConnSetup func(c *Conn)

	started bool
	at      int64 // records observed
	mirror  *Auditor
	reqs    map[connKey]*shardConn
	resps   map[connKey]*shardConn
	cache   [2][routeCacheLen]routeEntry[*shardConn] // of reqs and resps (lookup)
	conns   []*shardConn                             // by ID
	judged  int
	workers []*shardWorker
	failed  atomic.Pointer[WorkerPanic]
	wg      sync.WaitGroup
	ended   bool
	ending  bool // End, not Abort, closed the workers' inputs
	order   []int64
	skew    skewMeter // the reordering the trace shows (evidence.go)
}

// connKey names one direction of a connection: the requests' (requester,
// responder, responder QP) or the responses' (requester, responder,
// requester QP).
type connKey struct {
	req, rsp netip.Addr
	qp       uint32
}

// is reports whether k and o are the same key: as k == o, field by
// field, the QP first (the comparison of the whole struct is a call to
// memequal, for every record routed).
func (k connKey) is(o connKey) bool { return k.qp == o.qp && k.req == o.req && k.rsp == o.rsp }

// shardConn is a connection as the router knows it.
type shardConn struct {
	m  *Conn    // in the pairing model
	id int      // its ID, as a single Auditor would number it
	w  int      // the worker judging it; -1 when outside the shard
	au *Auditor // judges it (used by worker w only)
}

// shardJob is one record for a worker, with its position in the trace.
type shardJob struct {
	sc *shardConn
	r  *trace.Record
	at int64
	// The connection's QPs as the pairing model knew them once it had
	// routed r (a single Auditor's connection learns them at routing
	// too): the connection's own auditor takes them before judging r.
	reqQP, rspQP uint32
}

// shardBatchLen is how many records a worker is handed at once.
const shardBatchLen = 256

// endBase is the position of the end of the trace: the checkers of
// connection ID end at endBase+ID.
const endBase = int64(1) << 62

// shardWorker is one worker's state. Its fields are used by its goroutine
// only, until End has waited for it.
type shardWorker struct {
	sink    *Sink
	order   []int64 // position of each finding of sink.Findings
	conns   []*shardConn
	in      chan []shardJob
	free    chan []shardJob
	pending []shardJob // filled by the router
}

// WorkerPanic is what ShardedAuditor panics with when a monitor panicked
// on one of its workers: the frame being judged (0 while connections
// ended), what was passed to panic, and the worker's stack.
type WorkerPanic struct {
	Frame int
	Value any
	Stack []byte
}

func (p *WorkerPanic) Error() string {
	return fmt.Sprintf("monitor panicked at frame %d: %v", p.Frame, p.Value)
}

// NewShardedAuditor returns an auditor writing into sink with workers
// goroutines.
func NewShardedAuditor(settings Settings, sink *Sink, workers int) *ShardedAuditor {
	return &ShardedAuditor{Settings: settings, Sink: sink, Workers: workers}
}

// ShardOf returns the shard, of n, that judges connection id: a hash of
// the ID, the same in every process that reads the same trace.
func ShardOf(id, n int) int {
	if n <= 1 {
		return 0
	}
	x := uint64(id)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(n))
}

func (s *ShardedAuditor) start() {
	s.started = true
	s.mirror = NewAuditor(s.Settings, s.Sink)
	s.mirror.Only = map[string]bool{} // pairs and models, judges nothing
	s.mirror.ConnSetup = s.ConnSetup
	s.reqs = map[connKey]*shardConn{}
	s.resps = map[connKey]*shardConn{}
	n := max(s.Workers, 1)
	for i := 0; i < n; i++ {
		w := &shardWorker{sink: s.newSink()}
		if n > 1 {
			w.in = make(chan []shardJob, 8)
			w.free = make(chan []shardJob, 10)
			w.pending = make([]shardJob, 0, shardBatchLen)
			s.wg.Add(1)
			go s.run(w)
		}
		s.workers = append(s.workers, w)
	}
}

// newSink returns a worker's sink, set as Sink is.
func (s *ShardedAuditor) newSink() *Sink {
	k := NewSink(s.Sink.Capture)
	k.MaxFindings, k.Text, k.Undecided = s.Sink.MaxFindings, s.Sink.Text, s.Sink.Undecided
	return k
}

// Observe feeds one record; see Auditor.Observe. The record must not be
// modified afterwards.
func (s *ShardedAuditor) Observe(r *trace.Record) {
	if !s.started {
		s.start()
	}
	s.at++
	if !r.Usable() || r.Packet == nil {
		return
	}
	s.skew.note(r, s.Settings.TimePrecision)
	p := r.Packet
	var sc *shardConn
	switch {
	case opc.IsRequest(p.Opcode):
		sc = s.lookup(0, connKey{r.Src, r.Dst, p.DestQP})
	case opc.IsResponse(p.Opcode):
		sc = s.lookup(1, connKey{r.Dst, r.Src, p.DestQP})
	case p.Opcode.ReservedRC():
		// Noted on the connection its key names, if there is one, as
		// the single Auditor does (Auditor.reservedOp): no routing.
		if sc = s.lookup(0, connKey{r.Src, r.Dst, p.DestQP}); sc == nil {
			return
		}
	default:
		return
	}
	switch {
	case p.Opcode.ReservedRC():
		// Routed by table only (above).
	case sc == nil || !sc.m.respRouted || opc.IsRequest(p.Opcode) && sc.m.reborn(r) != "":
		// Not yet paired: the model decides, and follows the connection
		// until its first response. A request that begins a connection
		// in place of its key's (Auditor.rebirth) goes to the model too.
		sc = s.assign(r)
		if sc == nil {
			return
		}
	default:
		// Routed by table: the model's routing-time state follows all
		// the same (adoptRequests reads the latest response's PSN and
		// UDP source port).
		sc.m.noteRoute(r)
	}
	if sc.w < 0 {
		return
	}
	w := s.workers[sc.w]
	if w.in == nil {
		s.judge(w, shardJob{sc: sc, r: r, at: s.at, reqQP: sc.m.RequesterQP, rspQP: sc.m.ResponderQP})
		return
	}
	w.pending = append(w.pending, shardJob{sc: sc, r: r, at: s.at, reqQP: sc.m.RequesterQP, rspQP: sc.m.ResponderQP})
	if len(w.pending) == shardBatchLen {
		s.send(w)
	}
}

// routeCacheLen is the size of each of the router's caches, indexed by
// the key's QP number.
const routeCacheLen = 256

// routeEntry is one entry of a cache of connections by key indexed by
// the key's QP number (ShardedAuditor's router, Auditor): a key and its
// connection.
type routeEntry[C comparable] struct {
	k connKey
	c C
}

// cachedRoute returns the connection of key k in m through its cache
// entry e, which it fills (the zero C: none).
func cachedRoute[C comparable](e *routeEntry[C], m map[connKey]C, k connKey) C {
	var none C
	if e.c != none && e.k.is(k) {
		return e.c
	}
	c := m[k]
	if c != none {
		*e = routeEntry[C]{k, c}
	}
	return c
}

// lookup returns the connection of key k in reqs (dir 0) or resps (dir
// 1), through a cache that saves hashing two addresses per record.
func (s *ShardedAuditor) lookup(dir int, k connKey) *shardConn {
	m := s.reqs
	if dir == 1 {
		m = s.resps
	}
	return cachedRoute(&s.cache[dir][k.qp%routeCacheLen], m, k)
}

// setRoute sets key k of reqs (dir 0) or resps (dir 1) to sc, and its
// cache entry with it.
func (s *ShardedAuditor) setRoute(dir int, k connKey, sc *shardConn) {
	if dir == 0 {
		s.reqs[k] = sc
	} else {
		s.resps[k] = sc
	}
	if e := &s.cache[dir][k.qp%routeCacheLen]; e.k == k {
		e.c = sc
	}
}

// assign asks the pairing model for r's connection and learns its keys.
func (s *ShardedAuditor) assign(r *trace.Record) *shardConn {
	m := s.mirror.Assign(r)
	if m == nil {
		return nil
	}
	var sc *shardConn
	fresh := m.ID > len(s.conns)
	if !fresh {
		sc = s.conns[m.ID-1]
	} else {
		sc = s.newConn(m)
	}
	if opc.IsRequest(r.Packet.Opcode) {
		k := connKey{r.Src, r.Dst, r.Packet.DestQP}
		if old := s.reqs[k]; old == nil || old.m.replaced {
			s.setRoute(0, k, sc)
		}
		if fresh && m.Follows != 0 {
			// The model made m in place of the connection it follows:
			// responses pair anew, as the model's do.
			old := s.conns[m.Follows-1]
			dropRoute(s.resps, &s.cache[1], connKey{old.m.Requester, old.m.Responder, old.m.RequesterQP}, old)
		}
	} else if m.respRouted {
		// The model returns the first connection in its list paired with
		// this requester QP: keep the lowest ID.
		k := connKey{m.Requester, m.Responder, m.RequesterQP}
		if old := s.resps[k]; old == nil || old.id > sc.id {
			s.setRoute(1, k, sc)
		}
		if fresh && m.reqKeyed {
			// A response the model began a connection with in place of
			// the one that had adopted its requests (Auditor.unadopt):
			// their key is the new connection's now.
			s.setRoute(0, connKey{m.Requester, m.Responder, m.ResponderQP}, sc)
		}
	}
	return sc
}

func (s *ShardedAuditor) newConn(m *Conn) *shardConn {
	if m.ID != len(s.conns)+1 {
		panic(fmt.Sprintf("harness: sharded auditor: connection %d made after %d", m.ID, len(s.conns)))
	}
	settings := m.Settings // s.Settings, as ConnSetup left them
	sc := &shardConn{m: m, id: m.ID, w: -1}
	if s.Shards <= 1 || ShardOf(m.ID, s.Shards) == s.Shard {
		sc.w = s.judged % len(s.workers)
		s.judged++
		w := s.workers[sc.w]
		sc.au = NewAuditor(settings, w.sink)
		sc.au.Only = s.Only
		// Every record routed here is this connection's, as the model
		// decided: the auditor does not pair again.
		sc.au.pin = &pinned{id: m.ID, requester: m.Requester, responder: m.Responder,
			responderQP: m.ResponderQP, requesterQP: m.RequesterQP, keyed: m.reqKeyed}
		w.conns = append(w.conns, sc)
	}
	s.conns = append(s.conns, sc)
	return sc
}

// send hands w its pending records.
func (s *ShardedAuditor) send(w *shardWorker) {
	if wp := s.failed.Load(); wp != nil {
		s.Abort()
		panic(wp)
	}
	w.in <- w.pending
	select {
	case w.pending = <-w.free:
	default:
		w.pending = make([]shardJob, 0, shardBatchLen)
	}
}

// run is a worker's goroutine: it judges what it is handed, then ends its
// connections when its input is closed.
func (s *ShardedAuditor) run(w *shardWorker) {
	defer s.wg.Done()
	failed := false
	for b := range w.in {
		if !failed {
			failed = !s.judgeAll(w, b)
		}
		clear(b)
		select {
		case w.free <- b[:0]:
		default:
		}
	}
	if !failed && s.ending {
		s.endAll(w)
	}
}

// judgeAll judges a batch, reporting a panic in s.failed.
func (s *ShardedAuditor) judgeAll(w *shardWorker, b []shardJob) (ok bool) {
	frame := 0
	defer func() {
		if p := recover(); p != nil {
			s.failed.CompareAndSwap(nil, &WorkerPanic{Frame: frame, Value: p, Stack: debug.Stack()})
			ok = false
		}
	}()
	for _, j := range b {
		frame = j.r.Frame
		s.judge(w, j)
	}
	return true
}

// judge feeds one record to its connection's auditor.
func (s *ShardedAuditor) judge(w *shardWorker, j shardJob) {
	k := w.sink
	k.At = j.at
	n := len(k.Findings)
	au := j.sc.au
	if len(au.conns) == 0 {
		au.pin.requesterQP, au.pin.responderQP = j.reqQP, j.rspQP // the connection is made of these
	} else {
		au.conns[0].RequesterQP, au.conns[0].ResponderQP = j.reqQP, j.rspQP
	}
	au.Observe(j.r)
	for range len(k.Findings) - n {
		w.order = append(w.order, j.at)
	}
}

// endAll ends w's connections in ID order (the order a single Auditor
// ends them in).
func (s *ShardedAuditor) endAll(w *shardWorker) {
	defer func() {
		if p := recover(); p != nil {
			s.failed.CompareAndSwap(nil, &WorkerPanic{Value: p, Stack: debug.Stack()})
		}
	}()
	for _, sc := range w.conns {
		if n := len(sc.au.conns); n > 1 {
			panic(fmt.Sprintf("harness: sharded auditor: connection %d split into %d on its worker", sc.id, n))
		}
		if len(sc.au.conns) == 1 {
			// The model's QPs as they are at the end, as a single
			// Auditor's connection ends with them: pairing may have
			// changed them since the connection's last record (an
			// adoption undone: Auditor.unadopt). Found by
			// FuzzAuditAnyTrace's corpus entry unadopt-then-end-qp: a
			// finding raised at the end carried the QP the single
			// auditor had forgotten. Routing is over: End closed this
			// worker's input after the last record was routed, which
			// orders the model's last writes before this read.
			sc.au.conns[0].RequesterQP, sc.au.conns[0].ResponderQP = sc.m.RequesterQP, sc.m.ResponderQP
		}
		k := w.sink
		k.At = endBase + int64(sc.id)
		n := len(k.Findings)
		sc.au.End()
		for range len(k.Findings) - n {
			w.order = append(w.order, k.At)
		}
	}
}

// Abort stops the workers without ending any connection; the auditor is
// not to be used afterwards. Callers that give up before End (a read
// error that is not to be reported, a panic) call it so that no worker
// goroutine is left behind.
func (s *ShardedAuditor) Abort() {
	if !s.started || s.ended {
		return
	}
	s.ended = true
	s.stop(false)
}

// stop closes the workers' inputs and waits for them.
func (s *ShardedAuditor) stop(end bool) {
	for _, w := range s.workers {
		if w.in != nil {
			if end && len(w.pending) > 0 {
				w.in <- w.pending
				w.pending = nil
			}
			close(w.in)
		}
	}
	s.wg.Wait()
}

// End ends every connection and merges what the workers found into Sink.
// A panic in a monitor on a worker is raised again here (or in an
// Observe) as a *WorkerPanic.
func (s *ShardedAuditor) End() {
	if !s.started {
		s.start()
	}
	if s.ended {
		return
	}
	s.ended = true
	if len(s.workers) == 1 && s.workers[0].in == nil {
		s.endAll(s.workers[0])
	} else {
		s.ending = true
		s.stop(true)
	}
	if wp := s.failed.Load(); wp != nil {
		panic(wp)
	}
	s.merge()
}

// merge adds the workers' tallies and findings to Sink.
func (s *ShardedAuditor) merge() {
	dst := s.Sink
	type found struct {
		at   int64
		w, i int
	}
	var all []found
	kindsOf := map[string][]*Tally{}
	for wi, w := range s.workers {
		for clause, t := range w.sink.Tallies {
			d := dst.tally(clause)
			d.Checked += t.Checked
			d.Violations += t.Violations
			d.Indeterminate += t.Indeterminate
			// A single run's reason is its first open instance's (one
			// that blocks a pass, Conn.Unresolved), else its first
			// undecided one's: a tally's reason is of the first kind
			// exactly when its Open is not 0.
			tOpen, dOpen := t.Open > 0, d.Open > 0
			if t.Reason != "" && (d.Reason == "" || tOpen && !dOpen || tOpen == dOpen && t.ReasonAt < d.ReasonAt) {
				d.Reason, d.ReasonAt = t.Reason, t.ReasonAt
			}
			d.Open += t.Open
			kindsOf[clause] = append(kindsOf[clause], t)
		}
		for clause, n := range w.sink.perClause {
			dst.perClause[clause] += n
		}
		for i := range w.sink.Findings {
			all = append(all, found{at: w.order[i], w: wi, i: i})
		}
	}
	for clause, ts := range kindsOf {
		dst.tally(clause).mergeKinds(ts)
	}
	// Findings at one position come from one connection, hence from one
	// worker, in the order it produced them.
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].at != all[j].at {
			return all[i].at < all[j].at
		}
		if all[i].w != all[j].w {
			return all[i].w < all[j].w
		}
		return all[i].i < all[j].i
	})
	kept := map[string]int{}
	for _, f := range all {
		fd := s.workers[f.w].sink.Findings[f.i]
		if dst.MaxFindings > 0 {
			if kept[fd.ID] >= dst.MaxFindings {
				continue
			}
			kept[fd.ID]++
		}
		dst.Findings = append(dst.Findings, fd)
		s.order = append(s.order, f.at)
	}
}

// FindingsAt returns, for each finding End added to Sink, in order, its
// position in the trace: the number of the record it was found at
// (counting every record observed, from 1), or, for findings made as the
// trace ended, a number above every record's that orders connections as
// they were first seen. Merging results of several processes that each
// judged a share of the same trace (reports.Merge) sorts findings by it.
func (s *ShardedAuditor) FindingsAt() []int64 { return s.order }

// Conns returns the connections judged, by ID, once End has returned; an
// ID is the number a single Auditor would have given the connection.
func (s *ShardedAuditor) Conns() []*Conn {
	var out []*Conn
	for _, sc := range s.conns {
		if sc.au != nil && len(sc.au.conns) > 0 {
			// The pairing model knows what the connection's own auditor
			// was never told: the QPs it learnt after making it, and the
			// connection it follows.
			c, m := sc.au.conns[0], sc.m
			c.ResponderQP, c.RequesterQP = m.ResponderQP, m.RequesterQP
			c.Follows, c.FollowsAt, c.FollowsWhy = m.Follows, m.FollowsAt, m.FollowsWhy
			out = append(out, c)
		}
	}
	return out
}

// Seen returns how many connections the trace held (judged or not).
func (s *ShardedAuditor) Seen() int { return len(s.conns) }

// DiffSinks compares what two sinks hold (findings, in order, as JSON;
// tallies without their ReasonAt) and describes the first difference, or
// returns "" when they hold the same. Tests use it to hold a
// ShardedAuditor to the single Auditor's results.
func DiffSinks(want, got *Sink) string {
	if len(want.Findings) != len(got.Findings) {
		return fmt.Sprintf("%d findings, want %d", len(got.Findings), len(want.Findings))
	}
	for i := range want.Findings {
		w, _ := json.Marshal(want.Findings[i])
		g, _ := json.Marshal(got.Findings[i])
		if !bytes.Equal(w, g) {
			return fmt.Sprintf("finding %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
	clauses := map[string]bool{}
	for c := range want.Tallies {
		clauses[c] = true
	}
	for c := range got.Tallies {
		clauses[c] = true
	}
	keys := make([]string, 0, len(clauses))
	for c := range clauses {
		keys = append(keys, c)
	}
	sort.Strings(keys)
	for _, c := range keys {
		var w, g Tally
		if t := want.Tallies[c]; t != nil {
			w = *t
		}
		if t := got.Tallies[c]; t != nil {
			g = *t
		}
		w.ReasonAt, g.ReasonAt = 0, 0
		wk, gk := kindsWithoutAt(w.Kinds), kindsWithoutAt(g.Kinds)
		if !slices.Equal(wk, gk) {
			return fmt.Sprintf("%s: undecided kinds %+v, want %+v", c, gk, wk)
		}
		w.Kinds, g.Kinds, w.kindAt, g.kindAt = nil, nil, nil, nil
		w.lastReason, g.lastReason, w.lastKind, g.lastKind = "", "", 0, 0
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("%s: tally %+v, want %+v", c, g, w)
		}
	}
	return ""
}

// kindsWithoutAt returns ks with their At cleared (where in the trace a
// sink was differs between a single and a sharded auditor).
func kindsWithoutAt(ks []reports.UndecidedKind) []reports.UndecidedKind {
	out := slices.Clone(ks)
	for i := range out {
		out[i].At = 0
	}
	return out
}
