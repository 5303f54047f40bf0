package rules_test

import (
	"flag"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	_ "github.com/rcconform/rcconform/dut/live"
	_ "github.com/rcconform/rcconform/dut/pcapdut"
	_ "github.com/rcconform/rcconform/dut/refdut"
	_ "github.com/rcconform/rcconform/dut/sim"
	_ "github.com/rcconform/rcconform/rules"
	"github.com/rcconform/rcconform/rules/rulekit"
	"github.com/rcconform/rcconform/rules/script"
)

func init() { rulekit.RegisterFlags(flag.CommandLine) }

func TestRules(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rcconform rules")
	// RunSpecs returns after Ginkgo printed its summary: the clause
	// table follows it (process 1 only under -p, where it holds the run).
	if GinkgoParallelProcess() == 1 && !t.Skipped() {
		if err := rulekit.WriteTable(os.Stdout); err != nil {
			t.Error(err)
		}
	}
}

// Every scenario script under --scripts runs as a spec (the project's
// examples in rules/scripts by default).
var _ = script.Specs(func() (string, bool) { return rulekit.Cfg.Scripts, rulekit.Cfg.Scripts != rulekit.DefaultScripts })

var _ = BeforeSuite(func() {
	GinkgoWriter.Printf("rcconform: dut=%s defect=%q seed=%d\n", rulekit.Cfg.DUT, rulekit.Cfg.Defect, rulekit.Cfg.Seed)
	if err := rulekit.Setup(); err != nil {
		Fail(err.Error())
	}
})

var _ = ReportAfterSuite("clause-keyed reports", func(Report) {
	if err := rulekit.WriteReports(); err != nil {
		Fail(err.Error())
	}
})
