package enrich

import (
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
)

// The waterfall model: what a vendor is asked for a stage, the order the
// listed vendors are asked in, and what one row's stages cost at a vendor.
// The worker (internal/jobs), the vendor order (internal/vendororder) and
// the estimate (internal/service) each ask it, so that they agree.

// AskedBy is the input kind a vendor of caps c is asked stage by, for a
// row of kind k (role: its name is a role title): the row's own input, or,
// for a later stage the vendor finds only from a profile URL (the email
// and phone of a one-stage vendor), the URL an earlier stage found. ok is
// false when it cannot answer stage for such a row.
func (c Caps) AskedBy(stage domain.Stage, k domain.InputKind, role bool) (_ domain.InputKind, ok bool) {
	switch {
	case c.Answers(stage, k, role):
		return k, true
	case stage != domain.StageProfile && c.Answers(stage, domain.InputProfileURL, false):
		return domain.InputProfileURL, true
	}
	return "", false
}

// Ordered is cands in the order names gives: those named first, in its
// order, then, when rest, the others in their own order (else they are
// left out). A name that is not a candidate is skipped.
func Ordered(names, cands []string, rest bool) []string {
	out := make([]string, 0, len(cands))
	for _, n := range names {
		if slices.Contains(cands, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if rest {
		for _, n := range cands {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// RowPrice is what a vendor (its caps, its price list) charges for the
// stages of one row asked with q: one Ask where one call answers them
// (a vendor that fills every stage, or a question with the profile, which
// a bulk call buys with the stages after it), else one Ask a stage.
func RowPrice(c Caps, price func(Question) Price, q Question) Price {
	if c.FillsAll || len(q.Stages) == 1 || q.Asks(domain.StageProfile) {
		return price(q)
	}
	var sum Price
	for _, s := range q.Stages {
		one := q
		one.Stages = []domain.Stage{s}
		p := price(one)
		sum.Miss, sum.Hit, sum.Worst = sum.Miss+p.Miss, sum.Hit+p.Hit, sum.Worst+p.Worst
	}
	return sum
}

// SampleQuery is a query of kind k: price lists price by an input's kind,
// never by its content.
func SampleQuery(k domain.InputKind) ProfileQuery {
	switch k {
	case domain.InputProfileURL:
		return ProfileQuery{ProfileURL: "https://profile.example/in/x"}
	case domain.InputEmail:
		return ProfileQuery{Email: "x@example.com"}
	case domain.InputNameDomain:
		return ProfileQuery{Name: "X", Domain: "example.com"}
	}
	return ProfileQuery{Name: "X", Company: "Example"}
}
