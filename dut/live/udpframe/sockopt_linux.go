package udpframe

import (
	"fmt"
	"net"
	"syscall"
)

// SetDontFragment sets IP_PMTUDISC_DO (IPV6_PMTUDISC_DO) on a UDP socket:
// its IPv4 packets then carry DF and, from an unconnected socket,
// Identification 0, the header Payload computes the ICRC over. Without it
// Linux sets DF but picks a non-zero Identification.
func SetDontFragment(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("setting IP_PMTUDISC_DO: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
			return
		}
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("setting IP_PMTUDISC_DO on %v: %w", c.LocalAddr(), err)
	}
	return nil
}
