package main

import (
	"log/slog"

	"github.com/enrichq/enrichq/internal/config"
	_ "github.com/enrichq/enrichq/internal/enrich/vendors" // every kind of vendor
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

// newService is the service every door of the API calls: REST, the web
// page and MCP get this one, and reach the store through it alone.
func newService(cfg config.API, st *store.Store, enq *jobs.Enqueuer, plat *platform.Platform, log *slog.Logger) *service.Service {
	limits := ingest.DefaultLimits()
	limits.MaxBytes = cfg.MaxUploadBytes
	limits.MaxLookups = cfg.MaxRows
	return service.New(service.Config{
		Store: st,
		Submitter: &service.Submitter{Store: st, Enqueuer: enq, Log: log, ChunkSize: cfg.ChunkSize, Window: cfg.JobWindow,
			VendorRPS: cfg.VendorRPS, Bulk: cfg.VendorBulk, Account: cfg.VendorAccount,
			WebhooksEnabled: cfg.Webhooks.Enabled(), AllowPrivateCallbacks: cfg.Webhooks.AllowPrivate},
		Platform:         plat,
		Limits:           limits,
		StatusCacheTTL:   cfg.StatusCache,
		UploadsPerTenant: cfg.UploadsPerTenant,
		UploadsTotal:     cfg.UploadsTotal,
		ErasureKey:       []byte(cfg.ErasureKey),
		Vendors:          cfg.Vendors,
		Watches:          cfg.Watches,
	})
}

// openPlatform is the platform's own API: nil unless configured, an error
// when half-configured.
func openPlatform(cfg config.API, st *store.Store, enq *jobs.Enqueuer, log *slog.Logger) (*platform.Platform, error) {
	if !cfg.Platform.Enabled() {
		return nil, nil
	}
	settings := platform.Settings{Platform: cfg.Platform, ChunkSize: cfg.ChunkSize}
	return platform.Open(st, enq, settings, log.With("component", "platform"))
}
