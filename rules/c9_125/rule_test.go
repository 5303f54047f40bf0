package c9_125

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// TestMonitor runs the shared table of its meaning group against this
// clause's own monitor.
func TestMonitor(t *testing.T) { dupnak.CheckNAKPSNMonitor(t, ID) }
