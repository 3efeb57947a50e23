package config

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/watches"
)

// API configures cmd/api, the submit API.
type API struct {
	Common
	// Addr is the API's listen address (ENRICHQ_API_ADDR, default
	// 127.0.0.1:8080; port 0 picks one). /metrics is served on it too.
	Addr string
	// BehindTLSProxy says browsers reach the API over HTTPS through a proxy
	// that ends TLS and forwards plain HTTP (ENRICHQ_BEHIND_TLS_PROXY,
	// default false): the web page's cookies are then always Secure and
	// its answers carry Strict-Transport-Security.
	BehindTLSProxy bool
	// Keys maps a bootstrap API key to its tenant (ENRICHQ_API_KEYS,
	// "tenant:key[,tenant:key...]", each key at least 8 characters; default
	// none: then keys created with `api keys create` must exist). Secrets.
	Keys map[string]string
	// MaxUploadBytes caps an upload's body (ENRICHQ_MAX_UPLOAD_BYTES, default
	// 64 MiB, at least 1024).
	MaxUploadBytes int64
	// MaxRows caps the lookups of one job after role expansion
	// (ENRICHQ_MAX_ROWS, default 1,000,000, 1 to 100,000,000).
	MaxRows int
	// ShutdownTimeout bounds a graceful stop (ENRICHQ_SHUTDOWN_TIMEOUT, default 30s).
	ShutdownTimeout time.Duration
	// VendorRPS and VendorBulk: the vendor's rate and call form, for the
	// estimates of dry runs; the workers' variables (ENRICHQ_VENDOR_RPS,
	// ENRICHQ_VENDOR_BULK, defaults 10 and true).
	VendorRPS  float64
	VendorBulk bool
	// VendorAccount is the vendor key's id (VendorAccount of
	// ENRICHQ_VENDOR_KEY, the workers' variable; default "": estimates price
	// by the cost table alone), whose learned prices estimates use. The
	// key itself is only hashed, never kept.
	VendorAccount string
	// Webhooks: callbacks are accepted at submit only when enabled.
	Webhooks Webhooks
	// Platform: the connect flow's routes, when enabled.
	Platform Platform
	// MCPMaxBudget caps the budget of a job an assistant submits or raises
	// through MCP (/mcp, docs/mcp.md) with a key that has no ceiling of its
	// own (`api keys create --mcp-max-budget`) (ENRICHQ_MCP_MAX_BUDGET,
	// default 1000 credits; 0: such keys cannot spend through MCP).
	MCPMaxBudget int64
	// MCPMaxDailyBudget caps what a key without a daily ceiling of its own
	// (`api keys create --mcp-max-daily-budget`) commits through MCP in a
	// UTC day: budgets submitted and increases raised
	// (ENRICHQ_MCP_MAX_DAILY_BUDGET; default nil: 5 times the key's
	// per-job ceiling; 0: such keys cannot spend through MCP).
	MCPMaxDailyBudget *int64
	// MCPAllowedOrigins are the browser origins whose pages may call /mcp
	// (ENRICHQ_MCP_ALLOWED_ORIGINS, comma-separated, like
	// https://assistant.example.com; default none). A request with an Origin
	// header not listed is a 403; one without (no browser) passes.
	MCPAllowedOrigins []string
	// ErasureKey keys the HMAC that replaces an erased person's inputs in
	// the suppression list and the credit ledger (ENRICHQ_ERASURE_KEY, at
	// least 32 characters; default none: erasures are refused). A secret:
	// changing it forgets every suppression.
	ErasureKey string
	// Vendors: every configured vendor (ENRICHQ_VENDORS_FILE; their keys
	// are read when set, not required), or the one seed vendor of the
	// ENRICHQ_VENDOR_* variables. With the file, VendorRPS and VendorBulk
	// are its first seed vendor's.
	Vendors Vendors
	// Watches bound a tenant's watches (docs/watches.md): how many it has
	// (ENRICHQ_MAX_WATCHES, default 20, 1 to 100,000), how many it makes in
	// an hour, deleted ones too (ENRICHQ_WATCH_CREATES_PER_HOUR, default 10,
	// 1 to 100,000), the least time between two runs of one watch asked for
	// now (ENRICHQ_WATCH_RUN_INTERVAL, default 1h, 1s to 720h).
	Watches watches.Limits

	// Tuning, not read from the environment.

	// StatusCache is how long a job's status is served from memory (default
	// DefaultStatusCache; 0 reads Postgres on every poll).
	StatusCache time.Duration
	// ChunkSize is the rows per chunk task (0: jobs.DefaultChunkSize).
	ChunkSize int
	// JobWindow is how many chunks of one job are in the queue at once
	// (0: store.DefaultWindow).
	JobWindow int
	// DBMaxConns is the size of the API's Postgres pool (default
	// DefaultAPIDBMaxConns); a pool_max_conns in DATABASE_URL wins. Uploads
	// are spooled to disk before they take a connection, so the pool is for
	// short work.
	DBMaxConns int32
	// DBStatementTimeout is the statement_timeout of the API's sessions
	// (default DefaultAPIStatementTimeout; it bounds an upload's COPY too).
	DBStatementTimeout time.Duration
	// DBIdleInTxTimeout is their idle_in_transaction_session_timeout
	// (default DefaultAPIIdleInTxTimeout): a transaction left open by a bug
	// or a stuck process ends and frees its locks.
	DBIdleInTxTimeout time.Duration
	// UploadsPerTenant and UploadsTotal cap the uploads received or parsed
	// at once, by every door, per tenant and in all
	// (ENRICHQ_UPLOADS_PER_TENANT, ENRICHQ_UPLOADS_TOTAL; 0: the defaults
	// of internal/service, 4 and 16). Each takes memory and temporary disk
	// (docs/uploads.md): the total is what the process's limits allow.
	UploadsPerTenant int
	UploadsTotal     int
}

func defaultAPI() API {
	return API{Common: defaultCommon(), Addr: DefaultAPIAddr, Keys: map[string]string{}, MaxUploadBytes: DefaultMaxUploadBytes,
		MaxRows: DefaultMaxRows, ShutdownTimeout: DefaultShutdownTimeout, VendorRPS: DefaultVendorRPS, VendorBulk: true,
		StatusCache: DefaultStatusCache, MCPMaxBudget: DefaultMCPMaxBudget, DBMaxConns: DefaultAPIDBMaxConns,
		DBStatementTimeout: DefaultAPIStatementTimeout, DBIdleInTxTimeout: DefaultAPIIdleInTxTimeout,
		Watches: watches.Limits{}.WithDefaults()}
}

// APIFromEnv maps the environment (getenv: os.Getenv in production) onto
// the API's defaults and validates the result.
func APIFromEnv(getenv func(string) string) (API, error) {
	c := defaultAPI()
	err := load(getenv, func(r *reader) {
		c.Common.read(r)
		r.str("ENRICHQ_API_ADDR", &c.Addr)
		r.bool("ENRICHQ_BEHIND_TLS_PROXY", &c.BehindTLSProxy)
		r.apiKeys("ENRICHQ_API_KEYS", c.Keys)
		r.int64("ENRICHQ_MAX_UPLOAD_BYTES", &c.MaxUploadBytes)
		r.int("ENRICHQ_MAX_ROWS", &c.MaxRows)
		r.int("ENRICHQ_UPLOADS_TOTAL", &c.UploadsTotal)
		r.int("ENRICHQ_UPLOADS_PER_TENANT", &c.UploadsPerTenant)
		r.duration("ENRICHQ_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
		r.float("ENRICHQ_VENDOR_RPS", &c.VendorRPS)
		r.bool("ENRICHQ_VENDOR_BULK", &c.VendorBulk)
		var vendorKey string
		r.str("ENRICHQ_VENDOR_KEY", &vendorKey)
		c.VendorAccount = VendorAccount(vendorKey)
		r.int64("ENRICHQ_MCP_MAX_BUDGET", &c.MCPMaxBudget)
		r.optionalInt64("ENRICHQ_MCP_MAX_DAILY_BUDGET", &c.MCPMaxDailyBudget)
		r.origins("ENRICHQ_MCP_ALLOWED_ORIGINS", &c.MCPAllowedOrigins)
		c.Webhooks.read(r)
		c.Platform.read(r)
		r.str("ENRICHQ_ERASURE_KEY", &c.ErasureKey)
		r.int("ENRICHQ_MAX_WATCHES", &c.Watches.MaxPerTenant)
		r.int("ENRICHQ_WATCH_CREATES_PER_HOUR", &c.Watches.CreatesPerHour)
		r.duration("ENRICHQ_WATCH_RUN_INTERVAL", &c.Watches.RunInterval)
		c.Vendors = readVendors(r, Vendor{URL: getenv("ENRICHQ_VENDOR_URL"), Key: getenv("ENRICHQ_VENDOR_KEY"), RPS: c.VendorRPS,
			Burst: DefaultVendorBurst, Bulk: c.VendorBulk, HonoursKeys: domain.HonoursKeysAuto, Timeout: DefaultVendorTimeout}, false)
		if s, ok := c.Vendors.Seed(); ok && c.Vendors.File != "" {
			c.VendorRPS, c.VendorBulk = s.Rate, s.Bulk
		}
	}, func() error { return c.validate() })
	return c, err
}

func (c API) validate() error {
	errs := []error{
		c.Common.validate(),
		inRange("ENRICHQ_MAX_UPLOAD_BYTES", c.MaxUploadBytes, 1024, 1<<40),
		inRange("ENRICHQ_MAX_ROWS", c.MaxRows, 1, 100_000_000),
		inRange("ENRICHQ_UPLOADS_TOTAL", c.UploadsTotal, 0, 10_000),
		inRange("ENRICHQ_UPLOADS_PER_TENANT", c.UploadsPerTenant, 0, 10_000),
		inRange("ENRICHQ_VENDOR_RPS", c.VendorRPS, 0.01, 100000),
		inRange("ENRICHQ_MCP_MAX_BUDGET", c.MCPMaxBudget, 0, 1<<53),
		optionalInRange("ENRICHQ_MCP_MAX_DAILY_BUDGET", c.MCPMaxDailyBudget, 0, 1<<53),
		inRange("ENRICHQ_MAX_WATCHES", c.Watches.MaxPerTenant, 1, 100_000),
		inRange("ENRICHQ_WATCH_CREATES_PER_HOUR", c.Watches.CreatesPerHour, 1, 100_000),
		durationInRange("ENRICHQ_WATCH_RUN_INTERVAL", c.Watches.RunInterval, time.Second, 720*time.Hour),
		c.Platform.validate(),
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("ENRICHQ_API_ADDR: empty"))
	}
	errs = append(errs, checkErasureKey(c.ErasureKey))
	var short []string
	for key, tenant := range c.Keys {
		if len(key) < 8 {
			short = append(short, tenant)
		}
	}
	sort.Strings(short)
	for _, tenant := range short {
		errs = append(errs, fmt.Errorf("ENRICHQ_API_KEYS: the key of tenant %q is shorter than 8 characters", tenant))
	}
	return errors.Join(errs...)
}

// checkErasureKey refuses an erasure key too short, never quoting it.
func checkErasureKey(key string) error {
	if key != "" && len(key) < 32 {
		return fmt.Errorf("ENRICHQ_ERASURE_KEY: %d characters; at least 32 are needed", len(key))
	}
	return nil
}

// durationInRange refuses a duration outside [lo, hi], in Go's notation.
func durationInRange(name string, v, lo, hi time.Duration) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s=%s: want a duration from %s to %s", name, v, lo, hi)
	}
	return nil
}
