// Package store is enrichq's Postgres access: the only package that writes SQL.
//
// Postgres is the source of truth for jobs, rows, results, no-match markers
// and the credit ledger. Every state change is a conditional update, so that
// at-least-once task delivery and concurrent workers cannot corrupt it.
//
// Its files are named by topic, a prefix each (as River's driver keeps a file
// of queries per table): a reader looking for how rows are claimed opens
// row_claim.go.
//
//   - job_: a job's creation (its COPY, input extras, idempotency), reads and
//     counts, state changes, pauses and resumes, and the dispatch of its chunks.
//   - row_: a chunk's rows claimed under a lease, their outcomes saved, released.
//   - result_, feed: a job's results as pages, and the results feed.
//   - ledger_: credits reserved and settled, the ledger's reads (costs, an
//     account's month), the vendor's learned prices and honoured keys.
//   - reconcile_: what the ledger infers after the fact: replays and fresh
//     answers (replay), open calls a later answer explains (explain), the
//     vendor's balance readings beside the ledger (drift), and the charges those
//     readings pin (witness).
//   - lookup_: the cache of paid answers, and the claims that keep two workers
//     from buying one answer.
//   - platform_: connect requests, members and their token refreshes, member
//     sync jobs, their rows and their dispatch.
//   - tenant_: tenants, their settings and limits, usage, webhook secret.
//   - apikey, web_session, webhook_delivery, upload_file, audit_log,
//     leader_lease, vendor_rates: one concept each.
//   - erasure_, retention_: a person erased (found, removed, suppressed), and
//     what a tenant's retention window removes or cancels.
//   - rig_: reads only the chaos rig and tests make, kept here because they
//     need the pool.
//   - The plumbing: store.go (Open, Migrate), migrate_app_role.go, errors.go
//     (driver errors mapped once), tx.go (inTx, retry), tx_commit_marks.go (the
//     outcome of a statement whose answer was lost), args.go, replication.go.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/enrichq/enrichq/migrations"
)

// Store wraps a pgx pool. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// leases is where lease heartbeats run: a pool of their own when
	// Options.LeaseConns is set, so that a heartbeat never queues behind the
	// work it keeps alive (a worker's pool can be all taken by its calls'
	// ledger updates); else pool.
	leases *pgxpool.Pool
	now    func() time.Time
	// conflicts counts deadlocks and serialization failures run again.
	conflicts atomic.Int64
	// cutCommits counts statements whose answer was lost and whose outcome
	// was found (tx_commit_marks.go).
	cutCommits atomic.Int64
	// accounts holds the "account\x00YYYY-MM" whose account_usage row exists.
	accounts sync.Map
	// migrateCfg is the configuration Migrate connects with: the pool's, or
	// Options.MigrateURL's, without the session timeouts of Options: a
	// migration may rightly take longer.
	migrateCfg *pgxpool.Config
	// appRole is the pool's role when Options.MigrateURL names another:
	// Migrate grants it what the services need (GrantAppRole).
	appRole string
}

// Options configures Open.
type Options struct {
	// MaxConns caps the pool; 0 keeps pgxpool's default (max(4, NumCPU)). A
	// pool_max_conns in the URL wins.
	MaxConns int32
	// StatementTimeout and IdleInTxTimeout set the sessions'
	// statement_timeout and idle_in_transaction_session_timeout; 0 keeps
	// the server's (off by default). The same settings in the URL win.
	StatementTimeout time.Duration
	IdleInTxTimeout  time.Duration
	// LeaseConns, when set, gives lease heartbeats (ExtendLease) a pool of
	// their own of this size.
	LeaseConns int32
	// Now is the clock used for timestamps computed in Go; default time.Now.
	// Most timestamps come from the database's now().
	Now func() time.Time
	// MigrateURL is the connection string Migrate uses
	// (ENRICHQ_MIGRATE_DATABASE_URL); empty: the pool's own. It is the owner
	// of the tables, and a direct connection to the primary when url goes
	// through a transaction pooler (goose's lock is a session advisory
	// lock). When its role is not the pool's, Migrate grants the pool's role
	// the services' privileges and no more (docs/operations.md, "Database
	// roles").
	MigrateURL string
	// Tracer, when set, sees every query of the pool (pgx's QueryTracer): a
	// counting hook for tests, a tracing one for operators.
	Tracer pgx.QueryTracer
}

// Open connects to Postgres at url. It does not migrate: call Migrate.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse DATABASE_URL: %w", err)
	}
	if err := supportedExecMode(cfg.ConnConfig.DefaultQueryExecMode); err != nil {
		return nil, err
	}
	migrateCfg := cfg.Copy()
	var appRole string
	if opts.MigrateURL != "" {
		if migrateCfg, err = pgxpool.ParseConfig(opts.MigrateURL); err != nil {
			return nil, fmt.Errorf("store: parse ENRICHQ_MIGRATE_DATABASE_URL: %w", err)
		}
		if migrateCfg.ConnConfig.User != cfg.ConnConfig.User {
			appRole = cfg.ConnConfig.User
		}
	}
	migrateCfg.MaxConns, migrateCfg.MinConns = 2, 0 // goose's lock and its statements
	if opts.MaxConns > 0 && !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = opts.MaxConns
	}
	for param, d := range map[string]time.Duration{"statement_timeout": opts.StatementTimeout,
		"idle_in_transaction_session_timeout": opts.IdleInTxTimeout} {
		if _, set := cfg.ConnConfig.RuntimeParams[param]; !set && d > 0 {
			cfg.ConnConfig.RuntimeParams[param] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{pool: pool, leases: pool, now: opts.Now, migrateCfg: migrateCfg, appRole: appRole}
	if opts.LeaseConns > 0 {
		lcfg := cfg.Copy()
		lcfg.MaxConns = opts.LeaseConns
		lcfg.MinConns = 0
		if s.leases, err = pgxpool.NewWithConfig(ctx, lcfg); err != nil {
			pool.Close()
			return nil, fmt.Errorf("store: connect: %w", err)
		}
	}
	return s, nil
}

// supportedExecMode refuses the query modes that take the parameters' types
// from Go's (exec, simple_protocol): enrichq's statements pass Go types of
// their own and need the server's. Through PgBouncer in transaction mode
// (no protocol-level prepared statements) cache_describe is the mode: the
// unnamed statement, parsed again with every execution, in one round trip.
func supportedExecMode(m pgx.QueryExecMode) error {
	name := map[pgx.QueryExecMode]string{pgx.QueryExecModeExec: "exec", pgx.QueryExecModeSimpleProtocol: "simple_protocol"}[m]
	if name == "" {
		return nil
	}
	return fmt.Errorf("store: DATABASE_URL: default_query_exec_mode=%s is not supported (the statements need the server's parameter types); "+
		"through PgBouncer in transaction mode use default_query_exec_mode=cache_describe", name)
}

// Close closes the pools.
func (s *Store) Close() {
	if s.leases != s.pool {
		s.leases.Close()
	}
	s.pool.Close()
}

// Ping checks that Postgres answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Migrate applies pending goose migrations under a Postgres session
// advisory lock, so replicas starting together are safe. With
// Options.MigrateURL naming another role than the pool's, it then grants the
// pool's role its privileges (GrantAppRole), every time: tables a migration
// added get them too.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) error {
	pool, err := pgxpool.NewWithConfig(ctx, s.migrateCfg)
	if err != nil {
		return fmt.Errorf("store: connect: %w", err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("store: migration locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		var partial *goose.PartialError
		if errors.As(err, &partial) {
			return fmt.Errorf("store: migration %s failed: %w", partial.Failed.Source.Path, partial.Err)
		}
		return fmt.Errorf("store: migrate: %w", err)
	}
	for _, r := range results {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	if s.appRole != "" {
		return grantAppRole(ctx, pool, s.appRole)
	}
	return nil
}

// Now returns the database's clock, the one leases and due times are compared against.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&t)
	return t, interpretError(err)
}
