package jobs

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

// Limiter paces one vendor's calls (*ratelimit.Limiter, shared by every worker).
type Limiter interface {
	Wait(ctx context.Context) error
	Throttled(ctx context.Context, retryAfter time.Duration) error
	Succeeded(ctx context.Context)
}

// Defaults of the tuning shared by chunk runs, member syncs, the
// scheduler's maintenance services and the submitter. They are Go fields,
// not environment variables: tests set them.
const (
	// DefaultChunkSize is the rows per chunk task.
	DefaultChunkSize = 100
	// DefaultLookupConcurrency is the single lookups in flight per chunk.
	DefaultLookupConcurrency = 8
	// DefaultMaxAttempts is the failed attempts after which a row ends failed.
	DefaultMaxAttempts = 8
	// DefaultLease is how long claimed rows stay claimed without a heartbeat
	// (sent every third of it); a lost worker's rows come back after it.
	DefaultLease = 2 * time.Minute
	// DefaultRetryBase and DefaultRetryMax bound the backoff between attempts of a row.
	DefaultRetryBase = 2 * time.Second
	DefaultRetryMax  = 5 * time.Minute
)

// ProcessorConfig tunes a Processor. Zero values take the defaults.
type ProcessorConfig struct {
	// Bulk uses the vendors' bulk endpoints (for the profile stage and the
	// stages a bulk call buys with it, enrich.BulkBuyer) where they have one
	// and their VendorConfig does not opt out. Default false.
	Bulk bool
	// BulkSize is the rows per bulk call, at most enrich.MaxBulkRows and
	// each vendor's own maximum. Default 100.
	BulkSize int
	// LookupConcurrency is the single lookups in flight per chunk. Default DefaultLookupConcurrency.
	LookupConcurrency int
	// MaxAttempts is the failed attempts after which a row ends failed. Default DefaultMaxAttempts.
	MaxAttempts int
	// Lease is how long claimed rows stay claimed without a heartbeat. Default DefaultLease.
	Lease time.Duration
	// RetryBase and RetryMax bound the backoff between attempts of a row.
	// Default DefaultRetryBase and DefaultRetryMax.
	RetryBase, RetryMax time.Duration
	// Orderer orders the vendors a row asks, and learns from their
	// answers. Default StaticOrder: the configured order.
	Orderer Orderer
	// TenantOrder is the tenants' default order of vendor names (the
	// vendors file's order); nil: the configured order, through Orderer. A
	// job's own `vendors` option wins over both.
	TenantOrder []string
	// ErasureKey keys the hashes of the suppression list
	// (ENRICHQ_ERASURE_KEY): a row whose person was erased while it was in
	// flight is saved skipped, without its answer. Empty: not checked.
	ErasureKey []byte
	// Metrics records vendor calls, credits, rows and jobs; nil records nothing.
	Metrics *metrics.Pipeline
	// Enqueuer, when set, hands a job's next chunk to the queue as each of
	// its chunks ends, so that the job keeps its window of chunks in the
	// queue (store.DispatchNext); nil leaves that to the scheduler's chunk dispatcher.
	Enqueuer *Enqueuer
	// Now and Rand are injectable for tests.
	Now  func() time.Time
	Rand func() float64
}

func (c *ProcessorConfig) fill() {
	if c.BulkSize <= 0 || c.BulkSize > enrich.MaxBulkRows {
		c.BulkSize = enrich.MaxBulkRows
	}
	if c.LookupConcurrency <= 0 {
		c.LookupConcurrency = DefaultLookupConcurrency
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.Orderer == nil {
		c.Orderer = StaticOrder{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// Processor runs chunk tasks: it claims rows, asks the vendors in turn
// (the waterfall) under their rate limits and the credit budget, and
// records outcomes.
type Processor struct {
	store *store.Store
	lanes []*lane // the configured vendors, in configured order
	cfg   ProcessorConfig
	log   *slog.Logger

	learnerReloads time.Duration

	// draining is canceled by Drain: no vendor call starts after it.
	draining context.Context
	drain    context.CancelFunc
}

// NewProcessor builds a Processor over the configured vendors (at least
// one), in their configured order.
func NewProcessor(st *store.Store, vendors []VendorConfig, cfg ProcessorConfig, log *slog.Logger) *Processor {
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	if len(vendors) == 0 {
		panic("jobs: a processor needs a vendor")
	}
	p := &Processor{store: st, cfg: cfg, log: log, learnerReloads: time.Second}
	p.lanes = newLanes(p, vendors)
	p.draining, p.drain = context.WithCancel(context.Background())
	return p
}

// Drain makes the processor stop starting vendor calls, for a graceful
// stop: call it before the asynq server's Shutdown. Calls under way finish
// and are saved; a call waiting for its rate slot gives the slot up; the
// rows not yet started are put back to pending at once (no failed attempt,
// no wait for their lease) for another worker. asynq itself would let the
// handlers run until its shutdown timeout and then cut them, calls and all.
func (p *Processor) Drain() { p.drain() }

func (p *Processor) isDraining() bool { return p.draining.Err() != nil }

// HandleChunk is the asynq handler of TypeChunk.
func (p *Processor) HandleChunk(ctx context.Context, t *asynq.Task) error {
	ref, err := parseChunkPayload(t)
	if err != nil {
		return err
	}
	retryIn, err := p.ProcessChunk(ctx, ref)
	if err != nil {
		return err
	}
	if retryIn > 0 {
		return &RetryLater{In: retryIn}
	}
	return nil
}

// Stop reasons: why a chunk stops calling the vendor.
var (
	errStopBudget = errors.New("budget exhausted")
	errStopJob    = errors.New("job stopped")
	errDraining   = errors.New("worker stopping: the call was not started")
)

// chunkRun is the state of one ProcessChunk call.
type chunkRun struct {
	p     *Processor
	job   store.Job
	token string
	rows  []*rowWork
	want  map[domain.Stage]bool
	stop  error // errStopBudget or errStopJob once set

	mu      sync.Mutex // guards stop
	rowsMu  sync.Mutex // guards rows' fields while lookups run concurrently
	cacheMu sync.Mutex // guards cache
	cache   []store.CacheEntry
	claimed bool // holds lookup claims (released on save)

	// The waterfall's: the vendors out of the tenant's order (guarded by
	// mu), the rows that skipped each (guarded by rowsMu), the answers to
	// tell the Orderer (guarded by obsMu).
	out   map[string]bool
	skips map[string]int64
	obsMu sync.Mutex
	obs   []Observation
	// rejectedEmails are finders' emails a verifier found invalid before
	// their call was observed (unobserveEmail); guarded by obsMu.
	rejectedEmails map[rowVendor]bool

	// The verify stage's verdicts of the run (verify.go).
	verdicts verdictBook

	// Where the run's time went, for the "chunk processed" log line.
	tCache, tClaims, tVendor, tSave time.Duration
	// Of tVendor: the credit ledger (reservations and settlements) and the
	// vendor's answers, summed over the calls (single lookups overlap).
	nsLedger, nsVendor atomic.Int64

	// The usage witness's readings and calls, by vendor (guarded by usageMu).
	usageMu sync.Mutex
	usages  map[string]*usageWitness
}

func (c *chunkRun) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stop != nil
}

// ProcessChunk processes one chunk. It returns a positive duration when
// rows of the chunk wait for a retry and the task should come back then.
func (p *Processor) ProcessChunk(ctx context.Context, ref store.ChunkRef) (time.Duration, error) {
	job, err := p.store.JobByID(ctx, ref.JobID)
	if errors.Is(err, store.ErrNotFound) {
		p.log.Warn("chunk of an unknown job dropped", "job_id", ref.JobID, "chunk", ref.Chunk)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !job.State.Runnable() {
		return 0, nil // paused, canceled or finished: the scheduler re-enqueues on resume
	}
	if p.isDraining() {
		return time.Second, nil // back to the queue, for another worker
	}
	claim, err := p.store.ClaimChunk(ctx, ref.JobID, ref.Chunk, p.cfg.Lease)
	if err != nil {
		return 0, err
	}
	if len(claim.Rows) > 0 {
		if job.State == domain.JobQueued { // else running already: no write
			if err := p.store.StartJob(ctx, job.ID); err != nil {
				return 0, err
			}
		}
		p.refreshPrices(ctx)
		err := p.run(ctx, job, claim)
		p.flushPrices(ctx)
		if err != nil {
			return 0, err
		}
		p.explain(ctx, job.ID)
		finished, err := p.store.FinishJobs(ctx, job.ID)
		if err != nil {
			return 0, err
		}
		for _, j := range finished {
			if j.FinishedAt != nil {
				p.cfg.Metrics.JobFinished(j.FinishedAt.Sub(j.CreatedAt))
			}
			p.witness(ctx, j.ID)
		}
		if p.cfg.Enqueuer != nil && len(finished) == 0 {
			// The job's next chunk takes this one's place in the queue.
			if _, err := p.cfg.Enqueuer.DispatchNext(ctx, p.store, job.ID); err != nil {
				p.log.Warn("next chunks not queued; the scheduler will", "job_id", job.ID, "err", err)
			}
		}
	}
	due, ok, err := p.store.NextDue(ctx, ref)
	if err != nil || !ok {
		return 0, err
	}
	now, err := p.store.Now(ctx)
	if err != nil {
		return 0, err
	}
	return max(due.Sub(now), time.Millisecond), nil
}

func (p *Processor) run(ctx context.Context, job store.Job, claim store.Claim) error {
	c := &chunkRun{p: p, job: job, token: claim.Token, want: map[domain.Stage]bool{}, skips: map[string]int64{}}
	c.loadOutages(ctx)
	c.syncOrder(ctx)
	for _, l := range job.Lookups {
		c.want[l] = true
	}
	for _, r := range claim.Rows {
		c.rows = append(c.rows, newRowWork(r))
	}
	stopHeartbeat := p.heartbeat(ctx, claim)
	defer stopHeartbeat()
	start := p.cfg.Now()

	for _, stage := range domain.Stages {
		if c.stop != nil || ctx.Err() != nil || p.isDraining() {
			break
		}
		var todo []*rowWork
		for _, w := range c.rows {
			if c.needs(w, stage) {
				todo = append(todo, w)
			}
		}
		if len(todo) == 0 {
			continue
		}
		todo = c.askable(ctx, stage, todo)
		t0 := time.Now()
		asked := todo
		todo = c.fromCache(ctx, stage, todo)
		if c.verifies() {
			// A cached email is verified too; one known invalid sends its
			// row on to the finders.
			c.verifyHeld(ctx, asked)
			todo = c.toAsk(stage, asked)
		}
		t1 := time.Now()
		todo = c.claimLookups(ctx, stage, todo)
		if c.verifies() {
			c.verifyHeld(ctx, asked) // what the claims' second look at the cache served
			todo = c.toAsk(stage, asked)
		}
		t2 := time.Now()
		if len(todo) > 0 {
			c.waterfall(ctx, stage, todo)
		}
		t3 := time.Now()
		if err := c.save(ctx, false); err != nil {
			return err
		}
		c.tCache, c.tClaims, c.tVendor, c.tSave = c.tCache+t1.Sub(t0), c.tClaims+t2.Sub(t1), c.tVendor+t3.Sub(t2), c.tSave+time.Since(t3)
	}
	t := time.Now()
	if err := c.save(ctx, true); err != nil {
		return err
	}
	c.tSave += time.Since(t)
	c.flushWaterfall(ctx)
	c.settleByUsage(ctx)
	counts := map[domain.RowState]int{}
	rejected := 0 // found addresses a verifier called invalid
	for _, w := range c.rows {
		counts[w.end]++
		rejected += w.rejected
	}
	p.log.Info("chunk processed", "job_id", job.ID, "chunk", claim.Rows[0].Chunk, "rows", len(c.rows),
		"matched", counts[domain.RowMatched], "no_match", counts[domain.RowNoMatch], "failed", counts[domain.RowFailed],
		"retry_wait", counts[domain.RowRetryWait], "released", counts[domain.RowPending], "emails_invalid", rejected, "duration", p.cfg.Now().Sub(start),
		// cache lookups, lookup claims, vendor calls (with their reservations and settlements), saves
		"cache", c.tCache, "claims", c.tClaims, "calls", c.tVendor, "saves", c.tSave,
		"calls_ledger", time.Duration(c.nsLedger.Load()), "calls_vendor", time.Duration(c.nsVendor.Load()))
	return nil
}
