package vendororder

import (
	"math"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// DefaultPriorWeight is how many asks the prior counts for: a segment's
// rate is (found + w·prior) ÷ (asked + w), so the first answers move it
// little and a hundred answers mostly decide it.
const DefaultPriorWeight = 20

// Estimate is what the model holds of one vendor for one segment and stage.
type Estimate struct {
	// Asked, Found and Credits are the observed counts (credits in the
	// vendor's own).
	Asked   int64
	Found   int64
	Credits int64
	// P is the share of asks it is expected to answer: the observed share
	// blended with its prior.
	P float64
	// Charge is the expected charge of one ask of this stage alone, hit or
	// miss, in budget units (credits × credit_value).
	Charge float64
}

// PerAnswer is Charge ÷ P, the expected charge per answer: the order of one
// stage alone. +Inf when P is 0.
func (e Estimate) PerAnswer() float64 {
	if e.P <= 0 {
		return math.Inf(1)
	}
	return e.Charge / e.P
}

// counts are observed sums.
type counts struct{ asked, found, credits int64 }

func (c *counts) add(r store.VendorRate) {
	c.asked += r.Asked
	c.found += r.Found
	c.credits += r.Credits
}

type segKey struct {
	vendor string
	seg    domain.Segment
	stage  domain.Stage
}

type kindKey struct {
	vendor string
	kind   domain.InputKind
	stage  domain.Stage
}

// blend is the Beta-prior mean: the observed x of n with prior mean m
// counted as w observations.
func blend(x, n int64, m, w float64) float64 {
	return (float64(x) + w*m) / (float64(n) + w)
}

// hitPrior is the answer rate assumed for vendor v in segment seg before
// seg's own answers: what v answered for the other segments of the same
// input kind, blended with its configured prior_hit_rate. A vendor that
// found half of the French rows is expected to do about as well on Belgian
// ones before any of them is asked.
func (m *Model) hitPrior(v *Vendor, seg domain.Segment, st domain.Stage) float64 {
	k := m.byKind[kindKey{v.Name, seg.Kind, st}]
	own := m.bySeg[segKey{v.Name, seg, st}]
	return blend(k.found-own.found, k.asked-own.asked, v.PriorHitRate, m.weight)
}

// estimate is v's estimate for segment seg and stage st.
func (m *Model) estimate(v *Vendor, seg domain.Segment, st domain.Stage) Estimate {
	c := m.bySeg[segKey{v.Name, seg, st}]
	prior := m.hitPrior(v, seg, st)
	e := Estimate{Asked: c.asked, Found: c.found, Credits: c.credits, P: blend(c.found, c.asked, prior, m.weight)}
	q, ok := question(v, seg.Kind, st)
	if !ok {
		return Estimate{Asked: c.asked, Found: c.found, Credits: c.credits}
	}
	price := v.Price(q)
	cv := float64(v.CreditValue)
	if v.Caps.FillsAll {
		// A call is billed by its match, whatever stage it was asked for:
		// priced by the list at the vendor's match rate (matchRate).
		e.Charge = cv * charge(price, m.matchRate(v, seg))
		return e
	}
	// One stage per call: what it billed per ask, with the price list at
	// the prior rate counted as w asks.
	e.Charge = cv * (float64(c.credits) + m.weight*charge(price, prior)) / (float64(c.asked) + m.weight)
	return e
}

// charge is the expected charge of one call by price list, answered with
// probability p.
func charge(p enrich.Price, hit float64) float64 {
	return hit*float64(p.Hit) + (1-hit)*float64(p.Miss)
}

// matchRate is the share of calls a FillsAll vendor finds a record for in
// seg: the highest of its stages' rates (a record that answers any stage
// is a match, billed).
func (m *Model) matchRate(v *Vendor, seg domain.Segment) float64 {
	var r float64
	for _, st := range v.Caps.Stages {
		if v.Caps.Answers(st, seg.Kind, false) {
			c := m.bySeg[segKey{v.Name, seg, st}]
			r = max(r, blend(c.found, c.asked, m.hitPrior(v, seg, st), m.weight))
		}
	}
	return r
}

// question is the question v is asked for stage st of a row of kind k
// (enrich.Caps.AskedBy): with the row's input, or, at a vendor that finds
// this stage from a profile URL only, with the URL a profile stage found.
// false: v cannot answer st for such a row.
func question(v *Vendor, k domain.InputKind, st domain.Stage) (enrich.Question, bool) {
	by, ok := v.Caps.AskedBy(st, k, false)
	if !ok {
		return enrich.Question{}, false
	}
	return enrich.Question{Query: enrich.SampleQuery(by), Stages: []domain.Stage{st}}, true
}
