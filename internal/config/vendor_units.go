package config

// MaxUnits is the most one amount may be in budget units: the largest
// charge of one call by the vendor's contract (checked where adapters are
// built, enrich.Build), or its monthly cap, times its credit_value. 8,192 of
// them still add up in a bigint.
const MaxUnits = 1 << 50

// fitsInUnits refuses a monthly cap that, times credit_value, could
// overflow: the product, wrapped, turns a spend negative, and the cap then
// lets everything pass.
func (r *entryReader) fitsInUnits(s *VendorSpec) {
	if s.MonthlyCredits == 0 || s.CreditValue == 0 {
		return
	}
	if s.MonthlyCredits > MaxUnits/s.CreditValue {
		r.bad("monthly_credits", r.fields["monthly_credits"], "%d: times credit_value %d it is more than %d budget units (it could overflow)",
			s.MonthlyCredits, s.CreditValue, int64(MaxUnits))
	}
}
