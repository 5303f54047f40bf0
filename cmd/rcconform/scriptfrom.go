package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rcconform/rcconform/dut/pcapdut"
	"github.com/rcconform/rcconform/harness"
	"github.com/rcconform/rcconform/harness/trace"
	"github.com/rcconform/rcconform/rules/script"
)

// connRecords collects the records of one connection of a capture, as
// the audit pairs and numbers them.
type connRecords struct {
	a    *harness.Auditor
	id   int
	recs []*trace.Record
	ids  int // the highest connection number seen
}

func (c *connRecords) Observe(r *trace.Record) {
	if conn := c.a.Assign(r); conn != nil {
		c.ids = max(c.ids, conn.ID)
		if conn.ID == c.id {
			c.recs = append(c.recs, r)
		}
	}
}

func (c *connRecords) End() {}

// runFrom writes a script from connection n of a capture.
func runFrom(capture string, n int, side string, mtu int, out string, stdout, stderr io.Writer) int {
	if side != "responder" && side != "requester" {
		return usageErr(stderr, "script", fmt.Errorf("--from needs --side requester or responder (the side the device under test takes), not %q", side))
	}
	if n < 1 {
		return usageErr(stderr, "script", errors.New("--from needs --connection N (1 or more; `rcconform audit` lists them)"))
	}
	cr := &connRecords{a: harness.NewAuditor(harness.UnknownSettings(), harness.NewSink(capture)), id: n}
	if _, err := pcapdut.AuditFile(capture, cr, nil); err != nil {
		return usageErr(stderr, "script", fmt.Errorf("reading %s: %w", capture, err))
	}
	if len(cr.recs) == 0 {
		return usageErr(stderr, "script", fmt.Errorf("%s has no connection %d (it has %d)", capture, n, cr.ids))
	}
	text, notes, err := script.FromCapture(cr.recs, script.FromOptions{Source: fmt.Sprintf("%s, connection %d", capture, n), MTU: mtu, DeviceIsRequester: side == "requester"})
	if err != nil {
		return usageErr(stderr, "script", fmt.Errorf("%s, connection %d: %w", capture, n, err))
	}
	for _, note := range notes {
		fmt.Fprintf(stderr, "rcconform script: %s, connection %d: %s\n", capture, n, note)
	}
	if out == "" {
		fmt.Fprint(stdout, text)
		return exitOK
	}
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		return usageErr(stderr, "script", fmt.Errorf("writing the script: %w", err))
	}
	return exitOK
}
