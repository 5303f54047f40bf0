package rulekit

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/rcconform/rcconform/dut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/reports"
	"github.com/rcconform/rcconform/rules/catalog"
)

// Outcome is one clause's outcome in a spec that checks several (a
// scenario script).
type Outcome struct {
	ID      string          `json:"id"`
	Verdict reports.Verdict `json:"verdict"`
	Reason  string          `json:"reason,omitempty"`
}

// Multi is an active spec that checks several clauses: a scenario
// script. Its body sets the peer's clause line by line; a failure it
// reports through the peer blames that clause, as in a clause's own
// scenarios.
type Multi struct {
	Name string
	// Clauses are the clauses it checks; Labels every clause it names
	// (with the clauses governing its setup lines), for its labels.
	Clauses, Labels []string
	Scenario        Scenario
	Body            func(p *harness.Peer)
	// Outcomes gives each of Clauses its outcome once Body returned or
	// stopped.
	Outcomes func(p *harness.Peer) []Outcome
}

// MultiLabels returns the labels of a spec naming clauses: rule:ID,
// side and level of each.
func MultiLabels(clauses []string) ginkgo.Labels {
	var l []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			l = append(l, s)
		}
	}
	for _, id := range clauses {
		add(catalog.Label(id))
		if e, ok := catalog.Lookup(id); ok {
			add("side:" + string(e.Side))
			add("level:" + string(e.Level))
		}
	}
	return ginkgo.Label(l...)
}

// Register adds m as an It in the container being built.
func (m Multi) Register() {
	ginkgo.It(m.Name, MultiLabels(m.Labels), func() {
		defer stopIfBroken()
		mu.Lock()
		for _, id := range m.Clauses {
			accFor(id).ran = true
		}
		mu.Unlock()
		unsupported := func(reason string) {
			mu.Lock()
			for _, id := range m.Clauses {
				a := accFor(id)
				a.unsupported = append(a.unsupported, m.Name+": "+reason)
			}
			mu.Unlock()
			ginkgo.Skip("unsupported: " + reason)
		}
		if env.caps.Capture {
			unsupported("active scenario: a capture cannot be sent packets")
		}
		if miss := m.Scenario.Needs.Missing(env.caps); len(miss) > 0 {
			unsupported(fmt.Sprintf("the %s adapter lacks %s", env.dut.Name(), strings.Join(miss, ", ")))
		}
		conn, err := env.dut.NewConn(m.Scenario.Config)
		if errors.Is(err, dut.ErrUnsupported) {
			unsupported(fmt.Sprintf("the %s device cannot set up this connection: %v", env.dut.Name(), err))
		}
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("opening a connection on the %s device: %v", env.dut.Name(), err))
		}
		ginkgo.DeferCleanup(func() { _ = conn.Close() })
		peer := harness.NewPeer(conn, m.Name, "")
		peer.TextOf = ClauseText
		ginkgo.DeferCleanup(func() { m.after(conn, peer) })
		m.Body(peer)
	})
}

// AbortDrain is how long the device's answers are taken in after a
// scenario stopped early (the responder scenarios' liveness wait).
const AbortDrain = 100 * time.Millisecond

// Settle takes in what the device still sends once a scenario ended.
// After it stopped early (a step failed, maybe while the device was still
// answering), so that the trace the monitors judge as complete does not
// end in the middle of an exchange: an answer cut off by the scenario's
// end is no missing answer. And on a virtual clock after a responder
// scenario that passed, which may end while the device still owes an
// answer its checks did not wait for (the READ after an ACKed SEND, with
// a slow turnaround): nothing more is sent until time moves, so the
// drain costs nothing there (a real device's Trace settles the wire
// itself). A requester left alone would time out and resend, so it is
// left alone when it passed.
func Settle(peer *harness.Peer, stopped, virtual, deviceIsRequester bool) {
	if stopped || virtual && !deviceIsRequester {
		peer.Collect(AbortDrain)
	}
}

// after records each clause's outcome, a failed setup line's finding
// under the clause governing it, and the passive monitors' findings
// over the trace (reported by each clause's "findings from every
// scenario's trace" spec).
func (m Multi) after(conn dut.Conn, peer *harness.Peer) {
	defer stopIfBroken()
	if brokenAdapter() != nil {
		return // nothing the device did can be judged
	}
	rep := ginkgo.CurrentSpecReport()
	sc := m.Scenario
	settings := harness.ActiveSettings(conn, sc.DeviceIsRequester, sc.Config.SRQ)
	Settle(peer, rep.Failed() || rep.State.Is(types.SpecStateSkipped), env.caps.VirtualTime, sc.DeviceIsRequester)
	if Cfg.TraceDir != "" && len(m.Clauses) > 0 {
		writeTrace(m.Clauses[0], conn, settings)
	}
	if n, where := dut.ReceiveLoss(conn); n > 0 {
		settings.ReceiveLoss = true
		fmt.Fprintf(ginkgo.GinkgoWriter, "%s: %s: its trace is judged as one that may lack packets the device sent\n", m.Name, where)
	}
	file := traceFile("script", strings.TrimSuffix(filepath.Base(m.Name), filepath.Ext(m.Name)))
	sink := auditTrace(m.Name, file, conn, conn.Trace(), settings, peer)
	outs := m.Outcomes(peer)

	mu.Lock()
	defer mu.Unlock()
	own := map[string]bool{}
	for _, o := range outs {
		own[o.ID] = true
		a := accFor(o.ID)
		switch o.Verdict {
		case reports.Pass:
			a.checked++
			a.checks = append(a.checks, m.Name)
		case reports.Fail:
			a.violations++
			f := reports.Finding{ID: o.ID, Message: rep.FailureMessage(), Scenario: m.Name, Clause: ClauseText(o.ID)}
			if peer.Failure != nil && peer.Failure.ID == o.ID {
				f = *peer.Failure
				f.Scenario = m.Name
			}
			findings = append(findings, f)
		case reports.Unsupported:
			a.unsupported = append(a.unsupported, m.Name+": "+o.Reason)
		default:
			a.undecided(o.Verdict, m.Name, o.Reason)
		}
	}
	if f := peer.Failure; f != nil && !own[f.ID] {
		f.Scenario = m.Name
		a := accFor(f.ID)
		a.pending++
		a.elsewhere = append(a.elsewhere, *f)
	}
	recordSink(m.Name, sink)
	activeRan = true
}
