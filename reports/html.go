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

// HTMLLimit is the size an HTML report aims to stay within: the verdict
// table, every clause header and every kind always, then drawn instances
// and listed instances as they fit.
const HTMLLimit = 2_000_000

// htmlMaxListed bounds the instances listed (one table row each) per kind.
const htmlMaxListed = 1000

// HTMLOptions tune [WriteHTMLOptions].
type HTMLOptions struct {
	// Limit is the size in bytes the page aims to stay within; 0 means
	// HTMLLimit.
	Limit int
}

// WriteHTML writes r as one self-contained HTML page with the default
// options: see [WriteHTMLOptions].
func WriteHTML(w io.Writer, r *Result) error { return WriteHTMLOptions(w, r, HTMLOptions{}) }

// WriteHTMLOptions writes r as one self-contained HTML page: a header with
// the run and its captures, the count of each verdict, a table of every
// clause result, and the violations grouped per clause by kind (see
// [GroupFindings]). Each kind is a collapsible block (its count, first and
// last instance) holding its first instances drawn in full (acceptable
// outcomes, what was seen, the exchange as an inline SVG sequence diagram)
// and the others listed one line each. The first kind of each clause is
// open. The page stays within o.Limit as long as the table and the kinds'
// summaries leave room: instances are drawn and listed as they fit, the
// first of every clause first, and the page says how many are left out.
// It loads nothing: styles and the small script behind the side and
// verdict filters are inline, and without the script the filters stay
// hidden and everything shows.
func WriteHTMLOptions(w io.Writer, r *Result, o HTMLOptions) error {
	limit := o.Limit
	if limit <= 0 {
		limit = HTMLLimit
	}
	p, err := newHTMLPage(r, limit)
	if err != nil {
		return fmt.Errorf("writing HTML report: %w", err)
	}
	if err := htmlTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("writing HTML report: %w", err)
	}
	return nil
}

type htmlPage struct {
	Title       string
	R           *Result
	Audit       bool
	Failed      bool
	NFailed     int
	Counts      []verdictCount
	Sides       []string
	Verdicts    []Verdict // those present, for the filter
	Clauses     []htmlClause
	Violations  int
	Findings    []htmlClauseFindings
	LeftOut     int // instances neither drawn nor listed
	LeftOutText string
	// The one-page summary (Certificate), cut to htmlSummaryMost lines
	// per list; the Not* fields count what was cut.
	Cert                    Certificate
	NotDevice, NotNotPassed int
}

// htmlSummaryMost bounds the device fields and the clause results not
// passed that the summary lists (the table below has every one).
const htmlSummaryMost = 60

// htmlEvidenceLen bounds one clause's evidence in the summary.
const htmlEvidenceLen = 200

type verdictCount struct {
	Verdict Verdict
	N       int
}

type htmlClause struct {
	ClauseResult
	VerdictText  string
	FirstFinding string   // anchor of its findings, if any
	Doubts       []string // its undecided instances by kind (UndecidedLines)
}

// htmlClauseFindings is the findings of one clause result.
type htmlClauseFindings struct {
	Anchor     string
	Side       string
	Verdict    Verdict
	ID         string
	Summary    string
	Capture    string
	CountLine  string
	ClauseText string
	NotKept    int
	Groups     []htmlGroup
}

// htmlGroup is one kind of finding.
type htmlGroup struct {
	Anchor   string
	Open     bool
	Count    int
	Headline string
	Span     string
	Drawn    []template.HTML
	Rows     []template.HTML
	NotShown int
}

type htmlFinding struct {
	Finding
	Anchor  string
	Number  int
	Of      int
	Ladder  string
	Diagram *svgDiagram
	QPText  string
	PSNText string
}

type htmlRow struct {
	Number  int
	Place   string
	QPText  string
	PSNText string
	Message string
	Seen    string
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

func newHTMLPage(r *Result, limit int) (*htmlPage, error) {
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

	p.Cert = r.Certificate()
	if n := len(p.Cert.Device); n > htmlSummaryMost {
		p.Cert.Device, p.NotDevice = p.Cert.Device[:htmlSummaryMost], n-htmlSummaryMost
	}
	if n := len(p.Cert.NotPassed); n > htmlSummaryMost {
		p.Cert.NotPassed, p.NotNotPassed = p.Cert.NotPassed[:htmlSummaryMost], n-htmlSummaryMost
	}
	for i := range p.Cert.NotPassed {
		if ev := &p.Cert.NotPassed[i].Evidence; len(*ev) > htmlEvidenceLen {
			*ev = strings.ToValidUTF8((*ev)[:htmlEvidenceLen], "") + "…"
		}
	}

	cfs := GroupFindings(r)
	anchors := map[int]string{} // findings of each clause, by clause index
	for ci := range cfs {
		cf := &cfs[ci]
		hc := htmlClauseFindings{
			Anchor: "clause-" + strconv.Itoa(ci+1), Side: cf.Clause.Side, Verdict: cf.Clause.Verdict,
			ID: cf.Clause.ID, Summary: cf.Clause.Summary, Capture: cf.Clause.Capture, NotKept: cf.NotKept,
		}
		hc.CountLine = cf.KindCount()
		if cf.Clause.Checked > 0 {
			hc.CountLine += fmt.Sprintf(" in %d checked", cf.Clause.Checked)
		}
		if cf.Clause.Undecided > 0 {
			hc.CountLine += fmt.Sprintf(", %d undecided", cf.Clause.Undecided)
		}
		if cf.Index >= 0 {
			anchors[cf.Index] = hc.Anchor
		} else {
			hc.Verdict = Fail
		}
		for gi := range cf.Groups {
			g := &cf.Groups[gi]
			if hc.ClauseText == "" {
				hc.ClauseText = g.First().Clause
			}
			hc.Groups = append(hc.Groups, htmlGroup{
				Anchor: hc.Anchor + "-kind-" + strconv.Itoa(gi+1), Open: gi == 0,
				Count: g.Count(), Headline: g.Headline(), Span: g.Span(),
			})
		}
		p.Findings = append(p.Findings, hc)
		p.Violations += cf.Violations()
	}
	for i, c := range r.Clauses {
		p.Clauses = append(p.Clauses, htmlClause{ClauseResult: c, VerdictText: VerdictText(c), FirstFinding: anchors[i], Doubts: UndecidedLines(c)})
	}

	// The page without instances, to know the room left for them.
	var skeleton countWriter
	if err := htmlTemplate.Execute(&skeleton, p); err != nil {
		return nil, err
	}
	drawn := map[[3]int]template.HTML{}
	var renderErr error
	draw := func(c, g, k int) template.HTML {
		key := [3]int{c, g, k}
		if h, ok := drawn[key]; ok {
			return h
		}
		h, err := renderInstance(&cfs[c].Groups[g], k)
		if err != nil && renderErr == nil {
			renderErr = err
		}
		drawn[key] = h
		return h
	}
	rows := map[[3]int]template.HTML{}
	row := func(c, g, k int) template.HTML {
		key := [3]int{c, g, k}
		if h, ok := rows[key]; ok {
			return h
		}
		h, err := renderRow(cfs[c].Groups[g].Findings[k], k)
		if err != nil && renderErr == nil {
			renderErr = err
		}
		rows[key] = h
		return h
	}
	pl := newPlan(cfs, limit-skeleton.n-4096, planCosts{
		drawn:     func(c, g, k int) int { return len(draw(c, g, k)) },
		listed:    func(c, g, k int) int { return len(row(c, g, k)) },
		maxListed: htmlMaxListed,
	})
	if renderErr != nil {
		return nil, renderErr
	}
	for c := range cfs {
		for g := range cfs[c].Groups {
			hg := &p.Findings[c].Groups[g]
			for k := 0; k < pl.drawn[c][g]; k++ {
				hg.Drawn = append(hg.Drawn, draw(c, g, k))
			}
			for k := pl.drawn[c][g]; k < pl.drawn[c][g]+pl.listed[c][g]; k++ {
				hg.Rows = append(hg.Rows, row(c, g, k))
			}
			hg.NotShown = hg.Count - len(hg.Drawn) - len(hg.Rows)
			p.LeftOut += hg.NotShown
		}
	}
	return p, nil
}

// renderInstance draws instance k of g in full.
func renderInstance(g *Group, k int) (template.HTML, error) {
	f := g.Findings[k]
	hf := htmlFinding{
		Finding: f,
		Number:  k + 1,
		Of:      g.Count(),
		Ladder:  LadderText(f.Ladder),
		QPText:  qpText(f.QP),
		PSNText: strconv.FormatUint(uint64(f.PSN), 10),
	}
	if len(f.Ladder) > 0 {
		hf.Diagram = newDiagram(f)
	}
	var b strings.Builder
	if err := htmlTemplate.ExecuteTemplate(&b, "instance", hf); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil // #nosec: html/template escaped it
}

// renderRow lists instance k in one table row.
func renderRow(f Finding, k int) (template.HTML, error) {
	var b strings.Builder
	err := htmlTemplate.ExecuteTemplate(&b, "row", htmlRow{
		Number: k + 1, Place: instancePlace(f), QPText: qpText(f.QP),
		PSNText: strconv.FormatUint(uint64(f.PSN), 10), Message: oneLine(f.Message), Seen: oneLine(f.Seen),
	})
	if err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
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
