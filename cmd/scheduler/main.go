// Command scheduler runs enrichq's maintenance services (internal/maintenance):
// it takes back lost leases, enqueues chunks that are due or lost (Postgres
// is the truth, Redis only dispatch), counts dead credit reservations as
// spent, marks finished jobs and advances the results feed. Running two is
// safe: one takes a Postgres advisory lock and runs them, the other waits.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
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
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.Migrate {
		if err := st.Migrate(ctx, log); err != nil {
			return err
		}
	}
	redisOpt, err := cfg.AsynqRedis()
	if err != nil {
		return err
	}
	enq := jobs.NewEnqueuer(redisOpt, cfg.Queue)
	defer enq.Close()
	reg := metrics.NewRegistry()
	services := maintenance.Services(st, enq, maintenance.Settings{
		Interval:    cfg.SweepInterval,
		MaxAttempts: cfg.MaxAttempts,
		Window:      cfg.JobWindow,
		Metrics:     metrics.NewPipeline(reg),
	}, log)
	// PLATFORM SERVICES: internal/platform contributes its sweeps (due
	// member sync chunks, token refresh and expiry reports) as
	// maintenance.Service values; the lead wires that package here. Until
	// then jobs.Platform's sweep runs as one service.
	if cfg.Platform.Enabled() {
		p := cfg.Platform
		settings := jobs.PlatformSettings{URL: p.URL, Version: p.Version, AuthURL: p.AuthURL, TokenURL: p.TokenURL,
			ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: p.RedirectURL, TokenKey: p.TokenKey,
			ExpiryWindow: p.ExpiryWindow, ChunkSize: cfg.ChunkSize, MaxAttempts: cfg.MaxAttempts, Lease: cfg.Lease}
		platform, err := jobs.OpenPlatform(st, enq, settings, log.With("component", "platform"))
		if err != nil {
			return err
		}
		services = append(services, maintenance.ServiceFunc{Label: "platform", Every: cfg.SweepInterval,
			Do: func(ctx context.Context) (int, error) {
				ps, err := platform.Sweep(ctx)
				return ps.ChunksEnqueued + ps.Refreshed + ps.Expired + ps.Warned, err
			}})
	}
	// Webhook delivery is not a maintenance service: it runs in a delivery
	// worker of its own, so that a slow receiver cannot hold up lease recovery.
	m := maintenance.NewMaintainer(st, log, services...)
	if cfg.MetricsAddr != "" { // Go runtime metrics and /debug/pprof/
		ml, err := metrics.Listen(cfg.MetricsAddr, reg)
		if err != nil {
			return err
		}
		defer ml.Close()
		fmt.Fprintf(stdout, "scheduler metrics on http://%s/metrics\n", ml.Addr)
	}
	log.Info("scheduler started", "queue", cfg.Queue, "interval", cfg.SweepInterval)
	fmt.Fprintln(stdout, "scheduler started")
	err = m.Run(ctx)
	log.Info("scheduler stopped")
	return err
}
