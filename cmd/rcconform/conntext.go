package main

import (
	"fmt"
	"io"
	"strconv"

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
			src := func(key, v string) string {
				if s := c.Source[key]; s != "" && v != "?" {
					return v + " (" + s + ")"
				}
				return v
			}
			st := c.Settings
			srq := "?"
			if st.SRQ != nil {
				srq = map[bool]string{true: "yes", false: "no"}[*st.SRQ]
			}
			complete := "no"
			if c.Complete {
				complete = "yes"
			}
			cm := c.Handshake
			if cm == "" {
				cm = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				endpoint(c.Requester), endpoint(c.Responder), u32s(c.FirstPSN.Requester), u32s(c.FirstPSN.Responder),
				src("mtu", ints(st.MTU)), src("srq", srq), src("ack_timeout", ints(st.AckTimeout)),
				src("retry_cnt", ints(st.RetryCnt)), src("rnr_retry", ints(st.RNRRetry)),
				src("responder_resources", ints(st.ResponderResources)), complete, cm, c.Capture)
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

func endpoint(e reports.Endpoint) string {
	if e.QPN == nil {
		return e.Addr + " QP ?"
	}
	return fmt.Sprintf("%s QP 0x%06x", e.Addr, *e.QPN)
}

func u32s(v *uint32) string {
	if v == nil {
		return "?"
	}
	return strconv.FormatUint(uint64(*v), 10)
}

func ints(v *int) string {
	if v == nil {
		return "?"
	}
	return strconv.Itoa(*v)
}
