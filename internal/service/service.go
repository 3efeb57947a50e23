// Package service is what a tenant's API key can do, whatever the door it
// comes in by: estimate and submit jobs, follow them, read their results and
// the results feed, change a budget, cancel.
//
// The doors (REST in internal/httpapi, the web page in internal/web, MCP in
// internal/mcpserver) call it and nothing below it: none imports the store or
// internal/jobs, so that none can disagree with another on money or tenancy.
// cmd/api builds the service and hands it to them. The platform's routes
// come in by platform.go.
//
// Every operation takes the caller's Principal first and checks the scope it
// needs. Errors are few: ErrNotFound (a *NotFoundError names what was not
// found: "job not found"), ErrConflict (or a *ConflictError that
// says why), ErrUnavailable, ErrNoTenant, *ForbiddenError (the scope lacking)
// and *InvalidError (what is wrong, with details); an upload's own problems
// come as the parser's *ingest.Error. Each front door maps them once.
package service

import (
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// Config is what the service needs. Store and Submitter are required.
type Config struct {
	Store     *store.Store
	Submitter *Submitter
	// Platform serves the platform's own API (platform.go); nil: its
	// operations answer ErrPlatformNotConfigured.
	Platform *platform.Platform
	// Limits bound an upload; a zero MaxBytes takes ingest.DefaultLimits'.
	// Front doors parse uploads with them (Service.Limits).
	Limits ingest.Limits
	// Now is the clock for computed fields (eta_seconds); default time.Now.
	Now func() time.Time
	// StatusCacheTTL is how long a job's status is served from memory
	// (config.API.StatusCache); 0 reads Postgres every time.
	StatusCacheTTL time.Duration
	// Uploads bound the tenants' stored uploads (uploads.go).
	Uploads UploadLimits
	// SpoolDir is where a stored .xlsx is written to be read again;
	// "" is the system's temporary directory.
	SpoolDir string
	// ErasureKey keys the hashes of erasures (ENRICHQ_ERASURE_KEY); empty:
	// erasures are refused with ErrErasureNotConfigured. A Submitter
	// without its own checks uploads against the list with it.
	ErasureKey []byte
	// UploadsPerTenant and UploadsTotal cap the uploads received or parsed
	// at once, per tenant and in all, whatever the door (uploadslots.go);
	// more are refused with a *TooManyUploadsError. Defaults
	// DefaultUploadsPerTenant and DefaultUploadsTotal.
	UploadsPerTenant int
	UploadsTotal     int
	// Vendors are the configured vendors (config.API.Vendors), shown by
	// Vendors with what the automatic order learned of them.
	Vendors config.Vendors
	// Watches bound a tenant's watches (config.API.Watches); zero fields
	// take their defaults.
	Watches WatchLimits
}

// Service carries out a tenant's operations. It holds no state but the
// status cache: Postgres (through the store) is the truth.
type Service struct {
	store      *store.Store
	submit     *Submitter
	platform   *platform.Platform
	limits     ingest.Limits
	now        func() time.Time
	statuses   *statusCache
	uploads    UploadLimits
	spoolDir   string
	erasureKey []byte
	slots      *uploadSlots
	downloads  chan struct{} // a slot per download at once (DownloadsAtOnce)
	vendors    config.Vendors
	// watchLimits are Config.Watches with their defaults.
	watchLimits WatchLimits
	// described is vendors as the order sees them (vendors.go).
	describeOnce sync.Once
	described    []vendororder.Vendor
	describeErr  error
}

// New returns the service of cfg.
func New(cfg Config) *Service {
	if cfg.Store == nil || cfg.Submitter == nil {
		panic("service: Config.Store and Config.Submitter are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.ErasureKey) > 0 && len(cfg.Submitter.ErasureKey) == 0 {
		cfg.Submitter.ErasureKey = cfg.ErasureKey // one key for the list and its checks
	}
	if cfg.Limits.MaxBytes <= 0 {
		cfg.Limits.MaxBytes = ingest.DefaultLimits().MaxBytes
	}
	return &Service{store: cfg.Store, submit: cfg.Submitter, platform: cfg.Platform, limits: cfg.Limits, now: cfg.Now,
		statuses: newStatusCache(cfg.StatusCacheTTL, cfg.Now), uploads: cfg.Uploads.withDefaults(), spoolDir: cfg.SpoolDir,
		erasureKey: cfg.ErasureKey, slots: newUploadSlots(cfg.UploadsPerTenant, cfg.UploadsTotal),
		downloads: make(chan struct{}, DownloadsAtOnce), vendors: cfg.Vendors, watchLimits: cfg.Watches.WithDefaults()}
}

// Limits are the bounds an upload is parsed with.
func (s *Service) Limits() ingest.Limits { return s.limits }
