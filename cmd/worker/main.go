// Command worker runs enrichq's chunk tasks: it claims rows in Postgres, calls
// the enrichment vendor under the shared rate limit and the credit budget,
// and records results and no-match markers.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hibiken/asynq"
	asynqmetrics "github.com/hibiken/asynq/x/metrics"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run reads the environment and serves until ctx is done.
func run(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.WorkerFromEnv(getenv)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stdout, stderr)
}

// serve runs the worker of cfg until ctx is done, then stops gracefully
// within cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg config.Worker, stdout, stderr io.Writer) error {
	log := cfg.Logger(stderr)
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: int32(cfg.Concurrency + 4), LeaseConns: 2,
		MigrateURL: cfg.MigrateDatabaseURL})
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
	defer rc.Close()
	vendors, err := vendorConfigs(cfg.Vendors, rc.Client, log)
	if err != nil {
		return err
	}
	reg := metrics.NewRegistry()
	metrics.PostgresReplication(reg, st.CheckReplication(ctx, log)) // a warning when a failover could lose commits
	inspector := asynq.NewInspector(rc.Asynq)
	defer inspector.Close()
	reg.MustRegister(asynqmetrics.NewQueueMetricsCollector(inspector))
	order, stopOrder, err := vendorOrder(ctx, cfg.Vendors, st, reg, log)
	if err != nil {
		return err
	}
	defer stopOrder() // after the drain: what the last chunks observed is written

	enq := jobs.NewEnqueuer(rc.Asynq, cfg.Queue) // hands a job's next chunks as its chunks end
	defer enq.Close()
	proc := jobs.NewProcessor(st, vendors, jobs.ProcessorConfig{
		Enqueuer:          enq,
		Metrics:           metrics.NewPipeline(reg),
		Bulk:              true, // where each vendor's own bulk setting allows
		Orderer:           order,
		TenantOrder:       cfg.Vendors.Order,
		LookupConcurrency: cfg.LookupConcurrency,
		MaxAttempts:       cfg.MaxAttempts,
		Lease:             cfg.Lease,
		ErasureKey:        []byte(cfg.ErasureKey),
	}, log.With("component", "processor"))

	srv := jobs.NewServer(rc.Asynq, jobs.ServerConfig{
		Queue:             cfg.Queue,
		Concurrency:       cfg.Concurrency,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		TaskCheckInterval: cfg.QueuePoll,
	}, log)
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeChunk, proc.HandleChunk)
	wctx, stopWitness := context.WithCancel(ctx)
	defer stopWitness()
	go witnessKeys(wctx, proc, log.With("component", "key_witness"))
	if cfg.Platform.Enabled() { // member sync jobs (platform:sync), same queue and workers
		p, err := platform.Open(st, nil, platformSettings(cfg), log.With("component", "platform"))
		if err != nil {
			return err
		}
		mux.HandleFunc(platform.TypeSync, p.HandleSync)
	}
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if cfg.MetricsAddr != "" { // /metrics, the probes and /debug/pprof/
		ml, err := metrics.Listen(cfg.MetricsAddr, reg, metrics.Check{Name: "postgres", Ping: st.Ping},
			metrics.Check{Name: "redis", Ping: func(ctx context.Context) error { return rc.Client.Ping(ctx).Err() }})
		if err != nil {
			srv.Shutdown()
			return err
		}
		defer ml.Close()
		log.Info("worker metrics", "addr", ml.Addr.String())
		fmt.Fprintf(stdout, "worker metrics on http://%s/metrics\n", ml.Addr)
	}
	log.Info("worker started", "redis", rc.Where, "queue", cfg.Queue, "concurrency", cfg.Concurrency, "vendor", cfg.Vendor.URL,
		"vendor_rps", cfg.Vendor.RPS, "bulk", cfg.Vendor.Bulk)
	fmt.Fprintln(stdout, "worker started")
	<-ctx.Done()
	log.Info("worker stopping: finishing in-flight chunks", "timeout", cfg.ShutdownTimeout)
	// No vendor call starts from now on: calls in flight finish and are
	// saved, the rest of each chunk is put back to pending (Processor.Drain).
	proc.Drain()
	srv.Shutdown()
	log.Info("worker stopped")
	return nil
}

// platformSettings are the platform's settings of the worker: its calls
// share the vendor's timeout, its rows the vendor chunks' tuning.
func platformSettings(cfg config.Worker) platform.Settings {
	return platform.Settings{Platform: cfg.Platform, Timeout: cfg.Vendor.Timeout, ChunkSize: cfg.ChunkSize,
		MaxAttempts: cfg.MaxAttempts, Lease: cfg.Lease}
}
