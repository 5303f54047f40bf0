package live

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestSocketDrops: a socket whose receive queue overflows counts what it
// dropped, and the adapter reads that count (SO_MEMINFO): on a UDP socket,
// and on an AF_PACKET socket where this process may open one.
func TestSocketDrops(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if got := udpRecvBuffer(rx, 1); got <= 0 || got > 1<<16 {
		t.Fatalf("a 1-byte receive buffer request gave %d bytes", got)
	}
	before, err := udpDrops(rx)
	if err != nil {
		t.Fatalf("reading the drop count: %v", err)
	}
	rxAddr := rx.LocalAddr().(*net.UDPAddr).AddrPort()

	var pkt *packetRecv
	if p, err := newPacketRecv(rxAddr, netip.AddrPortFrom(rxAddr.Addr(), 1), 1); err == nil {
		pkt = p
		defer p.close()
	} else {
		t.Logf("AF_PACKET not checked: %v", err)
	}
	var pktBefore uint32
	if pkt != nil {
		if pktBefore, err = pkt.drops(); err != nil {
			t.Fatalf("reading the AF_PACKET socket's drop count: %v", err)
		}
	}

	tx, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(rxAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	payload := make([]byte, 4096)
	const sent = 64
	for range sent {
		if _, err := tx.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond) // loopback delivers within the send; spare a softirq
	after, err := udpDrops(rx)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing read the socket: at most a few of the 4 KiB datagrams fit a
	// queue of a few KiB, the rest were dropped and counted.
	if n := after - before; n < sent/2 || n > sent {
		t.Errorf("the UDP socket counted %d drops of %d datagrams sent to a full queue", n, sent)
	}
	if pkt != nil {
		pa, err := pkt.drops()
		if err != nil {
			t.Fatal(err)
		}
		if n := pa - pktBefore; n < sent/2 {
			t.Errorf("the AF_PACKET socket counted %d drops of %d packets sent past a full queue", n, sent)
		}
	}
}
