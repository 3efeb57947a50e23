package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	_ "github.com/enrichq/enrichq/internal/enrich/vendors" // every kind of vendor
	"github.com/enrichq/enrichq/internal/jobs"
)

// vendorConfigs builds the processor's vendors from the configured ones, in
// the file's order: each behind its adapter (enrich.Build, as the vendor
// order and the estimate build it: the file's prices reach the
// reservations), with its own limiter shared by every worker under its key,
// its account and allowance. An adapter whose answers teach its prices
// keeps its price book, which the processor loads with what every worker
// learned (Postgres) as it goes.
func vendorConfigs(vs config.Vendors, rdb *redis.Client, log *slog.Logger) ([]jobs.VendorConfig, error) {
	out := make([]jobs.VendorConfig, 0, len(vs.List))
	for _, s := range vs.List {
		limiter, err := ratelimit.New(rdb, ratelimit.Options{
			Key:     ratelimit.KeyPrefix(string(s.Key)),
			Rate:    s.Rate,
			Burst:   max(s.Burst, 1),
			MaxWait: 20 * time.Second,
			Logger:  log.With("component", "ratelimit", "vendor", s.Name),
		})
		if err != nil {
			return nil, fmt.Errorf("vendor %s: %w", s.Name, err)
		}
		v, err := enrich.Build(s, enrich.BuildOptions{UserAgent: "enrichq-worker"})
		if err != nil {
			return nil, err
		}
		out = append(out, jobs.VendorConfig{Vendor: v, Limiter: limiter, Account: s.Account(), Allowance: s.Allowance(),
			CreditValue: s.CreditValue, NoBulk: !s.Bulk})
	}
	return out, nil
}
