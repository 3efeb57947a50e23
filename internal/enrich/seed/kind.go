package seed

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Kind is the seed vendor's kind (kind: seed in the vendors file).
// Records kept without a kind are its own.
var Kind = enrich.Kind{Name: config.VendorSeed, New: fromSpec, ReadProfile: ParseProfileRaw, Unnamed: true,
	MaxCallCharge: maxCallCharge}

// fromSpec is the seed adapter of a vendors-file entry: its prices
// override the cost table, and the client and the adapter price with one
// book over it (learned from the answers as they come).
func fromSpec(s config.VendorSpec, o enrich.BuildOptions) (enrich.Vendor, error) {
	costs := withPrices(enrich.DefaultCosts(), s.Prices)
	book := enrich.NewPriceBook(costs, nil)
	cfg := Config{BaseURL: s.URL, APIKey: s.Key, Costs: costs, Prices: book, UserAgent: o.UserAgent}
	if !o.Describe {
		cfg.HTTPClient = &http.Client{Timeout: s.Timeout}
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return New(s.Name, c, s.HonoursKeys), nil
}

// withPrices is t with the vendors file's price overrides (prices:
// {class: n}, by the names config checks).
func withPrices(t enrich.CostTable, prices map[string]int64) enrich.CostTable {
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

// maxCallCharge is a full bulk call of rows each asking every stage at
// its most (Vendor.MaxCharge of each row).
func maxCallCharge(s config.VendorSpec) int64 {
	costs := withPrices(enrich.DefaultCosts(), s.Prices)
	var item int64
	for _, st := range []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone} {
		item += enrich.MostOf(costs, st)
	}
	return item * enrich.MaxBulkRows
}
