//go:build !linux

package live

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

var errNotLinux = errors.New("raw and AF_PACKET sockets are supported on Linux only")

type rawSender struct{}

func newRawSender(local, device netip.AddrPort) (*rawSender, error) { return nil, errNotLinux }
func (r *rawSender) send(pkt []byte) error                          { return errNotLinux }
func (r *rawSender) close()                                         {}

type packetRecv struct {
	ifname  string
	stamped bool
	rcvbuf  int
}

const recvBuffer = 64 << 20

func (r *packetRecv) drops() (uint32, error) { return 0, errNotLinux }

func udpDrops(*net.UDPConn) (uint32, error) { return 0, errNotLinux }

func udpRecvBuffer(uc *net.UDPConn, n int) int {
	if uc.SetReadBuffer(n) != nil {
		return 0
	}
	return n
}

func newPacketRecv(local, device netip.AddrPort, rcvbuf int) (*packetRecv, error) {
	return nil, errNotLinux
}
func (r *packetRecv) read() ([]byte, bool, time.Time, error) {
	return nil, false, time.Now(), errNotLinux
}

func stampUDP(*net.UDPConn) bool { return false }

func arrival([]byte) time.Time { return time.Now() }
func (r *packetRecv) close()   {}
