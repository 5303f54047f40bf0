package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/live/udpframe"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/wire"
)

// device is the served reference: every QP of every session on one
// virtual clock that follows real time, behind one mutex.
type device struct {
	uc     *net.UDPConn
	local  netip.AddrPort
	base   reference.Config
	defect string

	mu       sync.Mutex
	clock    *reference.Clock
	t0       time.Time
	slip     time.Duration        // how long the device was held up (advance)
	qps      map[uint32]*servedQP // by QPN
	nextQPN  uint32
	counters map[string]int64
	wake     chan struct{}
	// dropEvery (ServeOptions.TxDropEvery): every dropEvery-th packet is
	// counted as sent but never put on the wire.
	dropEvery, sent int
	// out, when set, takes the frames the QPs send instead of the socket,
	// on a clock the caller drives (Virtual).
	out func(frame []byte)
}

// servedQP is one reference QP and what was registered for it.
type servedQP struct {
	qp     *reference.QP
	qpn    uint32
	remote netip.AddrPort // the harness: the QP's remote GID and UDP port
	mrs    map[uint32]*reference.MR
	nextVA uint64
	recvID uint64
	dead   bool
}

var (
	deviceMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	peerMAC   = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

func newDevice(uc *net.UDPConn, local netip.AddrPort, base reference.Config, defect string) *device {
	return &device{uc: uc, local: local, base: base, defect: defect, clock: reference.NewClock(), t0: time.Now(),
		qps: map[uint32]*servedQP{}, nextQPN: 0x100, counters: map[string]int64{"tx_packets": 0, "rx_packets": 0}, wake: make(chan struct{}, 1)}
}

// lateSlack is how late an event may run before the device counts itself
// paused (see advance).
const lateSlack = 2 * time.Millisecond

// now is the device's time: the elapsed real time less the time it was
// held up.
func (d *device) now() time.Duration { return time.Since(d.t0) - d.slip }

// advance runs the clock up to the device's time; d.mu must be held.
// When the process was held up (a loaded host) and events are overdue by
// more than lateSlack, it runs them one instant at a time, as if the
// device had paused, so that a timer an event arms counts from when the
// event really ran: a device catching up never sends two timer-driven
// retransmissions back to back.
func (d *device) advance() {
	if d.out != nil {
		return // Virtual: the caller drives the clock
	}
	for {
		target := d.now()
		next, ok := d.clock.NextEvent()
		if !ok || next >= target-lateSlack {
			d.clock.RunUntil(target)
			return
		}
		d.slip += target - next
		d.clock.RunUntil(next)
	}
}

// poke wakes the driver: something may have been scheduled.
func (d *device) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// drive runs the clock's events at their real time until ctx is done.
func (d *device) drive(ctx context.Context) {
	// Since Go 1.23, Reset on a timer that fired and was not read
	// leaves no stale tick behind.
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d.mu.Lock()
		d.advance()
		next, ok := d.clock.NextEvent()
		wait := time.Hour
		if ok {
			wait = max(next-d.now(), 0)
		}
		d.mu.Unlock()
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-t.C:
		}
	}
}

// receive hands every datagram that reaches the endpoint to its QP, as a
// RoCEv2 NIC would: packets for no QP, from an address other than the
// QP's remote GID, with a P_Key that does not match, or with a bad ICRC
// are dropped silently (and counted).
func (d *device) receive(ctx context.Context) {
	buf := make([]byte, 1<<16)
	var nbuf, frame []byte
	for ctx.Err() == nil {
		n, from, err := d.uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		pl := buf[:n]
		d.mu.Lock()
		d.advance()
		d.counters["rx_packets"]++
		if n < wire.BTHLen+wire.ICRCLen {
			d.counters["rx_dropped_short"]++
			d.mu.Unlock()
			continue
		}
		qpn := binary.BigEndian.Uint32(pl[4:8]) & 0xFFFFFF
		pkey := binary.BigEndian.Uint16(pl[2:4])
		q := d.qps[qpn]
		var fit udpframe.Fit
		nbuf, fit, _ = udpframe.Rebuild(nbuf[:0], from, d.local, pl)
		switch {
		case q == nil:
			d.counters["rx_dropped_unknown_qpn"]++
		case from.Addr() != q.remote.Addr():
			d.counters["rx_dropped_wrong_source"]++
		case pkey&0x7FFF != 0x7FFF:
			d.counters["rx_dropped_pkey"]++
		case !fit.OK:
			d.counters["rx_dropped_bad_icrc"]++
		default:
			// The reference decodes whole frames on port 4791; keep the
			// ICRC's verdict across the change of port.
			canon, err := udpframe.Reheader(nbuf, from, netip.AddrPortFrom(d.local.Addr(), wire.UDPPort), fit.IPID, fit.DF)
			if err != nil {
				d.counters["rx_dropped_short"]++
				break
			}
			frame = udpframe.Ethernet(frame[:0], canon, deviceMAC, peerMAC)
			d.counters["rx_delivered"]++
			q.qp.Receive(frame)
		}
		d.mu.Unlock()
		d.poke()
	}
}

// transmit sends a frame a QP built, through the socket; d.mu is held (it
// runs inside clock events).
func (d *device) transmit(q *servedQP, frame []byte) {
	if q.dead {
		return
	}
	if len(frame) < 14 {
		return
	}
	if d.out != nil {
		d.counters["tx_packets"]++
		d.out(frame)
		return
	}
	pl, err := udpframe.Rewrite(frame[14:], d.local, q.remote)
	if err != nil {
		d.counters["tx_errors"]++
		return
	}
	if d.dropEvery > 0 {
		// A host whose queue drops what the device handed it: counted
		// as sent, never on the wire.
		if d.sent++; d.sent%d.dropEvery == 0 {
			d.counters["tx_packets"]++
			return
		}
	}
	if _, err := d.uc.WriteToUDPAddrPort(pl, q.remote); err != nil {
		d.counters["tx_errors"]++
		return
	}
	d.counters["tx_packets"]++
}

// Info implements agentproto.Device.
func (d *device) Info() agentproto.DeviceInfo {
	a := d.local.Addr()
	gid := netip.AddrFrom16(a.As16())
	agent := "rcconform serve (reference transport)"
	if d.out != nil {
		agent = "reference transport on a virtual clock"
	}
	return agentproto.DeviceInfo{Agent: agent, Name: "reference", Port: 1,
		Address: a.String(), GIDs: []agentproto.GID{{Index: 0, GID: gid.String(), Address: a.String()}},
		UDPPort: int(d.local.Port()), MTU: 4096, PKey: 0xFFFF, Atomics: true, SRQ: true,
		MaxRd: 16, MaxInit: 16, AnyPeerPort: true, Defect: d.defect, TimerNS: int64(d.base.TimerTick)}
}

// NewSession implements agentproto.Device.
func (d *device) NewSession() (agentproto.Session, error) {
	return &session{d: d, qps: map[uint32]*servedQP{}, mrs: map[uint32]mrRef{}}, nil
}

// session is what one harness created.
type session struct {
	d    *device
	qps  map[uint32]*servedQP // by handle
	mrs  map[uint32]mrRef     // by handle
	next uint32
}

type mrRef struct {
	q  *servedQP
	mr *reference.MR
}

// do runs f under the device's lock with the clock brought up to now,
// and wakes the driver afterwards.
func (s *session) do(f func() error) error {
	s.d.mu.Lock()
	s.d.advance()
	err := f()
	s.d.mu.Unlock()
	s.d.poke()
	return err
}

func (s *session) qp(h uint32) (*servedQP, error) {
	q, ok := s.qps[h]
	if !ok {
		return nil, agentproto.Errorf(agentproto.CodeNotFound, "no QP with handle %d in this session", h)
	}
	return q, nil
}

func (s *session) mr(h uint32) (mrRef, error) {
	m, ok := s.mrs[h]
	if !ok {
		return m, agentproto.Errorf(agentproto.CodeNotFound, "no memory region with handle %d in this session", h)
	}
	return m, nil
}

// CreateQP implements agentproto.Session.
func (s *session) CreateQP(a agentproto.QPAttr) (agentproto.QPInfo, error) {
	var info agentproto.QPInfo
	if len(s.qps) >= agentproto.MaxQPs {
		return info, agentproto.Errorf(agentproto.CodeDevice, "this session already has %d QPs", len(s.qps))
	}
	d := s.d
	remote, err := netip.ParseAddr(a.RemoteAddress)
	if err != nil {
		return info, agentproto.Errorf(agentproto.CodeBadRequest, "remote_address %q is not an IP address", a.RemoteAddress)
	}
	remote = remote.Unmap()
	if remote.Is4() != d.local.Addr().Is4() {
		return info, agentproto.Errorf(agentproto.CodeBadRequest, "remote_address %v and the device's address %v are not of one IP version", remote, d.local.Addr())
	}
	if a.LocalAddress != "" {
		if la, err := netip.ParseAddr(a.LocalAddress); err != nil || la.Unmap() != d.local.Addr() {
			return info, agentproto.Errorf(agentproto.CodeBadRequest, "local_address %q: the served device has only %v", a.LocalAddress, d.local.Addr())
		}
	}
	port := a.RemotePort
	if port == 0 {
		port = wire.UDPPort
	}
	if port < 0 || port > 0xFFFF || a.RemoteQPN == 0 || a.RemoteQPN > 0xFFFFFF {
		return info, agentproto.Errorf(agentproto.CodeBadRequest, "remote_port %d or remote_qpn 0x%x out of range", port, a.RemoteQPN)
	}
	cfg := d.base
	cfg.RemoteQPN = a.RemoteQPN
	cfg.LocalMAC, cfg.RemoteMAC = deviceMAC, peerMAC
	cfg.LocalIP, cfg.RemoteIP = d.local.Addr(), remote
	cfg.UDPSrcPort = d.local.Port()
	if a.MTU != 0 {
		cfg.MTU = a.MTU
	}
	cfg.SendPSN, cfg.ExpectedPSN = wire.PSN(a.SQPSN), wire.PSN(a.RQPSN)
	cfg.Timeout, cfg.RetryCnt, cfg.RNRRetry, cfg.MinRNRTimer = a.Timeout, a.RetryCnt, a.RNRRetry, a.MinRNRTimer
	if a.MaxDestRdAtomic != 0 {
		cfg.MaxDestRdAtomic = a.MaxDestRdAtomic
	}
	if a.MaxRdAtomic != 0 {
		cfg.MaxRdAtomic = a.MaxRdAtomic
	}
	if a.SRQ {
		cfg.SRQ = reference.NewSRQ()
	}
	cfg.RemoteAtomic = a.RemoteAtomic
	err = s.do(func() error {
		q := &servedQP{remote: netip.AddrPortFrom(remote, uint16(port)), mrs: map[uint32]*reference.MR{}, nextVA: 0x7f0000000000}
		for d.qps[d.nextQPN] != nil || d.nextQPN == 0 {
			d.nextQPN = (d.nextQPN + 1) & 0xFFFFFF
		}
		cfg.QPN = d.nextQPN
		d.nextQPN = (d.nextQPN + 1) & 0xFFFFFF
		qp, err := reference.NewQP(d.clock, cfg, func(frame []byte) { d.transmit(q, frame) })
		if err != nil {
			return agentproto.Errorf(agentproto.CodeBadRequest, "creating the reference QP: %v", err)
		}
		q.qp, q.qpn = qp, cfg.QPN
		d.qps[q.qpn] = q
		s.next++
		s.qps[s.next] = q
		eff := a
		eff.MTU, eff.MaxDestRdAtomic, eff.MaxRdAtomic, eff.RemotePort = cfg.MTU, cfg.MaxDestRdAtomic, cfg.MaxRdAtomic, port
		eff.LocalAddress = d.local.Addr().String()
		info = agentproto.QPInfo{Handle: s.next, QPN: q.qpn, State: qp.State().String(), Attr: eff, GIDIndex: 0,
			Address: d.local.Addr().String(), PKey: 0xFFFF}
		return nil
	})
	return info, err
}

// RegMR implements agentproto.Session.
func (s *session) RegMR(qh uint32, length int, access []string) (agentproto.MRInfo, error) {
	var info agentproto.MRInfo
	err := s.do(func() error {
		q, err := s.qp(qh)
		if err != nil {
			return err
		}
		var acc reference.Access
		for _, a := range access {
			switch a {
			case agentproto.AccessLocalWrite:
				acc |= reference.LocalWrite
			case agentproto.AccessRemoteRead:
				acc |= reference.RemoteRead
			case agentproto.AccessRemoteWrite:
				acc |= reference.RemoteWrite
			case agentproto.AccessRemoteAtomic:
				acc |= reference.RemoteAtomic
			}
		}
		mr := q.qp.Memory().Register(q.nextVA, length, acc)
		q.nextVA += 1 << 32
		s.next++
		s.mrs[s.next] = mrRef{q: q, mr: mr}
		q.mrs[s.next] = mr
		info = agentproto.MRInfo{Handle: s.next, RKey: mr.RKey, LKey: mr.RKey, Addr: mr.VA, Length: length}
		return nil
	})
	return info, err
}

func bounds(what string, off, n, size int) error {
	if off < 0 || n < 0 || off+n > size {
		return agentproto.Errorf(agentproto.CodeBadRequest, "%s %d bytes at offset %d of a %d-byte region: out of bounds", what, n, off, size)
	}
	return nil
}

// ReadMem implements agentproto.Session.
func (s *session) ReadMem(h uint32, off, n int) ([]byte, error) {
	var out []byte
	err := s.do(func() error {
		m, err := s.mr(h)
		if err != nil {
			return err
		}
		b := m.mr.Bytes()
		if err := bounds("reading", off, n, len(b)); err != nil {
			return err
		}
		out = append([]byte{}, b[off:off+n]...)
		return nil
	})
	return out, err
}

// WriteMem implements agentproto.Session.
func (s *session) WriteMem(h uint32, off int, data []byte) error {
	return s.do(func() error {
		m, err := s.mr(h)
		if err != nil {
			return err
		}
		b := m.mr.Bytes()
		if err := bounds("writing", off, len(data), len(b)); err != nil {
			return err
		}
		copy(b[off:], data)
		return nil
	})
}

// InvalidateMR implements agentproto.Session.
func (s *session) InvalidateMR(h uint32) error {
	return s.do(func() error {
		m, err := s.mr(h)
		if err != nil {
			return err
		}
		m.mr.Invalidate()
		return nil
	})
}

// PostRecv implements agentproto.Session.
func (s *session) PostRecv(qh uint32, count, size int) error {
	return s.do(func() error {
		q, err := s.qp(qh)
		if err != nil {
			return err
		}
		for i := 0; i < count; i++ {
			q.recvID++
			if err := q.qp.PostRecv(q.recvID, size); err != nil {
				return agentproto.Errorf(agentproto.CodeDevice, "posting a receive WQE: %v", err)
			}
		}
		return nil
	})
}

// PostSend implements agentproto.Session.
func (s *session) PostSend(qh uint32, w agentproto.WR) error {
	wr, err := agentproto.ToDUTWR(w)
	if err != nil {
		return err
	}
	return s.do(func() error {
		q, err := s.qp(qh)
		if err != nil {
			return err
		}
		if err := q.qp.PostSend(wr); err != nil {
			return agentproto.Errorf(agentproto.CodeDevice, "posting %s: %v", wr.Op, err)
		}
		return nil
	})
}

// PollCQ implements agentproto.Session.
func (s *session) PollCQ(qh uint32) ([]agentproto.Completion, error) {
	cs, err := s.pollCQ(qh)
	out := make([]agentproto.Completion, 0, len(cs))
	for _, c := range cs {
		out = append(out, agentproto.FromDUTCompletion(c))
	}
	return out, err
}

// pollCQ returns and clears the QP's completions, each with the clock's
// time it was produced at.
func (s *session) pollCQ(qh uint32) ([]dut.Completion, error) {
	var out []dut.Completion
	err := s.do(func() error {
		q, err := s.qp(qh)
		if err != nil {
			return err
		}
		out = q.qp.PollCQ()
		return nil
	})
	return out, err
}

// QueryQP implements agentproto.Session.
func (s *session) QueryQP(qh uint32) (agentproto.QPStatus, error) {
	var st agentproto.QPStatus
	err := s.do(func() error {
		q, err := s.qp(qh)
		if err != nil {
			return err
		}
		st.State = q.qp.State().String()
		return nil
	})
	return st, err
}

// destroy takes a QP out of service; d.mu is held.
func (s *session) destroy(h uint32, q *servedQP) {
	q.dead = true
	_ = q.qp.Modify(dut.StateError)
	delete(s.d.qps, q.qpn)
	delete(s.qps, h)
	for mh := range q.mrs {
		delete(s.mrs, mh)
	}
}

// DestroyQP implements agentproto.Session.
func (s *session) DestroyQP(qh uint32) error {
	return s.do(func() error {
		q, err := s.qp(qh)
		if err != nil {
			return err
		}
		s.destroy(qh, q)
		return nil
	})
}

// Counters implements agentproto.Session: the endpoint's packet counters.
func (s *session) Counters() (map[string]int64, error) {
	out := map[string]int64{}
	err := s.do(func() error {
		for k, v := range s.d.counters {
			out[k] = v
		}
		return nil
	})
	return out, err
}

// Close implements agentproto.Session.
func (s *session) Close() error {
	return s.do(func() error {
		for h, q := range s.qps {
			s.destroy(h, q)
		}
		return nil
	})
}
