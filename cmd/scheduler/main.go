// Command scheduler runs enrichq's maintenance services (internal/maintenance):
// it takes back lost leases, enqueues chunks that are due or lost (Postgres
// is the truth, Redis only dispatch), counts dead credit reservations as
// spent, marks finished jobs and advances the results feed. Running two is
// safe: one holds a lease (a row in Postgres) and runs them, the other waits.
// Every instance also delivers webhooks (each claims its own deliveries).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}

// run reads the environment and sweeps until ctx is done.
func run(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.SchedulerFromEnv(getenv)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stdout, stderr)
}

// serve runs the scheduler of cfg until ctx is done.
func serve(ctx context.Context, cfg config.Scheduler, stdout, stderr io.Writer) error {
	log := cfg.Logger(stderr)
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 4, MigrateURL: cfg.MigrateDatabaseURL})
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.Migrate {
		if err := st.Migrate(ctx, log); err != nil {
			return err
		}
	}
	rc, err := cfg.ConnectRedis(ctx, log)
	if err != nil {
		return err
	}
	defer rc.Close() // asynq makes its own clients of rc.Asynq; this one pings for /readyz
	enq := jobs.NewEnqueuer(rc.Asynq, cfg.Queue)
	defer enq.Close()
	reg := metrics.NewRegistry()
	metrics.PostgresReplication(reg, st.CheckReplication(ctx, log)) // a warning when a failover could lose commits
	services := maintenance.Services(st, enq, maintenance.Settings{
		Interval:    cfg.SweepInterval,
		MaxAttempts: cfg.MaxAttempts,
		Window:      cfg.JobWindow,
		ChunkSize:   cfg.ChunkSize,
		Metrics:     metrics.NewPipeline(reg),
	}, log)
	if cfg.Platform.Enabled() { // due member sync chunks, token refresh and expiry reports
		settings := platform.Settings{Platform: cfg.Platform, ChunkSize: cfg.ChunkSize, MaxAttempts: cfg.MaxAttempts, Lease: cfg.Lease}
		plat, err := platform.Open(st, enq, settings, log.With("component", "platform"))
		if err != nil {
			return err
		}
		services = append(services, platform.NewSyncDispatcher(plat, cfg.SweepInterval), platform.NewTokenSweeper(plat, cfg.SweepInterval))
	}
	m := maintenance.NewMaintainer(st, log, services...)
	if cfg.MetricsAddr != "" { // Go runtime metrics, the probes and /debug/pprof/
		ml, err := metrics.Listen(cfg.MetricsAddr, reg, metrics.Check{Name: "postgres", Ping: st.Ping},
			metrics.Check{Name: "redis", Ping: func(ctx context.Context) error { return rc.Client.Ping(ctx).Err() }})
		if err != nil {
			return err
		}
		defer ml.Close()
		fmt.Fprintf(stdout, "scheduler metrics on http://%s/metrics\n", ml.Addr)
	}
	log.Info("scheduler started", "redis", rc.Where, "queue", cfg.Queue, "interval", cfg.SweepInterval)
	fmt.Fprintln(stdout, "scheduler started")
	// Webhooks are delivered on every scheduler, beside the leader's
	// services, never inside them: a slow receiver must not hold up lease
	// recovery.
	delivered := make(chan error, 1)
	if cfg.Webhooks.Enabled() {
		d := webhook.New(st, webhook.Config{AllowPrivate: cfg.Webhooks.AllowPrivate},
			log.With("component", "webhooks"))
		go func() { delivered <- d.Run(ctx) }()
	} else {
		delivered <- nil
	}
	err = errors.Join(m.Run(ctx), <-delivered)
	log.Info("scheduler stopped")
	return err
}
