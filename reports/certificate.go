package reports

import (
	"fmt"
	"maps"
	"slices"
)

// Certificate is a result's one-page summary, as a compliance test report
// gives it: the device and what it declared, the suite, the date, the
// settings, and every clause result that did not pass with its evidence.
// Every renderer shows it first.
type Certificate struct {
	Device    []Field // the DUT, what it declared, each capture with its SHA-256
	Suite     string
	Date      string
	Settings  []Field
	NotPassed []NotPassed // in the result's order
}

// Field is one named value of a certificate.
type Field struct{ Name, Value string }

// NotPassed is a clause result that did not pass, with its evidence in
// one line.
type NotPassed struct {
	ID, Capture string
	Verdict     Verdict
	Evidence    string
}

// notRecorded stands for what a result written before certificates
// existed does not say.
const notRecorded = "not recorded"

// Certificate returns r's certificate.
func (r *Result) Certificate() Certificate {
	var c Certificate
	if r.DUT != "" {
		c.Device = append(c.Device, Field{"DUT", r.DUT})
	}
	if _, said := r.Run.declared()["defect"]; r.Defect != "" && !said {
		c.Device = append(c.Device, Field{"defect", r.Defect})
	}
	c.Suite, c.Date = notRecorded, notRecorded
	if run := r.Run; run != nil {
		c.Suite, c.Date = run.Suite.String(), run.Date
		c.Device = append(c.Device, sortedFields(run.Declared)...)
		c.Settings = sortedFields(run.Settings)
	}
	for _, ci := range r.Captures {
		v := "SHA-256 " + ci.SHA256
		if ci.SHA256 == "" {
			v = "SHA-256 " + notRecorded
		}
		c.Device = append(c.Device, Field{"capture " + ci.File, fmt.Sprintf("%s, %d frames", v, ci.Frames)})
	}
	of := r.EvidenceOf()
	for _, cr := range r.Clauses {
		if cr.Verdict != Pass {
			c.NotPassed = append(c.NotPassed, NotPassed{cr.ID, cr.Capture, cr.Verdict, of(cr)})
		}
	}
	return c
}

func sortedFields(m map[string]string) []Field {
	var out []Field
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Field{k, m[k]})
	}
	return out
}

// declared is run's Declared (nil for a nil run).
func (run *Run) declared() map[string]string {
	if run == nil {
		return nil
	}
	return run.Declared
}
