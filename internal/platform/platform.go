// Package platform is the platform's own API: the connect flow (OAuth 2.0
// authorization code with PKCE and state), member sync jobs (task
// platform:sync, one row per connected member, each read with that member's
// own token), and two periodic steps: the dispatch of due sync chunks and
// the token sweep (refresh, expiry made loud).
//
// Member sync jobs live in the jobs and job_rows tables like vendor jobs,
// but their chunks are dispatched from platform_sync_chunks as platform:sync
// tasks, so the vendor pipeline (enrich:chunk) never sees their rows.
package platform

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/secretbox"
	"github.com/enrichq/enrichq/internal/store"
)

// Defaults of a [Config]. Lease, MaxAttempts, RetryBase, RetryMax, ChunkSize
// and Recheck default to those of vendor chunks (package jobs).
const (
	// DefaultTimeout bounds one call to the platform.
	DefaultTimeout = 30 * time.Second
	// DefaultConcurrency is the /rest/me calls in flight per chunk.
	DefaultConcurrency = 4
	// DefaultQuotaJitter spreads the rows parked by a 429 after midnight UTC.
	DefaultQuotaJitter = 5 * time.Minute
	// DefaultStateTTL is how long a connect request stays valid.
	DefaultStateTTL = 10 * time.Minute
	// DefaultExpiryWindow: members whose connection ends within it are
	// reported and refreshed.
	DefaultExpiryWindow = 7 * 24 * time.Hour
	// DefaultRewarn is how often the same member's coming expiry is logged again.
	DefaultRewarn = 24 * time.Hour
	// DefaultBatch caps the chunks and members one step handles.
	DefaultBatch = 1000
)

// Config configures a [Platform]. Client, OAuth and Box are required; zero
// values of the others take the defaults.
type Config struct {
	// Client reads /rest/me (its version was validated when it was built).
	Client *platformapi.Client
	// OAuth is the connect flow's configuration (platformapi.NewOAuth).
	OAuth *oauth2.Config
	// Box encrypts tokens and PKCE verifiers at rest.
	Box *secretbox.Box
	// HTTPClient calls the token endpoint. Default: a client with a
	// DefaultTimeout timeout. It follows no redirect (enrich.NoRedirects):
	// a token request carries the app's secret and a member's grant.
	HTTPClient *http.Client
	// ChunkSize is the members per sync task. Default jobs.DefaultChunkSize.
	ChunkSize int
	// Concurrency is the /rest/me calls in flight per chunk. Default DefaultConcurrency.
	Concurrency int
	// Lease, MaxAttempts, RetryBase and RetryMax: as for vendor chunks
	// (same defaults). Only transient failures count attempts.
	Lease       time.Duration
	MaxAttempts int
	RetryBase   time.Duration
	RetryMax    time.Duration
	// QuotaJitter spreads the rows parked by a 429 over this much time after
	// the next midnight UTC (plus one second). Default DefaultQuotaJitter.
	QuotaJitter time.Duration
	// StateTTL is how long a connect request (state, PKCE verifier) stays
	// valid. Default DefaultStateTTL.
	StateTTL time.Duration
	// ExpiryWindow: members whose connection ends within it are reported
	// (logs, GET /v1/platform/members?expiring_within=) and their tokens
	// refreshed when a refresh token is held. Default DefaultExpiryWindow.
	ExpiryWindow time.Duration
	// Rewarn is how often the same member's coming expiry is logged again. Default DefaultRewarn.
	Rewarn time.Duration
	// Recheck is how long a chunk handed to the queue is trusted to be there. Default jobs.DefaultRecheck.
	Recheck time.Duration
	// Batch caps the chunks and members one step handles. Default DefaultBatch.
	Batch int
	// Now and Rand are injectable for tests: due times, token lives and
	// midnight UTC run on Now.
	Now  func() time.Time
	Rand func() float64
}

func (c *Config) fill() {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	c.HTTPClient = enrich.NoRedirects(c.HTTPClient)
	c.ChunkSize = positive(c.ChunkSize, jobs.DefaultChunkSize)
	c.Concurrency = positive(c.Concurrency, DefaultConcurrency)
	c.Lease = positive(c.Lease, jobs.DefaultLease)
	c.MaxAttempts = positive(c.MaxAttempts, jobs.DefaultMaxAttempts)
	c.RetryBase = positive(c.RetryBase, jobs.DefaultRetryBase)
	c.RetryMax = positive(c.RetryMax, jobs.DefaultRetryMax)
	c.QuotaJitter = positive(c.QuotaJitter, DefaultQuotaJitter)
	c.StateTTL = positive(c.StateTTL, DefaultStateTTL)
	c.ExpiryWindow = positive(c.ExpiryWindow, DefaultExpiryWindow)
	c.Rewarn = positive(c.Rewarn, DefaultRewarn)
	c.Recheck = positive(c.Recheck, jobs.DefaultRecheck)
	c.Batch = positive(c.Batch, DefaultBatch)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// positive is v, or def when v is zero or negative.
func positive[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Platform runs everything of the platform's own API: connect flow, member
// sync jobs, and the work of its periodic steps.
type Platform struct {
	store *store.Store
	enq   *jobs.Enqueuer
	cfg   Config
	log   *slog.Logger
}

// New builds a Platform. Without a Box (no encryption key) it refuses:
// tokens are never stored in the clear. enq may be nil where nothing is
// enqueued (the worker).
func New(st *store.Store, enq *jobs.Enqueuer, cfg Config, log *slog.Logger) (*Platform, error) {
	switch {
	case cfg.Box == nil:
		return nil, errors.New("platform: an encryption key for member tokens is required (ENRICHQ_PLATFORM_TOKEN_KEY)")
	case cfg.Client == nil:
		return nil, errors.New("platform: a platform client is required")
	case cfg.OAuth == nil:
		return nil, errors.New("platform: the OAuth configuration is required")
	}
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	return &Platform{store: st, enq: enq, cfg: cfg, log: log}, nil
}

// ExpiryWindow is the configured window of expiry reports.
func (p *Platform) ExpiryWindow() time.Duration { return p.cfg.ExpiryWindow }

// ConnectTTL is how long a connect request stays valid.
func (p *Platform) ConnectTTL() time.Duration { return p.cfg.StateTTL }

// Settings is what a binary knows of the platform: its configuration as
// read from the environment (its API, the OAuth app, the key of member
// tokens), and the tuning its member syncs share with vendor chunks (zero:
// the defaults).
type Settings struct {
	config.Platform
	Timeout                time.Duration // of one call to the platform; default DefaultTimeout
	ChunkSize, MaxAttempts int
	Lease                  time.Duration
}

// Open builds the Platform of a binary from its settings: the version is
// validated before any call, and member tokens are never handled without
// the encryption key. enq is nil in the worker.
func Open(st *store.Store, enq *jobs.Enqueuer, s Settings, log *slog.Logger) (*Platform, error) {
	httpClient := &http.Client{Timeout: cmp.Or(s.Timeout, DefaultTimeout)}
	client, err := platformapi.NewClient(platformapi.Config{BaseURL: s.URL, Version: s.Version,
		HTTPClient: httpClient, UserAgent: "enrichq"})
	if err != nil {
		return nil, err
	}
	oauth, err := platformapi.NewOAuth(platformapi.OAuthConfig{AuthURL: s.AuthURL, TokenURL: s.TokenURL,
		ClientID: s.ClientID, ClientSecret: s.ClientSecret, RedirectURL: s.RedirectURL})
	if err != nil {
		return nil, err
	}
	keys, err := secretbox.ParseKeys(s.TokenKey)
	if err != nil {
		return nil, fmt.Errorf("configuration: ENRICHQ_PLATFORM_TOKEN_KEY: %w", err)
	}
	box, err := secretbox.New(keys...)
	if err != nil {
		return nil, fmt.Errorf("configuration: ENRICHQ_PLATFORM_TOKEN_KEY: %w", err)
	}
	return New(st, enq, Config{Client: client, OAuth: oauth, Box: box, HTTPClient: httpClient,
		ChunkSize: s.ChunkSize, Lease: s.Lease, MaxAttempts: s.MaxAttempts, ExpiryWindow: s.ExpiryWindow}, log)
}

// clipText cuts s to n bytes, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
