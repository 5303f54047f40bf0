package live_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rcconform/rcconform/reference"
	"github.com/rcconform/rcconform/reports"
)

// realTimePrefix starts the names of the real-time requester scenarios
// (rules/internal/requester/realtime.Prefix).
const realTimePrefix = "real time: "

// requesterClauses are the requester's retry and RNR rules.
var requesterClauses = []string{"C9-140", "retry-counter", "rnr-retry", "go-back-n", "§9.7.5.1.2", "§9.9.2.2"}

// requesterDefects are the reference's requester defects.
var requesterDefects = []string{
	reference.DefRetryBeforeTimeout, reference.DefRetryTimeoutZero, reference.DefRetryCountPlusOne, reference.DefRetry7Unlimited,
	reference.DefRNRCostsRetry, reference.DefRNRResendEarly, reference.DefRNRRetry7Finite,
	reference.DefGBNNewPSN, reference.DefGBNSkipOne, reference.DefImpliedNAKIgnored, reference.DefRetryAfterFatalNAK,
}

// TestRequesterThroughLive judges the requester rules in real time
// through the live adapter against `rcconform serve`: clean, every one of
// them passes on its real-time scenarios; with each requester defect
// switched on in the served reference, every clause the defect breaks
// fails, on a real-time scenario. Each run takes only the specs of the
// clauses it needs (a label filter).
func TestRequesterThroughLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the requester rules in real time over real sockets, once per defect")
	}
	for _, d := range requesterDefects {
		if _, ok := reference.LookupDefect(d); !ok {
			t.Fatalf("no reference defect %q", d)
		}
	}
	bin := suiteBinary(t)
	runs := []*suiteRun{{name: "live, clean", dut: "live"}}
	for _, d := range requesterDefects {
		runs = append(runs, &suiteRun{name: "live, defect " + d, dut: "live", defect: d})
	}
	for _, r := range runs {
		prepare(t, r)
		ids := requesterClauses
		if r.defect != "" {
			def, _ := reference.LookupDefect(r.defect)
			ids = def.Clauses
		}
		r.args = append(r.args, labelFilter(ids))
	}
	runAll(t, bin, runs)
	clean := runs[0]
	if clean.err != nil {
		t.Errorf("the requester rules fail in real time against the clean served reference: %v\n%s", clean.err, tail(clean.out))
	}
	v := verdictsOf(clean.res)
	for _, id := range requesterClauses {
		c := v[id]
		if c.Verdict != reports.Pass {
			t.Errorf("clean: %s is %s through the live adapter (%s), want pass", id, c.Verdict, c.Reason)
			continue
		}
		rt := 0
		for _, s := range c.Checks {
			if strings.HasPrefix(s, realTimePrefix) {
				rt++
			}
		}
		if rt == 0 {
			t.Errorf("clean: %s passes through the live adapter on no real-time scenario (checks: %v)", id, c.Checks)
		}
		t.Logf("clean: %s passes on %d real-time scenarios", id, rt)
	}
	t.Logf("clean run: %s", clean.res.Environment["tolerance"])
	for _, r := range runs[1:] {
		def, _ := reference.LookupDefect(r.defect)
		v := verdictsOf(r.res)
		for _, id := range def.Clauses {
			if got := v[id]; got.Verdict != reports.Fail {
				if why := loadedHost(got); why != "" {
					// The host was too slow for the scenario that shows
					// the defect (CI runs test packages side by side):
					// the run says so, it does not claim a pass there.
					t.Logf("defect %s: %s is %s through the live adapter, its deciding scenario undecided on a loaded host: %s", r.defect, id, got.Verdict, why)
					continue
				}
				t.Errorf("defect %s: %s is %s through the live adapter (%s), want fail\n%s", r.defect, id, got.Verdict, got.Reason, tail(r.out))
				continue
			}
			found := false
			for _, f := range r.res.Findings {
				if f.ID == id && strings.Contains(f.Scenario, realTimePrefix) {
					found = true
				}
			}
			if !found {
				t.Errorf("defect %s: %s fails through the live adapter, but on no real-time scenario", r.defect, id)
			}
		}
		t.Logf("defect %s: %v fail in real time through the live adapter", r.defect, def.Clauses)
	}
}

// loadedHost returns the reason of c's first undecided kind that blames
// the host's own lateness ("" if none).
func loadedHost(c reports.ClauseResult) string {
	for _, k := range c.UndecidedKinds {
		if strings.Contains(k.Reason, "loaded host") {
			return k.Reason
		}
	}
	return ""
}

// raceClauses are the clauses whose scenarios race the device: the
// stimulus must reach it while it is still busy.
var raceClauses = []string{"C9-110", "Table-58", "C9-111", "C9-125", "C9-100", "C9-112"}

// TestRacesThroughLive runs the scenarios that race the device through
// the live adapter against a served reference that paces its responses
// (150 µs a packet: long answers take ~10 ms, short enough for the 100 ms waits of the responder scenarios under load), so that runs can decide: clean, each clause passes
// or is indeterminate with the reason that the device finished first (or
// the host was loaded); with a defect that breaks one of them, the clause
// never passes.
func TestRacesThroughLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the racing scenarios over real sockets, once per defect")
	}
	bin := suiteBinary(t)
	paced := map[string]string{"packet-gap": "150us"}
	runs := []*suiteRun{{name: "live, clean, paced", dut: "live", settings: paced}}
	for _, d := range []string{reference.DefTooManyReadsServed, reference.DefDupNewestFirst, reference.DefReadNoPreempt, reference.DefReadFailRequestPSN, reference.DefNAKInvReqReceivedPSN} {
		runs = append(runs, &suiteRun{name: "live, paced, defect " + d, dut: "live", defect: d, settings: paced})
	}
	for _, r := range runs {
		prepare(t, r)
		ids := raceClauses
		if r.defect != "" {
			def, _ := reference.LookupDefect(r.defect)
			ids = def.Clauses
		}
		r.args = append(r.args, labelFilter(ids))
	}
	runAll(t, bin, runs)
	undecided := func(c reports.ClauseResult) bool {
		return c.Verdict == reports.Indeterminate && (strings.Contains(c.Reason, "finished") || strings.Contains(c.Reason, "loaded host"))
	}
	v := verdictsOf(runs[0].res)
	decided := 0
	for _, id := range raceClauses {
		c := v[id]
		switch {
		case c.Verdict == reports.Pass:
			decided++
		case undecided(c):
			t.Logf("clean: %s indeterminate: %s", id, c.Reason)
		default:
			t.Errorf("clean: %s is %s through the live adapter (%s), want pass or indeterminate with its reason\n%s", id, c.Verdict, c.Reason, tail(runs[0].out))
		}
	}
	t.Logf("clean, paced: %d of %d racing clauses decided (pass)", decided, len(raceClauses))
	for _, r := range runs[1:] {
		def, _ := reference.LookupDefect(r.defect)
		v := verdictsOf(r.res)
		for _, id := range def.Clauses {
			switch c := v[id]; {
			case c.Verdict == reports.Fail:
				t.Logf("defect %s: %s fails through the live adapter", r.defect, id)
			case r.defect == reference.DefReadNoPreempt:
				// The long answer (dupnak.LongReal packets) outlasts the
				// real clock's margin: a device that never preempts it is
				// caught, not left undecided.
				t.Errorf("defect %s: %s is %s through the live adapter (%s), want fail: the long answer decides it", r.defect, id, c.Verdict, c.Reason)
			case undecided(c):
				t.Logf("defect %s: %s indeterminate through the live adapter: %s", r.defect, id, c.Reason)
			default:
				t.Errorf("defect %s: %s is %s through the live adapter (%s), want fail (or indeterminate with its reason)", r.defect, id, c.Verdict, c.Reason)
			}
		}
	}
}

// TestTimerTickThroughLive: the live adapter judges a lower bound on a
// device timer with a tolerance made of what it measured (round trip, its
// own timer lateness), never of the device's timer granularity. The
// served reference reports a 10 ms tick (a jiffy at HZ=100): clean, its
// timers fire on the first tick at or after the interval (late, within a
// tick) and C9-140 passes; with defect timer-one-tick-early its transport
// timer fires one tick before the interval, and C9-140 fails on a
// real-time scenario, the finding naming the tick. (While the tick was
// added to the tolerance, a timer one tick early passed.)
func TestTimerTickThroughLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs C9-140's real-time scenarios over real sockets, twice")
	}
	const tick = 10 * time.Millisecond
	bin := suiteBinary(t)
	settings := map[string]string{"timer-tick": tick.String()}
	runs := []*suiteRun{
		{name: "live, clean, 10 ms tick", dut: "live", settings: settings},
		{name: "live, 10 ms tick, defect " + reference.DefTimerOneTickEarly, dut: "live", defect: reference.DefTimerOneTickEarly, settings: settings},
	}
	for _, r := range runs {
		prepare(t, r)
		r.args = append(r.args, labelFilter([]string{"C9-140"}))
	}
	runAll(t, bin, runs)
	for _, r := range runs {
		env := r.res.Environment["tolerance"]
		if !strings.Contains(env, "device timer tick 10ms, reported, not tolerated") {
			t.Errorf("%s: the environment does not report the device's tick apart from the tolerance: %q", r.name, env)
		}
		// What the harness cannot measure, as it stated it: the slowest
		// round trip and its own timer lateness.
		rtt, late := durationAfter(t, env, "probe round trips "), durationAfter(t, env, "harness timer lateness ")
		if rtt+late >= tick {
			t.Skipf("%s: the round trip %v and timer lateness %v measured are not below the tick %v (a loaded host): a timer one tick early cannot be told from one on time", r.name, rtt, late, tick)
		}
	}
	if c := verdictsOf(runs[0].res)["C9-140"]; c.Verdict != reports.Pass {
		t.Errorf("clean, 10 ms tick: C9-140 is %s (%s), want pass: a timer late within a tick keeps the bound\n%s", c.Verdict, c.Reason, tail(runs[0].out))
	}
	if c := verdictsOf(runs[1].res)["C9-140"]; c.Verdict != reports.Fail {
		t.Errorf("defect %s: C9-140 is %s (%s), want fail: a timer one tick early is not excused by the tick\n%s", reference.DefTimerOneTickEarly, c.Verdict, c.Reason, tail(runs[1].out))
	}
	named := false
	for _, f := range runs[1].res.Findings {
		if f.ID == "C9-140" && strings.Contains(f.Scenario, realTimePrefix) && strings.Contains(f.Seen, "against a device timer tick of 10ms") {
			named = true
		}
	}
	if !named {
		t.Errorf("defect %s: no real-time C9-140 finding says how early, against which tick", reference.DefTimerOneTickEarly)
	}
}

// durationAfter returns the duration that follows label in s.
func durationAfter(t *testing.T, s, label string) time.Duration {
	t.Helper()
	_, rest, ok := strings.Cut(s, label)
	if !ok {
		t.Fatalf("no %q in %q", label, s)
	}
	d, err := time.ParseDuration(strings.TrimRight(strings.Fields(rest + " x")[0], ",;)"))
	if err != nil {
		t.Fatalf("%q in %q: %v", label, s, err)
	}
	return d
}
