// Command worker runs enrichq's chunk tasks: it claims rows in Postgres, calls
// the enrichment vendor under the shared rate limit and the credit budget,
// and records results and no-match markers.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	asynqmetrics "github.com/hibiken/asynq/x/metrics"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

func main() {
	// A chunk's garbage is short-lived and the heap small (tens of MB): with
	// the default GOGC=100 the collector took about 9 % of the worker's CPU
	// in the ceiling benchmark, and the whole machine's throughput rose 15 %
	// at 400. GOGC (and GOMEMLIMIT) in the environment still decide.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if err := cfg.RequireVendor(); err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	if addr := getenv("ENRICHQ_PPROF_ADDR"); addr != "" {
		stopPprof, err := servePprof(addr, stdout)
		if err != nil {
			return err
		}
		defer stopPprof()
	}

	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: int32(cfg.WorkerConcurrency + 4), LeaseConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.Migrate {
		if err := st.Migrate(ctx, log); err != nil {
			return err
		}
	}
	rdb, err := cfg.RedisClient()
	if err != nil {
		return err
	}
	defer rdb.Close()
	limiter, err := ratelimit.New(rdb, ratelimit.Options{
		Key:     ratelimit.KeyPrefix(cfg.VendorKey),
		Rate:    cfg.VendorRPS,
		Burst:   cfg.VendorBurst,
		MaxWait: 20 * time.Second,
		Logger:  log.With("component", "ratelimit"),
	})
	if err != nil {
		return err
	}
	vendor, err := enrich.NewClient(enrich.Config{
		BaseURL:    cfg.VendorURL,
		APIKey:     cfg.VendorKey,
		HTTPClient: &http.Client{Timeout: cfg.VendorTimeout},
		UserAgent:  "enrichq-worker",
	})
	if err != nil {
		return err
	}
	var allowance *int64
	if cfg.VendorMonthlyCredits > 0 {
		allowance = &cfg.VendorMonthlyCredits
	}
	reg := metrics.NewRegistry()
	redisOptForMetrics, err := cfg.AsynqRedis()
	if err != nil {
		return err
	}
	inspector := asynq.NewInspector(redisOptForMetrics)
	defer inspector.Close()
	reg.MustRegister(asynqmetrics.NewQueueMetricsCollector(inspector))
	enq := jobs.NewEnqueuer(redisOptForMetrics, cfg.Queue) // hands a job's next chunks as its chunks end
	defer enq.Close()
	proc := jobs.NewProcessor(st, vendor, limiter, jobs.ProcessorConfig{
		Enqueuer:           enq,
		Metrics:            metrics.NewPipeline(reg),
		Account:            cfg.VendorAccount(),
		AccountAllowance:   allowance,
		Bulk:               cfg.VendorBulk,
		VendorMarksReplays: cfg.VendorMarksReplays,
		CacheRaw:           cfg.CacheRaw,
		LookupConcurrency:  cfg.LookupConcurrency,
		MaxAttempts:        cfg.MaxAttempts,
		Lease:              cfg.Lease,
	}, log.With("component", "processor"))

	redisOpt, err := cfg.AsynqRedis()
	if err != nil {
		return err
	}
	srv := jobs.NewServer(redisOpt, jobs.ServerConfig{
		Queue:           cfg.Queue,
		Concurrency:     cfg.WorkerConcurrency,
		ShutdownTimeout: cfg.ShutdownTimeout,
		// A new job's first chunks are picked up within about this.
		TaskCheckInterval: cfg.QueuePoll,
		// Rows waiting for a retry come back through asynq's retry set: check it often.
		DelayedTaskCheckInterval: time.Second,
	}, log)
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeChunk, proc.HandleChunk)
	if cfg.PlatformEnabled() { // member sync jobs (platform:sync), same queue and workers
		platform, err := jobs.PlatformFromConfig(st, nil, cfg, log.With("component", "platform"))
		if err != nil {
			return err
		}
		mux.HandleFunc(jobs.TypePlatformSync, platform.HandleSync)
	}
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			srv.Shutdown()
			return fmt.Errorf("metrics: listen on %s: %w", cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler(reg))
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(ln) }()
		defer msrv.Close()
		log.Info("worker metrics", "addr", ln.Addr().String())
		fmt.Fprintf(stdout, "worker metrics on http://%s/metrics\n", ln.Addr())
	}
	log.Info("worker started", "queue", cfg.Queue, "concurrency", cfg.WorkerConcurrency, "vendor", cfg.VendorURL,
		"vendor_rps", cfg.VendorRPS, "bulk", cfg.VendorBulk)
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

// servePprof serves net/http/pprof on addr (ENRICHQ_PPROF_ADDR, e.g.
// 127.0.0.1:6060; port 0 picks one) for profiling, and prints
// "pprof listening on http://ADDR". Keep it on a loopback address: the
// profiles show the process's internals.
func servePprof(addr string, stdout io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ENRICHQ_PPROF_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(stdout, "pprof listening on http://%s\n", ln.Addr())
	return func() { _ = srv.Close() }, nil
}
