package vendororder

import (
	"fmt"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
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
}

// Of describes an adapter with its configured credit value and prior.
func Of(v enrich.Vendor, creditValue int64, priorHitRate float64) Vendor {
	return Vendor{Name: v.Name(), Caps: v.Caps(), Price: v.Price, CreditValue: creditValue, PriorHitRate: priorHitRate}
}

// priceListKey is the key the adapters are made with when only their
// capabilities and price lists are read: no call is ever made with it, so
// the API, which may hold no vendor key, describes vendors as the worker
// does.
const priceListKey = "price-list-only"

// FromSpecs describes the configured vendors, their price lists with the
// file's prices overrides.
func FromSpecs(specs []config.VendorSpec) ([]Vendor, error) {
	out := make([]Vendor, 0, len(specs))
	for _, s := range specs {
		v, err := fromSpec(s)
		if err != nil {
			return nil, fmt.Errorf("vendororder: vendor %s: %w", s.Name, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func fromSpec(s config.VendorSpec) (Vendor, error) {
	cv, prior := s.CreditValue, s.PriorHitRate
	if cv < 1 {
		cv = config.DefaultCreditValue
	}
	if prior <= 0 || prior > 1 {
		prior = config.DefaultPriorHitRate
	}
	switch s.Kind {
	case config.VendorSeed:
		c, err := enrich.NewClient(enrich.Config{BaseURL: s.URL, APIKey: priceListKey, Costs: seedCosts(s.Prices)})
		if err != nil {
			return Vendor{}, err
		}
		return Of(enrich.NewSeed(s.Name, c, s.HonoursKeys), cv, prior), nil
	case config.VendorPDL:
		a, err := pdl.New(pdl.Config{Name: s.Name, BaseURL: s.URL, APIKey: priceListKey, BatchSize: s.BatchSize})
		if err != nil {
			return Vendor{}, err
		}
		v := Of(a, cv, prior)
		if m, ok := s.Prices["match"]; ok { // one price per match, whatever it holds
			v.Price = func(q enrich.Question) enrich.Price {
				p := a.Price(q)
				if p.Worst > 0 {
					p.Hit, p.Worst = m, m
				}
				return p
			}
		}
		return v, nil
	}
	return Vendor{}, fmt.Errorf("unknown kind %q", s.Kind)
}

// seedCosts is the seed's cost table with the file's overrides.
func seedCosts(prices map[string]int64) enrich.CostTable {
	t := enrich.DefaultCosts()
	for class, c := range prices {
		switch class {
		case "profile_by_url":
			t.ProfileByURL = c
		case "profile_by_search":
			t.ProfileBySearch = c
		case "email_hit":
			t.EmailHit = c
		case "email_verified":
			t.EmailVerified = c
		case "email_miss":
			t.EmailMiss = c
		case "phone_hit":
			t.PhoneHit = c
		case "phone_mobile":
			t.PhoneMobile = c
		case "phone_miss":
			t.PhoneMiss = c
		}
	}
	return t
}

// sampleQuery is a query of kind k, for the price lists (which price by
// kind, never by content).
func sampleQuery(k domain.InputKind) enrich.ProfileQuery {
	switch k {
	case domain.InputProfileURL:
		return enrich.ProfileQuery{ProfileURL: "https://linkedin.com/in/sample"}
	case domain.InputEmail:
		return enrich.ProfileQuery{Email: "sample@example.com"}
	case domain.InputNameCompany:
		return enrich.ProfileQuery{Name: "Sample", Company: "Example"}
	}
	return enrich.ProfileQuery{Name: "Sample", Domain: "example.com"}
}
