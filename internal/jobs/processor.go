package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

// Vendor is the enrichment vendor as the pipeline uses it (*enrich.Client).
type Vendor interface {
	Profile(ctx context.Context, q enrich.ProfileQuery, idempotencyKey string) (enrich.ProfileResult, error)
	Email(ctx context.Context, profileURL, idempotencyKey string) (enrich.EmailResult, error)
	Phone(ctx context.Context, profileURL, idempotencyKey string) (enrich.PhoneResult, error)
	Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, idempotencyKey string) (enrich.BulkResult, error)
}

// Limiter paces vendor calls (*ratelimit.Limiter, shared by every worker).
type Limiter interface {
	Wait(ctx context.Context) error
	Throttled(ctx context.Context, retryAfter time.Duration) error
	Succeeded(ctx context.Context)
}

// Defaults of the tuning shared by chunk runs, member syncs, the sweeper
// and the submitter. They are Go fields, not environment variables: tests
// set them.
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
	// Bulk uses POST /v1/bulk for the profile stage (and the stages after it). Default false.
	Bulk bool
	// BulkSize is the rows per bulk call, at most enrich.MaxBulkRows. Default 100.
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
	// Costs is the worst case reserved before each call. Default enrich.DefaultCosts().
	Costs enrich.CostTable
	// Account is the vendor key's id (ratelimit.KeyPrefix): its monthly usage
	// is tracked, and capped by AccountAllowance when that is set.
	Account          string
	AccountAllowance *int64
	// VendorMarksReplays: the vendor marks the answers it replays for an
	// Idempotency-Key (Idempotent-Replayed: true), so an answer without the
	// mark is fresh and proves that the earlier sends of its key, counted at
	// their reservation (a killed worker, a timeout), were not billed: they
	// are settled at 0. Off, they stay counted at their worst case (safe,
	// never under-counted).
	VendorMarksReplays bool
	// Metrics records vendor calls, credits, rows and jobs; nil records nothing.
	Metrics *metrics.Pipeline
	// Enqueuer, when set, hands a job's next chunk to the queue as each of
	// its chunks ends, so that the job keeps its window of chunks in the
	// queue (store.DispatchNext); nil leaves that to the scheduler's sweep.
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
	if c.Costs == (enrich.CostTable{}) {
		c.Costs = enrich.DefaultCosts()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
}

// Processor runs chunk tasks: it claims rows, calls the vendor under the
// rate limit and the credit budget, and records outcomes.
type Processor struct {
	store   *store.Store
	vendor  Vendor
	limiter Limiter
	cfg     ProcessorConfig
	log     *slog.Logger

	// draining is canceled by Drain: no vendor call starts after it.
	draining context.Context
	drain    context.CancelFunc
}

// NewProcessor builds a Processor.
func NewProcessor(st *store.Store, vendor Vendor, limiter Limiter, cfg ProcessorConfig, log *slog.Logger) *Processor {
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	p := &Processor{store: st, vendor: vendor, limiter: limiter, cfg: cfg, log: log}
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

// rowWork is a claimed row as it moves through the stages of one run.
type rowWork struct {
	row   store.Row
	done  map[domain.Stage]bool
	found string
	match bool

	// changes since the last save
	out   store.Outcome
	dirty bool
	end   domain.RowState // "" while active; else the state the row leaves in
}

func newRowWork(r store.Row) *rowWork {
	w := &rowWork{row: r, done: map[domain.Stage]bool{}, found: r.FoundProfileURL, match: r.AnyMatch}
	for _, s := range r.StagesDone {
		w.done[s] = true
	}
	w.out.RowID = r.ID
	return w
}

func (w *rowWork) stagesDone() []domain.Stage {
	var out []domain.Stage
	for _, s := range domain.Stages {
		if w.done[s] {
			out = append(out, s)
		}
	}
	return out
}

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

	// Where the run's time went, for the "chunk processed" log line.
	tCache, tClaims, tVendor, tSave time.Duration
	// Of tVendor: the credit ledger (reservations and settlements) and the
	// vendor's answers, summed over the calls (single lookups overlap).
	nsLedger, nsVendor atomic.Int64
}

// needs reports whether a row still needs stage.
func (c *chunkRun) needs(w *rowWork, stage domain.Stage) bool {
	if w.end != "" || w.done[stage] {
		return false
	}
	switch stage {
	case domain.StageProfile:
		return c.want[domain.StageProfile] || (w.found == "" && (c.want[domain.StageEmail] || c.want[domain.StagePhone]))
	default:
		return c.want[stage] && w.found != ""
	}
}

func (c *chunkRun) complete(w *rowWork) bool {
	return w.end == "" && !c.needs(w, domain.StageProfile) && !c.needs(w, domain.StageEmail) && !c.needs(w, domain.StagePhone)
}

// ProcessChunk processes one chunk. It returns a positive duration when
// rows of the chunk wait for a retry and the task should come back then.
func (p *Processor) ProcessChunk(ctx context.Context, ref store.ChunkRef) (time.Duration, error) {
	job, err := p.store.GetJob(ctx, "", ref.JobID)
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
		if err := p.run(ctx, job, claim); err != nil {
			return 0, err
		}
		finished, err := p.store.FinishJobs(ctx, job.ID)
		if err != nil {
			return 0, err
		}
		for _, j := range finished {
			if j.FinishedAt != nil {
				p.cfg.Metrics.JobFinished(j.FinishedAt.Sub(j.CreatedAt))
			}
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
	c := &chunkRun{p: p, job: job, token: claim.Token, want: map[domain.Stage]bool{}}
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
		t0 := time.Now()
		todo = c.fromCache(ctx, stage, todo)
		t1 := time.Now()
		todo = c.claimLookups(ctx, stage, todo)
		t2 := time.Now()
		if len(todo) > 0 {
			if stage == domain.StageProfile && p.cfg.Bulk {
				c.bulk(ctx, todo)
			} else {
				c.single(ctx, stage, todo)
			}
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
	counts := map[domain.RowState]int{}
	for _, w := range c.rows {
		counts[w.end]++
	}
	p.log.Info("chunk processed", "job_id", job.ID, "chunk", claim.Rows[0].Chunk, "rows", len(c.rows),
		"matched", counts[domain.RowMatched], "no_match", counts[domain.RowNoMatch], "failed", counts[domain.RowFailed],
		"retry_wait", counts[domain.RowRetryWait], "released", counts[domain.RowPending], "duration", p.cfg.Now().Sub(start),
		// cache lookups, lookup claims, vendor calls (with their reservations and settlements), saves
		"cache", c.tCache, "claims", c.tClaims, "calls", c.tVendor, "saves", c.tSave,
		"calls_ledger", time.Duration(c.nsLedger.Load()), "calls_vendor", time.Duration(c.nsVendor.Load()))
	return nil
}

// claimTTL is how long a lookup claim lives: 90 % of the rows' lease.
func claimTTL(lease time.Duration) time.Duration { return lease * 9 / 10 }

// heartbeat extends the lease of the claimed rows until stopped.
func (p *Processor) heartbeat(ctx context.Context, claim store.Claim) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ids := claim.IDs()
	go func() {
		defer close(done)
		t := time.NewTicker(p.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := p.store.ExtendLease(ctx, claim.Token, ids, p.cfg.Lease, claimTTL(p.cfg.Lease)); err != nil && ctx.Err() == nil {
					p.log.Warn("lease heartbeat failed", "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// save writes the changes of the run. Rows that are complete end matched or
// no_match on the final save; rows stopped by the budget or a paused job are
// released without counting an attempt.
func (c *chunkRun) save(ctx context.Context, final bool) error {
	var outs []store.Outcome
	var release []int64
	for _, w := range c.rows {
		if w.end == "" && (final || c.complete(w)) {
			if c.complete(w) {
				w.end = domain.RowNoMatch
				if w.match {
					w.end = domain.RowMatched
				}
			} else {
				w.end = domain.RowPending // stopped before it was done
			}
			w.dirty = true
		}
		if !w.dirty {
			continue
		}
		if w.end == domain.RowPending && len(w.out.NoMatches) == 0 && w.out.Profile == nil && w.out.Email == nil && w.out.Phone == nil {
			release = append(release, w.row.ID)
			w.dirty = false
			continue
		}
		o := w.out
		o.RowID = w.row.ID
		o.StagesDone = w.stagesDone()
		o.FoundProfileURL = w.found
		o.AnyMatch = w.match
		o.State = w.end
		if o.State == "" {
			o.State = domain.RowInFlight
		}
		if o.Prov.FetchedAt.IsZero() {
			o.Prov.FetchedAt = c.p.cfg.Now()
		}
		outs = append(outs, o)
		w.out = store.Outcome{RowID: w.row.ID}
		w.dirty = false
	}
	c.cacheMu.Lock()
	cache := c.cache
	c.cache = nil
	c.cacheMu.Unlock()
	// Outcomes are written even when the task's context ends (shutdown):
	// credits were spent for them.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := c.p.store.SaveOutcomes(wctx, c.job.Tenant, c.token, outs, cache); err != nil {
		return fmt.Errorf("save outcomes: %w", err)
	}
	saved := len(outs) > 0 || len(cache) > 0 // and the lookup claims given up with them
	for _, o := range outs {
		if o.State.Terminal() {
			c.p.cfg.Metrics.RowFinished(string(o.State))
		}
	}
	if c.claimed {
		// The answers are in the cache now (SaveOutcomes gave the claims up
		// with them): whoever waits for them finds them. With nothing saved,
		// nothing bought is to be remembered: the inputs are free to buy.
		if !saved {
			if err := c.p.store.ReleaseLookups(wctx, c.token); err != nil {
				c.p.log.Warn("release lookup claims failed; they expire with the lease", "err", err)
			}
		}
		c.claimed = false
	}
	if len(release) > 0 {
		if err := c.p.store.ReleaseRows(wctx, c.token, release); err != nil {
			return fmt.Errorf("release rows: %w", err)
		}
	}
	return nil
}

// fromCache serves rows whose answer we already hold (newer than the job's
// max_age) and returns the rows still to look up.
func (c *chunkRun) fromCache(ctx context.Context, stage domain.Stage, todo []*rowWork) []*rowWork {
	if c.job.MaxAge <= 0 {
		return todo
	}
	keys := make([]string, 0, len(todo))
	for _, w := range todo {
		keys = append(keys, cacheKey(stage, w.rowWithFound()))
	}
	hits, err := c.p.store.CachedAnswers(ctx, c.job.Tenant, stage, keys, c.p.cfg.Now().Add(-c.job.MaxAge))
	if err != nil {
		c.p.log.Warn("cache lookup failed; calling the vendor", "err", err)
		return todo
	}
	var rest []*rowWork
	for i, w := range todo {
		hit, ok := hits[keys[i]]
		if !ok {
			rest = append(rest, w)
			continue
		}
		ans, err := decodeCached(stage, hit)
		if err != nil {
			rest = append(rest, w)
			continue
		}
		w.out.Prov = store.Provenance{Source: "vendor", FromCache: true, FetchedAt: hit.FetchedAt}
		c.apply(w, stage, ans, false)
	}
	return rest
}

// claimLookups makes concurrent workers share one call per input: it claims
// the inputs of todo for this run. Rows whose input another worker is
// buying right now wait a moment and then find its answer in the cache.
// It returns the rows to look up.
func (c *chunkRun) claimLookups(ctx context.Context, stage domain.Stage, todo []*rowWork) []*rowWork {
	if c.job.MaxAge <= 0 || len(todo) == 0 {
		return todo // no reuse asked: every row buys its own answer
	}
	keys := make([]string, len(todo))
	seen := map[string]bool{}
	var distinct []string
	for i, w := range todo {
		keys[i] = cacheKey(stage, w.rowWithFound())
		if !seen[keys[i]] {
			seen[keys[i]] = true
			distinct = append(distinct, keys[i])
		}
	}
	// A claim lives a little less than the rows' lease (and is extended with
	// it), so when a lost worker's rows are taken over its claims are gone.
	won, err := c.p.store.ClaimLookups(ctx, c.job.Tenant, stage, distinct, c.token, claimTTL(c.p.cfg.Lease))
	if err != nil {
		c.p.log.Warn("lookup claims failed; looking up without them", "err", err)
		return todo
	}
	c.claimed = true
	wonSet := make(map[string]bool, len(won))
	for _, k := range won {
		wonSet[k] = true
	}
	var mine []*rowWork
	// One due time for every waiting row: they come back together (and a
	// bulk call of them is the same call, under the same Idempotency-Key).
	due := c.p.cfg.Now().Add(time.Second + time.Duration(c.p.cfg.Rand()*float64(time.Second)))
	for i, w := range todo {
		if wonSet[keys[i]] {
			mine = append(mine, w)
			continue
		}
		w.end = domain.RowRetryWait
		w.dirty = true
		w.out.LastError = "waiting for another worker's lookup of the same " + string(stage) + " input"
		w.out.NextAttemptAt = due
	}
	// An answer saved between our cache check and our claim is served now.
	return c.fromCache(ctx, stage, mine)
}

func (w *rowWork) rowWithFound() store.Row {
	r := w.row
	r.FoundProfileURL = w.found
	return r
}

// answer is one stage's answer for one input: a hit or a no-match.
type answer struct {
	profile *enrich.Profile
	email   *enrich.Email
	phones  *enrich.Phones
}

func (a answer) matched(stage domain.Stage) bool {
	switch stage {
	case domain.StageProfile:
		return a.profile != nil
	case domain.StageEmail:
		return a.email != nil
	default:
		return a.phones != nil && len(a.phones.Numbers) > 0
	}
}

// apply records a stage's answer on a row; remember adds it to the cache.
func (c *chunkRun) apply(w *rowWork, stage domain.Stage, a answer, remember bool) {
	w.done[stage] = true
	w.dirty = true
	now := c.p.cfg.Now()
	if w.out.Prov.FetchedAt.IsZero() {
		w.out.Prov = store.Provenance{Source: "vendor", FetchedAt: now}
	}
	if a.matched(stage) {
		w.match = true
		switch stage {
		case domain.StageProfile:
			w.found = a.profile.ProfileURL
			w.out.Profile = toStoreProfile(a.profile)
		case domain.StageEmail:
			w.out.Email = toStoreEmail(w.found, a.email)
		case domain.StagePhone:
			w.out.Phone = toStorePhone(w.found, a.phones)
		}
	} else {
		w.out.NoMatches = append(w.out.NoMatches, stage)
	}
	if remember {
		key := cacheKey(stage, w.rowWithFound())
		if stage == domain.StageProfile {
			key = cacheKey(stage, w.row)
		}
		entry := store.CacheEntry{Stage: stage, Key: key, Matched: a.matched(stage), FetchedAt: now}
		if entry.Matched {
			entry.Result = encodeCached(stage, a)
		}
		if !entry.Matched || entry.Result != nil {
			c.cacheMu.Lock()
			c.cache = append(c.cache, entry)
			c.cacheMu.Unlock()
		}
	}
}

// storeError is a failure of enrichq's database before a vendor call (the
// credit reservation could not be made): the call was not attempted.
type storeError struct{ err error }

func (e *storeError) Error() string { return "credit reservation: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// fail ends a row's run with a failure: a retry later, or failed for good.
func (c *chunkRun) fail(w *rowWork, err error) {
	w.dirty = true
	var ve *enrich.Error
	if errors.As(err, &ve) && !ve.Retryable() {
		w.end = domain.RowFailed
		w.out.Reason = "vendor rejected the input: " + ve.Error()
		w.out.LastError = ve.Error()
		return
	}
	var se *storeError
	if errors.As(err, &se) {
		// enrichq's own database failed before the call (unavailable, a
		// conflict that outlived its retries): the vendor was never asked, so
		// this is not one of the row's attempts. It is tried again shortly.
		w.end = domain.RowRetryWait
		w.out.LastError = err.Error()
		w.out.NextAttemptAt = c.p.cfg.Now().Add(time.Second + time.Duration(c.p.cfg.Rand()*float64(2*time.Second)))
		return
	}
	var notYet *ratelimit.NotYetError
	if errors.As(err, &notYet) {
		// The shared limiter says "not yet" for longer than a task should wait: not a failed attempt.
		w.end = domain.RowRetryWait
		w.out.LastError = err.Error()
		w.out.NextAttemptAt = c.p.cfg.Now().Add(notYet.RetryIn + time.Duration(c.p.cfg.Rand()*float64(time.Second)))
		return
	}
	attempts := w.row.Attempts + 1
	w.out.FailedAttempt = true
	w.out.LastError = err.Error()
	if attempts >= c.p.cfg.MaxAttempts {
		w.end = domain.RowFailed
		w.out.Reason = fmt.Sprintf("attempts exhausted (%d): %v", attempts, err)
		return
	}
	delay := ratelimit.Backoff(attempts-1, c.p.cfg.RetryBase, c.p.cfg.RetryMax, c.p.cfg.Rand)
	if errors.As(err, &ve) && ve.RetryAfter > delay {
		// Honour Retry-After, clamped so a wild value cannot park a row for days.
		delay = min(ve.RetryAfter, time.Hour) + time.Duration(c.p.cfg.Rand()*float64(c.p.cfg.RetryBase))
	}
	w.end = domain.RowRetryWait
	w.out.NextAttemptAt = c.p.cfg.Now().Add(max(delay, 100*time.Millisecond))
}

// halt stops the run: the rest of the chunk is released, and the job paused
// when the reason calls for it.
func (c *chunkRun) halt(ctx context.Context, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		return
	}
	var be *store.BudgetError
	var ve *enrich.Error
	switch {
	case errors.As(err, &be):
		c.stop = errStopBudget
		if be.Scope == "account" {
			c.pause(ctx, store.BudgetPausePrefix+": "+be.Error()+"; it renews on the 1st of next month (UTC), or raise ENRICHQ_VENDOR_MONTHLY_CREDITS")
		} else {
			c.pause(ctx, store.BudgetPausePrefix+": "+be.Error()+"; raise budget_credits (PATCH /v1/jobs/{id}) to continue")
		}
	case errors.As(err, &ve) && ve.Class == enrich.ClassUnauthorized:
		c.stop = errStopJob
		c.pause(ctx, "the vendor refused the API key (401): check ENRICHQ_VENDOR_KEY; "+ve.Message)
	case errors.As(err, &ve) && ve.Class == enrich.ClassForbidden:
		c.stop = errStopJob
		c.pause(ctx, "the vendor refused access (403 "+ve.Code+"): the plan has no API access; "+ve.Message)
	default:
		c.stop = errStopJob
	}
}

func (c *chunkRun) pause(ctx context.Context, reason string) {
	paused, err := c.p.store.PauseJob(context.WithoutCancel(ctx), c.job.ID, reason)
	if err != nil {
		c.p.log.Error("pause job failed", "job_id", c.job.ID, "err", err)
		return
	}
	if paused {
		c.p.log.Warn("job paused", "job_id", c.job.ID, "reason", reason)
	}
}

func (c *chunkRun) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stop != nil
}

// call makes one vendor call under a credit reservation and the rate limit.
// fn does the call and returns its charge. A nil error from call means the
// vendor answered; the caller classifies.
//
// again says that an earlier send of the same Idempotency-Key may exist
// (a row of the call was attempted before): a fresh answer then settles the
// earlier sends at 0, when the vendor marks its replays.
func (c *chunkRun) call(ctx context.Context, res store.Reservation, again bool, fn func(ctx context.Context) (enrich.Charge, map[domain.Stage]int64, error)) error {
	if c.p.isDraining() {
		return errDraining
	}
	res.JobID = c.job.ID
	res.TTL = c.p.cfg.Lease + time.Minute
	res.Account = c.p.cfg.Account
	res.Allowance = c.p.cfg.AccountAllowance
	t0 := time.Now()
	id, err := c.p.store.Reserve(ctx, res)
	c.nsLedger.Add(int64(time.Since(t0)))
	if err != nil {
		if errors.Is(err, store.ErrBudgetExhausted) || errors.Is(err, store.ErrJobNotRunning) {
			c.halt(ctx, err)
			return errStopJob
		}
		return &storeError{err}
	}
	// The rate slot last, right before the call: nothing slow sits between
	// the slot and the request, so calls reach the vendor evenly spaced.
	// A call waiting for its slot when the worker drains gives it up.
	wctx, cancelWait := context.WithCancel(ctx)
	stopWatch := context.AfterFunc(c.p.draining, cancelWait)
	err = c.p.limiter.Wait(wctx)
	stopWatch()
	cancelWait()
	if err == nil && c.p.isDraining() {
		err = errDraining
	}
	if err != nil {
		reason := "rate limiter: " + err.Error()
		if c.p.isDraining() && ctx.Err() == nil {
			reason, err = errDraining.Error(), errDraining
		}
		if rerr := c.p.store.Release(context.WithoutCancel(ctx), id, reason); rerr != nil {
			c.p.log.Error("ledger update failed", "ledger_id", id, "err", rerr)
		}
		if errors.Is(err, errDraining) {
			return err
		}
		return fmt.Errorf("rate limiter: %w", err)
	}
	t1 := time.Now()
	charge, split, callErr := fn(ctx)
	t2 := time.Now()
	c.nsVendor.Add(int64(t2.Sub(t1)))
	defer func() { c.nsLedger.Add(int64(time.Since(t2))) }()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	m := c.p.cfg.Metrics
	var ve *enrich.Error
	switch {
	case callErr == nil:
		c.p.limiter.Succeeded(ctx)
		st := settlement(charge, "")
		st.StageCredits = split
		if charge.Replayed {
			st = c.replayed(sctx, res, id, charge, st)
		} else if again && c.p.cfg.VendorMarksReplays && !charge.Resent {
			if n, rerr := c.p.store.ReconcileFresh(sctx, c.job.ID, res.IdempotencyKey, id); rerr != nil {
				c.p.log.Warn("earlier sends not reconciled; they stay counted at their reservation", "ledger_id", id, "err", rerr)
			} else if n > 0 {
				c.p.log.Info("earlier sends of unknown outcome reconciled by a fresh answer: not billed", "ledger_id", id, "calls", n)
			}
		}
		err = c.p.store.Settle(sctx, id, st)
		m.VendorCall(res.Endpoint, "ok")
		c.countCredits(res.Stage, st.Charged, split)
	case errors.As(callErr, &ve) && ve.Charge != nil:
		c.throttled(ctx, ve)
		err = c.p.store.Settle(sctx, id, settlement(*ve.Charge, ve.Error()))
		m.VendorCall(res.Endpoint, outcome(ve))
		c.countCredits(res.Stage, ve.Charge.Credits, nil)
	case errors.As(callErr, &ve) && ve.OutcomeUnknown:
		err = c.p.store.MarkUnknown(sctx, id, ve.Error())
		m.VendorCall(res.Endpoint, outcome(ve))
		c.countCredits(res.Stage, res.Credits, nil)
	case errors.As(callErr, &ve):
		c.throttled(ctx, ve)
		err = c.p.store.Release(sctx, id, ve.Error())
		m.VendorCall(res.Endpoint, outcome(ve))
	default: // canceled or an error before the request left: unknown to be safe
		err = c.p.store.MarkUnknown(sctx, id, callErr.Error())
		m.VendorCall(res.Endpoint, "error")
		c.countCredits(res.Stage, res.Credits, nil)
	}
	if err != nil {
		c.p.log.Error("ledger update failed", "ledger_id", id, "err", err)
	}
	return callErr
}

// replayed prices a call answered as a replay (free) and the earlier send
// of its Idempotency-Key that was billed for the answer (see
// store.ReconcileReplay), and returns the call's settlement. An unreadable
// replay is not priced: it says nothing of what the answer cost. When the
// earlier sends cannot be read, they stay counted at their worst case and
// the call is settled as a replay (its own first send, when http.Transport
// re-sent it, counted as billed: never under).
func (c *chunkRun) replayed(ctx context.Context, res store.Reservation, id int64, charge enrich.Charge, st store.Settlement) store.Settlement {
	n, self, err := c.p.store.ReconcileReplay(ctx, c.job.ID, res.IdempotencyKey, id, charge.Estimate, charge.Resent)
	switch {
	case err != nil:
		c.p.log.Warn("earlier sends not reconciled; they stay counted at their reservation", "ledger_id", id, "err", err)
		self = charge.Resent
	case n > 0:
		c.p.log.Info("earlier calls of unknown outcome reconciled by a replay", "ledger_id", id, "calls", n, "credits", charge.Estimate)
	}
	st.Charged, st.Reported = 0, !charge.Resent
	if self {
		st.Charged = charge.Estimate // its own first send was the billed one
	}
	return st
}

// countCredits adds a call's charge to the credits metric, a bulk call's by its split.
func (c *chunkRun) countCredits(stage domain.Stage, charged int64, split map[domain.Stage]int64) {
	m := c.p.cfg.Metrics
	if m == nil {
		return
	}
	rest := charged
	for st, n := range split {
		n = min(n, rest)
		rest -= n
		m.Credits(string(st), n)
	}
	m.Credits(string(stage), rest)
}

// outcome is the metric label of a vendor error.
func outcome(ve *enrich.Error) string {
	switch ve.Class {
	case enrich.ClassRateLimited:
		return "rate_limited"
	case enrich.ClassPermanent:
		return "permanent"
	case enrich.ClassUnauthorized:
		return "unauthorized"
	case enrich.ClassForbidden:
		return "forbidden"
	default:
		return "transient"
	}
}

func (c *chunkRun) throttled(ctx context.Context, ve *enrich.Error) {
	if ve.Class == enrich.ClassRateLimited {
		if err := c.p.limiter.Throttled(ctx, ve.RetryAfter); err != nil {
			c.p.log.Warn("shared cool-down not recorded", "err", err)
		}
	}
}

func settlement(ch enrich.Charge, errText string) store.Settlement {
	s := store.Settlement{Charged: ch.Credits, Reported: ch.Reported, Error: errText}
	if ch.RemainingReported {
		r := ch.Remaining
		s.Remaining = &r
	}
	return s
}

// single runs one lookup per distinct input of stage, concurrently.
func (c *chunkRun) single(ctx context.Context, stage domain.Stage, todo []*rowWork) {
	groups := map[string][]*rowWork{}
	var order []string
	for _, w := range todo {
		k := cacheKey(stage, w.rowWithFound())
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
	sem := make(chan struct{}, c.p.cfg.LookupConcurrency)
	var wg sync.WaitGroup
	for _, k := range order {
		if c.stopped() || ctx.Err() != nil || c.p.isDraining() {
			break
		}
		sem <- struct{}{}
		rows := groups[k]
		wg.Go(func() {
			defer func() { <-sem }()
			c.lookup(ctx, stage, rows)
		})
	}
	wg.Wait()
}

// lookup makes the single call of stage for rows sharing one input.
func (c *chunkRun) lookup(ctx context.Context, stage domain.Stage, rows []*rowWork) {
	w := rows[0]
	rowID := w.row.ID
	key := idempotencyKey(c.job.ID, rowID, stage)
	var a answer
	endpoint := "/v1/" + string(stage)
	err := c.call(ctx, store.Reservation{RowID: &rowID, RowCount: 1, Stage: stage, Endpoint: endpoint, IdempotencyKey: key,
		Credits: c.p.cfg.Costs.Worst(stage)}, w.row.Attempts > 0, func(ctx context.Context) (enrich.Charge, map[domain.Stage]int64, error) {
		switch stage {
		case domain.StageProfile:
			r, err := c.p.vendor.Profile(ctx, profileQuery(w.row), key)
			a.profile = r.Profile
			return r.Charge, nil, err
		case domain.StageEmail:
			r, err := c.p.vendor.Email(ctx, w.found, key)
			a.email = r.Email
			return r.Charge, nil, err
		default:
			r, err := c.p.vendor.Phone(ctx, w.found, key)
			a.phones = r.Phones
			return r.Charge, nil, err
		}
	})
	c.settleRows(ctx, rows, err, func(w *rowWork, remember bool) { c.apply(w, stage, a, remember) })
}

// settleRows applies a call's outcome to the rows that share it.
func (c *chunkRun) settleRows(ctx context.Context, rows []*rowWork, err error, ok func(w *rowWork, remember bool)) {
	var ve *enrich.Error
	if errors.As(err, &ve) && (ve.Class == enrich.ClassUnauthorized || ve.Class == enrich.ClassForbidden) {
		c.halt(ctx, err) // the rows are released on save
		return
	}
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	switch {
	case err == nil:
		for i, w := range rows {
			ok(w, i == 0)
		}
	case errors.Is(err, errStopJob) || errors.Is(err, errDraining) || ctx.Err() != nil:
		// not attempted, or shutting down: rows are released on save
	default:
		for _, w := range rows {
			c.fail(w, err)
		}
	}
}

// bulk runs the profile stage (and the later stages the job wants) with
// POST /v1/bulk, one call per BulkSize distinct inputs.
func (c *chunkRun) bulk(ctx context.Context, todo []*rowWork) {
	var include []domain.Stage
	perRow := c.p.cfg.Costs.Worst(domain.StageProfile)
	for _, s := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
		if c.want[s] {
			include = append(include, s)
			perRow += c.p.cfg.Costs.Worst(s)
		}
	}
	groups := map[string][]*rowWork{}
	var order []string
	for _, w := range todo {
		k := cacheKey(domain.StageProfile, w.row)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
	for len(order) > 0 && !c.stopped() && ctx.Err() == nil && !c.p.isDraining() {
		n := min(len(order), c.p.cfg.BulkSize)
		// Shrink the call to what the budget still covers.
		if avail, limited, err := c.p.store.Available(ctx, c.job.ID); err == nil && limited && avail < int64(n)*perRow {
			n = int(avail / perRow)
			if n == 0 {
				c.halt(ctx, c.budgetError(ctx, perRow))
				return
			}
		}
		keys := order[:n]
		order = order[n:]
		c.bulkCall(ctx, keys, groups, include, perRow)
	}
}

// alignRetries gives the rows of one failed bulk call one due time, so they
// come back together and are sent again as the same call, under the same
// Idempotency-Key: a vendor that did the work the first time replays it
// instead of billing it again.
func (c *chunkRun) alignRetries(rows []*rowWork) {
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	var due time.Time
	for _, w := range rows {
		if w.end == domain.RowRetryWait && w.out.NextAttemptAt.After(due) {
			due = w.out.NextAttemptAt
		}
	}
	for _, w := range rows {
		if w.end == domain.RowRetryWait {
			w.out.NextAttemptAt = due
		}
	}
}

// bulkSplit estimates a bulk call's charge by stage with the cost table, for
// the ledger's "what did the job cost, by stage".
func (c *chunkRun) bulkSplit(queries []enrich.ProfileQuery, include []domain.Stage, res enrich.BulkResult) map[domain.Stage]int64 {
	costs := c.p.cfg.Costs
	split := map[domain.Stage]int64{}
	for i, it := range res.Items {
		if it.Err != nil || i >= len(queries) {
			continue
		}
		split[domain.StageProfile] += costs.ProfileCost(queries[i].Kind())
		if it.Profile == nil {
			continue
		}
		for _, s := range include {
			switch s {
			case domain.StageEmail:
				split[domain.StageEmail] += costs.EmailCost(it.Email)
			case domain.StagePhone:
				split[domain.StagePhone] += costs.PhoneCost(it.Phones)
			}
		}
	}
	return split
}

// budgetError describes the job's budget when a call of wanted credits does not fit.
func (c *chunkRun) budgetError(ctx context.Context, wanted int64) *store.BudgetError {
	be := &store.BudgetError{Scope: "job", Wanted: wanted}
	if j, err := c.p.store.GetJob(ctx, "", c.job.ID); err == nil {
		be.Spent, be.Reserved = j.CreditsSpent, j.CreditsReserved
		if j.BudgetCredits != nil {
			be.Budget = *j.BudgetCredits
		}
	}
	return be
}

func (c *chunkRun) bulkCall(ctx context.Context, keys []string, groups map[string][]*rowWork, include []domain.Stage, perRow int64) {
	queries := make([]enrich.ProfileQuery, len(keys))
	for i, k := range keys {
		queries[i] = profileQuery(groups[k][0].row)
	}
	idem := bulkIdempotencyKey(c.job.ID, keys, include)
	var res enrich.BulkResult
	again := false
	for _, k := range keys {
		for _, w := range groups[k] {
			again = again || w.row.Attempts > 0
		}
	}
	err := c.call(ctx, store.Reservation{RowCount: len(keys), Stage: domain.StageBulk, Endpoint: "/v1/bulk", IdempotencyKey: idem,
		Credits: int64(len(keys)) * perRow}, again, func(ctx context.Context) (enrich.Charge, map[domain.Stage]int64, error) {
		var err error
		res, err = c.p.vendor.Bulk(ctx, queries, include, idem)
		if err != nil {
			return res.Charge, nil, err
		}
		return res.Charge, c.bulkSplit(queries, include, res), nil
	})
	var ve *enrich.Error
	if err != nil && errors.As(err, &ve) && ve.Class == enrich.ClassPermanent && len(keys) > 1 {
		// The whole call was refused: isolate the bad input with single lookups.
		c.p.log.Warn("bulk call refused; falling back to single lookups", "job_id", c.job.ID, "err", err)
		var rows []*rowWork
		for _, k := range keys {
			rows = append(rows, groups[k]...)
		}
		c.single(ctx, domain.StageProfile, rows)
		return
	}
	if err != nil {
		var rows []*rowWork
		for _, k := range keys {
			c.settleRows(ctx, groups[k], err, nil)
			rows = append(rows, groups[k]...)
		}
		c.alignRetries(rows)
		return
	}
	for i, k := range keys {
		rows := groups[k]
		if i >= len(res.Items) {
			c.settleRows(ctx, rows, &enrich.Error{Class: enrich.ClassTransient, Message: "bulk answer lacks this row"}, nil)
			continue
		}
		item := res.Items[i]
		if item.Err != nil {
			c.settleRows(ctx, rows, item.Err, nil)
			continue
		}
		c.settleRows(ctx, rows, nil, func(w *rowWork, remember bool) {
			c.apply(w, domain.StageProfile, answer{profile: item.Profile}, remember)
			if item.Profile == nil {
				return // the later stages were not looked up
			}
			for _, s := range include {
				c.apply(w, s, answer{email: item.Email, phones: item.Phones}, remember)
			}
		})
	}
}
