package c9_112

import (
	"testing"

	"github.com/rcconform/rcconform/rules/internal/responses/rtest"
)

func TestMonitor(t *testing.T) { rtest.MidStreamTests(t, ID) }
