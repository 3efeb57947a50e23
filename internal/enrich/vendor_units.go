package enrich

import (
	"fmt"

	"github.com/enrichq/enrichq/internal/config"
)

// fitsInUnits refuses an entry whose largest contract charge of one call,
// times its credit_value, is more than config.MaxUnits: the product, wrapped,
// would turn a spend negative, and budgets and caps would then let
// everything pass. Every program builds its adapters at start, so it is
// refused there.
func fitsInUnits(s config.VendorSpec, k Kind) error {
	if k.MaxCallCharge == nil {
		return nil
	}
	most := k.MaxCallCharge(s)
	if u, ok := BudgetUnits(most, s.CreditValue); !ok || u > config.MaxUnits {
		return fmt.Errorf("vendor %s: credit_value %d: the largest charge of one call by the vendor's contract (%d credits) times it is more than %d budget units (it could overflow): give the cheapest vendor 1 and the others small multiples",
			s.Name, s.CreditValue, most, int64(config.MaxUnits))
	}
	return nil
}
