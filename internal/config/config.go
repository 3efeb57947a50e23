// Package config maps enrichq's environment (12-factor) onto one Config per
// service: [API], [Worker], [Scheduler] and [Ledger]. Each field says what
// it does, its variable, its default and its special values; defaults are
// named once (the constants below and one defaults function per type), and
// each type's validate returns every problem at once, naming the variable.
//
// Only the variables an operator turns are read. Tuning (chunk size, lease,
// sweep interval, ...) is plain Go fields that tests set; their zero value
// takes the default of the package that uses them (internal/jobs).
// docs/configuration.md has the table of every variable.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// Defaults of the variables.
const (
	DefaultDatabaseURL       = "postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable"
	DefaultRedisURL          = "redis://127.0.0.1:6379/0"
	DefaultQueue             = "enrichq"
	DefaultAPIAddr           = "127.0.0.1:8080"
	DefaultMaxUploadBytes    = 64 << 20
	DefaultMaxRows           = 1_000_000
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultVendorRPS         = 10
	DefaultVendorBurst       = 1
	DefaultVendorTimeout     = 30 * time.Second
	DefaultWorkerConcurrency = 10
	// DefaultStatusCache is the API's status cache (a Go field, not a variable).
	DefaultStatusCache = 200 * time.Millisecond
	// DefaultMCPMaxBudget is the MCP budget ceiling of a key without its own.
	DefaultMCPMaxBudget = 1000
	// The API's Postgres pool and session timeouts (Go fields, not variables).
	DefaultAPIDBMaxConns       = 16
	DefaultAPIStatementTimeout = 5 * time.Minute
	DefaultAPIIdleInTxTimeout  = 30 * time.Second
)

// Common is what every service reads.
type Common struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL, default
	// DefaultDatabaseURL): the services' role, which in production owns no
	// table (docs/operations.md, "Database roles").
	DatabaseURL string
	// MigrateDatabaseURL is the connection string migrations run with
	// (ENRICHQ_MIGRATE_DATABASE_URL, default "": DatabaseURL, one role for
	// both, as on a dev machine): the owner of the tables, and a direct
	// connection to the primary when DatabaseURL goes through PgBouncer in
	// transaction mode (goose holds a session advisory lock while it
	// migrates). With another role than DatabaseURL's, migrating grants
	// DatabaseURL's role the services' privileges.
	MigrateDatabaseURL string
	// RedisURL is the Redis of asynq and the rate limiter (REDIS_URL, default
	// DefaultRedisURL). With Redis.Sentinels, only its user, password,
	// database and scheme (rediss: TLS) are used.
	RedisURL string
	// Redis: Sentinel, and the eviction check at start (redis.go).
	Redis Redis
	// Queue is the asynq queue chunk tasks go to (ENRICHQ_QUEUE, default
	// "enrichq"). Deployments (or test runs) sharing one Redis take one each;
	// the API, workers and scheduler of one deployment must agree.
	Queue string
	// Migrate applies pending migrations at start (ENRICHQ_MIGRATE, default true).
	Migrate bool
	// LogFormat is "json" or "text" (ENRICHQ_LOG_FORMAT; default "": text on
	// a terminal, else json).
	LogFormat string
	// LogLevel is debug, info, warn or error (ENRICHQ_LOG_LEVEL, default info).
	LogLevel slog.Level
	// MetricsAddr is the internal listener of /metrics and /debug/pprof/
	// (ENRICHQ_METRICS_ADDR, default "": none; port 0 picks one). Profiles
	// show the process's internals: keep it off the public network.
	MetricsAddr string
}

func defaultCommon() Common {
	return Common{DatabaseURL: DefaultDatabaseURL, RedisURL: DefaultRedisURL, Queue: DefaultQueue, Migrate: true, LogLevel: slog.LevelInfo}
}

func (c *Common) read(r *reader) {
	r.str("DATABASE_URL", &c.DatabaseURL)
	r.str("ENRICHQ_MIGRATE_DATABASE_URL", &c.MigrateDatabaseURL)
	r.str("REDIS_URL", &c.RedisURL)
	c.Redis.read(r)
	r.str("ENRICHQ_QUEUE", &c.Queue)
	r.bool("ENRICHQ_MIGRATE", &c.Migrate)
	r.str("ENRICHQ_LOG_FORMAT", &c.LogFormat)
	r.level("ENRICHQ_LOG_LEVEL", &c.LogLevel)
	r.str("ENRICHQ_METRICS_ADDR", &c.MetricsAddr)
}

func (c Common) validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL: empty"))
	}
	if c.Queue == "" {
		errs = append(errs, errors.New("ENRICHQ_QUEUE: empty"))
	}
	if err := c.Redis.validate(c.RedisURL); err != nil {
		errs = append(errs, err)
	}
	switch c.LogFormat {
	case "", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("ENRICHQ_LOG_FORMAT=%q: want json or text", c.LogFormat))
	}
	return errors.Join(errs...)
}

// Logger builds the process logger writing to w.
func (c Common) Logger(w io.Writer) *slog.Logger {
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

// Webhooks configures completion callbacks (API and scheduler). Each
// tenant signs with a secret of its own (docs/api.md, "Webhooks").
type Webhooks struct {
	// On accepts callback URLs at submit and delivers callbacks
	// (ENRICHQ_WEBHOOKS, default false: jobs with a callback_url are refused).
	On bool
	// LegacySecret is ENRICHQ_WEBHOOK_SECRET, the one secret every tenant
	// once shared. It signs nothing any more; set, it turns callbacks on as
	// it used to, so that a deployment keeps its callbacks. A secret: never logged.
	LegacySecret string
	// AllowPrivate allows callback URLs on loopback, private and other
	// non-public networks (ENRICHQ_WEBHOOK_ALLOW_PRIVATE, default false).
	AllowPrivate bool
}

func (w *Webhooks) read(r *reader) {
	r.bool("ENRICHQ_WEBHOOKS", &w.On)
	r.str("ENRICHQ_WEBHOOK_SECRET", &w.LegacySecret)
	r.bool("ENRICHQ_WEBHOOK_ALLOW_PRIVATE", &w.AllowPrivate)
}

// Enabled reports whether callbacks are accepted and sent.
func (w Webhooks) Enabled() bool { return w.On || w.LegacySecret != "" }

// load runs read (which maps the environment onto a value holding its
// defaults), then validate (a closure: it must see what read wrote), and
// returns every error of both.
func load(getenv func(string) string, read func(*reader), validate func() error) error {
	r := &reader{getenv: getenv}
	read(r)
	if err := errors.Join(append(r.errs, validate())...); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}
