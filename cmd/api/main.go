// Command api is enrichq's submit API: jobs in, status and results out.
//
// It reads the environment of config.API (docs/configuration.md:
// ENRICHQ_API_ADDR, ENRICHQ_API_KEYS, DATABASE_URL, REDIS_URL, ...), applies pending
// migrations unless ENRICHQ_MIGRATE=false, removes the spool folders a
// crashed process left (internal/spool), prints "api listening on
// http://ADDR" to stdout once it accepts connections, and stops cleanly on
// SIGINT or SIGTERM.
//
// Subcommands serve the operator, against the same Postgres:
//
//	api migrate                       apply pending migrations and exit
//	api keys create|list|revoke ...   the API keys stored in Postgres
//	api jobs resume-vendor-paused     resume the jobs the vendor's 401/403 paused
//	api ledger account|job ...        what the vendor key spent, what a job cost
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/spool"
	"github.com/enrichq/enrichq/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run reads the flags and the environment, or runs `api keys`.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		switch args[1] {
		case "keys":
			return keysCommand(ctx, args[2:], getenv, stdout, stderr)
		case "ledger":
			return ledgerCommand(ctx, args[2:], getenv, stdout, stderr)
		case "jobs":
			return jobsCommand(ctx, args[2:], getenv, stdout)
		case "vendors":
			return vendorsCommand(ctx, args[2:], getenv, stdout, stderr)
		case "migrate":
			return migrateCommand(ctx, args[2:], getenv, stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "listen address (default ENRICHQ_API_ADDR, else 127.0.0.1:8080; port 0 picks a free port)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg, err := config.APIFromEnv(getenv)
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	return serve(ctx, cfg, stdout, stderr)
}

// serve runs the API of cfg until ctx is done, then shuts down within
// cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg config.API, stdout, stderr io.Writer) error {
	log := cfg.Logger(stderr).With("cmd", "api")
	// Spool folders left by a crash hold raw lists; this process holds none yet.
	if n, err := spool.Sweep("", time.Now()); err != nil {
		log.Warn("sweeping the spool folder", "err", err, "removed", n)
	} else if n > 0 {
		log.Info("spool folders left by a crash removed", "removed", n)
	}

	st, stored, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	rc, err := cfg.ConnectRedis(ctx, log)
	if err != nil {
		return err
	}
	rc.Close() // asynq makes its own clients of rc.Asynq
	enq := jobs.NewEnqueuer(rc.Asynq, cfg.Queue)
	defer enq.Close()
	plat, err := openPlatform(cfg, st, enq, log)
	if err != nil {
		return err
	}

	redisPing := func(ctx context.Context) error {
		// asynq's Ping takes no context: do not wait for it past ctx.
		pinged := make(chan error, 1)
		go func() { pinged <- enq.Client.Ping() }()
		select {
		case err := <-pinged:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	reg := metrics.NewRegistry()
	metrics.PostgresReplication(reg, st.CheckReplication(ctx, log)) // a warning when a failover could lose commits
	svc := newService(cfg, st, enq, plat, log)
	api := httpapi.NewServer(httpapi.Deps{
		Service:           svc,
		Metrics:           metrics.NewHTTP(reg),
		Keys:              httpapi.NewStoreKeys(httpapi.NewStaticKeys(cfg.Keys), svc),
		MCPMaxBudget:      cfg.MCPMaxBudget,
		MCPMaxDailyBudget: cfg.MCPMaxDailyBudget,
		MCPAllowedOrigins: cfg.MCPAllowedOrigins,
		BehindTLSProxy:    cfg.BehindTLSProxy,
		Ready:             []httpapi.ReadyCheck{{Name: "postgres", Ping: st.Ping}, {Name: "redis", Ping: redisPing}},
		Log:               log,
	})

	// /metrics beside the API only without an internal listener (a dev
	// machine): with one, the API's address serves the API alone, and a
	// proxy or Service in front of it can expose nothing else.
	handler := http.NewServeMux()
	if cfg.MetricsAddr == "" {
		handler.Handle("GET /metrics", metrics.Handler(reg))
	}
	handler.Handle("/", api)

	if cfg.MetricsAddr != "" { // /metrics, the probes and /debug/pprof/
		ml, err := metrics.Listen(cfg.MetricsAddr, reg, metrics.Check{Name: "postgres", Ping: st.Ping}, metrics.Check{Name: "redis", Ping: redisPing})
		if err != nil {
			return err
		}
		defer ml.Close()
		fmt.Fprintf(stdout, "api metrics on http://%s/metrics\n", ml.Addr)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := httpapi.NewHTTPServer(handler, httpapi.DefaultTimeouts(), log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(httpapi.JSONErrorsListener(ln)) }() // net/http's own 400s in JSON too
	log.Info("api listening", "addr", ln.Addr().String(), "bootstrap_keys", len(cfg.Keys), "stored_keys", stored, "queue", cfg.Queue, "redis", rc.Where)
	fmt.Fprintf(stdout, "api listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("api shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("api stopped")
	return nil
}

// openStore opens the store (migrating it when asked) and makes the tenants
// of ENRICHQ_API_KEYS; stored is the count of live stored keys. Without a
// key from either source the API refuses to start. The caller closes st.
func openStore(ctx context.Context, cfg config.API, log *slog.Logger) (st *store.Store, stored int, err error) {
	st, err = store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: cfg.DBMaxConns,
		StatementTimeout: cfg.DBStatementTimeout, IdleInTxTimeout: cfg.DBIdleInTxTimeout, MigrateURL: cfg.MigrateDatabaseURL})
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*store.Store, int, error) {
		st.Close()
		return nil, 0, err
	}
	if cfg.Migrate {
		if err := st.Migrate(ctx, log); err != nil {
			return fail(err)
		}
	}
	// The tenants of ENRICHQ_API_KEYS exist like those of stored keys.
	for _, tenant := range cfg.Keys {
		if _, err := st.EnsureTenant(ctx, tenant); err != nil {
			return fail(fmt.Errorf("tenant %q of ENRICHQ_API_KEYS: %w", tenant, err))
		}
	}
	if stored, err = st.CountLiveAPIKeys(ctx); err != nil {
		return fail(fmt.Errorf("count API keys: %w", err))
	}
	if len(cfg.Keys) == 0 && stored == 0 {
		return fail(errors.New("no API keys: set ENRICHQ_API_KEYS=tenant:key[,tenant:key...] or create one with `api keys create --tenant T` (the API refuses to start without a key source)"))
	}
	return st, stored, nil
}
