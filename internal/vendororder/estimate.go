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

// DefaultPoolWeight is the most asks the pool (every other tenant's
// answers) counts for in a tenant's rate: as much as the configured prior
// with no answers of the tenant's own, less and less as they come.
const DefaultPoolWeight = 20

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

// pulled is the pool's counts for k (the other tenants') scaled down to at
// most poolWeight asks: what they add to the tenant's own.
func (m *Model) pulled(k segKey) (asked, found, credits float64) {
	c := m.pool[k]
	if c.asked <= 0 || m.poolWeight <= 0 {
		return 0, 0, 0
	}
	n := min(float64(c.asked), m.poolWeight)
	f := n / float64(c.asked)
	return n, f * float64(c.found), f * float64(c.credits)
}

// rate is the share of asks v is expected to answer for seg and stage st:
// (found + pooled found + w·prior) ÷ (asked + pooled asks + w).
func (m *Model) rate(v *Vendor, seg domain.Segment, st domain.Stage) float64 {
	k := segKey{v.Name, seg, st}
	c := m.bySeg[k]
	pa, pf, _ := m.pulled(k)
	return (float64(c.found) + pf + m.weight*m.hitPrior(v, seg, st)) / (float64(c.asked) + pa + m.weight)
}

// estimate is v's estimate for segment seg and stage st.
func (m *Model) estimate(v *Vendor, seg domain.Segment, st domain.Stage) Estimate {
	k := segKey{v.Name, seg, st}
	c := m.bySeg[k]
	prior := m.hitPrior(v, seg, st)
	e := Estimate{Asked: c.asked, Found: c.found, Credits: c.credits, P: m.rate(v, seg, st)}
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
	// One stage per call: what it billed per ask (its own, and the pool's
	// pulled in), with the price list at the prior rate counted as w asks.
	pa, _, pc := m.pulled(k)
	e.Charge = cv * (float64(c.credits) + pc + m.weight*charge(price, prior)) / (float64(c.asked) + pa + m.weight)
	return e
}

// charge is the expected charge of one call by price list, answered with
// probability p.
func charge(p enrich.Price, hit float64) float64 {
	return hit*float64(p.Hit) + (1-hit)*float64(p.Miss)
}

// matchRate is the share of calls a FillsAll vendor finds a record for in
// seg: the highest of its stages' rates (a record that answers any stage
// is a match, billed), of the stages it was asked for rows of seg's kind
// (its own answers or the pool's) when there are any: a stage never asked
// (the phone of jobs that want none) is its prior alone, and would make
// every record look found.
func (m *Model) matchRate(v *Vendor, seg domain.Segment) float64 {
	var r, asked float64
	for _, st := range v.Caps.Stages {
		if !v.Caps.Answers(st, seg.Kind, false) {
			continue
		}
		k := segKey{v.Name, seg, st}
		pa, _, _ := m.pulled(k)
		if m.byKind[kindKey{v.Name, seg.Kind, st}].asked > 0 || pa > 0 {
			asked = max(asked, m.rate(v, seg, st))
		}
		r = max(r, m.rate(v, seg, st))
	}
	if asked > 0 {
		return asked
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

// explorable says whether moving vendor first still teaches something for
// a row of seg asking stages: its asks of the first of them it can answer
// are fewer than limit. Past it, rows stop exploring it there, so
// exploration costs a bounded number of rows per segment.
func (m *Model) explorable(vendor string, seg domain.Segment, stages []domain.Stage, limit int64) bool {
	v := m.vendors[vendor]
	if v == nil {
		return false
	}
	for _, st := range stages {
		if _, ok := question(v, seg.Kind, st); ok {
			return m.bySeg[segKey{v.Name, seg, st}].asked < limit
		}
	}
	return false
}
