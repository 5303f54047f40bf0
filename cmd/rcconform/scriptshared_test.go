package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptFromCapturesPass: every connection of the shared captures
// (when present) and of a synthetic capture of conformant traffic gives,
// for the device in either side's place, a script that passes against
// the reference, or a clear refusal (nothing to check in it); none fails.
func TestScriptFromCapturesPass(t *testing.T) {
	made := map[string]int{}
	for _, c := range shardCaptures(t) {
		for i := 2; i <= 33; i++ {
			n, side := i/2, []string{"responder", "requester"}[i%2]
			out := filepath.Join(t.TempDir(), fmt.Sprintf("c%d.rcs", n))
			code, _, errOut := invoke(t, "script", "--from", c, "--connection", fmt.Sprint(n), "--side", side, "--out", out)
			if strings.Contains(errOut, "has no connection") {
				break
			}
			if code != exitOK {
				if !strings.Contains(errOut, "fix nothing a script could check") && !strings.Contains(errOut, "nothing the rules fix to check: ") &&
					!strings.Contains(errOut, "no request that begins a message") {
					t.Errorf("%s, connection %d, device as %s: exit %d: %s", c, n, side, code, errOut)
				}
				continue
			}
			made[side]++
			if code, stdout, _ := invoke(t, "script", out); code != exitOK {
				t.Errorf("%s, connection %d, device as %s: the script exits %d against the reference\n%s", c, n, side, code, stdout)
			}
		}
	}
	for _, side := range []string{"responder", "requester"} {
		if made[side] < 16 {
			t.Errorf("only %d scripts made for the device as %s (the synthetic capture alone has 16 connections)", made[side], side)
		}
	}
	t.Logf("scripts made and passed: %v", made)
}
