package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestRefusesOpenListenWithoutToken(t *testing.T) {
	os.Unsetenv("RCCONFORM_AGENT_TOKEN")
	var out, errb bytes.Buffer
	if code := run([]string{"--listen=0.0.0.0:4792"}, &out, &errb); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "without a token") {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestBadUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"extra"}, &out, &errb); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}
