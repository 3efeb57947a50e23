package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/jobs"
)

// vendorConfigs builds the processor's vendors from the configured ones, in
// the file's order: each behind its adapter, with its own limiter shared by
// every worker under its key, its account and allowance. A seed vendor's
// price list is learned from its answers, shared through Postgres (the
// processor reads it again as it goes), the cost table until then; its
// client and the processor price with the same book.
func vendorConfigs(vs config.Vendors, rdb *redis.Client, log *slog.Logger) ([]jobs.VendorConfig, error) {
	out := make([]jobs.VendorConfig, 0, len(vs.List))
	for _, s := range vs.List {
		limiter, err := ratelimit.New(rdb, ratelimit.Options{
			Key:     ratelimit.KeyPrefix(s.Key),
			Rate:    s.Rate,
			Burst:   max(s.Burst, 1),
			MaxWait: 20 * time.Second,
			Logger:  log.With("component", "ratelimit", "vendor", s.Name),
		})
		if err != nil {
			return nil, fmt.Errorf("vendor %s: %w", s.Name, err)
		}
		vc := jobs.VendorConfig{Limiter: limiter, Account: s.Account(), Allowance: s.Allowance(), CreditValue: s.CreditValue, NoBulk: !s.Bulk}
		switch s.Kind {
		case config.VendorSeed:
			prices := enrich.NewPriceBook(enrich.DefaultCosts(), nil)
			c, err := enrich.NewClient(enrich.Config{BaseURL: s.URL, APIKey: s.Key, HTTPClient: &http.Client{Timeout: s.Timeout},
				UserAgent: "enrichq-worker", Prices: prices})
			if err != nil {
				return nil, fmt.Errorf("vendor %s: %w", s.Name, err)
			}
			vc.Vendor, vc.Prices = enrich.NewSeed(s.Name, c, s.HonoursKeys), prices
		case config.VendorPDL:
			v, err := pdl.New(pdl.Config{Name: s.Name, BaseURL: s.URL, APIKey: s.Key, HTTPClient: &http.Client{Timeout: s.Timeout},
				MinLikelihood: s.MinLikelihood, Required: s.Required, BatchSize: s.BatchSize, UserAgent: "enrichq-worker"})
			if err != nil {
				return nil, fmt.Errorf("vendor %s: %w", s.Name, err)
			}
			vc.Vendor = v
		default:
			return nil, fmt.Errorf("vendor %s: unknown kind %q", s.Name, s.Kind)
		}
		out = append(out, vc)
	}
	return out, nil
}
