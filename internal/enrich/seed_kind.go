package enrich

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/config"
)

// SeedKind is the seed vendor's kind (kind: seed in the vendors file).
// Records kept without a kind are its own.
var SeedKind = Kind{Name: config.VendorSeed, New: seedFromSpec, ReadProfile: ParseProfileRaw, Unnamed: true,
	MaxCallCharge: seedMaxCallCharge}

// seedFromSpec is the seed adapter of a vendors-file entry: its prices
// override the cost table, and the client and the adapter price with one
// book over it (learned from the answers as they come).
func seedFromSpec(s config.VendorSpec, o BuildOptions) (Vendor, error) {
	costs := DefaultCosts().With(s.Prices)
	book := NewPriceBook(costs, nil)
	cfg := Config{BaseURL: s.URL, APIKey: s.Key, Costs: costs, Prices: book, UserAgent: o.UserAgent}
	if !o.Describe {
		cfg.HTTPClient = &http.Client{Timeout: s.Timeout}
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return NewSeed(s.Name, c, s.HonoursKeys), nil
}

// With is t with the vendors file's price overrides (prices: {class: n},
// by the names config checks).
func (t CostTable) With(prices map[string]int64) CostTable {
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
