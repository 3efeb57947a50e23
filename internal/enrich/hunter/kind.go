package hunter

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Kind is the Hunter-shaped vendor's kind (kind: hunter in the vendors file).
var Kind = enrich.Kind{Name: config.VendorHunter, New: fromSpec, MaxCallCharge: maxCallCharge}

// maxCallCharge: one call is one search or one verification, never both.
func maxCallCharge(s config.VendorSpec) int64 {
	return max(s.SearchCredits, s.VerifyCredits, 1)
}

// fromSpec is the adapter of a vendors-file entry: config has already
// turned credit_value and verify_credit_value into the credits of a search
// and of a verification (config.VendorSpec.SearchCredits).
func fromSpec(s config.VendorSpec, o enrich.BuildOptions) (enrich.Vendor, error) {
	cfg := Config{Name: s.Name, BaseURL: s.URL, APIKey: s.Key, UserAgent: o.UserAgent,
		SearchCredits: s.SearchCredits, VerifyCredits: s.VerifyCredits}
	if !o.Describe {
		cfg.HTTPClient = &http.Client{Timeout: s.Timeout}
	}
	return New(cfg)
}
