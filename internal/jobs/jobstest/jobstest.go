// Package jobstest assembles the whole pipeline for tests: real Postgres (a
// database per test), real Redis (a queue and limiter key per test), real
// asynq workers, and the fake vendor over HTTP.
package jobstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	_ "github.com/enrichq/enrichq/internal/enrich/vendors" // the kinds a cached record is read by
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/internal/upstream"
)

// RedisURL is the Redis tests use: REDIS_URL, else the local default.
func RedisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// RandomName is prefix plus 12 random hex digits.
func RandomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Bundle is what a pipeline test needs: real Postgres, real Redis, real
// asynq, and the fake vendor.
type Bundle struct {
	Store     *store.Store
	Vendor    *enrichtest.Seed
	Client    *seed.Client
	Enqueuer  *jobs.Enqueuer
	Submitter *service.Submitter
	// Maintainer steps the scheduler's services (RunOnce); WaitJob runs it.
	Maintainer *maintenance.Maintainer
	Queue      string
	RedisOpt   asynq.RedisConnOpt
	Log        *slog.Logger
}

// Options shape a Bundle.
type Options struct {
	Vendor func(*enrichtest.SeedOptions) // adjust the fake vendor
	// VendorHandler wraps the fake vendor's handler (answers that change
	// between runs); nil serves it as it is.
	VendorHandler func(http.Handler) http.Handler
	// VendorConfig adjusts the seed vendor's configuration (its account,
	// allowance, credit_value).
	VendorConfig func(*jobs.VendorConfig)
	Processor    jobs.ProcessorConfig
	Workers      int  // asynq servers; default 1
	NoWorker     bool // start no worker
	// Rate and Burst of the shared limiter; default 1000/s, burst 100.
	Rate  float64
	Burst int
	// Concurrency of each asynq server; default 4.
	Concurrency int
	// Maintenance tunes the scheduler's services; Recheck defaults to 200ms.
	Maintenance maintenance.Settings
	// AppRole connects the store as storetest.AppRole, the services' role
	// of a production setup (no owner's powers), instead of the owner.
	AppRole bool
	// MaxConns sizes the store's pool; 0 is the store's default.
	MaxConns int
}

// New starts a pipeline for one test; everything stops when the test ends.
func New(t *testing.T, o Options) *Bundle {
	t.Helper()
	vopts := enrichtest.DefaultSeedOptions()
	vopts.Seed = 7
	if o.Vendor != nil {
		o.Vendor(&vopts)
	}
	fv := enrichtest.NewSeed(vopts)
	var h http.Handler = fv
	if o.VendorHandler != nil {
		h = o.VendorHandler(fv)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	client, err := seed.NewClient(seed.Config{BaseURL: srv.URL, APIKey: upstream.Secret(vopts.APIKeys[0]), HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ropt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ropt)
	t.Cleanup(func() { rdb.Close() })
	rate, burst := o.Rate, o.Burst
	if rate == 0 {
		rate, burst = 1000, 100
	}
	limiterKey := RandomName("enrichq:test:rl:")
	newLimiter := func() *ratelimit.Limiter {
		l, err := ratelimit.New(rdb, ratelimit.Options{Key: limiterKey, Rate: rate, Burst: burst})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	asynqOpt, err := asynq.ParseRedisURI(RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.New(t)
	if o.MaxConns > 0 {
		st = storetest.OpenWith(t, storetest.NewDatabase(t), store.Options{MaxConns: int32(o.MaxConns)})
	}
	if o.AppRole {
		st = storetest.OpenAsApp(t, storetest.NewDatabase(t))
	}
	queue := RandomName("test-")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	enq := jobs.NewEnqueuer(asynqOpt, queue)
	t.Cleanup(func() {
		_ = enq.Inspector.DeleteQueue(queue, true)
		_ = rdb.Del(context.Background(), jobs.QueueMarkerKey(queue)).Err()
		enq.Close()
	})
	pc := o.Processor
	if pc.Enqueuer == nil {
		pc.Enqueuer = enq
	}
	if pc.RetryBase == 0 {
		pc.RetryBase, pc.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	}
	workers := o.Workers
	if workers == 0 {
		workers = 1
	}
	if o.NoWorker {
		workers = 0
	}
	concurrency := o.Concurrency
	if concurrency == 0 {
		concurrency = 4
	}
	for range workers {
		srv := jobs.NewServer(asynqOpt, jobs.ServerConfig{Queue: queue, Concurrency: concurrency, ShutdownTimeout: 5 * time.Second,
			TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond}, log)
		mux := asynq.NewServeMux()
		// Each worker has its own limiter on the shared key, as separate processes would.
		vc := SeedVendor(client, newLimiter(), "")
		if o.VendorConfig != nil {
			o.VendorConfig(&vc)
		}
		proc := jobs.NewProcessor(st, []jobs.VendorConfig{vc}, pc, log)
		mux.HandleFunc(jobs.TypeChunk, proc.HandleChunk)
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
	}
	ms := o.Maintenance
	if ms.Recheck == 0 {
		ms.Recheck = 200 * time.Millisecond
	}
	return &Bundle{
		Store: st, Vendor: fv, Client: client, Enqueuer: enq, Queue: queue, RedisOpt: asynqOpt, Log: log,
		Submitter:  &service.Submitter{Store: st, Enqueuer: enq, Log: log, ChunkSize: 20},
		Maintainer: maintenance.NewMaintainer(st, log, maintenance.Services(st, enq, ms, log)...),
	}
}

// WaitJob runs the scheduler's services until the job reaches one of
// states: they are what makes progress observable without sleeping on a
// guess.
func (b *Bundle) WaitJob(t *testing.T, id string, states ...domain.JobState) store.Job {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := b.Maintainer.RunOnce(ctx); err != nil {
			t.Fatalf("maintenance: %v", err)
		}
		job, err := b.Store.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if job.State == s && (s != domain.JobCompleted || job.FinishedAt != nil) {
				return job
			}
		}
		if time.Now().After(deadline) {
			counts, _ := b.Store.RowCounts(ctx, id)
			t.Fatalf("job %s still %s (%s) after 60s, rows %v; want %v", id, job.State, job.StateReason, counts, states)
		}
		<-tick.C
	}
}

// CheckMoney checks the money invariants: the job's spend equals its
// ledger, equals what the fake vendor billed, and nothing stays reserved.
func (b *Bundle) CheckMoney(t *testing.T, jobIDs ...string) (spent int64) {
	t.Helper()
	ctx := context.Background()
	for _, id := range jobIDs {
		job, err := b.Store.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		led, err := b.Store.JobLedger(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if job.CreditsReserved != 0 || led.Reserved != 0 {
			t.Errorf("job %s: %d credits still reserved (ledger %d)", id, job.CreditsReserved, led.Reserved)
		}
		if led.Charged != job.CreditsSpent {
			t.Errorf("job %s: ledger charged %d, job spent %d", id, led.Charged, job.CreditsSpent)
		}
		spent += job.CreditsSpent
	}
	if billed := b.Vendor.TotalCharged(); billed != spent {
		t.Errorf("enrichq accounted %d credits, the vendor billed %d", spent, billed)
	}
	return spent
}

// SeedVendor is the one seed vendor of ENRICHQ_VENDOR_* over api (a
// *seed.Client, or a test's wrapper of one), named "vendor": the
// configuration of a processor with a single vendor. honours is its
// configured Idempotency-Key behaviour ("": auto).
func SeedVendor(api seed.API, l jobs.Limiter, honours domain.HonoursKeys) jobs.VendorConfig {
	if c, ok := api.(*seed.Client); ok {
		return jobs.VendorConfig{Vendor: seed.New(jobs.DefaultVendorName, c, honours), Limiter: l}
	}
	return jobs.VendorConfig{Vendor: seed.NewOver(jobs.DefaultVendorName, api, enrich.DefaultCosts(), honours), Limiter: l}
}
