package harness

import "github.com/rcconform/rcconform/harness/trace"

// Step is what the reconstruction said before one record was absorbed.
type Step struct {
	Rec        *trace.Record
	Exp        ExpectedPSN
	Class      ReqClass
	Dropped305 bool
}

// Exposed is a one-connection audit with the reconstruction's steps.
type Exposed struct {
	Conn  *Conn
	Steps []Step
}

type stepper struct{ e *Exposed }

func (s stepper) Observe(c *Conn, r *trace.Record) {
	st := Step{Rec: r, Exp: c.Expected(), Dropped305: c.Dropped(305)}
	if r.Dir == trace.ToResponder {
		st.Class = c.Classify(r.Packet.PSN)
	}
	s.e.Steps = append(s.e.Steps, st)
}
func (stepper) End(*Conn) {}

// ExposeAudit runs recs through an Auditor whose only checker records the
// reconstruction before each record.
func ExposeAudit(recs []*trace.Record, s Settings) *Exposed {
	e := &Exposed{}
	a := NewAuditor(s, NewSink("t"))
	a.mons = []Monitor{{Clause: "probe", New: func(*Conn) Checker { return stepper{e} }}}
	for _, r := range recs {
		a.Observe(r)
	}
	a.End()
	e.Conn = a.conns[0]
	return e
}
