package reports

import (
	"fmt"
	"strconv"
	"strings"
)

// highlightMarker ends the line of the highlighted rung in a text ladder.
const highlightMarker = "<== "

// LadderText draws rungs as a fixed-width text ladder, one line per packet
// under a header line: the time since the first rung in microseconds, the
// direction as an arrow between the requester ("req") and the responder
// ("rsp"), the opcode, the PSN, "A" when AckReq is set, the AETH syndrome,
// the MSN, and the frame number (the column is left out when no rung has
// one). The highlighted rung's line ends with "<== " and its note; other
// notes follow their line. It returns "" for no rungs.
func LadderText(rungs []Rung) string {
	if len(rungs) == 0 {
		return ""
	}
	withFrames := false
	for _, g := range rungs {
		if g.Frame != 0 {
			withFrames = true
		}
	}
	header := []string{"t(us)", "dir", "opcode", "PSN", "A", "syndrome", "MSN"}
	rightAligned := []bool{true, false, false, true, false, false, true}
	if withFrames {
		header = append(header, "frame")
		rightAligned = append(rightAligned, true)
	}
	rows := [][]string{header}
	t0 := rungs[0].TimeNS
	for _, g := range rungs {
		a := ""
		if g.AckReq {
			a = "A"
		}
		row := []string{
			relMicros(g.TimeNS - t0),
			dirArrow(g.Dir),
			oneLine(g.Opcode),
			strconv.FormatUint(uint64(g.PSN), 10),
			a,
			oneLine(g.Syndrome),
			msnText(g.MSN),
		}
		if withFrames {
			f := ""
			if g.Frame != 0 {
				f = strconv.Itoa(g.Frame)
			}
			row = append(row, f)
		}
		rows = append(rows, row)
	}
	width := make([]int, len(header))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	for i, row := range rows {
		var line strings.Builder
		for j, cell := range row {
			if j > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[j]-len([]rune(cell)))
			if rightAligned[j] {
				line.WriteString(pad + cell)
			} else {
				line.WriteString(cell + pad)
			}
		}
		if i > 0 {
			g := rungs[i-1]
			note := oneLine(g.Note)
			switch {
			case g.Highlight:
				line.WriteString("  " + highlightMarker + note)
			case note != "":
				line.WriteString("      " + note)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// relMicros formats a duration in nanoseconds as microseconds with three
// decimals: 12500 -> "12.500".
func relMicros(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return fmt.Sprintf("%s%d.%03d", sign, ns/1000, ns%1000)
}

func dirArrow(dir string) string {
	switch dir {
	case DirReqToRsp:
		return "req --> rsp"
	case DirRspToReq:
		return "req <-- rsp"
	}
	return "req  ?  rsp"
}

func msnText(msn *uint32) string {
	if msn == nil {
		return ""
	}
	return strconv.FormatUint(uint64(*msn), 10)
}

// oneLine folds line breaks and tabs into spaces, so a note cannot break the
// ladder's columns.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
