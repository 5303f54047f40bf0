package serve

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/dut/live/agentproto"
	"github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/wire"
)

// Virtual is the served reference without a socket or a wall clock: the
// agent protocol's sessions over QPs on a virtual clock that the caller
// drives, taking and giving whole Ethernet frames. It is the device of
// the simulator wrapper cmd/rcconform-refsim (dut/sim), where the
// simulator's time is the clock's.
type Virtual struct {
	d *device
}

// NewVirtual returns the reference transport at address addr (its GID,
// UDP port 4791) on clock, with the defect and the reference adapter's
// open choices (ServeOptions.Settings) switched on; out receives every
// frame a QP sends, when it sends it. Nothing here runs the clock.
func NewVirtual(clock *reference.Clock, addr netip.Addr, defect string, settings map[string]string, out func(frame []byte)) (*Virtual, error) {
	base, err := baseConfig(defect, settings)
	if err != nil {
		return nil, err
	}
	if _, ok := settings[refdut.SetPacketGap]; !ok {
		// Simulated time needs no pacing for a harness in user space:
		// the in-process reference's transmitter.
		base.PacketGap = refdut.DefaultPacketGap
	}
	if addr.IsUnspecified() || !addr.IsValid() {
		return nil, fmt.Errorf("device address %v: want one specific address: %w", addr, ErrUsage)
	}
	d := newDevice(nil, netip.AddrPortFrom(addr.Unmap(), wire.UDPPort), base, defect)
	d.clock, d.out, d.wake = clock, out, nil
	return &Virtual{d: d}, nil
}

// SetBase changes the configuration every QP created from now on starts
// from (a knob the protocol does not carry, such as Config.TimerEarly).
func (v *Virtual) SetBase(f func(*reference.Config)) { f(&v.d.base) }

// Device is the agent protocol's view of the served reference.
func (v *Virtual) Device() agentproto.Device { return v.d }

// PollCQ returns and clears the completions of QP qp (a handle of
// session s, which v's Device made), each with the clock's time it was
// produced at.
func (v *Virtual) PollCQ(s agentproto.Session, qp uint32) ([]dut.Completion, error) {
	ss, ok := s.(*session)
	if !ok || ss.d != v.d {
		return nil, fmt.Errorf("polling QP %d: not a session of this device", qp)
	}
	return ss.pollCQ(qp)
}

// ErrNotDelivered is wrapped by Receive's errors: the frame reached no QP.
var ErrNotDelivered = errors.New("frame not delivered")

// Receive hands an Ethernet frame to the QP it is addressed to, now, as
// the socket path does with a datagram: a frame that does not decode as
// RoCEv2, for no QP, from an address other than the QP's remote GID,
// with a P_Key that does not match or a bad ICRC is dropped, counted, and
// reported (wrapping ErrNotDelivered).
func (v *Virtual) Receive(frame []byte) error {
	d := v.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counters["rx_packets"]++
	var f wire.Frame
	drop := func(counter, why string) error {
		d.counters[counter]++
		return fmt.Errorf("%s: %w", why, ErrNotDelivered)
	}
	if err := f.DecodeEthernet(frame); err != nil && !errors.Is(err, wire.ErrUnknownOpcode) {
		return drop("rx_dropped_short", "not a RoCEv2 frame: "+err.Error())
	}
	q := d.qps[f.DestQP]
	switch {
	case q == nil:
		return drop("rx_dropped_unknown_qpn", fmt.Sprintf("no QP 0x%x", f.DestQP))
	case f.Src != q.remote.Addr():
		return drop("rx_dropped_wrong_source", fmt.Sprintf("source %v is not QP 0x%x's remote address %v", f.Src, f.DestQP, q.remote.Addr()))
	case f.PKey&0x7FFF != 0x7FFF:
		return drop("rx_dropped_pkey", fmt.Sprintf("P_Key 0x%04x", f.PKey))
	case f.CheckICRC() != wire.ICRCOK:
		return drop("rx_dropped_bad_icrc", "bad ICRC")
	}
	d.counters["rx_delivered"]++
	q.qp.Receive(frame)
	return nil
}
