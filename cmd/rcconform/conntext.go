package main

import (
	"fmt"
	"io"

	"github.com/rcconform/rcconform/reports"
)

// writeConnections prints the connections an audit found, one line each:
// requester and responder (address and QP), their first PSNs, the
// settings with where each came from (cm, flag, observed; "?" for
// unknown), whether the capture holds the connection from its start, and
// the CM messages seen; then the captures' notes (flags that contradict a
// handshake, CRCs the capture lacks).
func writeConnections(w io.Writer, r *reports.Result) {
	if len(r.Connections) > 0 {
		fmt.Fprintf(w, "\n== Connections ==\n")
		tw := newTable(w, 0)
		fmt.Fprintln(tw, "REQUESTER\tRESPONDER\tFIRST PSN\tMTU\tSRQ\tACK TMO\tRETRY\tRNR RETRY\tRESP RES\tCOMPLETE\tCM\tCAPTURE")
		for _, c := range r.Connections {
			f := c.Fields()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				f.Requester, f.Responder, f.FirstPSN, f.MTU, f.SRQ, f.AckTimeout, f.RetryCnt, f.RNRRetry,
				f.ResponderResources, f.Complete, f.Handshake, c.Capture)
		}
		tw.Flush()
	}
	for _, c := range r.Captures {
		if len(c.Notes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nnotes on %s:\n", c.File)
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
}
