package main

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rcconform/rcconform/dut/live/agentproto"
)

// hzFrom reads CONFIG_HZ from a kernel configuration.
func hzFrom(r io.Reader) int {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "CONFIG_HZ="); ok {
			if hz, err := strconv.Atoi(v); err == nil && hz > 0 {
				return hz
			}
		}
	}
	return 0
}

// kernelTick returns the running kernel's jiffy (1/CONFIG_HZ), read from
// /boot/config-RELEASE or /proc/config.gz, or 0 when neither says. A
// software device's retry and RNR timers (Linux rxe's) run in jiffies and
// may fire up to one tick early.
func kernelTick() time.Duration {
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		if f, err := os.Open("/boot/config-" + strings.TrimSpace(string(rel))); err == nil {
			defer f.Close()
			if hz := hzFrom(f); hz > 0 {
				return time.Second / time.Duration(hz)
			}
		}
	}
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			if hz := hzFrom(z); hz > 0 {
				return time.Second / time.Duration(hz)
			}
		}
	}
	return 0
}

// withTick reports the device's timer granularity in its hello.
type withTick struct {
	device
	tick time.Duration
}

func (w withTick) Info() agentproto.DeviceInfo {
	i := w.device.Info()
	i.TimerNS = int64(w.tick)
	return i
}
