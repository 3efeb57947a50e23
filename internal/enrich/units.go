package enrich

import "math"

// BudgetUnits is credits of a vendor in budget units: credits times its
// credit_value. ok is false when the product does not fit in an int64 (it
// would wrap, and a wrapped spend turns negative: budgets and caps pass).
func BudgetUnits(credits, creditValue int64) (units int64, ok bool) {
	if credits == 0 || creditValue == 0 {
		return 0, true
	}
	if (credits == -1 && creditValue == math.MinInt64) || (creditValue == -1 && credits == math.MinInt64) {
		return 0, false
	}
	p := credits * creditValue
	if p/creditValue != credits {
		return 0, false
	}
	return p, true
}

// SaturatedUnits is BudgetUnits held to the int64 range when it does not
// fit: the largest (or, for negative credits, the smallest) int64, which
// no budget covers.
func SaturatedUnits(credits, creditValue int64) int64 {
	if u, ok := BudgetUnits(credits, creditValue); ok {
		return u
	}
	if (credits < 0) != (creditValue < 0) {
		return math.MinInt64
	}
	return math.MaxInt64
}
