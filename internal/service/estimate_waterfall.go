package service

import (
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// waterfallRange is what one row's uncached stages can cost across the
// vendors of the waterfall, in budget units, whatever order they are asked
// in: at least the cheaper of "the first vendor asked answers at its hit
// price" and "every vendor misses, each billing its miss"; at most every
// vendor asked and billed its worst (each misses, billed, but the last). A
// vendor that cannot answer the row (a role title at pdl) is left out.
func waterfallRange(vendors []vendororder.Vendor, in *estimateInput, stages []domain.Stage) (lo, hi int64) {
	q := enrich.Question{Query: sampleQuery(in.kind), Stages: stages, Role: in.role}
	if !slices.Contains(stages, domain.StageProfile) {
		q.Query = enrich.ProfileQuery{ProfileURL: "https://profile.example/in/x"} // a later stage asks by the URL found
	}
	cheapestHit, allMiss, asked := int64(-1), int64(0), 0
	for _, v := range vendors {
		vq := q
		vq.Stages = slices.DeleteFunc(slices.Clone(stages), func(s domain.Stage) bool { return !slices.Contains(v.Caps.Stages, s) })
		if len(vq.Stages) == 0 || (q.Role && !v.Caps.RoleSearch) {
			continue
		}
		p := priceOf(v, vq)
		if p.Worst == 0 && p.Hit == 0 && p.Miss == 0 {
			continue // refused before any call
		}
		asked++
		hi += enrich.SaturatedUnits(p.Worst, v.CreditValue)
		allMiss += enrich.SaturatedUnits(p.Miss, v.CreditValue)
		if h := enrich.SaturatedUnits(p.Hit, v.CreditValue); cheapestHit < 0 || h < cheapestHit {
			cheapestHit = h
		}
	}
	if asked == 0 {
		return 0, 0
	}
	return min(cheapestHit, allMiss), hi
}

// sampleQuery is a query of kind k: prices depend on the input's kind only.
func sampleQuery(k domain.InputKind) enrich.ProfileQuery {
	switch k {
	case domain.InputProfileURL:
		return enrich.ProfileQuery{ProfileURL: "https://profile.example/in/x"}
	case domain.InputEmail:
		return enrich.ProfileQuery{Email: "x@example.com"}
	case domain.InputNameDomain:
		return enrich.ProfileQuery{Name: "X", Domain: "example.com"}
	}
	return enrich.ProfileQuery{Name: "X", Company: "Example"}
}

// jobVendors are the vendors a job's waterfall asks: its own `vendors`
// option when it has one (names checkVendors accepted), else every
// configured vendor.
func jobVendors(all []vendororder.Vendor, names []string) []vendororder.Vendor {
	if len(names) == 0 {
		return all
	}
	var out []vendororder.Vendor
	for _, n := range names {
		if i := slices.IndexFunc(all, func(v vendororder.Vendor) bool { return v.Name == n }); i >= 0 {
			out = append(out, all[i])
		}
	}
	return out
}

// priceOf is v's price for q: one Ask, or, at a vendor that answers one
// stage an Ask and finds later stages by a profile URL, one Ask a stage.
func priceOf(v vendororder.Vendor, q enrich.Question) enrich.Price {
	if v.Caps.FillsAll || len(q.Stages) == 1 || slices.Contains(q.Stages, domain.StageProfile) {
		return v.Price(q)
	}
	var sum enrich.Price
	for _, s := range q.Stages {
		one := q
		one.Stages = []domain.Stage{s}
		p := v.Price(one)
		sum.Miss, sum.Hit, sum.Worst = sum.Miss+p.Miss, sum.Hit+p.Hit, sum.Worst+p.Worst
	}
	return sum
}
