package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun: bad usage exits 2 saying why; a session that says hello and
// ends exits 0 after answering it.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		input string
		code  int
		want  string
	}{
		{"unknown defect", []string{"--defect=nope"}, "", 2, `unknown defect "nope"`},
		{"unknown capability", []string{"--caps=post_send,teleport"}, "", 2, `capability "teleport"`},
		{"negative timer", []string{"--timer-early=-4ns"}, "", 2, "must not be negative"},
		{"bad address", []string{"--addr=nowhere"}, "", 2, "--addr"},
		{"stray argument", []string{"extra"}, "", 2, "unexpected arguments"},
		{"hello", nil, `{"id":1,"op":"hello","version":1}` + "\n", 0, `"caps":["post_send","poll_cq","memory","atomics","srq","credits"]`},
		{"no hello", nil, `{"id":1,"op":"advance","until":5}` + "\n", 0, `"code":"unauthorized"`},
	} {
		var out, errs bytes.Buffer
		code := run(tc.args, strings.NewReader(tc.input), &out, &errs)
		if code != tc.code || !strings.Contains(out.String()+errs.String(), tc.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", tc.name, code, tc.code, tc.want, out.String(), errs.String())
		}
	}
}
