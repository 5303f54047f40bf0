package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptFromCapturesPass: every connection of the shared captures
// (when present) and of a synthetic capture of conformant traffic gives a
// script that passes against the reference, or a clear refusal (nothing
// to check in it); none fails.
func TestScriptFromCapturesPass(t *testing.T) {
	made := 0
	for _, c := range shardCaptures(t) {
		for n := 1; n <= 16; n++ {
			out := filepath.Join(t.TempDir(), fmt.Sprintf("c%d.rcs", n))
			code, _, errOut := invoke(t, "script", "--from", c, "--connection", fmt.Sprint(n), "--side", "responder", "--out", out)
			if strings.Contains(errOut, "has no connection") {
				break
			}
			if code != exitOK {
				if !strings.Contains(errOut, "fix nothing a script could check") && !strings.Contains(errOut, "no request that begins a message") {
					t.Errorf("%s, connection %d: exit %d: %s", c, n, code, errOut)
				}
				continue
			}
			made++
			if code, stdout, _ := invoke(t, "script", out); code != exitOK {
				t.Errorf("%s, connection %d: the script exits %d against the reference\n%s", c, n, code, stdout)
			}
		}
	}
	if made < 16 {
		t.Errorf("only %d scripts made (the synthetic capture alone has 16 connections)", made)
	}
	t.Logf("%d scripts made and passed", made)
}
