package reports

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var (
	demoHTML = flag.String("demo-html", "", "TestWriteDemoHTML writes a demo HTML report to this file (ci/render-report.sh uses it; a relative path is taken from reports/)")
	demoJSON = flag.String("demo-json", "", "with -demo-html: render this result JSON instead of the built-in sample audit")
)

// TestWriteDemoHTML writes a demo HTML report with failing findings, for
// ci/render-report.sh to screenshot:
//
//	go test ./reports -run TestWriteDemoHTML -args -demo-html=/tmp/report.html
//
// Without -demo-html it only checks that the page renders.
func TestWriteDemoHTML(t *testing.T) {
	r := sampleAudit()
	if *demoJSON != "" {
		f, err := os.Open(*demoJSON)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if r, err = ReadJSON(f); err != nil {
			t.Fatalf("%s: %v", *demoJSON, err)
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if *demoHTML == "" {
		return
	}
	if err := os.WriteFile(*demoHTML, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", *demoHTML, b.Len())
}
