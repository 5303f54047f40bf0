package live

import (
	"testing"

	"github.com/rcconform/rcconform/dut/live/agentproto"
)

// TestDeclared: the certificate names what the agent reported of the
// device, its identity fields where it gave them and not otherwise.
func TestDeclared(t *testing.T) {
	d := &DUT{hello: agentproto.Hello{Version: 1, Device: agentproto.DeviceInfo{Agent: "rcconform-agent (libibverbs)", Name: "rxe0", Port: 1,
		Address: "192.0.2.7", MTU: 1024, PKey: 0xffff, Atomics: true, SRQ: true, MaxRd: 128, MaxInit: 128,
		VendorID: 0xffffff, Firmware: "1.2.3", Kernel: "6.12.95-amd64"}}}
	got := d.Declared()
	for k, want := range map[string]string{"agent": "rcconform-agent (libibverbs)", "rdma-device": "rxe0 port 1", "active-mtu": "1024",
		"pkey": "0xffff", "atomics": "true", "srq": "true", "max-qp-rd-atom": "128", "vendor-id": "0xffffff", "vendor-part-id": "0x0000",
		"firmware": "1.2.3", "kernel": "6.12.95-amd64"} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	for _, k := range []string{"driver", "defect", "timer-granularity"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s declared (%q) though the agent did not say", k, v)
		}
	}
}
