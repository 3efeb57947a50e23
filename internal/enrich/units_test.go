package enrich

import (
	"math"
	"testing"
)

// Credits times credit_value, checked: the charge of the issue (one that
// times 2 wraps into a negative spend) is refused, never wrapped.
func TestBudgetUnitsNeverWrap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		credits, value, want int64
		ok                   bool
		saturated            int64
	}{
		{25, 2, 50, true, 50},
		{0, math.MaxInt64, 0, true, 0},
		{1_000_000_000, 2, 2_000_000_000, true, 2_000_000_000},
		{9223372036854275808, 2, 0, false, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, 0, false, math.MaxInt64},
		{-9223372036854275808, 2, 0, false, math.MinInt64},
		{math.MinInt64, -1, 0, false, math.MaxInt64},
		{-5, 3, -15, true, -15},
	} {
		got, ok := BudgetUnits(tc.credits, tc.value)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BudgetUnits(%d, %d) = %d, %v; want %d, %v", tc.credits, tc.value, got, ok, tc.want, tc.ok)
		}
		if s := SaturatedUnits(tc.credits, tc.value); s != tc.saturated {
			t.Errorf("SaturatedUnits(%d, %d) = %d, want %d", tc.credits, tc.value, s, tc.saturated)
		}
	}
}
