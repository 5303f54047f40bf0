package pcapdut

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/wire"
)

// The connection manager's handshake (IBTA Vol 1 chapter 12), read from
// the capture: the REQ (sent by the active side) and the REP (sent back by
// the passive side) name each side's QP and first PSN and the settings of
// the RC connection they set up; the RTU confirms it, a REJ refuses it,
// and DREQ/DREP end it. Each CM connection is two audited connections,
// one per direction: the active side as requester to the passive side's
// QP, and the reverse.
//
// Which side a setting belongs to (as the REQ and REP define them):
//   - path MTU: the REQ's, both directions;
//   - SRQ: the responder's own (the REP's for the passive side, the
//     REQ's for the active side);
//   - local ACK timeout: the REQ's primary path value is the one the
//     passive side uses; the active side's is not announced;
//   - retry count: the REQ's, for the passive side (the active side's is
//     not announced);
//   - RNR retry count: the REQ's for the passive side, the REP's for the
//     active side;
//   - responder resources: the responder's own (REQ: active, REP:
//     passive);
//   - starting PSN: each message announces the PSN its sender expects to
//     receive first, so the REP's is the active side's first request
//     PSN and the REQ's the passive side's (as Linux's CM and the
//     public captures use them).
//
// The table is filled by the goroutine that reads and decodes the capture
// and read by the auditor's (harness.Auditor.ConnSetup and the connection
// list at the end), so every access holds mu. The reader runs ahead of the
// auditor, and an RC record is made only after the CM packets before it
// in the capture were decoded, so when the auditor meets a connection's
// first packet, the handshake that set it up is in the table.
type cmTable struct {
	mu       sync.Mutex
	capture  string
	conns    []*cmConn
	pending  atomic.Int32 // CM connections whose first RC packets are not both seen yet
	notes    []string
	noted    map[string]bool
	applied  map[int]*applied // by connection ID (a sharded audit judges a copy of the pairing model's connection, with its ID)
	badMADs  int
	firstBad int
}

// cmSide is one side of a CM connection, as its REQ or REP announced it.
type cmSide struct {
	addr     netip.Addr
	qpn      uint32
	comm     uint32   // its local communication ID
	startPSN wire.PSN // the PSN it expects to receive first (its peer's first request)
	srq      bool
	rnrRetry uint8 // the RNR retry count announced for this side's QP
	respRes  uint8
	frame    int // the REQ's or REP's frame
}

// cmConn is one connection the handshake set up (or refused).
type cmConn struct {
	active, passive     cmSide
	haveREP             bool
	mtu                 int
	retryCnt, ackTmo    uint8
	transport           uint8
	msgs                []string // CM messages seen, first time each
	rejected, settled   bool
	closedAt            int        // frame of the first REJ, DREQ or DREP: RC packets after it are not this connection's
	first               [2]firstRC // 0: the active side's requests; 1: the passive side's
	usedBy              [2]bool    // an audited connection took its settings
	reqFrame, rejReason int
}

// firstRC is the first RC packet of one direction of a CM connection.
type firstRC struct {
	seen    bool
	request bool
	psn     wire.PSN
	frame   int
}

// applied is what the table told one audited connection.
type applied struct {
	cm     *cmConn
	dir    int // 0: active side requester
	source map[string]string
}

func newCMTable(capture string) *cmTable {
	return &cmTable{capture: capture, noted: map[string]bool{}, applied: map[int]*applied{}}
}

// observeMsg records CM message *mp (or err, the error decoding the MAD
// of a UD SEND Only to QP 1 gave; other MADs are ignored) sent from src to
// dst in frame.
func (t *cmTable) observeMsg(mp *wire.CMMsg, err error, src, dst netip.Addr, frame int) {
	m := *mp
	if err != nil {
		if !isNotCM(err) {
			t.mu.Lock()
			if t.badMADs == 0 {
				t.firstBad = frame
			}
			t.badMADs++
			t.mu.Unlock()
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch m.Kind {
	case wire.CMAttrREQ:
		for _, c := range t.conns {
			if c.active.addr == src && c.active.comm == m.LocalCommID && c.passive.addr == dst {
				return // a resent REQ
			}
		}
		// The REQ's RNR retry count is the passive side's; the active
		// side's comes with the REP (0xFF: not announced yet).
		c := &cmConn{active: cmSide{addr: src, qpn: m.LocalQPN, comm: m.LocalCommID, startPSN: m.StartingPSN,
			srq: m.SRQ, rnrRetry: 0xFF, respRes: m.ResponderResources, frame: frame},
			passive: cmSide{addr: dst, rnrRetry: m.RNRRetryCount},
			mtu:     m.PathMTU, retryCnt: m.RetryCount, ackTmo: m.LocalACKTimeout, transport: m.TransportService,
			msgs: []string{"REQ"}, reqFrame: frame}
		t.conns = append(t.conns, c)
		t.pending.Add(1)
	case wire.CMAttrREP:
		c := t.find(src, dst, &m)
		if c == nil || c.haveREP {
			return
		}
		c.haveREP = true
		c.passive.qpn, c.passive.comm, c.passive.startPSN = m.LocalQPN, m.LocalCommID, m.StartingPSN
		c.passive.srq, c.passive.respRes, c.passive.frame = m.SRQ, m.ResponderResources, frame
		c.active.rnrRetry = m.RNRRetryCount
		c.saw("REP")
	default:
		c := t.find(src, dst, &m)
		if c == nil {
			return
		}
		c.saw(m.String())
		switch m.Kind {
		case wire.CMAttrREJ, wire.CMAttrDREQ, wire.CMAttrDREP:
			if c.closedAt == 0 {
				c.closedAt = frame
				t.settle(c) // no later RC packet is its
			}
			if m.Kind == wire.CMAttrREJ {
				c.rejected, c.rejReason = true, int(m.RejReason)
			}
		}
	}
}

// isNotCM reports whether a MAD's decoding error says only that it is not
// a CM message (another management class or attribute).
func isNotCM(err error) bool { return errors.Is(err, wire.ErrNotRoCE) }

// handshake lists the CM messages seen, with a REJ's reason.
func (c *cmConn) handshake() string {
	h := strings.Join(c.msgs, " ")
	if c.rejected {
		h += fmt.Sprintf(" (reason %d)", c.rejReason)
	}
	return h
}

func (c *cmConn) saw(msg string) {
	for _, s := range c.msgs {
		if s == msg {
			return
		}
	}
	c.msgs = append(c.msgs, msg)
}

// find returns the newest CM connection a message after the REQ belongs
// to: its sender names itself by LocalCommID and its peer by
// RemoteCommID (a REJ or MRA of a REQ before any REP names only the
// active side, as its remote).
func (t *cmTable) find(src, dst netip.Addr, m *wire.CMMsg) *cmConn {
	for i := len(t.conns) - 1; i >= 0; i-- {
		c := t.conns[i]
		a, p := &c.active, &c.passive
		switch {
		case src == a.addr && dst == p.addr && m.LocalCommID == a.comm && (!c.haveREP || m.RemoteCommID == p.comm):
			return c
		case src == p.addr && dst == a.addr && m.RemoteCommID == a.comm && (!c.haveREP || m.LocalCommID == p.comm):
			return c
		}
	}
	return nil
}

// noteRecord remembers the first RC packet of each direction of a CM
// connection (for completeness). It runs on the reading goroutine, for
// every RC record, and costs nothing once every connection has its
// first packets.
func (t *cmTable) noteRecord(r *trace.Record) {
	if t.pending.Load() == 0 {
		return // no handshake, or every one has its first packets
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	req := r.Dir == trace.ToResponder
	for i := len(t.conns) - 1; i >= 0; i-- {
		c := t.conns[i]
		if !c.haveREP || (c.closedAt != 0 && r.Frame > c.closedAt) {
			continue
		}
		dir := c.direction(r.Src, r.Dst, r.Packet.DestQP, req)
		if dir < 0 {
			continue
		}
		if fr := &c.first[dir]; !fr.seen {
			*fr = firstRC{seen: true, request: req, psn: r.Packet.PSN, frame: r.Frame}
			if c.first[1-dir].seen {
				t.settle(c)
			}
		}
		return
	}
}

// settle says c needs noteRecord no more (its first packets are both
// seen, or it ended).
func (t *cmTable) settle(c *cmConn) {
	if !c.settled {
		c.settled = true
		t.pending.Add(-1)
	}
}

// direction returns which direction of c an RC packet from src to dst
// with the given destination QP belongs to (0: the active side is the
// requester), or -1.
func (c *cmConn) direction(src, dst netip.Addr, destQP uint32, request bool) int {
	a, p := &c.active, &c.passive
	switch {
	case request && src == a.addr && dst == p.addr && destQP == p.qpn,
		!request && src == p.addr && dst == a.addr && destQP == a.qpn:
		return 0
	case request && src == p.addr && dst == a.addr && destQP == a.qpn,
		!request && src == a.addr && dst == p.addr && destQP == p.qpn:
		return 1
	}
	return -1
}

// setup is harness.Auditor.ConnSetup: it gives a new audited connection
// the settings its handshake announced, where no flag gave them, reports
// flags that contradict the handshake, and marks the connection FromStart
// when its handshake and its first request at the announced starting PSN
// are in the capture. It does not set Complete: that also claims nothing
// was lost before the capture point and that the capture shows packets
// in the order the devices handled them, which a handshake cannot show
// (ibdump captures show ACKs ahead of the requests they cover).
func (t *cmTable) setup(hc *harness.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ap := &applied{dir: -1, source: map[string]string{}}
	t.applied[hc.ID] = ap
	s := &hc.Settings
	flagSource(s, ap.source)
	// The audited connection's first packet is the earliest RC packet of
	// its direction: of the CM connections that packet could belong to,
	// take the one that noted it (the reader runs ahead of the auditor,
	// so a later handshake between the same QPs may be known already).
	var best *cmConn
	bestDir := -1
	for _, c := range t.conns {
		if !c.haveREP || c.rejected || c.transport != 0 || hc.ResponderQP == 0 {
			continue // not an RC connection that was set up
		}
		dir := c.direction(hc.Requester, hc.Responder, hc.ResponderQP, true)
		if dir < 0 || !c.first[dir].seen {
			// Not this connection, or one whose first packet came after
			// a DREQ, DREP or REJ ended it (noteRecord saw every RC
			// packet of its directions before the auditor did).
			continue
		}
		if best == nil || c.first[dir].frame < best.first[bestDir].frame {
			best, bestDir = c, dir
		}
	}
	if best == nil {
		return
	}
	ap.cm, ap.dir = best, bestDir
	best.usedBy[bestDir] = true
	t.apply(hc, best, bestDir, ap.source)
}

// flagSource records the settings the user's flags give.
func flagSource(s *harness.Settings, src map[string]string) {
	if s.MTU != 0 {
		src["mtu"] = reports.SourceFlag
	}
	if s.SRQ != harness.SRQUnknown {
		src["srq"] = reports.SourceFlag
	}
	if s.AckTimeout >= 0 {
		src["ack_timeout"] = reports.SourceFlag
	}
	if s.RetryCnt >= 0 {
		src["retry_cnt"] = reports.SourceFlag
	}
	if s.RNRRetry >= 0 {
		src["rnr_retry"] = reports.SourceFlag
	}
}

// announced is what the handshake says about one direction of a CM
// connection; -1 for what it does not announce.
type announced struct {
	mtu                            int
	srq                            harness.SRQMode
	ackTimeout, retryCnt, rnrRetry int
	respRes                        int
	requester, responder           *cmSide
	requesterStart, responderStart wire.PSN
}

func (c *cmConn) announced(dir int) announced {
	an := announced{mtu: c.mtu, ackTimeout: -1, retryCnt: -1, rnrRetry: -1}
	req, rsp := &c.active, &c.passive
	if dir == 1 {
		req, rsp = rsp, req
		an.ackTimeout, an.retryCnt = int(c.ackTmo), int(c.retryCnt)
	}
	an.requester, an.responder = req, rsp
	an.srq = harness.SRQNone
	if rsp.srq {
		an.srq = harness.SRQAll
	}
	if req.rnrRetry != 0xFF {
		an.rnrRetry = int(req.rnrRetry)
	}
	an.respRes = int(rsp.respRes)
	an.requesterStart, an.responderStart = rsp.startPSN, req.startPSN
	return an
}

// apply sets hc's unknown settings from the handshake and notes flags that
// contradict it.
func (t *cmTable) apply(hc *harness.Conn, c *cmConn, dir int, src map[string]string) {
	an := c.announced(dir)
	s := &hc.Settings
	name := fmt.Sprintf("%s QP 0x%06x → %s QP 0x%06x", wire.AddrString(hc.Requester), an.requester.qpn,
		wire.AddrString(hc.Responder), an.responder.qpn)
	conflict := func(flag string, given, cm any, msg string) {
		note := fmt.Sprintf("%s %v contradicts the CM handshake of %s (%s says %v); the flag is used", flag, given, name, msg, cm)
		if !t.noted[note] {
			t.noted[note] = true
			t.notes = append(t.notes, note)
		}
	}
	req := fmt.Sprintf("REQ, frame %d", c.reqFrame)
	rep := fmt.Sprintf("REP, frame %d", c.passive.frame)
	if an.mtu != 0 {
		switch {
		case s.MTU == 0:
			s.MTU, src["mtu"] = an.mtu, reports.SourceCM
		case s.MTU != an.mtu:
			conflict("--mtu", s.MTU, an.mtu, req+": path MTU")
		}
	}
	srqWho := req
	if dir == 0 {
		srqWho = rep
	}
	switch {
	case s.SRQ == harness.SRQUnknown:
		s.SRQ, src["srq"] = an.srq, reports.SourceCM
	case s.SRQ != an.srq:
		conflict("--srq", srqName(s.SRQ), srqName(an.srq), srqWho+": the responder's SRQ")
	}
	set := func(flag, key string, v *int, cm int, who string) {
		if cm < 0 {
			return
		}
		switch {
		case *v < 0:
			*v, src[key] = cm, reports.SourceCM
		case *v != cm:
			conflict(flag, *v, cm, who)
		}
	}
	set("--ack-timeout", "ack_timeout", &s.AckTimeout, an.ackTimeout, req+": local ACK timeout")
	set("--retry-cnt", "retry_cnt", &s.RetryCnt, an.retryCnt, req+": retry count")
	rnrWho := req
	if dir == 0 {
		rnrWho = rep
	}
	set("--rnr-retry", "rnr_retry", &s.RNRRetry, an.rnrRetry, rnrWho+": RNR retry count")
	src["responder_resources"] = reports.SourceCM
	if fr := c.first[dir]; fr.seen && fr.request && fr.psn == an.requesterStart {
		s.FromStart = true
	}
}

func srqName(m harness.SRQMode) string {
	switch m {
	case harness.SRQNone:
		return "none"
	case harness.SRQAll:
		return "all"
	}
	return "unknown"
}

// connections lists the audited connections, with what the handshake
// said about them, and the CM connections that no RC packet used
// (refused ones, or ones whose traffic is not in the capture).
func (t *cmTable) connections(conns []*harness.Conn) []reports.Connection {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]reports.Connection, 0, len(conns))
	for _, hc := range conns {
		rc := reports.Connection{Capture: t.capture, ID: hc.ID, Source: map[string]string{},
			Requester: reports.Endpoint{Addr: wire.AddrString(hc.Requester)},
			Responder: reports.Endpoint{Addr: wire.AddrString(hc.Responder)}}
		if hc.ResponderQP != 0 {
			rc.Responder.QPN = u32p(hc.ResponderQP)
		}
		if hc.RequesterQP != 0 {
			rc.Requester.QPN = u32p(hc.RequesterQP)
		}
		if hc.HaveReq {
			rc.FirstPSN.Requester = u32p(uint32(hc.FirstReq))
		}
		rc.Follows, rc.FirstFrame = hc.Follows, hc.FirstFrame
		s := hc.Settings
		ap := t.applied[hc.ID]
		if ap != nil {
			for k, v := range ap.source {
				rc.Source[k] = v
			}
			if ap.cm != nil {
				an := ap.cm.announced(ap.dir)
				rc.Requester.QPN = u32p(an.requester.qpn)
				rc.Responder.QPN = u32p(an.responder.qpn)
				rc.FirstPSN.Requester = u32p(uint32(an.requesterStart))
				rc.FirstPSN.Responder = u32p(uint32(an.responderStart))
				rc.Settings.ResponderResources = intp(an.respRes)
				rc.Handshake = ap.cm.handshake()
			}
		}
		switch {
		case s.MTU != 0:
			rc.Settings.MTU = intp(s.MTU)
		case hc.MTUGuess != 0:
			rc.Settings.MTU, rc.Source["mtu"] = intp(hc.MTUGuess), reports.SourceObserved
		}
		if s.SRQ != harness.SRQUnknown {
			v := s.SRQ == harness.SRQAll
			rc.Settings.SRQ = &v
		}
		if s.AckTimeout >= 0 {
			rc.Settings.AckTimeout = intp(s.AckTimeout)
		}
		if s.RetryCnt >= 0 {
			rc.Settings.RetryCnt = intp(s.RetryCnt)
		}
		if s.RNRRetry >= 0 {
			rc.Settings.RNRRetry = intp(s.RNRRetry)
		}
		rc.Complete = hc.Complete() || s.FromStart && !s.CaptureDrops
		out = append(out, rc)
	}
	for _, c := range t.conns {
		for dir := range 2 {
			if c.usedBy[dir] || (c.haveREP && c.first[dir].seen) {
				continue
			}
			if dir == 1 && !c.haveREP {
				continue // a refused or unanswered REQ: listed once
			}
			out = append(out, t.unused(c, dir))
		}
	}
	return out
}

// unused lists a CM connection direction that no audited connection took.
func (t *cmTable) unused(c *cmConn, dir int) reports.Connection {
	an := c.announced(dir)
	rc := reports.Connection{Capture: t.capture, Source: map[string]string{}, Handshake: c.handshake(),
		Requester: reports.Endpoint{Addr: wire.AddrString(an.requester.addr)},
		Responder: reports.Endpoint{Addr: wire.AddrString(an.responder.addr)}}
	if dir == 0 || c.haveREP {
		rc.Requester.QPN = u32p(an.requester.qpn)
		rc.FirstPSN.Requester = u32p(uint32(an.requesterStart))
	}
	if c.haveREP {
		rc.Responder.QPN = u32p(an.responder.qpn)
		rc.FirstPSN.Responder = u32p(uint32(an.responderStart))
		v := an.srq == harness.SRQAll
		rc.Settings.SRQ, rc.Source["srq"] = &v, reports.SourceCM
		rc.Settings.ResponderResources, rc.Source["responder_resources"] = intp(an.respRes), reports.SourceCM
	}
	if an.mtu != 0 {
		rc.Settings.MTU, rc.Source["mtu"] = intp(an.mtu), reports.SourceCM
	}
	for _, v := range []struct {
		key string
		val int
		dst **int
	}{{"ack_timeout", an.ackTimeout, &rc.Settings.AckTimeout}, {"retry_cnt", an.retryCnt, &rc.Settings.RetryCnt},
		{"rnr_retry", an.rnrRetry, &rc.Settings.RNRRetry}} {
		if v.val >= 0 {
			*v.dst, rc.Source[v.key] = intp(v.val), reports.SourceCM
		}
	}
	return rc
}

// notesList returns the table's notes for CaptureInfo.Notes.
func (t *cmTable) notesList() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.notes...)
	if t.badMADs > 0 {
		out = append(out, fmt.Sprintf("%d CM MADs could not be decoded (the first in frame %d); their connections take no settings from them", t.badMADs, t.firstBad))
	}
	return out
}

func u32p(v uint32) *uint32 { return &v }
func intp(v int) *int       { return &v }
