package main

import (
	"strings"
	"testing"
)

func TestHzFrom(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want int
	}{
		{"# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n", 250},
		{"CONFIG_HZ=1000", 1000},
		{"CONFIG_HZ_PERIODIC=y\n", 0},
		{"CONFIG_HZ=bad\n", 0},
		{"", 0},
	} {
		if got := hzFrom(strings.NewReader(tc.cfg)); got != tc.want {
			t.Errorf("hzFrom(%q) = %d, want %d", tc.cfg, got, tc.want)
		}
	}
}
