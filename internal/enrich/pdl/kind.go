package pdl

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Kind is the PDL-shaped vendor's kind (kind: pdl in the vendors file).
var Kind = enrich.Kind{Name: config.VendorPDL, New: fromSpec, ReadProfile: ParseProfileRaw, MaxCallCharge: maxCallCharge}

// maxCallCharge is a full batch of matches at the price of a match.
func maxCallCharge(s config.VendorSpec) int64 {
	return max(CreditsPerMatch, s.Prices["match"]) * int64(max(s.BatchSize, 1))
}

// fromSpec is the adapter of a vendors-file entry: its prices' `match` is
// the price of a match.
func fromSpec(s config.VendorSpec, o enrich.BuildOptions) (enrich.Vendor, error) {
	cfg := Config{Name: s.Name, BaseURL: s.URL, APIKey: s.Key, MinLikelihood: s.MinLikelihood, Required: s.Required,
		BatchSize: s.BatchSize, UserAgent: o.UserAgent}
	if !o.Describe {
		cfg.HTTPClient = &http.Client{Timeout: s.Timeout}
	}
	if m, ok := s.Prices["match"]; ok {
		cfg.CreditsPerMatch = &m
	}
	return New(cfg)
}

var _ enrich.Records = (*Vendor)(nil)

// Kind is the adapter's kind: its person records are read back by
// ParseProfileRaw.
func (v *Vendor) Kind() string { return string(Kind.Name) }
