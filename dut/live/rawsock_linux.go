package live

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// rawSender sends whole IPv4 packets (IP_HDRINCL) from a raw socket.
type rawSender struct {
	fd int
	to syscall.Sockaddr
}

func newRawSender(local, device netip.AddrPort) (*rawSender, error) {
	if !local.Addr().Is4() || !device.Addr().Is4() {
		return nil, fmt.Errorf("raw sending is for IPv4 only; use send=udp")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("opening a raw IPv4 socket (needs CAP_NET_RAW): %w", err)
	}
	return &rawSender{fd: fd, to: &syscall.SockaddrInet4{Addr: device.Addr().As4()}}, nil
}

func (r *rawSender) send(pkt []byte) error { return syscall.Sendto(r.fd, pkt, 0, r.to) }

func (r *rawSender) close() { syscall.Close(r.fd) }

// packetRecv reads IP packets from an AF_PACKET socket (cooked: from the
// network header on), filtered in the kernel to UDP packets to or from the
// harness's port.
type packetRecv struct {
	fd      int
	ifname  string
	buf     []byte
	oob     [128]byte
	stamped bool // the kernel time-stamps what it receives
	rcvbuf  int  // the receive buffer the kernel gave, in bytes
}

func newPacketRecv(local, device netip.AddrPort, rcvbuf int) (*packetRecv, error) {
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, int(htons(syscall.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("opening an AF_PACKET socket (needs CAP_NET_RAW): %w", err)
	}
	r := &packetRecv{fd: fd, ifname: "every interface", buf: make([]byte, 1<<16)}
	r.stamped = stampSocket(fd) == nil
	if err := syscall.AttachLsf(fd, portFilter(local.Port())); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("filtering the AF_PACKET socket: %w", err)
	}
	if ifi := interfaceFor(local.Addr()); ifi != nil {
		if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index}); err == nil {
			r.ifname = ifi.Name
		}
	}
	tv := syscall.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	r.rcvbuf = setRecvBuffer(fd, rcvbuf)
	return r, nil
}

// recvBuffer is the receive buffer the adapter asks for on the socket
// that takes in the device's packets: a device answering one READ with
// 2048 packets of 4 KiB sends them faster than a loaded host may read
// them, and what overflows the queue is lost before the harness records
// it (counted: socketDrops).
const recvBuffer = 64 << 20

// setRecvBuffer sets fd's receive buffer to n bytes: beyond the system's
// net.core.rmem_max where the process may (SO_RCVBUFFORCE, with
// CAP_NET_ADMIN), else up to it. It returns the size the kernel gives.
func setRecvBuffer(fd, n int) int {
	if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n) != nil {
		syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
	}
	got, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	if err != nil {
		return 0
	}
	return got
}

// soMeminfo is SO_MEMINFO (asm-generic/socket.h): a socket's memory
// counters, of which the ninth, SK_MEMINFO_DROPS, counts the packets the
// kernel dropped for it, its receive queue being full among them (an
// AF_PACKET socket counts there too).
const (
	soMeminfo      = 55
	skMeminfoDrops = 8
)

// socketDrops returns the socket's drop count since it was opened.
func socketDrops(fd int) (uint32, error) {
	var mi [skMeminfoDrops + 1]uint32
	l := uint32(unsafe.Sizeof(mi))
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, soMeminfo,
		uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return 0, fmt.Errorf("reading the socket's drop count (SO_MEMINFO): %w", e)
	}
	if l < uint32(unsafe.Sizeof(mi)) {
		return 0, errors.New("reading the socket's drop count: SO_MEMINFO has no drop count on this kernel")
	}
	return mi[skMeminfoDrops], nil
}

// drops is socketDrops of the AF_PACKET socket.
func (r *packetRecv) drops() (uint32, error) { return socketDrops(r.fd) }

// udpSocket runs fn on a UDP socket's descriptor.
func udpSocket(uc *net.UDPConn, fn func(fd int)) error {
	rc, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// udpDrops is socketDrops of a UDP socket.
func udpDrops(uc *net.UDPConn) (uint32, error) {
	var n uint32
	var derr error
	if err := udpSocket(uc, func(fd int) { n, derr = socketDrops(fd) }); err != nil {
		return 0, fmt.Errorf("reading the UDP socket's drop count: %w", err)
	}
	return n, derr
}

// udpRecvBuffer is setRecvBuffer on a UDP socket.
func udpRecvBuffer(uc *net.UDPConn, n int) int {
	got := 0
	_ = udpSocket(uc, func(fd int) { got = setRecvBuffer(fd, n) })
	return got
}

// read returns the next packet and whether this host sent it; it gives up
// after 100 ms so the reader can notice it is closed.
func (r *packetRecv) read() ([]byte, bool, time.Time, error) {
	n, oobn, _, from, err := syscall.Recvmsg(r.fd, r.buf, r.oob[:], 0)
	at := arrival(r.oob[:oobn])
	if err != nil {
		return nil, false, at, err
	}
	ll, ok := from.(*syscall.SockaddrLinklayer)
	if !ok {
		return nil, false, at, errors.New("not a link-layer address")
	}
	return r.buf[:n], ll.Pkttype == syscall.PACKET_OUTGOING, at, nil
}

// stampSocket asks the kernel to time-stamp every packet a socket
// receives (SO_TIMESTAMPNS): the harness then measures when a packet
// reached this host, not when its reading goroutine got to run.
func stampSocket(fd int) error {
	return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
}

// stampUDP switches kernel time stamps on for a UDP socket.
func stampUDP(uc *net.UDPConn) bool {
	rc, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = stampSocket(int(fd)) }); err != nil || serr != nil {
		return false
	}
	return true
}

// arrival returns when the kernel received a packet, from its
// SCM_TIMESTAMPNS control message, on the monotonic clock of time.Now;
// without one, now.
func arrival(oob []byte) time.Time {
	now := time.Now()
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return now
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			ago := time.Duration(now.UnixNano() - ts.Nano())
			if ago < 0 || ago > time.Second {
				return now // a clock step: trust the reading time
			}
			return now.Add(-ago)
		}
	}
	return now
}

func (r *packetRecv) close() { syscall.Close(r.fd) }

// interfaceFor returns the interface whose network holds a.
func interfaceFor(a netip.Addr) *net.Interface {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if n, ok := ad.(*net.IPNet); ok {
				if p, err := netip.ParsePrefix(n.String()); err == nil && p.Contains(a) {
					return &ifs[i]
				}
			}
		}
	}
	return nil
}

// portFilter is a classic BPF program over cooked IP packets that keeps
// unfragmented UDP packets from or to port (IPv4 with any header length,
// or IPv6 with UDP as the first next header).
func portFilter(port uint16) []syscall.SockFilter {
	const (
		ldB   = syscall.BPF_LD | syscall.BPF_B | syscall.BPF_ABS
		ldH   = syscall.BPF_LD | syscall.BPF_H | syscall.BPF_ABS
		ldHX  = syscall.BPF_LD | syscall.BPF_H | syscall.BPF_IND
		ldxIP = syscall.BPF_LDX | syscall.BPF_B | syscall.BPF_MSH
		rsh   = syscall.BPF_ALU | syscall.BPF_RSH | syscall.BPF_K
		jeq   = syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K
		jset  = syscall.BPF_JMP | syscall.BPF_JSET | syscall.BPF_K
		ret   = syscall.BPF_RET | syscall.BPF_K
	)
	// Jumps name their targets; "" is the next instruction.
	type ins struct {
		code   uint16
		k      uint32
		jt, jf string
		label  string
	}
	p := uint32(port)
	prog := []ins{
		{code: ldB, k: 0},
		{code: rsh, k: 4},
		{code: jeq, k: 4, jf: "v6"},
		{code: ldB, k: 9},
		{code: jeq, k: syscall.IPPROTO_UDP, jf: "drop"},
		{code: ldH, k: 6},
		{code: jset, k: 0x3FFF, jt: "drop"}, // MF or a fragment offset
		{code: ldxIP, k: 0},
		{code: ldHX, k: 0}, // source port
		{code: jeq, k: p, jt: "accept"},
		{code: ldHX, k: 2}, // destination port
		{code: jeq, k: p, jt: "accept", jf: "drop"},
		{label: "v6", code: jeq, k: 6, jf: "drop"}, // A still holds the version
		{code: ldB, k: 6},
		{code: jeq, k: syscall.IPPROTO_UDP, jf: "drop"},
		{code: ldH, k: 40},
		{code: jeq, k: p, jt: "accept"},
		{code: ldH, k: 42},
		{code: jeq, k: p, jt: "accept", jf: "drop"},
		{label: "accept", code: ret, k: 1 << 16},
		{label: "drop", code: ret, k: 0},
	}
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	rel := func(i int, l string) uint8 {
		if l == "" {
			return 0
		}
		return uint8(at[l] - i - 1)
	}
	out := make([]syscall.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = syscall.SockFilter{Code: in.code, K: in.k, Jt: rel(i, in.jt), Jf: rel(i, in.jf)}
	}
	return out
}
