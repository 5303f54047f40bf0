package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
)

//go:embed report.html.tmpl
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Parse(reportHTML))

// Colours of the sequence diagrams.
const (
	highlightColour = "#d0021b" // the highlighted rung: red
	rungColour      = "#34495e"
	laneColour      = "#9aa5b1"
)

// Geometry of the sequence diagrams, in SVG user units (pixels at 100%).
const (
	svgWidth    = 980
	svgTimeX    = 118 // right edge of the time column
	svgReqX     = 230 // requester lane
	svgRspX     = 670 // responder lane
	svgInfoX    = 692 // left edge of the frame and note column
	svgFirstY   = 84  // first rung
	svgRowH     = 50
	svgHeadLen  = 11
	svgHeadHalf = 5
	noteChars   = 38 // a note longer than this is cut in the diagram (the tooltip and text ladder keep it whole)
)

// WriteHTML writes r as one self-contained HTML page: a header with the run
// and its captures, the count of each verdict, a table of every clause
// result, and each finding with its acceptable outcomes, what was seen and
// its exchange as an inline SVG sequence diagram. It loads nothing: styles
// and the small script behind the side and verdict filters are inline, and
// without the script the filters stay hidden and everything shows.
func WriteHTML(w io.Writer, r *Result) error {
	if err := htmlTemplate.Execute(w, newHTMLPage(r)); err != nil {
		return fmt.Errorf("writing HTML report: %w", err)
	}
	return nil
}

type htmlPage struct {
	Title    string
	R        *Result
	Audit    bool
	Failed   bool
	NFailed  int
	Counts   []verdictCount
	Sides    []string
	Verdicts []Verdict // those present, for the filter
	Clauses  []htmlClause
	Findings []htmlFinding
}

type verdictCount struct {
	Verdict Verdict
	N       int
}

type htmlClause struct {
	ClauseResult
	FirstFinding string // anchor of its first finding, if any
}

type htmlFinding struct {
	Finding
	Anchor  string
	Number  int
	Side    string
	Verdict Verdict
	Summary string
	Ladder  string
	Diagram *svgDiagram
	QPText  string
	PSNText string
}

type svgDiagram struct {
	Width, Height     int
	TimeX, ReqX, RspX int
	InfoX, MidX       int
	LaneTop, LaneEnd  int
	Rungs             []svgRung
	LaneColour        string
	Title             string
	HeaderW, HeaderH  int
	ReqBoxX, RspBoxX  int
	HeaderY, HeaderTY int
}

type svgRung struct {
	Y, X1, X2      int
	Head           string // arrowhead polygon points
	Colour         string
	Width          string // stroke width
	Highlight      bool
	LabelY, BelowY int
	Label, Below   string
	Time           string
	Frame          string
	Note           string
	NoteY          int
	Tooltip        string
	Dir            string
}

func newHTMLPage(r *Result) *htmlPage {
	p := &htmlPage{R: r, Audit: r.Kind == KindAudit, Failed: r.Failed()}
	kind := r.Kind
	if kind == "" {
		kind = "run"
	}
	p.Title = "rcconform " + kind + " report"
	n := r.Counts()
	present := map[Verdict]bool{}
	seenSide := map[string]bool{}
	for _, c := range r.Clauses {
		present[c.Verdict] = true
		if !seenSide[c.Side] {
			seenSide[c.Side] = true
			p.Sides = append(p.Sides, c.Side)
		}
		if c.Verdict == Fail {
			p.NFailed++
		}
	}
	for _, v := range Verdicts {
		p.Counts = append(p.Counts, verdictCount{Verdict: v, N: n[v]})
		if present[v] {
			p.Verdicts = append(p.Verdicts, v)
		}
	}
	for _, c := range r.Clauses { // verdicts no renderer knows, listed once
		if !c.Verdict.Valid() && present[c.Verdict] {
			p.Verdicts = append(p.Verdicts, c.Verdict)
			present[c.Verdict] = false
		}
	}

	anchors := map[int]string{} // first finding of each clause, by clause index
	for i, f := range r.Findings {
		hf := htmlFinding{
			Finding: f,
			Anchor:  "finding-" + strconv.Itoa(i+1),
			Number:  i + 1,
			Verdict: Fail,
			Ladder:  LadderText(f.Ladder),
			QPText:  qpText(f.QP),
			PSNText: strconv.FormatUint(uint64(f.PSN), 10),
		}
		if ci := clauseOf(r, f); ci >= 0 {
			c := r.Clauses[ci]
			hf.Side, hf.Verdict, hf.Summary = c.Side, c.Verdict, c.Summary
			if _, ok := anchors[ci]; !ok {
				anchors[ci] = hf.Anchor
			}
		}
		if len(f.Ladder) > 0 {
			hf.Diagram = newDiagram(f)
		}
		p.Findings = append(p.Findings, hf)
	}
	for i, c := range r.Clauses {
		p.Clauses = append(p.Clauses, htmlClause{ClauseResult: c, FirstFinding: anchors[i]})
	}
	return p
}

// clauseOf returns the index of the clause result a finding belongs to, or -1.
func clauseOf(r *Result, f Finding) int {
	fallback := -1
	for i, c := range r.Clauses {
		if c.ID != f.ID {
			continue
		}
		if c.Capture == f.Capture {
			return i
		}
		if c.Capture == "" && fallback < 0 {
			fallback = i
		}
	}
	return fallback
}

// newDiagram lays out a finding's ladder as a sequence diagram: the
// requester's lane on the left, the responder's on the right, one arrow per
// rung from the sender's lane to the receiver's, time on the left, frame
// number and note on the right.
func newDiagram(f Finding) *svgDiagram {
	d := &svgDiagram{
		Width: svgWidth, TimeX: svgTimeX, ReqX: svgReqX, RspX: svgRspX,
		InfoX: svgInfoX, MidX: (svgReqX + svgRspX) / 2,
		LaneColour: laneColour,
		HeaderW:    150, HeaderH: 30, HeaderY: 14, HeaderTY: 34,
	}
	d.ReqBoxX = d.ReqX - d.HeaderW/2
	d.RspBoxX = d.RspX - d.HeaderW/2
	d.LaneTop = d.HeaderY + d.HeaderH
	d.Title = fmt.Sprintf("Exchange around the %s finding: %d packets between requester and responder", f.ID, len(f.Ladder))
	t0 := f.Ladder[0].TimeNS
	for i, g := range f.Ladder {
		y := svgFirstY + i*svgRowH
		from, to := d.ReqX, d.RspX
		if g.Dir == DirRspToReq {
			from, to = d.RspX, d.ReqX
		}
		sign := 1
		if to < from {
			sign = -1
		}
		base := to - sign*svgHeadLen
		rg := svgRung{
			Y: y, X1: from, X2: base,
			Head: fmt.Sprintf("%d,%d %d,%d %d,%d", to, y,
				base, y-svgHeadHalf, base, y+svgHeadHalf),
			Colour: rungColour, Width: "1.6",
			Highlight: g.Highlight,
			LabelY:    y - 8, BelowY: y + 17, NoteY: y + 17,
			Label: rungLabel(g), Below: rungBelow(g),
			Time:    "+" + relMicros(g.TimeNS-t0) + " µs",
			Note:    cut(oneLine(g.Note), noteChars),
			Tooltip: rungTooltip(g, t0),
			Dir:     g.Dir,
		}
		if i == 0 {
			rg.Time = relMicros(0) + " µs"
		}
		if g.Highlight {
			rg.Colour, rg.Width = highlightColour, "3.5"
			rg.Head = fmt.Sprintf("%d,%d %d,%d %d,%d", to, y,
				base-sign*3, y-svgHeadHalf-2, base-sign*3, y+svgHeadHalf+2)
			rg.X2 = base - sign*3
		}
		if g.Frame != 0 {
			rg.Frame = "frame " + strconv.Itoa(g.Frame)
		}
		d.Rungs = append(d.Rungs, rg)
	}
	d.LaneEnd = svgFirstY + (len(f.Ladder)-1)*svgRowH + 30
	d.Height = d.LaneEnd + 12
	return d
}

// rungLabel is the text above an arrow: opcode, PSN and A when AckReq is set.
func rungLabel(g Rung) string {
	s := oneLine(g.Opcode) + "  PSN " + strconv.FormatUint(uint64(g.PSN), 10)
	if g.AckReq {
		s += "  A"
	}
	return s
}

// rungBelow is the text under an arrow: syndrome and MSN when present.
func rungBelow(g Rung) string {
	var parts []string
	if g.Syndrome != "" {
		parts = append(parts, oneLine(g.Syndrome))
	}
	if g.MSN != nil {
		parts = append(parts, "MSN "+msnText(g.MSN))
	}
	return strings.Join(parts, "  ·  ")
}

func rungTooltip(g Rung, t0 int64) string {
	s := fmt.Sprintf("%s %s PSN %d, QP %s, time %d ns (+%s µs)", dirArrow(g.Dir), oneLine(g.Opcode),
		g.PSN, qpText(g.QP), g.TimeNS, relMicros(g.TimeNS-t0))
	if g.AckReq {
		s += ", AckReq"
	}
	if g.Syndrome != "" {
		s += ", syndrome " + oneLine(g.Syndrome)
	}
	if g.MSN != nil {
		s += ", MSN " + msnText(g.MSN)
	}
	if g.Frame != 0 {
		s += ", frame " + strconv.Itoa(g.Frame)
	}
	if g.Note != "" {
		s += ": " + oneLine(g.Note)
	}
	return s
}

// cut shortens s to n runes, ending it with an ellipsis when cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
