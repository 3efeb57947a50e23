// Package config reads enrichq's configuration from the environment
// (12-factor). Every binary reads the same variables; each field says what
// it does and its default. Load fills defaults and validates in one place.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/secretbox"
)

// Config is enrichq's configuration.
type Config struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	DatabaseURL string
	// RedisURL is the Redis used by asynq and the rate limiter (REDIS_URL).
	RedisURL string
	// Migrate applies pending migrations at start (ENRICHQ_MIGRATE, default true).
	Migrate bool
	// LogFormat is json or text (ENRICHQ_LOG_FORMAT; default text on a terminal, else json).
	LogFormat string
	// LogLevel is debug, info, warn or error (ENRICHQ_LOG_LEVEL, default info).
	LogLevel slog.Level

	// APIAddr is the submit API's listen address (ENRICHQ_API_ADDR, default 127.0.0.1:8080).
	APIAddr string
	// APIKeys maps a bootstrap API key to its tenant (ENRICHQ_API_KEYS, "tenant:key[,tenant:key...]").
	APIKeys map[string]string
	// MaxUploadBytes caps an upload's body (ENRICHQ_MAX_UPLOAD_BYTES, default 64 MiB).
	MaxUploadBytes int64
	// MaxRows caps the lookups of one job after role expansion (ENRICHQ_MAX_ROWS, default 1,000,000).
	MaxRows int

	// VendorURL is the enrichment vendor's base URL, without /v1 (ENRICHQ_VENDOR_URL).
	VendorURL string
	// VendorKey is the vendor API key (ENRICHQ_VENDOR_KEY). A secret: never logged.
	VendorKey string
	// VendorRPS is the vendor's rate limit for this key, requests/second (ENRICHQ_VENDOR_RPS, default 10).
	VendorRPS float64
	// VendorBurst is the burst the limiter allows (ENRICHQ_VENDOR_BURST, default 1).
	VendorBurst int
	// VendorBulk uses POST /v1/bulk when true (ENRICHQ_VENDOR_BULK, default true).
	VendorBulk bool
	// VendorMarksReplays: the vendor marks its Idempotency-Key replays with
	// Idempotent-Replayed: true, so a fresh answer proves earlier sends of
	// its key were not billed (ENRICHQ_VENDOR_MARKS_REPLAYS, default false:
	// they stay counted at their reservation).
	VendorMarksReplays bool
	// CacheRaw writes cached answers in the raw form, which every worker
	// from v0.5 on reads and workers before v0.5 read as a miss
	// (ENRICHQ_CACHE_RAW, default true since v0.7): set it false while a
	// worker older than v0.5 can still run beside these, or after a rollback
	// to one.
	CacheRaw bool
	// VendorTimeout bounds one vendor call (ENRICHQ_VENDOR_TIMEOUT, default 30s).
	VendorTimeout time.Duration
	// VendorMonthlyCredits caps the credits of the vendor key per calendar
	// month (UTC), across every job and worker (ENRICHQ_VENDOR_MONTHLY_CREDITS,
	// default 0: no cap; usage is tracked either way).
	VendorMonthlyCredits int64

	// PlatformURL and PlatformVersion: the platform's base URL and YYYYMM version
	// (ENRICHQ_PLATFORM_URL, ENRICHQ_PLATFORM_VERSION). The version is checked
	// as six digits YYYYMM here, at start, before any call.
	PlatformURL     string
	PlatformVersion string
	// PlatformAuthURL and PlatformTokenURL: the platform's OAuth 2.0 consent
	// screen and token endpoint (ENRICHQ_PLATFORM_AUTH_URL, ENRICHQ_PLATFORM_TOKEN_URL).
	PlatformAuthURL  string
	PlatformTokenURL string
	// PlatformClientID and PlatformClientSecret: the app registered at the
	// platform (ENRICHQ_PLATFORM_CLIENT_ID, ENRICHQ_PLATFORM_CLIENT_SECRET).
	// The secret is never logged.
	PlatformClientID     string
	PlatformClientSecret string
	// PlatformRedirectURL is enrichq's callback as registered at the platform,
	// ending in /v1/platform/callback (ENRICHQ_PLATFORM_REDIRECT_URL).
	PlatformRedirectURL string
	// PlatformTokenKey encrypts member tokens at rest (AES-256-GCM): 32 bytes
	// in base64 or hex, several comma-separated to rotate (the first seals)
	// (ENRICHQ_PLATFORM_TOKEN_KEY). A secret: never logged. Without it the
	// platform's routes and tasks do not start.
	PlatformTokenKey string
	// PlatformExpiryWindow: members whose token expires within it are
	// reported and refreshed (ENRICHQ_PLATFORM_EXPIRY_WINDOW, default 7d).
	PlatformExpiryWindow time.Duration

	// WebhookSecret signs completion callbacks (ENRICHQ_WEBHOOK_SECRET); without
	// it, jobs with a callback_url are refused. A secret: never logged.
	WebhookSecret string
	// WebhookAllowPrivate allows callback URLs on loopback and private
	// networks (ENRICHQ_WEBHOOK_ALLOW_PRIVATE, default false).
	WebhookAllowPrivate bool

	// MetricsAddr is where the worker serves /metrics (ENRICHQ_METRICS_ADDR,
	// default "": none). The API serves /metrics on its own address.
	MetricsAddr string

	// Queue is the asynq queue chunk tasks go to (ENRICHQ_QUEUE, default enrichq).
	Queue string
	// ChunkSize is the rows per task (ENRICHQ_CHUNK_SIZE, default 100, 1..1000).
	ChunkSize int
	// StatusCache is how long the API serves a job's status from memory
	// (ENRICHQ_STATUS_CACHE, default 200ms; 0 reads Postgres on every poll).
	StatusCache time.Duration
	// JobWindow is how many chunks of one job are in the queue at once
	// (ENRICHQ_JOB_WINDOW, default 64): jobs take turns. Keep it at least the
	// total concurrency of the workers, or one job alone cannot use them all.
	JobWindow int
	// QueuePoll is how often an idle worker looks for a task in its empty
	// queue (ENRICHQ_QUEUE_POLL, default 100ms, at most 10s): asynq polls
	// (0.5 to 1.5 times this), it does not block on Redis. asynq's own default,
	// 1s, made every job wait about a second before its first chunk.
	QueuePoll time.Duration
	// WorkerConcurrency is the chunks a worker process handles at once (ENRICHQ_WORKER_CONCURRENCY, default 10).
	WorkerConcurrency int
	// LookupConcurrency is the single lookups in flight per chunk (ENRICHQ_LOOKUP_CONCURRENCY, default 8).
	LookupConcurrency int
	// MaxAttempts is the failed attempts after which a row ends failed (ENRICHQ_MAX_ATTEMPTS, default 8).
	MaxAttempts int
	// Lease is how long a claimed row stays claimed without a heartbeat (ENRICHQ_LEASE, default 2m).
	Lease time.Duration
	// SweepInterval is the scheduler's period (ENRICHQ_SWEEP_INTERVAL, default 5s).
	SweepInterval time.Duration
	// ShutdownTimeout bounds a graceful stop (ENRICHQ_SHUTDOWN_TIMEOUT, default 30s).
	ShutdownTimeout time.Duration
}

// Load reads the configuration through getenv (os.Getenv in production).
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:     or(getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable"),
		RedisURL:        or(getenv("REDIS_URL"), "redis://127.0.0.1:6379/0"),
		APIAddr:         or(getenv("ENRICHQ_API_ADDR"), "127.0.0.1:8080"),
		VendorURL:       strings.TrimRight(getenv("ENRICHQ_VENDOR_URL"), "/"),
		VendorKey:       getenv("ENRICHQ_VENDOR_KEY"),
		PlatformURL:     strings.TrimRight(getenv("ENRICHQ_PLATFORM_URL"), "/"),
		PlatformVersion: getenv("ENRICHQ_PLATFORM_VERSION"),
		Queue:           or(getenv("ENRICHQ_QUEUE"), "enrichq"),
		LogFormat:       getenv("ENRICHQ_LOG_FORMAT"),
		APIKeys:         map[string]string{},
	}
	var errs []string
	p := parser{getenv: getenv, errs: &errs}
	c.Migrate = p.bool("ENRICHQ_MIGRATE", true)
	c.WebhookSecret = getenv("ENRICHQ_WEBHOOK_SECRET")
	c.MetricsAddr = getenv("ENRICHQ_METRICS_ADDR")
	c.WebhookAllowPrivate = p.bool("ENRICHQ_WEBHOOK_ALLOW_PRIVATE", false)
	c.VendorBulk = p.bool("ENRICHQ_VENDOR_BULK", true)
	c.VendorMarksReplays = p.bool("ENRICHQ_VENDOR_MARKS_REPLAYS", false)
	c.CacheRaw = p.bool("ENRICHQ_CACHE_RAW", true)
	c.VendorRPS = p.float("ENRICHQ_VENDOR_RPS", 10, 0.01, 100000)
	c.VendorBurst = p.int("ENRICHQ_VENDOR_BURST", 1, 1, 100000)
	c.VendorTimeout = p.duration("ENRICHQ_VENDOR_TIMEOUT", 30*time.Second)
	c.VendorMonthlyCredits = int64(p.int("ENRICHQ_VENDOR_MONTHLY_CREDITS", 0, 0, 1<<50))
	c.MaxUploadBytes = int64(p.int("ENRICHQ_MAX_UPLOAD_BYTES", 64<<20, 1024, 1<<40))
	c.MaxRows = p.int("ENRICHQ_MAX_ROWS", 1_000_000, 1, 100_000_000)
	c.ChunkSize = p.int("ENRICHQ_CHUNK_SIZE", 100, 1, 1000)
	c.JobWindow = p.int("ENRICHQ_JOB_WINDOW", 64, 1, 100000)
	c.StatusCache = 200 * time.Millisecond
	if v := getenv("ENRICHQ_STATUS_CACHE"); v == "0" {
		c.StatusCache = 0
	} else {
		c.StatusCache = p.duration("ENRICHQ_STATUS_CACHE", c.StatusCache)
	}
	c.WorkerConcurrency = p.int("ENRICHQ_WORKER_CONCURRENCY", 10, 1, 1000)
	if c.QueuePoll = p.duration("ENRICHQ_QUEUE_POLL", 100*time.Millisecond); c.QueuePoll > 10*time.Second {
		errs = append(errs, fmt.Sprintf("ENRICHQ_QUEUE_POLL=%q: at most 10s", getenv("ENRICHQ_QUEUE_POLL")))
	}
	c.LookupConcurrency = p.int("ENRICHQ_LOOKUP_CONCURRENCY", 8, 1, 1000)
	c.MaxAttempts = p.int("ENRICHQ_MAX_ATTEMPTS", 8, 1, 1000)
	c.Lease = p.duration("ENRICHQ_LEASE", 2*time.Minute)
	c.SweepInterval = p.duration("ENRICHQ_SWEEP_INTERVAL", 5*time.Second)
	c.ShutdownTimeout = p.duration("ENRICHQ_SHUTDOWN_TIMEOUT", 30*time.Second)
	switch lvl := strings.ToLower(getenv("ENRICHQ_LOG_LEVEL")); lvl {
	case "", "info":
		c.LogLevel = slog.LevelInfo
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		errs = append(errs, fmt.Sprintf("ENRICHQ_LOG_LEVEL=%q: want debug, info, warn or error", lvl))
	}
	switch c.LogFormat {
	case "", "json", "text":
	default:
		errs = append(errs, fmt.Sprintf("ENRICHQ_LOG_FORMAT=%q: want json or text", c.LogFormat))
	}
	if keys := getenv("ENRICHQ_API_KEYS"); keys != "" {
		for i, pair := range strings.Split(keys, ",") {
			tenant, key, ok := strings.Cut(strings.TrimSpace(pair), ":")
			if !ok || tenant == "" || key == "" {
				errs = append(errs, fmt.Sprintf("ENRICHQ_API_KEYS: entry %d is not tenant:key", i+1))
				continue
			}
			if len(key) < 8 {
				errs = append(errs, fmt.Sprintf("ENRICHQ_API_KEYS: the key of tenant %q is shorter than 8 characters", tenant))
				continue
			}
			c.APIKeys[key] = tenant
		}
	}
	if c.Lease < 10*time.Second {
		errs = append(errs, "ENRICHQ_LEASE: at least 10s")
	}
	c.PlatformAuthURL = getenv("ENRICHQ_PLATFORM_AUTH_URL")
	c.PlatformTokenURL = getenv("ENRICHQ_PLATFORM_TOKEN_URL")
	c.PlatformClientID = getenv("ENRICHQ_PLATFORM_CLIENT_ID")
	c.PlatformClientSecret = getenv("ENRICHQ_PLATFORM_CLIENT_SECRET")
	c.PlatformRedirectURL = getenv("ENRICHQ_PLATFORM_REDIRECT_URL")
	c.PlatformTokenKey = getenv("ENRICHQ_PLATFORM_TOKEN_KEY")
	c.PlatformExpiryWindow = p.days("ENRICHQ_PLATFORM_EXPIRY_WINDOW", 7*24*time.Hour)
	if c.PlatformTokenKey != "" {
		if _, err := secretbox.ParseKeys(c.PlatformTokenKey); err != nil {
			errs = append(errs, "ENRICHQ_PLATFORM_TOKEN_KEY: "+err.Error()) // never the key itself
		}
	}
	if c.PlatformVersion != "" {
		if err := validPlatformVersion(c.PlatformVersion); err != "" {
			errs = append(errs, "ENRICHQ_PLATFORM_VERSION="+strconv.Quote(c.PlatformVersion)+": "+err)
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// RequireVendor checks what a worker needs to call the vendor.
func (c Config) RequireVendor() error {
	if c.VendorURL == "" || c.VendorKey == "" {
		return fmt.Errorf("configuration: ENRICHQ_VENDOR_URL and ENRICHQ_VENDOR_KEY are required")
	}
	return nil
}

// VendorAccount is the vendor key's id in the ledger and account_usage: the
// first 12 hex digits of its SHA-256, so the key itself is never stored.
func (c Config) VendorAccount() string {
	if c.VendorKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(c.VendorKey))
	return hex.EncodeToString(sum[:])[:12]
}

// PlatformEnabled reports whether the platform's own API is configured (its
// URL or its app's client id is set). Then RequirePlatform must pass.
func (c Config) PlatformEnabled() bool {
	return c.PlatformURL != "" || c.PlatformClientID != ""
}

// RequirePlatform checks what the platform's connect flow and member sync
// need, naming every missing variable. The token key is required: member
// tokens are never stored in the clear.
func (c Config) RequirePlatform() error {
	var missing []string
	for _, v := range []struct{ name, value string }{
		{"ENRICHQ_PLATFORM_URL", c.PlatformURL},
		{"ENRICHQ_PLATFORM_VERSION", c.PlatformVersion},
		{"ENRICHQ_PLATFORM_AUTH_URL", c.PlatformAuthURL},
		{"ENRICHQ_PLATFORM_TOKEN_URL", c.PlatformTokenURL},
		{"ENRICHQ_PLATFORM_CLIENT_ID", c.PlatformClientID},
		{"ENRICHQ_PLATFORM_CLIENT_SECRET", c.PlatformClientSecret},
		{"ENRICHQ_PLATFORM_REDIRECT_URL", c.PlatformRedirectURL},
		{"ENRICHQ_PLATFORM_TOKEN_KEY", c.PlatformTokenKey},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("configuration: the platform's API is configured but %s %s not set (ENRICHQ_PLATFORM_TOKEN_KEY: 32 bytes in base64, e.g. openssl rand -base64 32)",
			strings.Join(missing, ", "), map[bool]string{true: "is", false: "are"}[len(missing) == 1])
	}
	return nil
}

// validPlatformVersion checks YYYYMM: six digits, a month from 01 to 12.
func validPlatformVersion(v string) string {
	if len(v) != 6 || strings.Trim(v, "0123456789") != "" {
		return "want six digits YYYYMM, e.g. 202611"
	}
	if m, _ := strconv.Atoi(v[4:]); m < 1 || m > 12 {
		return "want YYYYMM with a month from 01 to 12"
	}
	return ""
}

// AsynqRedis returns the asynq connection option of RedisURL.
func (c Config) AsynqRedis() (asynq.RedisConnOpt, error) {
	opt, err := asynq.ParseRedisURI(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("configuration: REDIS_URL: %w", err)
	}
	return opt, nil
}

// RedisClient opens a go-redis client on RedisURL.
func (c Config) RedisClient() (*redis.Client, error) {
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("configuration: REDIS_URL: %w", err)
	}
	return redis.NewClient(opt), nil
}

// Logger builds the process logger writing to w.
func (c Config) Logger(w io.Writer) *slog.Logger {
	format := c.LogFormat
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

type parser struct {
	getenv func(string) string
	errs   *[]string
}

func (p parser) bool(name string, def bool) bool {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		*p.errs = append(*p.errs, fmt.Sprintf("%s=%q: want true or false", name, v))
		return def
	}
	return b
}

func (p parser) int(name string, def, lo, hi int) int {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		*p.errs = append(*p.errs, fmt.Sprintf("%s=%q: want an integer from %d to %d", name, v, lo, hi))
		return def
	}
	return n
}

func (p parser) float(name string, def, lo, hi float64) float64 {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < lo || f > hi {
		*p.errs = append(*p.errs, fmt.Sprintf("%s=%q: want a number from %g to %g", name, v, lo, hi))
		return def
	}
	return f
}

// days is a duration that may also be given in whole days ("7d").
func (p parser) days(name string, def time.Duration) time.Duration {
	v := p.getenv(name)
	if n, ok := strings.CutSuffix(v, "d"); ok && v != "" {
		d, err := strconv.Atoi(n)
		if err != nil || d <= 0 {
			*p.errs = append(*p.errs, fmt.Sprintf("%s=%q: want a positive duration such as 7d or 36h", name, v))
			return def
		}
		return time.Duration(d) * 24 * time.Hour
	}
	return p.duration(name, def)
}

func (p parser) duration(name string, def time.Duration) time.Duration {
	v := p.getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		*p.errs = append(*p.errs, fmt.Sprintf("%s=%q: want a positive duration such as 30s or 2m", name, v))
		return def
	}
	return d
}
