package live

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/wire"
)

// Config is the live adapter's configuration, from the suite's
// --settings (dut.Options.Settings): see Keys.
type Config struct {
	// Device is the device's RoCEv2 address (its GID) and UDP port
	// (4791). Empty: the address of the agent's default GID.
	Device netip.AddrPort
	// Agent is the control agent's TCP address.
	Agent string
	// Token is the agent's shared token.
	Token string
	// Local is the harness's own address and port: the QPs' remote GID.
	// Unset: the address this host routes to the device from (for a
	// loopback device, another loopback address), port 4791.
	Local netip.AddrPort
	// Send: "udp" (a UDP socket; ICRC over the IPv4 header Linux sends:
	// DF, ID 0) or "raw" (a raw IPv4 socket, which needs CAP_NET_RAW;
	// the harness writes the whole IP header, with a counting ID).
	Send string
	// Recv: "packet" (an AF_PACKET socket, which needs CAP_NET_RAW: the
	// device's ICRC is checked over the IP header it really sent),
	// "udp" (the UDP socket: the device's IPv4 ID and DF are solved from
	// its ICRC), or "auto" (packet where allowed, else udp).
	Recv string
	// Tolerance is the timing slack of real time: how far a measured time
	// may stray from what a clause bounds before a spec may call it (see
	// Conn.Tolerance).
	Tolerance time.Duration
	// Probe sends one RDMA WRITE before the run to check the whole path,
	// and says what is wrong when nothing comes back.
	Probe        bool
	ProbeTimeout time.Duration
	// RecvSize is the size of the receive WQEs a connection posts.
	RecvSize int
	// Latency is how late the device's answers may come (a slow host, an
	// emulated CPU): every wait for an answer is this much longer. Waits
	// that end early when the answer comes cost nothing; waits for silence
	// cost it in full.
	Latency time.Duration
	// Settle is how long the wire must have been quiet before Trace
	// returns: the device's answers to the last stimuli may still be on
	// their way (Trace waits at most 20 times this).
	Settle time.Duration
	// RecvBuffer is the receive buffer, in bytes, of the socket that takes
	// in the device's packets. What overflows it is lost before the
	// harness records it; the adapter counts such losses
	// (Conn.ReceiveLoss) and the suite then judges nothing from the
	// missing packets.
	RecvBuffer int
	// SentCounter is the agent's name of the device's sent-packet counter
	// that the loss check compares with what the harness received; ""
	// tries the known ones, "none" turns the check off.
	SentCounter string
}

// Keys documents every setting the adapter reads.
var Keys = map[string]string{
	"device":        "the device's RoCEv2 address, IP or IP:port (default: the address of the agent's default GID)",
	"agent":         fmt.Sprintf("the control agent, HOST:PORT (port default %d) — required", agentproto.DefaultPort),
	"token":         "the agent's shared token (default $RCCONFORM_AGENT_TOKEN)",
	"local":         "this host's address for the device, IP or IP:port (default: the source address of the route to the device, port 4791)",
	"send":          "udp (default) or raw (a raw IPv4 socket; needs CAP_NET_RAW)",
	"recv":          "auto (default: packet where allowed), packet (AF_PACKET; needs CAP_NET_RAW) or udp",
	"tolerance":     "least timing tolerance of real time (default 1ms); the adapter raises it to the slowest of 16 probe round trips plus its own timer lateness, measured before the run (the device's timer tick is reported, never added)",
	"probe":         "true (default) or false: check the path with one RDMA WRITE before the run",
	"probe-timeout": "how long the probe waits for the ACK, per try (default 1s)",
	"recv-size":     "bytes per receive WQE the adapter posts (default 65536)",
	"latency":       "how late the device may answer: every wait for its answers is this much longer (default 0; an emulated device needs ~200ms)",
	"recv-buffer":   "receive buffer in bytes of the socket taking in the device's packets (default 64 MiB; the kernel caps it at net.core.rmem_max without CAP_NET_ADMIN); packets it drops are counted, and a scenario that lost some decides nothing from what it did not see",
	"sent-counter":  "the device counter of packets sent that the adapter compares with what it received, per connection, to see packets lost on the way (default: the first the agent reports of hw_counters/sent_pkts, counters/port_xmit_packets, tx_packets; none: off)",
	"settle":        "quiet time on the wire before a connection's trace is taken, so answers still in flight are in it (default 5ms)",
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Send: "udp", Recv: "auto", Tolerance: time.Millisecond, Probe: true, ProbeTimeout: time.Second,
		RecvSize: 1 << 16, Settle: 5 * time.Millisecond, RecvBuffer: recvBuffer, Token: os.Getenv("RCCONFORM_AGENT_TOKEN")}
}

// ParseConfig reads the settings.
func ParseConfig(settings map[string]string) (Config, error) {
	c := DefaultConfig()
	var unknown []string
	for k, v := range settings {
		var err error
		switch k {
		case "device":
			c.Device, err = parseAddrPort(v, wire.UDPPort)
		case "agent":
			c.Agent = v
			if _, _, serr := net.SplitHostPort(v); serr != nil {
				c.Agent = net.JoinHostPort(strings.Trim(v, "[]"), strconv.Itoa(agentproto.DefaultPort))
			}
		case "token":
			c.Token = v
		case "local":
			c.Local, err = parseAddrPort(v, wire.UDPPort)
		case "send":
			if v != "udp" && v != "raw" {
				err = fmt.Errorf("want udp or raw")
			}
			c.Send = v
		case "recv":
			if v != "udp" && v != "packet" && v != "auto" {
				err = fmt.Errorf("want auto, packet or udp")
			}
			c.Recv = v
		case "tolerance":
			c.Tolerance, err = time.ParseDuration(v)
			if err == nil && c.Tolerance < 0 {
				err = fmt.Errorf("negative")
			}
		case "probe":
			c.Probe, err = strconv.ParseBool(v)
		case "probe-timeout":
			c.ProbeTimeout, err = time.ParseDuration(v)
		case "latency":
			c.Latency, err = time.ParseDuration(v)
			if err == nil && c.Latency < 0 {
				err = fmt.Errorf("negative")
			}
		case "settle":
			c.Settle, err = time.ParseDuration(v)
			if err == nil && c.Settle < 0 {
				err = fmt.Errorf("negative")
			}
		case "sent-counter":
			c.SentCounter = v
		case "recv-buffer":
			c.RecvBuffer, err = strconv.Atoi(v)
			if err == nil && (c.RecvBuffer < 1 || c.RecvBuffer > 1<<30) {
				err = fmt.Errorf("want 1 to %d bytes", 1<<30)
			}
		case "recv-size":
			c.RecvSize, err = strconv.Atoi(v)
			if err == nil && (c.RecvSize < 0 || c.RecvSize > agentproto.MaxRecvSize) {
				err = fmt.Errorf("want 0 to %d", agentproto.MaxRecvSize)
			}
		default:
			unknown = append(unknown, k)
		}
		if err != nil {
			return c, fmt.Errorf("live setting %s=%s: %w", k, v, err)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var known []string
		for k := range Keys {
			known = append(known, k)
		}
		sort.Strings(known)
		return c, fmt.Errorf("unknown live settings %v (known: %s)", unknown, strings.Join(known, ", "))
	}
	if c.Agent == "" {
		return c, fmt.Errorf("the live adapter needs the control agent's address: --settings=agent=HOST:PORT (and device=ADDR), with the agent (cmd/rcconform-agent) or `rcconform serve` running there")
	}
	return c, nil
}

func parseAddrPort(s string, port uint16) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("want an IP address or IP:port")
	}
	return netip.AddrPortFrom(a.Unmap(), port), nil
}
