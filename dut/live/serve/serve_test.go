package serve

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestServeMainRefusesAddresses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--addr=192.0.2.77:4791", "--agent=127.0.0.1:0"}, 1, "is not an address of this host"},
		{[]string{"--addr=0.0.0.0", "--agent=127.0.0.1:0"}, 2, "one specific address"},
		{[]string{"--addr=127.0.0.1:0", "--agent=0.0.0.0:0", "--token="}, 2, "without a token"},
		{[]string{"--addr=127.0.0.1:0", "--agent=127.0.0.1:0", "--defect=no-such-defect"}, 2, "unknown defect"},
		{[]string{"--addr=127.0.0.1:0", "--agent=127.0.0.1:0", "--settings=ack-policy=sometimes"}, 2, "ack-policy"},
		{[]string{"stray"}, 2, "unexpected arguments"},
	} {
		var out, errb bytes.Buffer
		code := ServeMain(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}

func TestServeRefusesABusyPort(t *testing.T) {
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	err = Serve(context.Background(), ServeOptions{Addr: uc.LocalAddr().String(), Agent: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "something else owns UDP port") {
		t.Errorf("a busy port: %v", err)
	}
	if errors.Is(err, ErrUsage) {
		t.Error("a busy port is reported as bad usage")
	}
}

func TestServeStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Addr: "127.0.0.1:0", Agent: "127.0.0.1:0", Ready: func(netip.AddrPort, net.Addr) { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after a clean stop", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop within 5 s")
	}
}
