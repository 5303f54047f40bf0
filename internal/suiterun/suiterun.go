// Package suiterun runs the rule suite's test binary as a subprocess, for
// the tests that compare whole runs of the suite (the defect matrix, the
// suite through the live and the sim adapters).
package suiterun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rcconform/rcconform/reports"
)

// Timeout bounds one run of the suite.
const Timeout = 10 * time.Minute

// Build compiles the suite's test binary from pkg (the suite's folder,
// as `go test -c` names it) into a temporary folder of t.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rules.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("building the rule suite: %v\n%s", err, out)
	}
	return bin
}

// Exec runs the suite binary bin in folder wd (the suite's rules/ folder)
// with args, which must make it write its JSON result to jsonPath, and
// reads that result. It returns the result (nil when there is none), the
// run's combined output and its error (a failed suite included).
func Exec(bin, wd, jsonPath string, args []string) (*reports.Result, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = wd
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := cmd.Run()
	f, err := os.Open(jsonPath)
	if err != nil {
		return nil, buf.String(), fmt.Errorf("the suite wrote no JSON result (%v): %w", runErr, err)
	}
	defer f.Close()
	res, err := reports.ReadJSON(f)
	if err != nil {
		return nil, buf.String(), fmt.Errorf("reading the suite's JSON result %s: %w", jsonPath, err)
	}
	return res, buf.String(), runErr
}

// Parallel calls fn(0) … fn(n-1), jobs at a time, and returns when all
// returned.
func Parallel(n, jobs int, fn func(i int)) {
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}
