package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// vendorOrder is the worker's vendor order: the vendors file's list when it
// gives one, else auto (the default): vendororder.Auto, learning into
// rates (Postgres, shared by every worker) and refreshed from it in the
// background. stop ends the refreshing after writing what is pending; call
// it once the chunks in flight are done.
func vendorOrder(ctx context.Context, v config.Vendors, rates vendororder.Rates, reg prometheus.Registerer, log *slog.Logger) (order jobs.Orderer, stop func(), err error) {
	if len(v.Order) > 0 {
		return vendororder.Listed{Names: v.Order}, func() {}, nil
	}
	vendors, err := vendororder.FromSpecs(v.List)
	if err != nil {
		return nil, nil, err
	}
	auto := vendororder.New(vendors, rates, vendororder.Options{Explore: v.Explore, Gauges: metrics.NewVendorRates(reg),
		Log: log.With("component", "vendororder")})
	if err := auto.Refresh(ctx); err != nil { // the priors until the next refresh
		log.Warn("vendor order: reading the observed rates", "err", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); auto.Run(rctx) }()
	return auto, func() { cancel(); <-done }, nil
}
