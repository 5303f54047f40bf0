package matrix

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rcconform/rcconform/internal/suiterun"
	"github.com/rcconform/rcconform/reports"
)

// legalChoice draws one combination of the reference's open choices (the
// freedoms the clauses leave a responder and requester: when to ACK, how
// many packets one ACK covers and how late it may come, when the MSN moves
// for a READ, how often the requester sets AckReq, the turnaround, the
// packet gap, the link latency, unsolicited ACKs for new credits), every
// value one a conformant device may choose.
func legalChoice(rng *rand.Rand) string {
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	s := []string{
		"ack-policy=" + pick("ackreq", "every-n", "delay"),
		"ack-every-n=" + pick("1", "2", "3", "8", "16"),
		"ack-delay=" + pick("1us", "5us", "20us", "100us", "500us"),
		"msn-read=" + pick("start", "end"),
		"ack-req-every=" + pick("0", "1", "4"),
		"response-delay=" + pick("0s", "1us", "10us", "50us", "300us"),
		"packet-gap=" + pick("0s", "100ns", "1us", "5us"),
		"latency=" + pick("1us", "10us", "100us", "1ms"),
		"unsolicited-ack=" + pick("false", "true"),
	}
	return strings.Join(s, ",")
}

// TestCleanUnderLegalChoices runs the suite against the clean reference
// in random combinations of its open choices, each with its own suite
// seed: no clause may fail, since every combination is conformant. A
// false violation that only one combination of legal freedoms provokes is
// what a device made elsewhere shows first. RCCONFORM_CHOICES=N sets the
// number of combinations (default 6), RCCONFORM_CHOICES_SEED the seed
// (default 1); a failure prints both and the combination's settings.
func TestCleanUnderLegalChoices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite once per combination of legal choices")
	}
	n, seed := 6, int64(1)
	if v, err := strconv.Atoi(os.Getenv("RCCONFORM_CHOICES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseInt(os.Getenv("RCCONFORM_CHOICES_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewSource(seed))
	bin := suiterun.Build(t, "..")
	var runs []*run
	for i := 0; i < n; i++ {
		settings := legalChoice(rng)
		suiteSeed := 1 + rng.Intn(1<<20)
		runs = append(runs, &run{name: fmt.Sprintf("choices %d", i), args: []string{
			fmt.Sprintf("--seed=%d", suiteSeed), "--settings=" + settings}})
	}
	runAll(t, bin, runs)
	for _, r := range runs {
		if r.res == nil {
			t.Errorf("%s (%s): the suite gave no result: %v\n%s", r.name, strings.Join(r.args, " "), r.err, tail(r.out))
			continue
		}
		var failed []string
		for _, c := range r.res.Clauses {
			if c.Verdict == reports.Fail {
				failed = append(failed, c.ID)
			}
		}
		sort.Strings(failed)
		if len(failed) == 0 {
			t.Logf("%s: %s: no clause fails", r.name, strings.Join(r.args, " "))
			continue
		}
		var msgs []string
		for _, f := range r.res.Findings {
			msgs = append(msgs, f.ID+": "+f.Scenario+": "+f.Message)
		}
		t.Errorf("clean reference, legal choices (RCCONFORM_CHOICES_SEED=%d, %s): %s %s fail%s; findings:\n  %s",
			seed, r.name, strings.Join(r.args, " "), strings.Join(failed, ", "), map[bool]string{true: "s"}[len(failed) == 1],
			strings.Join(firstN(msgs, 8), "\n  "))
	}
}
