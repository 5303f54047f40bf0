//go:build !linux

package live

import (
	"errors"
	"net/netip"
)

var errNotLinux = errors.New("raw and AF_PACKET sockets are supported on Linux only")

type rawSender struct{}

func newRawSender(local, device netip.AddrPort) (*rawSender, error) { return nil, errNotLinux }
func (r *rawSender) send(pkt []byte) error                          { return errNotLinux }
func (r *rawSender) close()                                         {}

type packetRecv struct{ ifname string }

func newPacketRecv(local, device netip.AddrPort) (*packetRecv, error) { return nil, errNotLinux }
func (r *packetRecv) read() ([]byte, bool, error)                     { return nil, false, errNotLinux }
func (r *packetRecv) close()                                          {}
