package rig_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// stack is enrichq assembled in-process for one fault test: a database of its
// own (reached through a proxy that can cut it), a queue and limiter key of
// its own on the shared Redis, the fake vendor over HTTP, and workers that
// can be started, stopped and killed one by one.
type stack struct {
	t      *testing.T
	dbURL  string       // direct, for the checks
	proxy  *rig.Proxy   // in front of Postgres for everything but the checks
	direct *store.Store // the checks' store
	st     *store.Store // the sweeper's and submitter's store, through the proxy

	vendor    *enrichtest.Seed
	vendorURL string
	rdb       *redis.Client
	redisOpt  asynq.RedisConnOpt
	queue     string
	rlKey     string
	enq       *jobs.Enqueuer
	sub       *service.Submitter
	sweeper   *maintenance.Maintainer
	log       *slog.Logger
	cfg       rigConfig

	vendorCalls atomic.Int64 // HTTP requests the fake vendor received
	callHook    atomic.Pointer[callHook]
}

// callHook is a fault to run just before the fake vendor serves a call.
type callHook struct {
	at    int64
	fault func()
	done  chan struct{}
}

type rigConfig struct {
	vendor    func(*enrichtest.SeedOptions)
	processor jobs.ProcessorConfig
	chunk     int           // rows per chunk; default 20
	timeout   time.Duration // vendor client timeout; default 5s
	rate      float64       // shared limiter; default 1000/s
	burst     int
	// database, when set, is the URL of a migrated database every store of
	// the rig uses directly, without the rig's proxies (a multi-host URL, a
	// PgBouncer's): the fault is the engine's own.
	database string
}

func newRig(t *testing.T, cfg rigConfig) *stack {
	t.Helper()
	if cfg.chunk == 0 {
		cfg.chunk = 20
	}
	if cfg.timeout == 0 {
		cfg.timeout = 5 * time.Second
	}
	if cfg.rate == 0 {
		cfg.rate, cfg.burst = 1000, 100
	}
	pc := &cfg.processor
	if pc.RetryBase == 0 {
		pc.RetryBase, pc.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	}
	if pc.Lease == 0 {
		pc.Lease = 2 * time.Second
	}
	r := &stack{t: t, cfg: cfg}
	r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() && os.Getenv("CHAOS_LOG") != "" {
		r.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	vopts := enrichtest.DefaultSeedOptions()
	vopts.Seed = 11
	if cfg.vendor != nil {
		cfg.vendor(&vopts)
	}
	r.vendor = enrichtest.NewSeed(vopts)
	vsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		k := r.vendorCalls.Add(1)
		if h := r.callHook.Load(); h != nil && k == h.at {
			h.fault()
			close(h.done)
		}
		r.vendor.ServeHTTP(w, req)
	}))
	t.Cleanup(vsrv.Close)
	r.vendorURL = vsrv.URL

	if cfg.database != "" {
		r.dbURL = cfg.database
		r.direct = storetest.Open(t, r.dbURL)
		r.st = r.openStore(r.dbURL)
	} else {
		r.dbURL = storetest.NewDatabase(t)
		u, err := url.Parse(r.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		host := u.Host
		if u.Port() == "" {
			host += ":5432"
		}
		r.proxy, err = rig.NewProxy("127.0.0.1:0", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.proxy.Close() })
		r.direct = storetest.Open(t, r.dbURL)
		r.st = r.openStore(r.proxiedURL(r.proxy))
	}

	ropt, err := redis.ParseURL(jobstest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	r.rdb = redis.NewClient(ropt)
	t.Cleanup(func() { r.rdb.Close() })
	r.redisOpt, err = asynq.ParseRedisURI(jobstest.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	r.queue = jobstest.RandomName("chaos-")
	r.rlKey = jobstest.RandomName("enrichq:test:rl:")
	r.enq = jobs.NewEnqueuer(r.redisOpt, r.queue)
	t.Cleanup(func() {
		_ = r.enq.Inspector.DeleteQueue(r.queue, true)
		_ = r.enq.Close()
		_, _ = rig.FlushQueue(context.Background(), r.rdb, r.queue, r.rlKey+"*")
	})
	r.sub = &service.Submitter{Store: r.st, Enqueuer: r.enq, Log: r.log, ChunkSize: cfg.chunk}
	r.sweeper = maintenance.NewMaintainer(r.st, r.log, maintenance.Services(r.st, r.enq,
		maintenance.Settings{Recheck: 200 * time.Millisecond, MaxAttempts: pc.MaxAttempts}, r.log)...)
	return r
}

func (r *stack) openStore(u string) *store.Store {
	r.t.Helper()
	st, err := store.Open(context.Background(), u, store.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(st.Close)
	return st
}

// proxiedURL is the database URL through p.
func (r *stack) proxiedURL(p *rig.Proxy) string {
	u, _ := url.Parse(r.dbURL)
	u.Host = p.Addr()
	return u.String()
}

// worker is one in-process worker: an asynq server and a processor with a
// Postgres connection of its own, through a proxy of its own, so that it
// can be killed (its connections cut for good) without touching the others.
type worker struct {
	srv      *asynq.Server
	proxy    *rig.Proxy
	st       *store.Store
	shutdown sync.Once
	proc     *jobs.Processor
}

type workerConfig struct {
	vendor          func(Vendor) Vendor             // wraps the vendor client
	limiter         func(jobs.Limiter) jobs.Limiter // wraps the shared limiter
	shutdownTimeout time.Duration
	concurrency     int
	// lanes, when set, are the worker's vendors instead of the seed fake
	// (paced by the shared limiter).
	lanes func(jobs.Limiter) []jobs.VendorConfig
}

func (r *stack) startWorker(wc workerConfig) *worker {
	r.t.Helper()
	if wc.shutdownTimeout == 0 {
		wc.shutdownTimeout = 5 * time.Second
	}
	if wc.concurrency == 0 {
		wc.concurrency = 4
	}
	w := &worker{}
	if r.proxy == nil {
		w.st = r.openStore(r.dbURL)
	} else {
		// The worker's proxy forwards to the rig's: a Postgres restart (the
		// rig's proxy) reaches it, and its own kill reaches only it.
		p, err := rig.NewProxy("127.0.0.1:0", r.proxy.Addr())
		if err != nil {
			r.t.Fatal(err)
		}
		w.proxy = p
		w.st = r.openStore(r.proxiedURL(p))
	}
	client, err := seed.NewClient(seed.Config{BaseURL: r.vendorURL, APIKey: "test-key",
		HTTPClient: &http.Client{Timeout: r.cfg.timeout}})
	if err != nil {
		r.t.Fatal(err)
	}
	var v Vendor = client
	if wc.vendor != nil {
		v = wc.vendor(client)
	}
	lim, err := ratelimit.New(r.rdb, ratelimit.Options{Key: r.rlKey, Rate: r.cfg.rate, Burst: r.cfg.burst, MaxWait: 2 * time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	pc := r.cfg.processor
	pc.Enqueuer = r.enq

	var l jobs.Limiter = lim
	if wc.limiter != nil {
		l = wc.limiter(lim)
	}
	vc := jobstest.SeedVendor(v, l, "")
	vc.Account = "chaos-account" // what is learned of the vendor is remembered for the key, across workers
	lanes := []jobs.VendorConfig{vc}
	if wc.lanes != nil {
		lanes = wc.lanes(l)
	}
	proc := jobs.NewProcessor(w.st, lanes, pc, r.log)
	w.proc = proc
	w.srv = jobs.NewServer(r.redisOpt, jobs.ServerConfig{Queue: r.queue, Concurrency: wc.concurrency, ShutdownTimeout: wc.shutdownTimeout,
		TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond}, r.log)
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeChunk, proc.HandleChunk)
	if err := w.srv.Start(mux); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		w.stop()
		if w.proxy != nil {
			w.proxy.Close()
		}
	})
	return w
}

// stop shuts the worker down gracefully, as cmd/worker does on SIGTERM:
// the processor drains, then asynq's Shutdown.
func (w *worker) stop() {
	w.shutdown.Do(func() {
		w.proc.Drain()
		w.srv.Shutdown()
	})
}

// kill is a SIGKILL as the rest of the system sees it: the worker's
// Postgres connections are cut for good (no heartbeat, no save), and its
// asynq server stops at once, handing its tasks back.
func (w *worker) kill() {
	// Stop first: asynq hands the tasks back (a killed process's tasks come
	// back through asynq's own recovery, about a minute later: too slow for
	// a test; dev/chaos shows that one). Then the process is gone: nothing
	// it still does reaches Postgres.
	w.stop()
	if w.proxy != nil {
		w.proxy.Down()
	}
}

// rows are n unique lookups: a fifth by profile URL, a fifth by email, the
// rest by name and company. Inputs containing poisonWord are rejected by a
// fake vendor told so.
func rows(tag string, n int) []ingest.RowIn {
	out := make([]ingest.RowIn, n)
	for i := range out {
		ref := fmt.Sprintf("%s-%04d", tag, i)
		switch i % 5 {
		case 0:
			out[i] = ingest.RowIn{Ref: ref, ProfileURL: fmt.Sprintf("https://platform.example/in/%s-person-%d", tag, i)}
		case 1:
			out[i] = ingest.RowIn{Ref: ref, Email: fmt.Sprintf("person%d@%s-co%d.example", i, tag, i)}
		default:
			out[i] = ingest.RowIn{Ref: ref, Name: "VP Sales", Company: fmt.Sprintf("%s Company %d GmbH", tag, i)}
		}
	}
	return out
}

func (r *stack) submit(in []ingest.RowIn, lookups ...domain.Stage) string {
	r.t.Helper()
	if len(lookups) == 0 {
		lookups = []domain.Stage{domain.StageProfile, domain.StageEmail}
	}
	opts := ingest.JobOptions{Lookups: lookups, MaxAge: 720 * time.Hour}
	job, created, err := r.sub.Submit(context.Background(), service.Submission{Tenant: "acme", Format: "json", Options: opts,
		Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ExpandRows(in, ingest.Options{}, ingest.DefaultLimits(), emit)
		}})
	if err != nil || !created {
		r.t.Fatalf("submit: created=%v err=%v", created, err)
	}
	return job.ID
}

type jobProgress struct {
	state                                     string
	finished                                  bool
	total, terminal, inFlight, retry, pending int
}

func (p jobProgress) done() bool { return (p.state != "queued" && p.state != "running") || p.finished }

func (r *stack) progress(id string) jobProgress {
	r.t.Helper()
	job, err := r.direct.JobByID(context.Background(), id)
	if err != nil {
		r.t.Fatalf("progress: %v", err)
	}
	counts, err := r.direct.RowCounts(context.Background(), id)
	if err != nil {
		r.t.Fatalf("progress: %v", err)
	}
	p := jobProgress{state: string(job.State), finished: job.FinishedAt != nil,
		inFlight: counts[domain.RowInFlight], retry: counts[domain.RowRetryWait], pending: counts[domain.RowPending]}
	for state, n := range counts {
		p.total += n
		if !state.Open() {
			p.terminal += n
		}
	}
	return p
}

// eventually polls cond every 20 ms until it holds, sweeping as the
// scheduler would (errors of a sweep are expected while Postgres is down),
// and fails the test past within.
func (r *stack) eventually(within time.Duration, what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, _ = r.sweeper.RunOnce(context.Background())
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not within %s", what, within)
		}
		<-tick.C
	}
}

// atVendorCall runs fault once, just before the fake vendor serves its k-th
// call (counted from the rig's start, retries included), and returns a
// channel closed once it has run. A fault begun at a call, rather than at a
// moment the test picks after polling, meets the job in the same state on any
// machine: on a loaded CI machine a poll can come late enough to find the job
// finished. Call it before starting the workers; one at a time.
func (r *stack) atVendorCall(k int64, fault func()) <-chan struct{} {
	h := &callHook{at: k, fault: fault, done: make(chan struct{})}
	if !r.callHook.CompareAndSwap(nil, h) {
		r.t.Fatal("atVendorCall: a fault is already set")
	}
	return h.done
}

// await waits for ch to be closed.
func (r *stack) await(ch <-chan struct{}, within time.Duration, what string) {
	r.t.Helper()
	select {
	case <-ch:
	case <-time.After(within):
		r.t.Fatalf("%s: not within %s (%d vendor calls)", what, within, r.vendorCalls.Load())
	}
}

// waitDone waits for the job to end (completed, paused, canceled).
func (r *stack) waitDone(id string, within time.Duration) jobProgress {
	r.t.Helper()
	var p jobProgress
	r.eventually(within, "job "+id+" ends", func() bool {
		p = r.progress(id)
		return p.done()
	})
	return p
}

// expireReservations makes every open reservation due, as if its TTL
// (lease + 1 minute) had passed, and sweeps: the scheduler counts it as
// spent. Used once the job has ended, for the reservations of killed workers.
func (r *stack) expireReservations() int {
	r.t.Helper()
	ctx := context.Background()
	n := storetest.LapseReservations(r.t, r.direct)
	if _, err := r.sweeper.RunOnce(ctx); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// ledger is the job's calls in the credit ledger.
func (r *stack) ledger(id string) []store.LedgerEntry {
	r.t.Helper()
	entries, err := r.direct.LedgerEntries(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return entries
}

// rows is every row of the job, in row order.
func (r *stack) rows(id string) []store.Result {
	r.t.Helper()
	var all []store.Result
	for {
		page, err := r.direct.ListResults(context.Background(), id, "", lastRowID(all), 1000)
		if err != nil {
			r.t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 1000 {
			return all
		}
	}
}

func lastRowID(rows []store.Result) int64 {
	if len(rows) == 0 {
		return 0
	}
	return rows[len(rows)-1].RowID
}

// check computes the figures of a job against the fake vendor's ledger.
func (r *stack) check(id string, expected int) rig.Figures {
	r.t.Helper()
	f, err := rig.CheckJob(context.Background(), r.direct, id, expected, r.vendor.Ledger())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("%s: %s", r.t.Name(), f.Line())
	return f
}

// requireClean fails the test unless every invariant holds.
func requireClean(t *testing.T, f rig.Figures) {
	t.Helper()
	requireRows(t, f)
	if f.DoubleCharged != 0 {
		t.Errorf("%d inputs billed twice (%v), e.g. %v", f.DoubleCharged, f.DoubleCauses, f.DoubleSamples)
	}
	if !f.Money() {
		t.Errorf("money: %s; keys %v", f.MoneyText(), f.UnexplainedKeys)
	}
}

// requireRows fails the test unless every row is terminal, none lost or
// half-written, and the books are closed (nothing reserved, the job's spend
// equal to its ledger).
func requireRows(t *testing.T, f rig.Figures) {
	t.Helper()
	if f.Lost != 0 || f.Extra != 0 || f.Inconsistent != 0 {
		t.Errorf("rows: %d lost (%v), %d stored twice, %d half-written", f.Lost, f.States, f.Extra, f.Inconsistent)
	}
	if f.Reserved != 0 {
		t.Errorf("%d credits still reserved", f.Reserved)
	}
	if f.JobSpent != f.Settled+f.Unknown {
		t.Errorf("the job says %d spent, its ledger %d", f.JobSpent, f.Settled+f.Unknown)
	}
}

// requireExactMoney fails the test unless the job's books are closed and
// equal the vendor's bill to the credit: nothing reserved, nothing counted
// at a worst case, the job's spend equal to what the vendor billed.
func requireExactMoney(t *testing.T, f rig.Figures) {
	t.Helper()
	requireMoney(t, f)
	if f.Reserved != 0 || f.Settled+f.Unknown != f.Vendor || f.JobSpent != f.Vendor {
		t.Errorf("the ledger is not the bill: job spent %d, ledger %d (%d of unknown outcome in %d calls), %d still reserved, vendor billed %d",
			f.JobSpent, f.Settled+f.Unknown, f.Unknown, f.UnknownCalls, f.Reserved, f.Vendor)
	}
}

// requireMoney checks the money invariants: no input billed twice, and
// enrichq's ledger equal to the vendor's bill but for what calls of
// unknown outcome are counted at their worst case.
func requireMoney(t *testing.T, f rig.Figures) {
	t.Helper()
	if f.DoubleCharged != 0 {
		t.Errorf("%d inputs billed twice (%v), e.g. %v", f.DoubleCharged, f.DoubleCauses, f.DoubleSamples)
	}
	if !f.Money() {
		t.Errorf("money: %s; keys %v", f.MoneyText(), f.UnexplainedKeys)
	}
}

// Vendor is the seed vendor's calls, as a test wraps them.
type Vendor = seed.API
