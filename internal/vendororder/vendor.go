package vendororder

import (
	"fmt"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Vendor is what the order knows of one vendor: what it answers, what it
// charges, what its credits are worth, and the answer rate to assume
// before any answer.
type Vendor struct {
	Name string
	Caps enrich.Caps
	// Price is its price list (enrich.Vendor.Price), in its credits.
	Price func(enrich.Question) enrich.Price
	// CreditValue is budget units per credit (config credit_value).
	CreditValue int64
	// PriorHitRate is the answer rate assumed until answers say otherwise
	// (config prior_hit_rate).
	PriorHitRate float64
	// Adapter is the adapter described (its optional capabilities, such as
	// a price book its answers teach); Account its key's id, under which
	// what it taught is kept ("" when not configured from a file).
	Adapter enrich.Vendor
	Account string
}

// Of describes an adapter with its configured credit value and prior.
func Of(v enrich.Vendor, creditValue int64, priorHitRate float64) Vendor {
	return Vendor{Name: v.Name(), Caps: v.Caps(), Price: v.Price, CreditValue: creditValue, PriorHitRate: priorHitRate, Adapter: v}
}

// FromSpecs describes the configured vendors, each by the adapter the
// worker builds (enrich.Build, with the file's prices), made only to be
// described: the API, which may hold no vendor key, describes vendors as
// the worker does.
func FromSpecs(specs []config.VendorSpec) ([]Vendor, error) {
	out := make([]Vendor, 0, len(specs))
	for _, s := range specs {
		cv, prior := s.CreditValue, s.PriorHitRate
		if cv < 1 {
			cv = config.DefaultCreditValue
		}
		if prior <= 0 || prior > 1 {
			prior = config.DefaultPriorHitRate
		}
		a, err := enrich.Build(s, enrich.BuildOptions{Describe: true})
		if err != nil {
			return nil, fmt.Errorf("vendororder: %w", err)
		}
		v := Of(a, cv, prior)
		v.Account = s.Account()
		out = append(out, v)
	}
	return out, nil
}
