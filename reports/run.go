package reports

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Run is the certificate of a run: which suite judged, when, what the
// device under test declared itself to be, and the settings used; with
// each clause's verdict and, for every verdict but pass, its evidence in
// one line (ClauseResult.Evidence), it is what a lab files with its
// results.
type Run struct {
	Suite Suite `json:"suite"`
	// Date is when the result was made, RFC 3339 in UTC (from
	// SOURCE_DATE_EPOCH when that is set, for reproducible results).
	Date string `json:"date"`
	// Declared is what the DUT declared: for the reference transport its
	// name and defect; for a live device what its agent reports (the RDMA
	// device and port, its address, active MTU, P_Key, whether it has
	// atomics and SRQs, its outstanding READ/ATOMIC limits); for
	// captures their files (each capture's SHA-256 is in Captures).
	Declared map[string]string `json:"declared,omitempty"`
	// Settings are the settings the run used (flags, adapter settings).
	Settings map[string]string `json:"settings,omitempty"`
}

// Suite names the build of rcconform that made a result.
type Suite struct {
	Module string `json:"module"`
	// Version is the module's version: a release tag, "(devel)" for a
	// build from a source tree, or "unknown".
	Version string `json:"version"`
	// Commit is the source's commit: from the build's version control
	// stamp, else from git in the working folder (a test binary, go
	// run), else "unknown". Modified says the tree had uncommitted
	// changes.
	Commit   string `json:"commit"`
	Modified bool   `json:"modified,omitempty"`
}

// String is the suite as one line: "github.com/…/rcconform (devel),
// commit 1a2b3c4 (modified)".
func (s Suite) String() string {
	out := s.Module + " " + s.Version + ", commit " + s.Commit
	if s.Modified {
		out += " (modified)"
	}
	return out
}

// NewRun returns the certificate of a run made now by this build, with
// what the DUT declared and the settings used.
func NewRun(declared, settings map[string]string) *Run {
	return &Run{Suite: CurrentSuite(), Date: runDate().Format(time.RFC3339), Declared: declared, Settings: settings}
}

// runDate is now, or SOURCE_DATE_EPOCH (seconds since 1970) when set.
func runDate() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC().Truncate(time.Second)
}

// CurrentSuite returns the build's module, version and commit, saying
// "unknown" for what it cannot tell.
func CurrentSuite() Suite {
	s := Suite{Module: "github.com/rcconform/rcconform", Version: "unknown", Commit: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if bi.Main.Path != "" {
			s.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			s.Version = bi.Main.Version
		}
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				s.Commit = kv.Value
			case "vcs.modified":
				s.Modified = kv.Value == "true"
			}
		}
	}
	if s.Commit == "unknown" && (s.Version == "(devel)" || s.Version == "unknown") {
		s.Commit, s.Modified = gitCommit(s.Module)
	}
	return s
}

// gitCommit asks git for the commit of the checkout the working folder is
// in, and whether tracked files changed, when that checkout is module's
// source (its go.mod says so): a test binary or `go run` carries no
// version control stamp. "unknown" otherwise.
func gitCommit(module string) (string, bool) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "unknown", false
	}
	mod, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(top)), "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module "+module+"\n") {
		return "unknown", false
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), err == nil && len(strings.TrimSpace(string(st))) > 0
}
