package live

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/wire"
)

// ErrNoAnswer is wrapped by the preflight's error when the device did not
// answer the probe.
var ErrNoAnswer = errors.New("the device did not answer the probe")

const probeTries = 3

// preflight checks the whole path before a run: one fresh QP, one RDMA
// WRITE of 16 bytes with AckReq into its memory region, an ACK back, and
// the bytes in the device's memory. A device drops silently what does
// not match its QP (source address, QPN, P_Key, ICRC), so when nothing
// comes back it says what it checked and what it saw.
func (d *DUT) preflight() error {
	before, cerr := d.agent.Counters()
	st0 := d.tr.snapshot()
	conn, err := d.NewConn(dut.ConnConfig{RecvWQEs: -1, MemorySize: 4096})
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	c := conn.(*Conn)
	defer c.Close()
	info := c.Info()
	data := []byte("rcconform probe.")
	var got *trace.Record
	var sentAt time.Duration
	for try := 0; try < probeTries && got == nil; try++ {
		p := &wire.Packet{BTH: wire.BTH{Opcode: wire.WriteOnly, PKey: 0xFFFF, DestQP: info.DeviceQPN, PSN: info.ExpectedPSN, AckReq: true},
			RETH: wire.RETH{VA: info.VA, RKey: info.RKey, Length: uint32(len(data))}, Payload: data}
		sentAt = c.Now()
		if err := c.Send(p); err != nil {
			return fmt.Errorf("preflight: %w", err)
		}
		deadline := sentAt + d.cfg.ProbeTimeout
		for {
			rec, ok := c.Recv(deadline - c.Now())
			if !ok {
				break
			}
			if rec.Packet.Opcode == wire.Acknowledge && rec.Usable() {
				got = rec
				break
			}
		}
	}
	dev := d.hello.Device
	if got != nil {
		if !got.Packet.AETH.IsACK() {
			return fmt.Errorf("preflight: %s answered the probe, a valid RDMA WRITE of %d bytes into the memory region its agent registered (R_Key 0x%x, VA 0x%x), with %s: the agent's QP or memory region is not set up as the harness asked",
				dev.Name, len(data), info.RKey, info.VA, got.Packet)
		}
		mem, err := c.ReadMemory(0, len(data))
		if err != nil {
			return fmt.Errorf("preflight: %w", err)
		}
		if !bytes.Equal(mem, data) {
			return fmt.Errorf("preflight: %s ACKed the probe WRITE, but its memory region holds %q instead of %q: the agent does not read the region the device writes", dev.Name, mem, data)
		}
		d.probe = got.Time - sentAt
		d.measure(c, got.Packet.PSN.Next())
		return nil
	}

	var b strings.Builder
	fmt.Fprintf(&b, "no ACK from %v for an RDMA WRITE with AckReq sent %d times (%v each) from %v to QP 0x%06x.\n",
		d.tr.device, probeTries, d.cfg.ProbeTimeout, d.tr.local, info.DeviceQPN)
	b.WriteString("A RoCEv2 device drops silently what does not match its QP. What the harness checked and saw:\n")
	if st, err := c.State(); err != nil {
		fmt.Fprintf(&b, "  - the QP's state: the agent could not say (%v)\n", err)
	} else if st != dut.StateRTR && st != dut.StateRTS {
		fmt.Fprintf(&b, "  - PROBLEM: the agent's QP 0x%06x is in state %v; it must be RTR or RTS to answer\n", info.DeviceQPN, st)
	} else {
		fmt.Fprintf(&b, "  - the agent's QP 0x%06x is in state %v (fine)\n", info.DeviceQPN, st)
	}
	fmt.Fprintf(&b, "  - destination: %v, the device's address per its agent (%s port %d, GID address %s)\n", d.tr.device, dev.Name, dev.Port, dev.Address)
	fmt.Fprintf(&b, "  - source: %v, which the QP was given as its remote GID; the device drops packets from any other address", d.tr.local.Addr())
	if peer := peerHost(d.hello.Peer); peer != "" && peer != d.tr.local.Addr().String() && !bothLoopback(peer, d.tr.local.Addr()) {
		fmt.Fprintf(&b, " — the agent sees this host's control connection come from %s: if packets to %v leave from there too (another route, NAT), set local=%s", peer, d.tr.device.Addr(), peer)
	}
	b.WriteString("\n")
	if c.pkey != 0 && c.pkey&0x7FFF != 0x7FFF {
		fmt.Fprintf(&b, "  - PROBLEM: P_Key: the suite sends 0xFFFF; the device's QP uses P_Key 0x%04x\n", c.pkey)
	} else {
		b.WriteString("  - P_Key 0xFFFF, the default partition (the device's QP uses it)\n")
	}
	fmt.Fprintf(&b, "  - ICRC: sending through a %s\n", d.tr.sendDesc)
	st1 := d.tr.snapshot()
	if own := st1.own - st0.own; own > 0 {
		if bad := st1.ownBadICRC - st0.ownBadICRC; bad > 0 {
			fmt.Fprintf(&b, "  - PROBLEM: %d of the %d probe packets left this host with an IPv4 header (ID %d) the ICRC was not computed over; use send=raw\n", bad, own, st1.ownLastIPID)
		} else {
			fmt.Fprintf(&b, "  - the probe packets left this host with the header their ICRC covers (seen on the AF_PACKET socket)\n")
		}
	}
	if n := st1.fromDevice - st0.fromDevice; n > 0 {
		fmt.Fprintf(&b, "  - %d packets came from the device meanwhile: %d for QPs the harness has not open (last: %s), %d with an ICRC that matches no header\n",
			n, st1.strays-st0.strays, st1.lastStray, st1.badICRC-st0.badICRC)
	} else {
		fmt.Fprintf(&b, "  - nothing at all came back from %v to %v (UDP port %d): a firewall on either host, or a route that sends the answers elsewhere\n", d.tr.device.Addr(), d.tr.local, d.tr.local.Port())
	}
	after, err := d.agent.Counters()
	switch {
	case cerr != nil || err != nil || len(after) == 0:
		b.WriteString("  - the agent reports no packet counters for the device\n")
	default:
		var ch []string
		for k, v := range after {
			if dv := v - before[k]; dv != 0 {
				ch = append(ch, fmt.Sprintf("%s +%d", k, dv))
			}
		}
		sort.Strings(ch)
		if len(ch) == 0 {
			b.WriteString("  - the device's counters did not move: the probe never reached it (routing, firewall, or the wrong device address)\n")
		} else {
			fmt.Fprintf(&b, "  - the device's counters during the probe: %s\n", strings.Join(ch, ", "))
		}
	}
	return fmt.Errorf("preflight: %w: %s", ErrNoAnswer, strings.TrimRight(b.String(), "\n"))
}

func peerHost(hostport string) string {
	i := strings.LastIndex(hostport, ":")
	if i < 0 {
		return ""
	}
	return strings.Trim(hostport[:i], "[]")
}

func bothLoopback(a string, b netip.Addr) bool {
	x, err := netip.ParseAddr(a)
	return err == nil && x.IsLoopback() && b.IsLoopback()
}
