//go:build verbs && linux && cgo

package main

import (
	"os"
	"path/filepath"
	"strings"
)

// driverOf names the kernel driver bound to RDMA device name's parent
// device (mlx5_core, irdma, ...), from sysfs; "" when sysfs names none (a
// software device such as soft-RoCE's rxe0 has no parent device).
func driverOf(name string) string {
	link, err := os.Readlink(filepath.Join("/sys/class/infiniband", name, "device", "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(link)
}

// kernelRelease is the running kernel's release (uname -r), or "".
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
