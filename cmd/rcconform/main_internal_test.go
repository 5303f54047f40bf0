package main

import (
	"os"
	"testing"
)

// TestMain dates every result the tests make alike (a result's
// certificate is dated from SOURCE_DATE_EPOCH when set), so that results
// made a second apart compare equal byte for byte.
func TestMain(m *testing.M) {
	os.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01T00:00:00Z
	os.Exit(m.Run())
}
