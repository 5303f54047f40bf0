package reports

// plan chooses which parts of a grouped report fit a size budget. Every
// renderer with a limit (Markdown for a comment, HTML for a light page)
// pre-renders its parts and asks plan which to keep, in priority order:
//
//  1. every clause's header with its exact counts (always kept);
//  2. the first instance of each clause's biggest group, drawn in full, so
//     that every failed clause shows at least one drawn instance;
//  3. each group's summary line (count, first and last instance);
//  4. the first instance of every other group, then the second of every
//     group, and so on up to [DrawnPerGroup];
//  5. the instances not drawn, listed one line each (renderers that list).
//
// Within a priority, clauses come in report order and groups biggest
// first; a part that does not fit is left out and smaller ones after it
// may still fit.
type plan struct {
	budget int
	used   int
	// groupShown[c][g]: group g of clause c has its summary line.
	groupShown [][]bool
	// drawn[c][g]: how many instances of group g of clause c are drawn.
	drawn [][]int
	// listed[c][g]: how many instances after the drawn ones are listed.
	listed [][]int
}

// planCosts gives the size of each part; any func may be nil when the
// renderer has no such part.
type planCosts struct {
	header func(c int) int
	group  func(c, g int) int
	drawn  func(c, g, k int) int
	listed func(c, g, k int) int
	// maxListed caps the instances listed per group (0: none listed).
	maxListed int
}

func (p *plan) fits(n int) bool {
	if p.used+n > p.budget {
		return false
	}
	p.used += n
	return true
}

func newPlan(cfs []ClauseFindings, budget int, costs planCosts) *plan {
	p := &plan{budget: budget}
	p.groupShown = make([][]bool, len(cfs))
	p.drawn = make([][]int, len(cfs))
	p.listed = make([][]int, len(cfs))
	for c := range cfs {
		p.groupShown[c] = make([]bool, len(cfs[c].Groups))
		p.drawn[c] = make([]int, len(cfs[c].Groups))
		p.listed[c] = make([]int, len(cfs[c].Groups))
		if costs.header != nil {
			p.used += costs.header(c)
		}
	}
	group := func(c, g int) bool {
		if p.groupShown[c][g] {
			return true
		}
		n := 0
		if costs.group != nil {
			n = costs.group(c, g)
		}
		if p.fits(n) {
			p.groupShown[c][g] = true
		}
		return p.groupShown[c][g]
	}
	draw := func(c, g int) {
		k := p.drawn[c][g]
		if k >= cfs[c].Groups[g].Count() || k >= DrawnPerGroup || !group(c, g) {
			return
		}
		if p.fits(costs.drawn(c, g, k)) {
			p.drawn[c][g]++
		}
	}
	for c := range cfs { // 2
		if len(cfs[c].Groups) > 0 {
			draw(c, 0)
		}
	}
	for c := range cfs { // 3
		for g := range cfs[c].Groups {
			group(c, g)
		}
	}
	for round := 0; round < DrawnPerGroup; round++ { // 4
		for c := range cfs {
			for g := range cfs[c].Groups {
				if p.drawn[c][g] == round {
					draw(c, g)
				}
			}
		}
	}
	if costs.listed != nil && costs.maxListed > 0 { // 5
		for c := range cfs {
			for g := range cfs[c].Groups {
				if !p.groupShown[c][g] {
					continue
				}
				for k := p.drawn[c][g]; k < cfs[c].Groups[g].Count() && p.listed[c][g] < costs.maxListed; k++ {
					if !p.fits(costs.listed(c, g, k)) {
						break
					}
					p.listed[c][g]++
				}
			}
		}
	}
	return p
}

// leftOut counts what the plan leaves out: groups without their summary
// line, and instances neither drawn nor listed.
func (p *plan) leftOut(cfs []ClauseFindings) (groups, instances int) {
	for c := range cfs {
		for g := range cfs[c].Groups {
			if !p.groupShown[c][g] {
				groups++
			}
			instances += cfs[c].Groups[g].Count() - p.drawn[c][g] - p.listed[c][g]
		}
	}
	return groups, instances
}
