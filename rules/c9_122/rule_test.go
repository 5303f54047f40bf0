package c9_122

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/dupnak"
)

// TestMonitor runs the shared table of its meaning group against this
// clause's own monitor.
func TestMonitor(t *testing.T) { dupnak.CheckLatchMonitor(t, ID) }

// TestRepeatAfterPassed runs the shared case of a sequence NAK repeated
// after the responder had passed its PSN.
func TestRepeatAfterPassed(t *testing.T) { dupnak.CheckRepeatAfterPassed(t, ID) }
