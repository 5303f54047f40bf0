package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/dut/pcapdut/synth"
	"github.com/rcconform/rcconform/reports"
)

// shardCaptures returns the captures the shard tests audit: the
// project's own (ownCaptures) and, when they are beside the repository,
// every shared capture (with -short, the rxe ones).
func shardCaptures(t *testing.T) []string {
	t.Helper()
	dir := "*"
	if testing.Short() {
		dir = "rxe"
	}
	return append(sharedCaptures(t, dir), ownCaptures(t)...)
}

// sharedCaptures returns the shared captures in dir ("*": every folder),
// saying so when there are none.
func sharedCaptures(t *testing.T, dir string) []string {
	t.Helper()
	pattern := filepath.Join("..", "..", "..", "shared", "captures", dir, "*.pcap*")
	paths, _ := filepath.Glob(pattern)
	if len(paths) == 0 {
		t.Logf("no shared captures match %s: the project's own captures only", pattern)
	}
	return paths
}

// ownCaptures returns the project's own captures: two of ci/testdata/audit
// (one with a violation), a synthetic one of 16 connections between two
// hosts, and a synthetic one whose responders use an SRQ (every
// acknowledgment fails under --srq none, past any findings cap).
func ownCaptures(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, name := range []string{"clean.pcap", "ack-psn-backwards.pcap"} {
		paths = append(paths, filepath.Join(testdataDir, name))
	}
	for _, s := range []struct {
		name string
		o    synth.Options
	}{
		{"synthetic-16.pcap", synth.Options{Frames: 5000, QPs: 16, MTU: 1024, Seed: 9}},
		{"synthetic-srq.pcap", synth.Options{Frames: 3000, QPs: 6, MTU: 1024, Seed: 10, SRQ: true}},
	} {
		f, err := os.Create(filepath.Join(t.TempDir(), s.name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := synth.Write(f, s.o); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, f.Name())
	}
	return paths
}

// auditOut runs the audit and returns its JSON and exit status.
func auditOut(t *testing.T, args ...string) (string, int) {
	t.Helper()
	code, out, stderr := invoke(t, append([]string{"audit", "--format", "json"}, args...)...)
	if code == exitUsage {
		t.Fatalf("audit %v: exit 2: %s", args, stderr)
	}
	return out, code
}

// TestShardMerge: the results of `audit --shard=I/N` for every I, merged
// by `report --merge`, are byte for byte the result of one audit, with the
// same exit status, for N = 1, 2, 3 and 7, on the captures of
// shardCaptures, with settings that make clauses fail past the findings
// cap, and others stay indeterminate.
func TestShardMerge(t *testing.T) {
	captures := shardCaptures(t)
	dir := t.TempDir()
	for _, flags := range [][]string{
		{"--srq", "none", "--max-findings", "4"},
		{"--mtu", "512", "--ack-timeout", "1", "--retry-cnt", "0", "--complete"},
	} {
		args := append(append([]string{}, flags...), captures...)
		want, wantCode := auditOut(t, args...)
		res, err := reports.ReadJSON(strings.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		counts := res.Counts()
		if counts[reports.Fail] == 0 || counts[reports.Indeterminate] == 0 || counts[reports.Pass] == 0 || len(res.Findings) == 0 {
			t.Fatalf("flags %v: %v, %d findings: too little to compare", flags, counts, len(res.Findings))
		}
		if slices.Contains(flags, "--max-findings") && !slices.ContainsFunc(reports.GroupFindings(res), func(c reports.ClauseFindings) bool { return c.NotKept > 0 }) {
			t.Fatalf("flags %v: no clause failed past the findings cap", flags)
		}
		for _, n := range []int{1, 2, 3, 7} {
			var files []string
			worst := exitOK
			for i := range n {
				out, code := auditOut(t, append([]string{fmt.Sprintf("--shard=%d/%d", i, n)}, args...)...)
				worst = max(worst, code)
				p := filepath.Join(dir, fmt.Sprintf("shard-%d-of-%d.json", i, n))
				if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, p)
			}
			merged := filepath.Join(dir, "merged.json")
			code, _, stderr := invoke(t, append(append([]string{"report", "--merge"}, files...), "--out", merged)...)
			if code != wantCode || worst != wantCode {
				t.Errorf("flags %v, %d shards: merge exit %d, shards' worst %d, want %d: %s", flags, n, code, worst, wantCode, stderr)
			}
			got, err := os.ReadFile(merged)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("flags %v, %d shards: the merged result differs from the single audit's:\n%s", flags, n, firstDiff(want, string(got)))
			}
		}
	}
}

// TestJobs: auditing many captures at once gives, byte for byte, the
// result of auditing them one after the other.
func TestJobs(t *testing.T) {
	captures := shardCaptures(t)
	want, wantCode := auditOut(t, append([]string{"--jobs", "1", "--srq", "none"}, captures...)...)
	for _, jobs := range []string{"2", "5"} {
		got, code := auditOut(t, append([]string{"--jobs", jobs, "--srq", "none"}, captures...)...)
		if got != want || code != wantCode {
			t.Errorf("--jobs %s: exit %d (want %d), result differs:\n%s", jobs, code, wantCode, firstDiff(want, got))
		}
	}
	if code, _, stderr := invoke(t, "audit", "--jobs", "0", captures[0]); code != exitUsage || !strings.Contains(stderr, "--jobs 0") {
		t.Errorf("--jobs 0: exit %d, %s", code, stderr)
	}
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		if code, _, stderr := invoke(t, "audit", "--shard", bad, captures[0]); code != exitUsage || !strings.Contains(stderr, "--shard") {
			t.Errorf("--shard %s: exit %d, %s", bad, code, stderr)
		}
	}
}

// firstDiff shows where two texts first differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\nwant %s\n got %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(lb), len(la))
}
