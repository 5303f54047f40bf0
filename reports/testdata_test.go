package reports

import (
	"bytes"
	"flag"
	"os"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ../ci/testdata/suite-result.json from the sample suite run")

// ciSample is the result ci/render-report.sh can render instead of its demo
// (`ci/render-report.sh OUT.png ci/testdata/suite-result.json`): a suite run
// against the reference DUT, so a page without captures or frame numbers.
const ciSample = "../ci/testdata/suite-result.json"

// TestCITestdata keeps ci/testdata/suite-result.json readable and in step
// with sampleSuite; -update rewrites it.
func TestCITestdata(t *testing.T) {
	if *update {
		var b bytes.Buffer
		if err := sampleSuite().WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ciSample, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(ciSample)
	if os.IsNotExist(err) {
		t.Skipf("%s not present", ciSample)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", ciSample, err)
	}
	want := sampleSuite()
	want.Captures = []CaptureInfo{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s differs from sampleSuite(); rerun with: go test ./reports -run TestCITestdata -args -update", ciSample)
	}
	var b bytes.Buffer
	for name, write := range map[string]func() error{
		"HTML":     func() error { return WriteHTML(&b, got) },
		"JUnit":    func() error { return WriteJUnit(&b, got, "rcconform") },
		"Markdown": func() error { return WriteMarkdown(&b, got) },
	} {
		if err := write(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
