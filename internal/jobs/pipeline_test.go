package jobs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/fakevendor"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// bundle is what a pipeline test needs: real Postgres, real Redis, real
// asynq, and the fake vendor.
type bundle struct {
	store     *store.Store
	vendor    *fakevendor.Vendor
	client    *enrich.Client
	enqueuer  *jobs.Enqueuer
	submitter *jobs.Submitter
	sweeper   *jobs.Sweeper
	queue     string
	redisOpt  asynq.RedisConnOpt
	log       *slog.Logger
}

type setupOpts struct {
	vendor    func(*fakevendor.Options)
	processor jobs.ProcessorConfig
	workers   int  // asynq servers; default 1
	noWorker  bool // start no worker
}

func setup(t *testing.T, o setupOpts) *bundle {
	t.Helper()
	vopts := fakevendor.DefaultOptions()
	vopts.Seed = 7
	if o.vendor != nil {
		o.vendor(&vopts)
	}
	fv := fakevendor.New(vopts)
	srv := httptest.NewServer(fv)
	t.Cleanup(srv.Close)

	client, err := enrich.NewClient(enrich.Config{BaseURL: srv.URL, APIKey: vopts.APIKeys[0], HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ropt, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(ropt)
	t.Cleanup(func() { rdb.Close() })
	limiter, err := ratelimit.New(rdb, ratelimit.Options{Key: randomName("enrichq:test:rl:"), Rate: 1000, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	asynqOpt, err := asynq.ParseRedisURI(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.New(t)
	queue := randomName("test-")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	enq := jobs.NewEnqueuer(asynqOpt, queue)
	t.Cleanup(func() {
		_ = enq.Inspector.DeleteQueue(queue, true)
		enq.Close()
	})
	pc := o.processor
	if pc.RetryBase == 0 {
		pc.RetryBase, pc.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	}
	proc := jobs.NewProcessor(st, client, limiter, pc, log)
	workers := o.workers
	if workers == 0 {
		workers = 1
	}
	if o.noWorker {
		workers = 0
	}
	for range workers {
		srv := jobs.NewServer(asynqOpt, jobs.ServerConfig{Queue: queue, Concurrency: 4, ShutdownTimeout: 5 * time.Second,
			TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond}, log)
		mux := asynq.NewServeMux()
		mux.HandleFunc(jobs.TypeChunk, proc.HandleChunk)
		if err := srv.Start(mux); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
	}
	return &bundle{
		store: st, vendor: fv, client: client, enqueuer: enq, queue: queue, redisOpt: asynqOpt, log: log,
		submitter: &jobs.Submitter{Store: st, Enqueuer: enq, Log: log, ChunkSize: 20},
		sweeper:   &jobs.Sweeper{Store: st, Enqueuer: enq, Log: log, Config: jobs.SweeperConfig{Recheck: 200 * time.Millisecond}},
	}
}

func companies(n int) []ingest.RowIn {
	rows := make([]ingest.RowIn, n)
	for i := range rows {
		rows[i] = ingest.RowIn{Ref: fmt.Sprintf("crm-%04d", i), Company: fmt.Sprintf("Company %d GmbH", i)}
	}
	return rows
}

func (b *bundle) submit(t *testing.T, rows []ingest.RowIn, opts ingest.JobOptions) store.Job {
	t.Helper()
	if opts.Lookups == nil {
		opts.Lookups = []string{"profile"}
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = 720 * time.Hour
	}
	job, created, err := b.submitter.Submit(context.Background(), jobs.Submission{
		Tenant: "acme", Format: "json", Options: opts,
		Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ExpandRows(rows, ingest.Options{Roles: opts.Roles}, ingest.DefaultLimits(), emit)
		},
	})
	if err != nil || !created {
		t.Fatalf("submit: created=%v err=%v", created, err)
	}
	return job
}

// waitJob runs the scheduler's sweep until the job reaches one of states.
// The sweep is what makes progress observable without sleeping on a guess.
func (b *bundle) waitJob(t *testing.T, id string, states ...string) store.Job {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := b.sweeper.Sweep(ctx); err != nil {
			t.Fatalf("sweep: %v", err)
		}
		job, err := b.store.GetJob(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if job.State == s && (s != store.JobCompleted || job.FinishedAt != nil) {
				return job
			}
		}
		if time.Now().After(deadline) {
			counts, _ := b.store.RowCounts(ctx, id)
			t.Fatalf("job %s still %s (%s) after 60s, rows %v; want %v", id, job.State, job.StateReason, counts, states)
		}
		<-tick.C
	}
}

// checkMoney checks the money invariants: the job's spend equals its
// ledger, equals what the fake vendor billed, and nothing stays reserved.
func (b *bundle) checkMoney(t *testing.T, jobIDs ...string) (spent int64) {
	t.Helper()
	ctx := context.Background()
	for _, id := range jobIDs {
		job, err := b.store.GetJob(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		led, err := b.store.JobLedger(ctx, id)
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
	if billed := b.vendor.TotalCharged(); billed != spent {
		t.Errorf("enrichq accounted %d credits, the vendor billed %d", spent, billed)
	}
	return spent
}

func TestPipelineBulkEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{processor: jobs.ProcessorConfig{Bulk: true}})
	job := b.submit(t, companies(90), ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []string{"profile", "email"}})
	job = b.waitJob(t, job.ID, store.JobCompleted)
	counts, err := b.store.RowCounts(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts[store.RowMatched]+counts[store.RowNoMatch] != 90 {
		t.Fatalf("rows = %v, want 90 matched or no_match", counts)
	}
	if counts[store.RowMatched] == 0 || counts[store.RowNoMatch] == 0 {
		t.Fatalf("rows = %v: the fake's hit rate should give both outcomes", counts)
	}
	if spent := b.checkMoney(t, job.ID); spent == 0 {
		t.Fatal("no credits spent")
	}
	// Every matched row has its profile; every no-match has a marker.
	res, err := b.store.ListResults(context.Background(), job.ID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		switch r.State {
		case store.RowMatched:
			if r.Profile == nil || r.Profile.ProfileURL == "" || r.Profile.Role == "" {
				t.Fatalf("matched row without a profile: %+v", r)
			}
		case store.RowNoMatch:
			if len(r.NoMatches) == 0 || r.NoMatches[0] != "profile" {
				t.Fatalf("no_match row without a marker: %+v", r)
			}
		}
	}
	if st := b.vendor.Stats(); st.ByEndpoint["bulk"] == 0 {
		t.Fatalf("no bulk call made: %+v", st)
	}
}

func TestPipelineSingleLookupsWithFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		vendor:    func(o *fakevendor.Options) { o.FailRate = 0.2; o.MalformedRate = 0.05 },
		processor: jobs.ProcessorConfig{Bulk: false, MaxAttempts: 20},
	})
	job := b.submit(t, companies(40), ingest.JobOptions{Roles: []string{"Head of Marketing"}, Lookups: []string{"profile", "email", "phone"}})
	job = b.waitJob(t, job.ID, store.JobCompleted)
	counts, _ := b.store.RowCounts(context.Background(), job.ID)
	if counts[store.RowMatched]+counts[store.RowNoMatch]+counts[store.RowFailed] != 40 {
		t.Fatalf("rows = %v", counts)
	}
	if counts[store.RowFailed] > 0 {
		t.Fatalf("rows failed despite 20 attempts against 20%% faults: %v", counts)
	}
	// Malformed 200 answers were billed by the vendor: enrichq counts them as spent (unknown outcome),
	// so its account may exceed the vendor's by those, never fall short.
	ctx := context.Background()
	j, _ := b.store.GetJob(ctx, "", job.ID)
	if billed := b.vendor.TotalCharged(); j.CreditsSpent < billed {
		t.Fatalf("enrichq accounted %d credits, less than the %d the vendor billed", j.CreditsSpent, billed)
	}
}

func TestPipelineBudgetStopsSpending(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{true, false} {
		t.Run(fmt.Sprintf("bulk=%v", bulk), func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{processor: jobs.ProcessorConfig{Bulk: bulk}, workers: 2})
			// 60 searches cost 2 credits each: a budget of 60 covers half.
			budget := int64(60)
			job := b.submit(t, companies(60), ingest.JobOptions{Roles: []string{"CTO"}, BudgetCredits: &budget})
			job = b.waitJob(t, job.ID, store.JobPaused)
			if !strings.Contains(job.StateReason, "budget") {
				t.Fatalf("paused with reason %q, want one naming the budget", job.StateReason)
			}
			if billed := b.vendor.TotalCharged(); billed > budget {
				t.Fatalf("the vendor billed %d credits, over the budget of %d", billed, budget)
			}
			// Let in-flight work settle, then check the books.
			deadline := time.Now().Add(30 * time.Second)
			for {
				j, _ := b.store.GetJob(context.Background(), "", job.ID)
				counts, _ := b.store.RowCounts(context.Background(), job.ID)
				if j.CreditsReserved == 0 && counts[store.RowInFlight] == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("reservations not settled: %+v %v", j, counts)
				}
				time.Sleep(10 * time.Millisecond)
			}
			spent := b.checkMoney(t, job.ID)
			if spent > budget || spent < budget/2 {
				t.Fatalf("spent %d of a budget of %d", spent, budget)
			}
			counts, _ := b.store.RowCounts(context.Background(), job.ID)
			if counts[store.RowPending] == 0 {
				t.Fatalf("rows = %v: rows beyond the budget should wait, pending", counts)
			}
		})
	}
}

func TestPipelineCacheNeverPaysTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{processor: jobs.ProcessorConfig{Bulk: true}})
	rows := companies(30)
	first := b.submit(t, rows, ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []string{"profile", "email"}})
	b.waitJob(t, first.ID, store.JobCompleted)
	billed := b.vendor.TotalCharged()
	second := b.submit(t, rows, ingest.JobOptions{Roles: []string{"VP Sales"}, Lookups: []string{"profile", "email"}})
	second = b.waitJob(t, second.ID, store.JobCompleted)
	if again := b.vendor.TotalCharged(); again != billed {
		t.Fatalf("the second job of the same inputs was billed %d more credits", again-billed)
	}
	c1, _ := b.store.RowCounts(context.Background(), first.ID)
	c2, _ := b.store.RowCounts(context.Background(), second.ID)
	if c1[store.RowMatched] != c2[store.RowMatched] || c1[store.RowNoMatch] != c2[store.RowNoMatch] {
		t.Fatalf("cached answers differ: first %v, second %v", c1, c2)
	}
	if second.CreditsSpent != 0 {
		t.Fatalf("second job spent %d credits", second.CreditsSpent)
	}
}

func TestPipelinePoisonRowFailsAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		vendor:    func(o *fakevendor.Options) { o.RejectSubstring = "poison" },
		processor: jobs.ProcessorConfig{Bulk: true},
	})
	rows := companies(10)
	rows[3].Company = "poison pill AG"
	job := b.submit(t, rows, ingest.JobOptions{Roles: []string{"CEO"}})
	b.waitJob(t, job.ID, store.JobCompleted)
	res, err := b.store.ListResults(context.Background(), job.ID, store.RowFailed, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Ref != "crm-0003" || !strings.Contains(res[0].StateReason, "vendor rejected") {
		t.Fatalf("failed rows = %+v, want only crm-0003 rejected by the vendor", res)
	}
	if res[0].Attempts != 0 {
		t.Fatalf("a rejected input was retried %d times", res[0].Attempts)
	}
	b.checkMoney(t, job.ID)
}

func TestLostWorkIsFoundInPostgres(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{processor: jobs.ProcessorConfig{Bulk: true}})
	// Submit without enqueueing, as if Redis lost every task.
	b.submitter.Enqueuer = nil
	job := b.submit(t, companies(50), ingest.JobOptions{Roles: []string{"CFO"}})
	b.waitJob(t, job.ID, store.JobCompleted)
	b.checkMoney(t, job.ID)
}

func TestDuplicateTaskDoesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{noWorker: true, processor: jobs.ProcessorConfig{Bulk: true}})
	b.submitter.Enqueuer = nil
	job := b.submit(t, companies(10), ingest.JobOptions{Roles: []string{"CFO"}})
	proc := jobs.NewProcessor(b.store, b.client, noLimit{}, jobs.ProcessorConfig{Bulk: true}, b.log)
	ctx := context.Background()
	ref := store.ChunkRef{JobID: job.ID, Chunk: 0}
	if _, err := proc.ProcessChunk(ctx, ref); err != nil {
		t.Fatal(err)
	}
	calls := b.vendor.Stats().Requests
	if _, err := proc.ProcessChunk(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if again := b.vendor.Stats().Requests; again != calls {
		t.Fatalf("a duplicate task made %d more vendor calls", again-calls)
	}
	j, _ := b.store.GetJob(ctx, "", job.ID)
	if j.State != store.JobCompleted {
		t.Fatalf("job %s, want completed", j.State)
	}
}

type noLimit struct{}

func (noLimit) Wait(context.Context) error                     { return nil }
func (noLimit) Throttled(context.Context, time.Duration) error { return nil }
func (noLimit) Succeeded(context.Context)                      {}
