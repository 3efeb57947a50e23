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
// vendor that cannot answer the row (a role title where it does not search
// by role) is left out. A vendor's price for the row is enrich.RowPrice.
func waterfallRange(vendors []vendororder.Vendor, in *estimateInput, stages []domain.Stage) (lo, hi int64) {
	q := enrich.Question{Query: enrich.SampleQuery(in.kind), Stages: stages, Role: in.role}
	if !slices.Contains(stages, domain.StageProfile) {
		q.Query = enrich.SampleQuery(domain.InputProfileURL) // a later stage asks by the URL found
	}
	cheapestHit, allMiss, asked := int64(-1), int64(0), 0
	for _, v := range vendors {
		vq := q
		vq.Stages = slices.DeleteFunc(slices.Clone(stages), func(s domain.Stage) bool { return !slices.Contains(v.Caps.Stages, s) })
		if len(vq.Stages) == 0 || (q.Role && !v.Caps.RoleSearch) {
			continue
		}
		p := enrich.RowPrice(v.Caps, v.Price, vq)
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

// verifications are the email checks one input may need when its job asks
// verify, at most, and what one costs at worst in budget units: one per
// finder asked for its email (an invalid address sends the row on to the
// next), one for an email the cache holds; none without an email to check
// or without a verifier among the vendors (the submit refuses that).
func (p *estimatePass) verifications(emailAsked, emailCached bool) (checks int, each int64) {
	if !p.want[domain.StageVerify] || (!emailAsked && !emailCached) || !p.verify.verifier {
		return 0, 0
	}
	if emailAsked {
		return max(p.verify.finders, 1), p.verify.each
	}
	return 1, p.verify.each
}

// verifyPrice is what verifying costs with a job's vendors, the same for
// every input: whether one verifies, what a check costs at worst in budget
// units, and how many find emails.
type verifyPrice struct {
	verifier bool
	each     int64
	finders  int
}

func verifyPriceOf(vendors []vendororder.Vendor) verifyPrice {
	var vp verifyPrice
	for _, v := range vendors {
		if !vp.verifier && v.Caps.Answers(domain.StageVerify, domain.InputEmail, false) {
			q := enrich.Question{Query: enrich.SampleQuery(domain.InputEmail), Stages: []domain.Stage{domain.StageVerify}}
			vp.each, vp.verifier = enrich.SaturatedUnits(enrich.RowPrice(v.Caps, v.Price, q).Worst, v.CreditValue), true
		}
		if slices.Contains(v.Caps.Stages, domain.StageEmail) {
			vp.finders++
		}
	}
	return vp
}
