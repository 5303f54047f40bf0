package live

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcconform/rcconform/dut/live/udpframe"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// transport is the harness's end of the wire: the UDP socket bound to the
// harness's address (which receives, or at least drains, the device's
// packets and keeps the kernel from answering them with ICMP), optionally
// a raw socket to send and an AF_PACKET socket to receive, and the demux
// that hands each packet from the device to the connection whose QP it
// names.
type transport struct {
	local, device netip.AddrPort
	uc            *net.UDPConn
	sendRaw       *rawSender  // nil: send through uc
	pkt           *packetRecv // nil: receive through uc
	sendDesc      string
	recvDesc      string
	recvShort     string        // the receiving socket and its buffer, for messages
	ipid          atomic.Uint32 // raw sends: the next IPv4 ID

	mu    sync.Mutex
	conns map[uint32]*Conn // by the harness's QPN
	stats wireStats

	done chan struct{}
	wg   sync.WaitGroup
}

// wireStats count what arrived outside any connection, for diagnoses.
type wireStats struct {
	fromDevice  int    // packets from the device's address to the harness
	strays      int    // ... naming a QP no open connection has
	badICRC     int    // ... whose ICRC matched nothing
	undecodable int    // ... that did not decode as RoCEv2
	lastStray   string // the last stray, for messages
	own         int    // packet mode: the harness's own packets seen leaving
	ownBadICRC  int    // ... whose ICRC does not match the header the kernel sent
	ownLastIPID uint16
}

func newTransport(cfg Config, local, device netip.AddrPort) (*transport, error) {
	t := &transport{local: local, device: device, conns: map[uint32]*Conn{}, done: make(chan struct{})}
	uc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, fmt.Errorf("binding the harness's RoCEv2 socket to %v: %w (give another address or port with --settings=local=IP:PORT; a soft-RoCE device on this host owns UDP 4791 on every address)", local, err)
	}
	t.uc = uc
	if err := udpframe.SetDontFragment(uc); err != nil {
		uc.Close()
		return nil, err
	}
	t.local = uc.LocalAddr().(*net.UDPAddr).AddrPort()
	t.local = netip.AddrPortFrom(t.local.Addr().Unmap(), t.local.Port())
	t.ipid.Store(1)

	switch cfg.Send {
	case "raw":
		rs, err := newRawSender(t.local, device)
		if err != nil {
			uc.Close()
			return nil, fmt.Errorf("send=raw: %w", err)
		}
		t.sendRaw = rs
		t.sendDesc = fmt.Sprintf("raw IPv4 socket from %v (the harness writes the IP header: DF, counting ID; ICRC over it)", t.local)
	default:
		t.sendDesc = fmt.Sprintf("UDP socket %v (ICRC over the header Linux sends: IPv4 DF, ID 0)", t.local)
		if !t.local.Addr().Is4() {
			t.sendDesc = fmt.Sprintf("UDP socket %v (ICRC over the IPv6 header, whose variable fields it masks)", t.local)
		}
	}
	var pktErr error
	if cfg.Recv != "udp" {
		t.pkt, pktErr = newPacketRecv(t.local, device, cfg.RecvBuffer)
		if pktErr != nil && cfg.Recv == "packet" {
			t.close()
			return nil, fmt.Errorf("recv=packet: %w", pktErr)
		}
	}
	stamped := stampUDP(uc)
	rcvbuf := 0
	if t.pkt != nil {
		stamped, rcvbuf = t.pkt.stamped, t.pkt.rcvbuf
		t.recvDesc = fmt.Sprintf("AF_PACKET socket on %s (the device's ICRC checked over the IP header it sent)", t.pkt.ifname)
	} else {
		rcvbuf = udpRecvBuffer(uc, cfg.RecvBuffer)
		t.recvDesc = fmt.Sprintf("UDP socket %v (the device's IPv4 ID and DF, which the ICRC covers, solved from its ICRC)", t.local)
		if !t.local.Addr().Is4() {
			t.recvDesc = fmt.Sprintf("UDP socket %v (the device's ICRC checked over the IPv6 header the socket implies)", t.local)
		}
		if pktErr != nil {
			t.recvDesc += "; AF_PACKET unavailable: " + pktErr.Error()
		}
	}
	t.recvShort = "UDP socket"
	if t.pkt != nil {
		t.recvShort = "AF_PACKET socket"
	}
	if rcvbuf > 0 {
		t.recvDesc += fmt.Sprintf("; receive buffer %d KiB", rcvbuf>>10)
		t.recvShort += fmt.Sprintf(", receive buffer %d KiB", rcvbuf>>10)
	}
	if _, err := t.drops(); err != nil {
		t.recvDesc += "; its drops cannot be counted (" + err.Error() + ")"
	} else {
		t.recvDesc += ", its drops counted"
	}
	if stamped {
		t.recvDesc += "; arrival times from the kernel"
	} else {
		t.recvDesc += "; arrival times when read (no kernel time stamps)"
	}
	t.wg.Add(1)
	go t.readUDP()
	if t.pkt != nil {
		t.wg.Add(1)
		go t.readPacket()
	}
	return t, nil
}

func (t *transport) close() {
	select {
	case <-t.done:
		return
	default:
	}
	close(t.done)
	t.uc.Close()
	if t.pkt != nil {
		t.pkt.close()
	}
	t.wg.Wait()
	if t.sendRaw != nil {
		t.sendRaw.close()
	}
}

func (t *transport) register(qpn uint32, c *Conn) {
	t.mu.Lock()
	t.conns[qpn] = c
	t.mu.Unlock()
}

func (t *transport) unregister(qpn uint32) {
	t.mu.Lock()
	delete(t.conns, qpn)
	t.mu.Unlock()
}

// drops returns how many packets the socket receiving the device's
// packets has dropped since it was opened (its queue full: the harness
// read too slowly).
func (t *transport) drops() (uint32, error) {
	if t.pkt != nil {
		return t.pkt.drops()
	}
	return udpDrops(t.uc)
}

func (t *transport) snapshot() wireStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// send puts p on the wire and returns the IPv4 ID it carries.
func (t *transport) send(p *wire.Packet) (ipid uint16, err error) {
	if t.sendRaw != nil {
		ipid = uint16(t.ipid.Add(1))
		if ipid == 0 {
			ipid = uint16(t.ipid.Add(1))
		}
		return ipid, t.sendRaw.send(udpframe.Network(p, t.local, t.device, ipid))
	}
	_, err = t.uc.WriteToUDPAddrPort(udpframe.Payload(p, t.local, t.device, 0), t.device)
	return 0, err
}

// readUDP reads the UDP socket: the device's packets in udp mode,
// drained and dropped in packet mode.
func (t *transport) readUDP() {
	defer t.wg.Done()
	buf := make([]byte, 1<<16)
	oob := make([]byte, 128)
	var nbuf []byte
	for {
		n, oobn, _, from, err := t.uc.ReadMsgUDPAddrPort(buf, oob)
		at := arrival(oob[:oobn])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-t.done:
				return
			default:
				continue
			}
		}
		if t.pkt != nil {
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if from.Addr() != t.device.Addr() {
			continue
		}
		var fit udpframe.Fit
		nbuf, fit, err = udpframe.Rebuild(nbuf[:0], from, t.local, buf[:n])
		var p udpframe.Parsed
		if err == nil {
			err = udpframe.Parse(nbuf, &p)
		}
		rec := &trace.Record{Src: from.Addr(), Dst: t.local.Addr(), ICRC: wire.ICRCBad}
		if fit.OK {
			rec.ICRC = wire.ICRCOK
			rec.IPID, rec.HasIPID = fit.IPID, from.Addr().Is4()
		}
		t.deliver(at, rec, &p, err)
	}
}

// readPacket reads the AF_PACKET socket: every IP packet on the
// interface, of which it keeps the device's packets to the harness and
// checks the harness's own on their way out.
func (t *transport) readPacket() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		default:
		}
		pkt, outgoing, at, err := t.pkt.read()
		if err != nil {
			continue
		}
		var p udpframe.Parsed
		perr := udpframe.Parse(pkt, &p)
		if errors.Is(perr, udpframe.ErrNotUDP) || errors.Is(perr, udpframe.ErrShort) {
			continue
		}
		if outgoing {
			if p.Src == t.local && p.Dst.Addr() == t.device.Addr() && perr == nil {
				t.mu.Lock()
				t.stats.own++
				t.stats.ownLastIPID = p.IPID
				if p.ICRC != wire.ICRCOK {
					t.stats.ownBadICRC++
				}
				t.mu.Unlock()
			}
			continue
		}
		if p.Dst != t.local || p.Src.Addr() != t.device.Addr() {
			continue
		}
		rec := &trace.Record{Src: p.Src.Addr(), Dst: p.Dst.Addr(), ICRC: p.ICRC, IPID: p.IPID, HasIPID: p.IPv4}
		t.deliver(at, rec, &p, perr)
	}
}

// deliver hands a decoded packet from the device to its connection.
func (t *transport) deliver(at time.Time, rec *trace.Record, p *udpframe.Parsed, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.fromDevice++
	if err != nil && !errors.Is(err, wire.ErrUnknownOpcode) {
		t.stats.undecodable++
		return
	}
	if rec.ICRC != wire.ICRCOK {
		t.stats.badICRC++
	}
	c := t.conns[p.Packet.DestQP]
	if c == nil {
		t.stats.strays++
		t.stats.lastStray = p.Packet.String()
		return
	}
	rec.Packet = p.Packet.Clone()
	rec.PayloadLen = len(p.Packet.Payload)
	if err != nil {
		rec.Note = "unknown opcode"
	}
	c.arrive(at, rec)
}
