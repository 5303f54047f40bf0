package script_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/dut"
	_ "github.com/rcconform/rcconform/dut/refdut"
	"github.com/rcconform/rcconform/reports"
	_ "github.com/rcconform/rcconform/rules" // every passive monitor
	"github.com/rcconform/rcconform/rules/script"
)

// breaks lists, for each example script the project ships, the
// reference defects that break a clause it checks, and that clause: the
// proof that its checks can fail.
var breaks = map[string][]struct{ defect, clause string }{
	"c9_95-coalesced-ack.rcs":      {{"ack-psn-ahead", "C9-95"}, {"ack-oldest-psn", "C9-95"}},
	"c9_96-read-response-psns.rcs": {{"read-resp-psn-skew", "C9-96"}},
	"c9_105-duplicate-send.rcs":    {{"dup-send-reexecuted", "C9-105"}, {"dup-moves-epsn", "C9-105"}},
	"c9_113-rnr-nak.rcs":           {{"rnr-nak-wrong-psn", "C9-113"}},
	"c9_121-sequence-nak.rcs":      {{"nak-seq-received-psn", "C9-121"}, {"nak-latch-off", "C9-122"}},
	"c9_140-retransmit-timer.rcs":  {{"retry-before-timeout", "C9-140"}},
	"o9_58-atomic-ack.rcs":         {{"atomic-ack-psn-skew", "o9-58"}, {"dup-atomic-reexecuted", "o9-66"}},
	"s9_9_2_2-fatal-nak.rcs":       {{"retry-after-fatal-nak", "§9.9.2.2"}},
}

func reference(t *testing.T, defect string) dut.DUT {
	t.Helper()
	d, err := dut.New("reference", dut.Options{Seed: 1, Defect: defect})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// reproducers lists, for each soft-RoCE reproducer (ci/rxe/repro), the
// reference defect that does what rxe does and the clause it fails: a
// reproducer passes against the clean reference and fails, on its own
// line, against that defect, so it shows the deviation and nothing else.
var reproducers = map[string][]struct{ defect, clause string }{
	"c9_97-c9_107-read-replay-middle.rcs":    {{"read-replay-middle", "C9-107"}},
	"c9_105-dup-after-read.rcs":              {{"dup-ack-register", "C9-105"}},
	"c9_105-dup-fresh-qp.rcs":                {{"dup-ack-register", "C9-105"}},
	"c9_106-c9_115-dup-read-invalidated.rcs": {{"dup-error-nak", "C9-106"}},
	"c9_107-zero-length-dup-read.rcs":        {{"dup-read-dropped", "C9-107"}},
	"c9_110-read-no-preempt.rcs":             {{"read-no-preempt", "C9-110"}},
	"c9_140-rnr-stale-timer.rcs":             {{"rnr-stale-timer", "C9-140"}},
	"c9_150_2_1-credits.rcs":                 {{"credits-invalid-no-srq", "C9-150.2.1"}},
	"retry_counter-retry-7.rcs":              {{"retry-7-unlimited", "retry-counter"}},
}

// TestExamplesPassCleanFailUnderDefect runs every shipped example script
// against the clean reference (every clause it checks passes, no line
// fails, no passive monitor finds anything) and under each defect that
// breaks one of its clauses (that clause fails, on the script's own line).
func TestExamplesPassCleanFailUnderDefect(t *testing.T) {
	passCleanFailUnderDefect(t, "../scripts", 5, breaks)
}

// TestReproducersPassCleanFailUnderDefect holds the soft-RoCE
// reproducers to the same: each passes against the clean reference and
// fails on its clause under the defect that does what rxe does.
// Its header states, in our words, the clause it fails.
func TestReproducersPassCleanFailUnderDefect(t *testing.T) {
	const dir = "../../ci/rxe/repro"
	passCleanFailUnderDefect(t, dir, len(reproducers), reproducers)
	for name, cases := range reproducers {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if !strings.Contains(string(b), "# "+c.clause+":") && !strings.Contains(string(b), "# "+c.clause+" (") {
				t.Errorf("%s: its header does not state %s in words (a line \"# %s: ...\")", name, c.clause, c.clause)
			}
		}
	}
}

func passCleanFailUnderDefect(t *testing.T, dir string, least int, cases map[string][]struct{ defect, clause string }) {
	files, err := script.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < least {
		t.Fatalf("%d scripts in %s, want at least %d", len(files), dir, least)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := script.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cases, ok := cases[filepath.Base(f)]
			if !ok || len(cases) == 0 {
				t.Fatalf("no defect is shown to break %s: add it to the table", f)
			}
			res := s.Run(reference(t, ""))
			if res.Err != nil || res.Failure != nil || len(res.Monitors) > 0 {
				t.Fatalf("clean reference: error %v, failure %+v, monitor findings %+v", res.Err, res.Failure, res.Monitors)
			}
			for _, o := range res.Outcomes {
				if o.Verdict != reports.Pass {
					t.Errorf("clean reference: %s is %s (%s), want pass", o.ID, o.Verdict, o.Reason)
				}
			}
			for _, c := range cases {
				res := s.Run(reference(t, c.defect))
				got := map[string]reports.Verdict{}
				for _, o := range res.Outcomes {
					got[o.ID] = o.Verdict
				}
				if got[c.clause] != reports.Fail || res.Failure == nil || res.Failure.ID != c.clause {
					t.Errorf("defect %s: %s is %q (failure %+v), want fail on the script's line", c.defect, c.clause, got[c.clause], res.Failure)
				}
			}
		})
	}
}

// tolerant is a device whose clock the harness reads only to within tol
// (as on a live device).
type tolerant struct {
	dut.DUT
	tol time.Duration
}

type tolerantConn struct {
	dut.Conn
	tol time.Duration
}

func (c tolerantConn) Tolerance() time.Duration { return c.tol }

func (d tolerant) NewConn(cfg dut.ConnConfig) (dut.Conn, error) {
	c, err := d.DUT.NewConn(cfg)
	return tolerantConn{c, d.tol}, err
}

// TestNotBeforeWithinTolerance: a packet early by less than the
// adapter's timing tolerance leaves its clause indeterminate, never
// passed; early by more, it fails.
func TestNotBeforeWithinTolerance(t *testing.T) {
	s, err := script.ParseFile("../scripts/c9_140-retransmit-timer.rcs")
	if err != nil {
		t.Fatal(err)
	}
	// retry-before-timeout resends after half the interval: 2.1 ms early.
	for _, tc := range []struct {
		tol  time.Duration
		want reports.Verdict
	}{{0, reports.Fail}, {time.Millisecond, reports.Fail}, {3 * time.Millisecond, reports.Indeterminate}} {
		res := s.Run(tolerant{reference(t, "retry-before-timeout"), tc.tol})
		if got := res.Outcomes[0]; got.Verdict != tc.want {
			t.Errorf("tolerance %v: C9-140 is %s (%s), want %s", tc.tol, got.Verdict, got.Reason, tc.want)
		}
	}
}

// noReads is a device that cannot post READs, and maybe no work
// requests at all.
type noReads struct {
	dut.DUT
	postWR bool
}

type noReadsConn struct{ dut.Conn }

func (c noReadsConn) PostSend(wr dut.WR) error {
	switch wr.Op {
	case dut.OpRead:
		return fmt.Errorf("posting a READ: %w", dut.ErrUnsupported)
	case dut.OpWrite:
		return errors.New("the agent went away")
	}
	return c.Conn.PostSend(wr)
}

func (d noReads) Capabilities() dut.Capabilities {
	c := d.DUT.Capabilities()
	c.PostWR = d.postWR
	return c
}

func (d noReads) NewConn(cfg dut.ConnConfig) (dut.Conn, error) {
	c, err := d.DUT.NewConn(cfg)
	return noReadsConn{c}, err
}

// TestUnsupported: a line the device cannot do leaves the clauses it had
// not yet decided unsupported, as does an adapter that lacks what the
// script needs; never pass, never fail.
func TestUnsupported(t *testing.T) {
	s, err := script.Parse("t.rcs", "side requester\nqp dpsn=7\npost send id=1 len=8\n> SEND_ONLY psn=dpsn [go-back-n]\n< ACK psn=dpsn msn=1\npost read id=2 len=8\n> READ_REQUEST psn=dpsn+1 [§9.7.5.1.2]\n")
	if err != nil {
		t.Fatal(err)
	}
	res := s.Run(noReads{reference(t, ""), true})
	want := map[string]reports.Verdict{"go-back-n": reports.Pass, "§9.7.5.1.2": reports.Unsupported}
	for _, o := range res.Outcomes {
		if o.Verdict != want[o.ID] {
			t.Errorf("device without READs: %s is %s (%s), want %s", o.ID, o.Verdict, o.Reason, want[o.ID])
		}
	}
	if res.Failed() || res.Decided() {
		t.Errorf("device without READs: failed %v, decided %v", res.Failed(), res.Decided())
	}
	broken, err := script.Parse("t.rcs", "side requester\npost write id=1 len=8\n> WRITE_ONLY [go-back-n]\n")
	if err != nil {
		t.Fatal(err)
	}
	res = broken.Run(noReads{reference(t, ""), true})
	if o := res.Outcomes[0]; res.Err == nil || o.Verdict != reports.Indeterminate || !strings.Contains(o.Reason, "the adapter failed") {
		t.Errorf("a broken adapter: %s is %s (%s), error %v; want indeterminate and the error", o.ID, o.Verdict, o.Reason, res.Err)
	}
	res = s.Run(noReads{reference(t, ""), false})
	for _, o := range res.Outcomes {
		if o.Verdict != reports.Unsupported || !strings.Contains(o.Reason, "posting work requests") {
			t.Errorf("adapter without work requests: %s is %s (%s), want unsupported", o.ID, o.Verdict, o.Reason)
		}
	}
}

// lateCompletions is a device that reports no completion.
type lateCompletions struct{ dut.DUT }

type lateCompletionsConn struct{ dut.Conn }

func (lateCompletionsConn) Completions() ([]dut.Completion, error) { return nil, nil }

func (d lateCompletions) NewConn(cfg dut.ConnConfig) (dut.Conn, error) {
	c, err := d.DUT.NewConn(cfg)
	return lateCompletionsConn{c}, err
}

// TestFromRequesterExpectsCompletions: a script made from a requester's
// trace expects each work request the recorded answers complete to
// complete with success (§9.7.5.1.2): it passes against the reference,
// and fails on that clause against a device that never completes them.
func TestFromRequesterExpectsCompletions(t *testing.T) {
	ex, err := script.ParseFile("../scripts/s9_9_2_2-fatal-nak.rcs")
	if err != nil {
		t.Fatal(err)
	}
	// A requester's clean exchange: two SENDs, each acknowledged.
	s, err := script.Parse("t.rcs", "side requester\nqp dpsn=40\npost send id=1 len=8\n> SEND_ONLY psn=40 [trigger]\n< ACK psn=40 msn=1\n"+
		"post send id=2 len=8\n> SEND_ONLY psn=41 [trigger]\n< ACK psn=41 msn=2\ncompletion id=2 [§9.7.5.1.2]\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s     *script.Script
		count int
	}{{s, 2}, {ex, 0}} {
		res := tc.s.Run(reference(t, ""))
		text, _, err := script.FromCapture(res.Trace, script.FromOptions{Source: "a trace", DeviceIsRequester: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.s.File, err)
		}
		if n := strings.Count(text, "status=success [§9.7.5.1.2]"); n != tc.count {
			t.Errorf("%s: %d completions expected, want %d:\n%s", tc.s.File, n, tc.count, text)
		}
		made, err := script.Parse("made.rcs", text)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if res := made.Run(reference(t, "")); res.Failed() || !res.Decided() {
			t.Errorf("%s: the made script against the reference: %+v, failure %+v\n%s", tc.s.File, res.Outcomes, res.Failure, text)
		}
		if tc.count == 0 {
			continue
		}
		res = made.Run(lateCompletions{reference(t, "")})
		if res.Failure == nil || res.Failure.ID != "§9.7.5.1.2" {
			t.Errorf("against a device that completes nothing: failure %+v, want §9.7.5.1.2's", res.Failure)
		}
	}
}
