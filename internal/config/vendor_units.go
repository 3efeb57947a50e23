package config

import (
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
)

// MaxUnits is the most one amount may be in budget units: the largest
// charge of one call by the vendor's contract, or its monthly cap, times
// its credit_value. 8,192 of them still add up in a bigint.
const MaxUnits = 1 << 50

// fitsInUnits refuses a credit_value that the vendor's largest contract
// charge, or its monthly cap, would overflow: the product, wrapped, turns
// a spend negative, and budgets and caps then let everything pass.
func (r *entryReader) fitsInUnits(s *VendorSpec) {
	most := maxCallCharge(*s)
	if u, ok := enrich.BudgetUnits(most, s.CreditValue); !ok || u > MaxUnits {
		r.bad("credit_value", r.fields["credit_value"], "%d: the largest charge of one call by the vendor's contract (%d credits) times it is more than %d budget units (it could overflow): give the cheapest vendor 1 and the others small multiples",
			s.CreditValue, most, int64(MaxUnits))
	}
	if u, ok := enrich.BudgetUnits(s.MonthlyCredits, s.CreditValue); !ok || u > MaxUnits {
		r.bad("monthly_credits", r.fields["monthly_credits"], "%d: times credit_value %d it is more than %d budget units (it could overflow)",
			s.MonthlyCredits, s.CreditValue, int64(MaxUnits))
	}
}

// maxCallCharge is the most one call to the vendor may cost by its
// contract, in its credits: its largest bulk call of questions each at the
// contract's most (enrich.Vendor.MaxCharge), or at the configured price
// list's when that is more.
func maxCallCharge(s VendorSpec) int64 {
	switch s.Kind {
	case VendorSeed:
		contract := enrich.SeedContract()
		item := max(contract.Worst(domain.StageProfile), s.Prices["profile_by_url"], s.Prices["profile_by_search"]) +
			max(contract.Worst(domain.StageEmail), s.Prices["email_hit"], s.Prices["email_verified"], s.Prices["email_miss"]) +
			max(contract.Worst(domain.StagePhone), s.Prices["phone_hit"], s.Prices["phone_mobile"], s.Prices["phone_miss"])
		return item * enrich.MaxBulkRows
	case VendorPDL:
		return max(pdl.CreditsPerMatch, s.Prices["match"]) * int64(max(s.BatchSize, 1))
	}
	return 0
}
