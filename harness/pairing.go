package harness

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/rcconform/rcconform/harness/opc"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// Auditor runs every registered monitor over a stream of records in one
// pass, rebuilding connections as it goes.
type Auditor struct {
	Settings Settings
	Sink     *Sink
	Only     map[string]bool // if non-nil, run only these clauses' monitors
	conns    []*Conn
	mons     []Monitor
	routes   map[string]*route
	// reqs indexes the connections by the key of their requests: the
	// first made with it. resps indexes those a response was seen on by
	// the key of their responses (requester, responder, requester QP):
	// the one with the lowest ID (connFor).
	reqs, resps map[connKey]*Conn
	// cache holds, for reqs (0) and resps (1), the last key looked up
	// per QP number (modulo routeCacheLen) and its connection: it saves
	// hashing two addresses per record. Made with the second connection
	// (ShardedAuditor's per-connection auditors have one).
	cache *[2][routeCacheLen]routeEntry[*Conn]

	// ConnSetup, when set, adjusts each new connection's Settings from
	// what the capture says about it (dut/pcapdut: the connection
	// manager's handshake) before its monitors are made. Requester,
	// Responder and ResponderQP are set then (ResponderQP is 0 for a
	// connection first seen through a response). It runs on the
	// goroutine that calls Observe.
	ConnSetup func(c *Conn)

	// pin, when set (a ShardedAuditor's per-connection auditor), is the
	// one connection every record goes to, as the sharded auditor's
	// pairing model decided: made on the first record with these keys.
	pin *pinned
	// skew measures the reordering the trace shows (evidence.go); a
	// pinned auditor takes its records' Skew as the sharded auditor set it.
	skew skewMeter
}

// pinned is the connection a per-connection auditor holds: its keys and
// ID as the pairing model made them.
type pinned struct {
	id                       int
	requester, responder     netip.Addr
	responderQP, requesterQP uint32
	keyed                    bool
}

// route says which checkers of a connection see the records of each
// packet kind (KindOf), in order: those at the indexes
// order[span[k].from:span[k].to]. The kinds with the same checkers share
// one run of order, so that a connection's calls (Conn.calls), which
// hold its checkers in that order, stay short.
type route struct {
	order []uint16
	span  [numKinds]struct{ from, to uint16 }
}

// routeFor returns the route of a connection's checkers, from the sets of
// kinds they ask for (KindFilter).
func (a *Auditor) routeFor(checkers []Checker) *route {
	sets := make([]byte, 0, 8*len(checkers))
	for _, ch := range checkers {
		set := AllKinds
		if f, ok := ch.(KindFilter); ok {
			set = f.Kinds()
		}
		sets = binary.LittleEndian.AppendUint64(sets, uint64(set))
	}
	if rt := a.routes[string(sets)]; rt != nil {
		return rt
	}
	rt := new(route)
	runs := map[string]uint16{} // a run of order by its indexes
	for k := range rt.span {
		var idx []uint16
		for i := range checkers {
			if binary.LittleEndian.Uint64(sets[8*i:])&(1<<k) != 0 {
				idx = append(idx, uint16(i))
			}
		}
		key := fmt.Sprint(idx)
		from, ok := runs[key]
		if !ok {
			from = uint16(len(rt.order))
			runs[key] = from
			rt.order = append(rt.order, idx...)
		}
		rt.span[k].from, rt.span[k].to = from, from+uint16(len(idx))
	}
	if a.routes == nil {
		a.routes = map[string]*route{}
	}
	a.routes[string(sets)] = rt
	return rt
}

// NewAuditor returns an auditor writing into sink.
func NewAuditor(settings Settings, sink *Sink) *Auditor {
	return &Auditor{Settings: settings, Sink: sink}
}

// Conns returns the connections seen so far.
func (a *Auditor) Conns() []*Conn { return a.conns }

func (a *Auditor) monitorsToRun() []Monitor {
	if a.mons == nil {
		for _, m := range Monitors() {
			if a.Only == nil || a.Only[m.Clause] {
				a.mons = append(a.mons, m)
			}
		}
	}
	return a.mons
}

// Assign finds or makes the connection r belongs to, as Observe does,
// and absorbs r into its model without running any monitor; it returns
// nil for a record Observe would leave out. An auditor fed only through
// Assign pairs the two directions of each connection for callers that
// split connections among several auditors (ShardedAuditor).
func (a *Auditor) Assign(r *trace.Record) *Conn {
	if !r.Usable() || r.Packet == nil {
		return nil
	}
	op := r.Packet.Opcode
	if !opc.IsRequest(op) && !opc.IsResponse(op) {
		return nil
	}
	c := a.connFor(r)
	if c != nil {
		c.absorb(r)
	}
	return c
}

// indexResponder adds c to resps once a response was routed to it.
func (a *Auditor) indexResponder(c *Conn) {
	if c.respIndexed || !c.respRouted {
		return
	}
	c.respIndexed = true
	k := connKey{c.Requester, c.Responder, c.RequesterQP}
	if old := a.resps[k]; old == nil || old.ID > c.ID {
		a.resps[k] = c
		if a.cache != nil {
			if e := &a.cache[1][k.qp%routeCacheLen]; e.k == k {
				e.c = c
			}
		}
	}
}

// lookup returns the connection of key k in reqs (dir 0) or resps (dir
// 1), through the cache.
func (a *Auditor) lookup(dir int, k connKey) *Conn {
	if a.cache == nil {
		// At most one connection: its keys, without hashing.
		if len(a.conns) == 0 {
			return nil
		}
		c := a.conns[0]
		if dir == 0 && c.reqKeyed && k == (connKey{c.Requester, c.Responder, c.ResponderQP}) ||
			dir == 1 && c.respIndexed && k == (connKey{c.Requester, c.Responder, c.RequesterQP}) {
			return c
		}
		return nil
	}
	m := a.reqs
	if dir == 1 {
		m = a.resps
	}
	return cachedRoute(&a.cache[dir][k.qp%routeCacheLen], m, k)
}

// Observe feeds one record. Records with a bad ICRC are left out: their
// receiver dropped them. The record must not be modified afterwards.
func (a *Auditor) Observe(r *trace.Record) {
	if !r.Usable() || r.Packet == nil {
		return
	}
	if a.pin == nil {
		a.skew.note(r, a.Settings.TimePrecision)
	}
	op := r.Packet.Opcode
	if !opc.IsRequest(op) && !opc.IsResponse(op) {
		if op.ReservedRC() {
			a.reservedOp(r)
		}
		return
	}
	c := a.connFor(r)
	if c == nil {
		return
	}
	if c.FirstFrame == 0 && !c.Settings.Active {
		c.FirstFrame = r.Frame
	}
	if c.copyOf(r) {
		c.Copies++
		return
	}
	for _, r := range c.hold(r) {
		c.deliver(r)
	}
}

// reservedOp notes a request with a reserved RC opcode on the connection
// its key names, if there is one (it begins none: no pairing or model
// state is taken from it).
func (a *Auditor) reservedOp(r *trace.Record) {
	var c *Conn
	switch {
	case a.pin != nil && len(a.conns) > 0:
		c = a.conns[0]
	case a.pin == nil:
		c = a.lookup(0, connKey{r.Src, r.Dst, r.Packet.DestQP})
	}
	if c != nil {
		c.noteReserved(r)
	}
}

// deliver shows r to the connection's checkers, then absorbs it.
func (c *Conn) deliver(r *trace.Record) {
	c.cur = r
	c.seq++
	if own := c.runs[r.Dir&1].step(r, c.seq); own && len(c.missed) > 0 {
		c.decideMissed(r)
	}
	if r.Dir == trace.ToRequester {
		if r.HasIPID {
			c.lateResponse(r)
		}
		c.staleMSN(r)
	}
	c.restartStep(r)
	if len(c.awaited) > 0 {
		c.decideAwaited(r)
	}
	if r.Packet.Opcode < 32 {
		sp := c.route.span[KindOf(r.Packet)]
		for _, ch := range c.calls[sp.from:sp.to] {
			ch.Observe(c, r)
		}
	} else {
		for _, ch := range c.checkers {
			ch.Observe(c, r)
		}
	}
	c.absorb(r)
}

// End finishes every connection: the records still held back are
// delivered, then every checker ends.
func (a *Auditor) End() {
	for _, c := range a.conns {
		for _, r := range c.flush() {
			c.deliver(r)
		}
		for _, ch := range c.checkers {
			ch.End(c)
		}
		c.decideAwaited(nil)
		c.endMissed()
		c.restartEnd()
	}
}

// newConn makes a connection; keyed says a request named its responder
// QP (a connection its responses began has no request key: requests
// reach it only by adoptRequests).
func (a *Auditor) newConn(req, rsp netip.Addr, rspQP uint32, keyed bool) *Conn {
	c := &Conn{ID: len(a.conns) + 1, Requester: req, Responder: rsp, ResponderQP: rspQP,
		Settings: a.Settings, Capture: a.Sink.Capture, sink: a.Sink}
	if a.ConnSetup != nil {
		a.ConnSetup(c)
	}
	for _, m := range a.monitorsToRun() {
		c.checkers = append(c.checkers, m.New(c))
	}
	c.route = a.routeFor(c.checkers)
	c.calls = make([]Checker, len(c.route.order))
	for j, i := range c.route.order {
		c.calls[j] = c.checkers[i]
	}
	a.conns = append(a.conns, c)
	if a.reqs == nil {
		a.reqs, a.resps = map[connKey]*Conn{}, map[connKey]*Conn{}
	}
	if len(a.conns) == 2 {
		a.cache = new([2][routeCacheLen]routeEntry[*Conn])
	}
	if k := (connKey{req, rsp, rspQP}); keyed && a.reqs[k] == nil {
		a.reqs[k] = c
	}
	c.reqKeyed = keyed
	return c
}

// connFor finds or creates the connection a record belongs to. Requests
// are keyed by (requester, responder, DestQP). Responses go to the
// requester's QP: they are paired with the connection between the same
// two addresses whose requester QP is already known to be their DestQP,
// else with an unpaired one whose request PSNs are nearest.
//
// The indexes give what a walk through the connections in ID order
// finds: the first connection made with a request's key (keys never
// change), and the first one paired with a response's requester QP that
// has seen a response (a connection's requester QP no longer changes
// once it has).
func (a *Auditor) connFor(r *trace.Record) *Conn {
	c := a.route(r)
	if c != nil {
		c.noteRoute(r)
		a.indexResponder(c)
	}
	return c
}

// noteRoute updates the pairing's routing-time state of the connection
// with r, a record routed to it: what the routing saw, at once (the
// checkers see records only after the reorder buffer, and the pairing
// model of a ShardedAuditor at once), for walkResponse and
// adoptRequests. A ShardedAuditor's router calls it too for the records
// it routes by table without its pairing model, so that the model's
// state stays the single Auditor's.
func (c *Conn) noteRoute(r *trace.Record) {
	p := r.Packet
	if !opc.IsRequest(p.Opcode) {
		c.respRouted, c.respPSN, c.respPort = true, p.PSN, r.SrcPort
		if c.adopted {
			c.respSinceAdopt = true
		}
		return
	}
	last := c.reserved(p)
	c.lastReqFrame = r.Frame
	if !c.reqRouted || last.AtOrAfter(c.routedNext) {
		c.routedNext = last.Next()
	}
	if !c.reqRouted || p.PSN.Before(c.routedLow) {
		c.routedLow = p.PSN
	}
	c.reqRouted = true
	if !c.respRouted {
		c.noteRouted(r, last)
	}
}

// route is connFor's choice of connection.
func (a *Auditor) route(r *trace.Record) *Conn {
	if pn := a.pin; pn != nil {
		if len(a.conns) == 0 {
			c := a.newConn(pn.requester, pn.responder, pn.responderQP, pn.keyed)
			c.ID, c.RequesterQP = pn.id, pn.requesterQP
		}
		return a.conns[0]
	}
	p := r.Packet
	if opc.IsRequest(p.Opcode) {
		if c := a.lookup(0, connKey{r.Src, r.Dst, p.DestQP}); c != nil {
			if why := c.reborn(r); why != "" {
				if c.Follows != 0 {
					if prev := a.conns[c.Follows-1]; prev.reborn(r) == "" {
						return prev // a late request of the QPs made before
					}
				}
				return a.rebirth(c, r, why)
			}
			return c
		}
		if c := a.adoptRequests(r); c != nil {
			return c
		}
		return a.newConn(r.Src, r.Dst, p.DestQP, true)
	}
	if c := a.lookup(1, connKey{r.Dst, r.Src, p.DestQP}); c != nil {
		return c
	}
	// A response from r.Src (the responder) to r.Dst (the requester).
	found, best, exact := a.walkResponse(r)
	if found != nil {
		return found
	}
	// A connection that adopted requests r answers and had no response
	// since (unadopt) against one whose request r answers exactly: the
	// one whose request came last.
	x := a.unadoptable(r)
	if best != nil && exact && (x == nil || best.lastReqFrame > x.lastReqFrame) {
		best.RequesterQP = p.DestQP
		return best
	}
	if x != nil {
		return a.unadopt(r, x)
	}
	if best != nil {
		best.RequesterQP = p.DestQP
		return best
	}
	// Responses whose requests were never seen: a connection of its own,
	// on which monitors needing the requests will be indeterminate.
	c := a.newConn(r.Dst, r.Src, 0, false)
	c.RequesterQP = p.DestQP
	return c
}

// rebornJump is how far, in PSNs, a request may lie past the next PSN
// of its connection's requests, or before the lowest one, and still be
// that connection's: past it, the QPs were made anew with the same
// numbers (reborn). A requester sends its PSNs in order and resends only
// PSNs it sent, so a request further ahead means the capture lost that
// many of one connection's packets in a row, and one further behind
// means that many PSNs were outstanding before the capture began: both
// far beyond what captures and READs show, while a new QP's random
// starting PSN falls that far off seven times in eight.
const rebornJump = 1 << 18

// reborn says why request r, whose key is c's, cannot be c's (it jumped
// rebornJump or more past the PSNs c's requests used), or "" when it can
// be. It reads only routing-time state, as walkResponse does.
func (c *Conn) reborn(r *trace.Record) string {
	if !c.reqRouted || c.Settings.Active {
		return "" // an active run's harness made its QPs: one key, one connection
	}
	p := r.Packet.PSN
	if d := p.Diff(c.routedNext); d > rebornJump {
		return fmt.Sprintf("its PSN %d is %d past the next PSN %d of the requests before it", p, d, c.routedNext)
	}
	if p.Before(c.routedNext) {
		if d := c.routedLow.Diff(p); d > rebornJump {
			return fmt.Sprintf("its PSN %d is %d before the lowest PSN %d the requests before it carried", p, d, c.routedLow)
		}
	}
	return ""
}

// rebirth makes the connection that request r begins in place of old,
// whose key r has but which r cannot belong to (why): old takes no more
// records, and the responses that follow pair anew.
func (a *Auditor) rebirth(old *Conn, r *trace.Record, why string) *Conn {
	old.replaced = true
	if old.respIndexed {
		a.unroute(1, connKey{old.Requester, old.Responder, old.RequesterQP}, old)
	}
	a.unroute(0, connKey{r.Src, r.Dst, r.Packet.DestQP}, old)
	c := a.newConn(r.Src, r.Dst, r.Packet.DestQP, true)
	c.Follows, c.FollowsAt, c.FollowsWhy = old.ID, r.Frame, why
	return c
}

// unroute removes key k of reqs (dir 0) or resps (dir 1) where it leads
// to c.
func (a *Auditor) unroute(dir int, k connKey, c *Conn) {
	m := a.reqs
	if dir == 1 {
		m = a.resps
	}
	var cache *[routeCacheLen]routeEntry[*Conn]
	if a.cache != nil {
		cache = &a.cache[dir]
	}
	dropRoute(m, cache, k, c)
}

// dropRoute removes key k from m, and from its cache (nil: none), where
// it leads to c (Auditor, ShardedAuditor).
func dropRoute[C comparable](m map[connKey]C, cache *[routeCacheLen]routeEntry[C], k connKey, c C) {
	if m[k] == c {
		delete(m, k)
	}
	if cache != nil {
		if e := &cache[k.qp%routeCacheLen]; e.c == c {
			*e = routeEntry[C]{}
		}
	}
}

// adoptBehind and adoptAhead are how far behind and ahead of a
// response-only connection's latest response PSN a request may be and
// still join it (adoptRequests): the requests in flight. Two connections
// between the same hosts whose PSNs are that close cannot be told apart
// by their PSNs; elsewhere the window keeps one's requests from another's
// responses.
const (
	adoptBehind = 1024
	adoptAhead  = 8192
)

// adoptRequests finds, for request r whose key no connection has, the
// connection its responses began: a capture that starts mid-connection
// may show a response first, which makes a connection of its own with
// the responder QP unknown (connFor). The request joins the one between
// the same two hosts, with no request yet, whose latest response PSN is
// nearest r's PSN (adoptAhead ahead, adoptBehind behind), as a response
// joins the requests nearest it (walkResponse); the connection learns its
// responder QP.
func (a *Auditor) adoptRequests(r *trace.Record) *Conn {
	p := r.Packet
	var best *Conn
	bestDist := 1 << 16
	for _, c := range a.conns {
		if c.reqRouted || c.ResponderQP != 0 || !c.respRouted || c.replaced || c.Requester != r.Src || c.Responder != r.Dst {
			continue
		}
		// A request after a response of its connection is new (past the
		// response's PSN, by up to the requests in flight) or a resend
		// of a little before it (a READ re-issued): far behind it, it is
		// another connection's.
		d := p.PSN.Diff(c.respPSN)
		if d < -adoptBehind || d > adoptAhead {
			continue
		}
		if d < 0 {
			d = -d
		}
		if r.SrcPort != 0 && r.SrcPort == c.respPort {
			// The UDP source port its responses came from: a stack that
			// derives the port from both QP numbers (Linux) gives both
			// directions the same one, and one that does not makes a
			// match a rare coincidence, so it wins over nearness (many
			// QPs may start at the same PSN). A port shared by every
			// connection changes nothing.
			d -= 1 << 16
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == nil {
		return nil
	}
	best.ResponderQP, best.reqKeyed = p.DestQP, true
	best.adopted, best.adoptFirst = true, p.PSN
	k := connKey{r.Src, r.Dst, p.DestQP}
	if a.reqs == nil {
		a.reqs, a.resps = map[connKey]*Conn{}, map[connKey]*Conn{}
	}
	if a.reqs[k] == nil {
		a.reqs[k] = best
		if a.cache != nil {
			if e := &a.cache[0][k.qp%routeCacheLen]; e.k == k {
				e.c = best
			}
		}
	}
	return best
}

// walkResponse walks through the connections in ID order for response r
// (from the responder r.Src to the requester r.Dst): found is the first
// paired with r's DestQP that a response was routed to, else best is the
// unpaired one whose request PSNs are nearest r's PSN (nil when none is
// within 2^16).
//
// It reads only what routing itself keeps (reqRouted, respRouted,
// routedNext, routed), never what absorbing the records does: a single
// Auditor absorbs a record only after its reorder buffer, the pairing
// model of a ShardedAuditor at once, and both must pair alike.
func (a *Auditor) walkResponse(r *trace.Record) (found, best *Conn, exact bool) {
	p := r.Packet
	bestDist := 1 << 30
	newest := 0 // the latest request between the two hosts
	for _, c := range a.conns {
		if c.Requester == r.Dst && c.Responder == r.Src && c.lastReqFrame > newest {
			newest = c.lastReqFrame
		}
	}
	for _, c := range a.conns {
		if c.Requester != r.Dst || c.Responder != r.Src || c.replaced {
			continue
		}
		if c.RequesterQP == p.DestQP && c.respRouted {
			return c, nil, true
		}
		if c.respRouted || !c.reqRouted {
			continue
		}
		d := p.PSN.Diff(c.routedNext)
		if d < 0 {
			d = -d
		}
		if p.PSN.Diff(c.routedNext) > adoptAhead || c.routedLow.Diff(p.PSN) > adoptBehind {
			// Far ahead of its requests, or far behind the lowest: not
			// the answer of a request in flight (a connection whose
			// responses the capture lost does not take another's).
			d = 1 << 30
		}
		exact, port, contra := c.answers(r)
		if contra && !exact && c.lastReqFrame < newest {
			// A request of the connection carries the response's PSN
			// and is not of the kind it answers, and another connection
			// between the hosts requested since: the answer is likelier
			// that one's, or one whose request the capture lost, than a
			// wrong one of this (where this connection requested last,
			// a wrong answer stays its own, to be judged).
			d = 1 << 30
		}
		if exact {
			// It answers one of the connection's latest requests: its
			// own PSN, or one of a READ's range (a long READ's answer
			// lies far from the next request's PSN). Many connections
			// between two hosts have PSNs near each other's; one whose
			// request the response answers exactly wins over nearness.
			d = -1
			if port {
				// Several QPs starting at the same PSN all answer it
				// exactly: the one whose request came from the
				// response's UDP source port wins (see adoptRequests).
				d = -2
			}
		}
		if d < bestDist || d == bestDist && best != nil && c.lastReqFrame > best.lastReqFrame {
			// Equally near: the connection whose latest request came
			// last (a response answers a request in flight; an older
			// connection's may be one whose answers the capture lost).
			best, bestDist = c, d
		}
	}
	if bestDist < 1<<16 {
		return nil, best, bestDist < 0
	}
	return nil, nil, false
}

// unadoptable returns the connection unadopt takes r's key from (nil:
// none), changing nothing.
func (a *Auditor) unadoptable(r *trace.Record) *Conn {
	var x *Conn
	for _, c := range a.conns {
		if c.adopted && !c.respSinceAdopt && !c.replaced && c.Requester == r.Dst && c.Responder == r.Src &&
			r.Packet.PSN.InRange(c.adoptFirst, c.routedNext.Add(-1)) {
			x = c // the latest adoption wins
		}
	}
	return x
}

// unadopt is for response r that pairs with no connection, and x, the
// connection that adopted requests r answers (adoptRequests) and has had
// no response since (unadoptable): those requests were another QP's,
// whose first response r is (a connection of responses only, its
// requests lost, had taken the next connection's, and each would take
// the next). The key of those requests moves to a new connection, which
// r begins and which it returns; the requests already taken stay where
// they went.
func (a *Auditor) unadopt(r *trace.Record, x *Conn) *Conn {
	x.adopted = false
	a.unroute(0, connKey{x.Requester, x.Responder, x.ResponderQP}, x)
	c := a.newConn(x.Requester, x.Responder, x.ResponderQP, true)
	c.RequesterQP = r.Packet.DestQP
	x.ResponderQP, x.reqKeyed = 0, false // its own requests' key is unknown again
	return c
}

// routedDepth is how many of a connection's latest requests the pairing
// of its first response compares it with.
const routedDepth = 32

// routedReq is a request as routed: its opcode and the PSNs it reserved.
type routedReq struct {
	op          wire.Opcode
	first, last wire.PSN
	port        uint16 // its UDP source port (0: unknown)
	length      uint32 // a READ's DMA length
}

// reserved is the last PSN request p reserved, as the pairing sees it:
// a READ's range at the configured path MTU, or at the smallest.
func (c *Conn) reserved(p *wire.Packet) wire.PSN {
	if p.Opcode != wire.ReadRequest {
		return p.PSN
	}
	mtu := c.Settings.MTU
	if mtu == 0 {
		mtu = minMTU
	}
	return p.PSN.Add(wire.ReadResponsePackets(p.RETH.Length, mtu) - 1)
}

// noteRouted remembers request r, reserving up to last, for the pairing
// of the connection's first response.
func (c *Conn) noteRouted(r *trace.Record, last wire.PSN) {
	p := r.Packet
	q := routedReq{op: p.Opcode, first: p.PSN, last: last, port: r.SrcPort, length: p.RETH.Length}
	c.routed[c.nRouted%routedDepth] = q
	c.nRouted++
}

// answers reports whether response p answers one of the latest requests
// routed to the connection: a READ response inside a READ's range (its
// first PSN for a First or Only), an ATOMIC acknowledgment or an
// Acknowledge at a request's own PSN (an ACK names the newest request it
// covers, an RNR NAK the request it refused). port reports that one such
// request came from the response's UDP source port.
//
// contra reports that a request at the response's PSN is of a kind it
// cannot answer: an ATOMIC acknowledgment at another request's PSN, or a
// READ response's First or Only at a PSN a request other than a READ
// used.
func (c *Conn) answers(r *trace.Record) (exact, port, contra bool) {
	p := r.Packet
	class, pos := opc.Class(p.Opcode), opc.Position(p.Opcode)
	for i := range min(c.nRouted, routedDepth) {
		q := &c.routed[i]
		answered := false
		switch {
		case class == wire.ClassReadResponse:
			answered = q.op == wire.ReadRequest && p.PSN.InRange(q.first, q.last) &&
				(pos != wire.PosFirst && pos != wire.PosOnly || p.PSN == q.first)
			if c := opc.Class(q.op); c != wire.ClassReadRequest && c != wire.ClassFlush && c != wire.ClassAtomicWrite &&
				p.PSN == q.first && (pos == wire.PosFirst || pos == wire.PosOnly) {
				contra = true // (FLUSH and ATOMIC WRITE are answered by a READ Response Only)
			}
			if q.op == wire.ReadRequest && p.PSN == q.first &&
				(pos == wire.PosFirst && q.length <= minMTU || pos == wire.PosOnly && q.length > maxMTU) {
				// A READ that fits one packet at every MTU answered by
				// several, or one that needs several at every MTU by one.
				answered, contra = false, true
			}
		case p.Opcode == wire.AtomicAcknowledge:
			answered = opc.Class(q.op) == wire.ClassAtomic && p.PSN == q.first
			if !answered && p.PSN == q.first {
				contra = true
			}
		case p.Opcode == wire.Acknowledge && (p.AETH.IsACK() || p.AETH.IsRNR()):
			answered = q.op != wire.ReadRequest && opc.Class(q.op) != wire.ClassAtomic && p.PSN == q.first
		}
		if answered {
			exact = true
			if r.SrcPort != 0 && q.port == r.SrcPort {
				return true, true, contra
			}
		}
	}
	return exact, false, contra
}
