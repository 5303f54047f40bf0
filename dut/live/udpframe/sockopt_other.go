//go:build !linux

package udpframe

import "net"

// SetDontFragment does nothing outside Linux: the IPv4 Identification the
// kernel picks is then unknown, and the peer solves it from the ICRC.
func SetDontFragment(c *net.UDPConn) error { return nil }
