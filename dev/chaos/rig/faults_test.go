package rig_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/dev/chaos/rig"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/service"
)

// The same invariants as dev/chaos, smaller and in-process: every row
// terminal, none lost, no input billed twice, every credit accounted for.

// dying is a vendor that does the call (the vendor bills it) and then never
// comes back, like a worker killed right after its request left: nothing it
// learned is recorded. Calls block until release is closed.
type dying struct {
	Vendor
	release <-chan struct{}
	calls   atomic.Int64
}

func (d *dying) die() { d.calls.Add(1); <-d.release }

func (d *dying) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	r, err := d.Vendor.Profile(ctx, q, key)
	d.die()
	return r, err
}

func (d *dying) Email(ctx context.Context, u, key string) (seed.EmailResult, error) {
	r, err := d.Vendor.Email(ctx, u, key)
	d.die()
	return r, err
}

func (d *dying) Phone(ctx context.Context, u, key string) (seed.PhoneResult, error) {
	r, err := d.Vendor.Phone(ctx, u, key)
	d.die()
	return r, err
}

func (d *dying) Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, key string) (seed.BulkResult, error) {
	r, err := d.Vendor.Bulk(ctx, rows, include, key)
	d.die()
	return r, err
}

// stalling is a limiter whose calls past the first pass wait for their rate
// slot until release is closed, whatever their context says, like the
// calls of a worker killed while they waited: their credits reserved, the
// request never sent.
type stalling struct {
	jobs.Limiter
	pass    int64
	release <-chan struct{}
	n       atomic.Int64
	waiting atomic.Int64
}

func (s *stalling) Wait(ctx context.Context) error {
	if s.n.Add(1) <= s.pass {
		return s.Limiter.Wait(ctx)
	}
	s.waiting.Add(1)
	<-s.release
	return errors.New("killed while waiting for the rate slot")
}

// A worker killed (SIGKILL) with calls in flight (the vendor billed them, the
// worker recorded nothing) and calls waiting for their rate slot (reserved,
// never sent): its leases expire, other workers take the rows, and their
// retries send the same Idempotency-Keys. The vendor honours them, and,
// in one of the vendor's modes, does not mark its replays: a replay is known
// by its X-Credits-Charged: 0. The killed calls' reservations are explained
// by the retries (a replay prices the billed one, a fresh answer from the
// vendor that is by then known to honour keys settles the unsent ones at
// 0), before the job completes: when it reports completed, its spend is the
// vendor's bill to the credit.
func TestWorkerKilledMidChunk(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{true, false} {
		for _, noHeader := range []bool{false, true} {
			t.Run(fmt.Sprintf("bulk=%v,no-replay-header=%v", bulk, noHeader), func(t *testing.T) {
				t.Parallel()
				r := newRig(t, rigConfig{processor: jobs.ProcessorConfig{Bulk: bulk, Lease: time.Second, LookupConcurrency: 4},
					vendor: func(o *enrichtest.SeedOptions) { o.NoReplayHeader = noHeader }})
				const n = 200
				id := r.submit(rows("kill", n))
				release := make(chan struct{})
				doomed := &dying{release: release}
				stall := &stalling{pass: 3, release: release}
				w := r.startWorker(workerConfig{shutdownTimeout: 100 * time.Millisecond,
					vendor:  func(v Vendor) Vendor { doomed.Vendor = v; return doomed },
					limiter: func(l jobs.Limiter) jobs.Limiter { stall.Limiter = l; return stall }})
				t.Cleanup(func() { close(release) }) // runs before the worker's cleanup
				r.eventually(10*time.Second, "calls in flight and calls waiting for their slot on the doomed worker", func() bool {
					return doomed.calls.Load() >= 3 && stall.waiting.Load() >= 1
				})
				billed := r.vendor.Stats().BilledCalls
				w.kill()

				r.startWorker(workerConfig{})
				r.startWorker(workerConfig{})
				if p := r.waitDone(id, 60*time.Second); p.state != "completed" {
					t.Fatalf("job %s, want completed: %+v", p.state, p)
				}
				f := r.check(id, n)
				var byReplay, byFresh int
				for _, e := range r.ledger(id) {
					switch {
					case strings.Contains(e.Error, "replayed this Idempotency-Key"):
						byReplay++
					case strings.Contains(e.Error, "afresh") || strings.HasPrefix(e.Error, "never sent"):
						byFresh++
					}
				}
				t.Logf("killed calls: %d in flight (%d billed before the kill), %d waiting for their slot; %d settled by a replay, %d released as never sent or settled by a fresh answer",
					doomed.calls.Load(), billed, stall.waiting.Load(), byReplay, byFresh)
				if byReplay < 3 || byFresh < 1 {
					t.Errorf("want the killed calls explained: the billed ones by replays (%d), the unsent ones released or settled by fresh answers (%d)", byReplay, byFresh)
				}
				requireRows(t, f)
				if f.LeaseExpired == 0 {
					t.Errorf("no row came back from the lost worker (lease expired); want some")
				}
				requireExactMoney(t, f)
			})
		}
	}
}

// Redis loses every task mid-run (FLUSHALL, scoped to the test's queue and
// limiter on the shared Redis): the scheduler finds the work in Postgres.
func TestRedisFlushMidRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigConfig{processor: jobs.ProcessorConfig{Bulk: true, BulkSize: 10}, rate: 20, burst: 2})
	const n = 300 // 30 bulk calls or so; the flush comes before the 8th, about a quarter into the job
	var (
		deleted  int
		flushErr error
	)
	flushed := r.atVendorCall(8, func() {
		deleted, flushErr = rig.FlushQueue(context.Background(), r.rdb, r.queue, r.rlKey+"*")
	})
	id := r.submit(rows("flush", n))
	r.startWorker(workerConfig{})
	r.startWorker(workerConfig{})
	r.await(flushed, 30*time.Second, "the flush")
	if flushErr != nil || deleted == 0 {
		t.Fatalf("flush: %d keys, %v", deleted, flushErr)
	}
	if p := r.waitDone(id, 60*time.Second); p.state != "completed" {
		t.Fatalf("job %s after the flush, want completed", p.state)
	}
	requireClean(t, r.check(id, n))
}

// Postgres restarts mid-run (every connection cut, new ones refused for a
// while): workers and the API carry on after it, nothing half-written, the
// API says it is not ready meanwhile and fails fast.
func TestPostgresRestartMidRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigConfig{processor: jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 2, Lease: time.Second},
		vendor: func(o *enrichtest.SeedOptions) { o.Latency = 5 * time.Millisecond }})
	api := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Service: service.New(service.Config{Store: r.st, Submitter: r.sub}), Keys: httpapi.NewStaticKeys(map[string]string{"chaos-key-0001": "acme"}), Log: r.log,
		Ready: []httpapi.ReadyCheck{{Name: "postgres", Ping: r.st.Ping}},
	}))
	t.Cleanup(api.Close)
	const n = 200
	// Postgres goes away before the vendor's 50th call, a quarter of the job.
	cut := r.atVendorCall(n/4, func() { r.proxy.Down() })
	id := r.submit(rows("pg", n))
	r.startWorker(workerConfig{})
	r.startWorker(workerConfig{})
	r.await(cut, 30*time.Second, "Postgres going away")
	start := time.Now()
	status := func(method, path, body string) int {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer chaos-key-0001")
		req.Header.Set("Content-Type", "text/csv")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s while Postgres is down: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := status(http.MethodGet, "/readyz", ""); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %d while Postgres was down, want 503", st)
	}
	if st := status(http.MethodPost, "/v1/jobs", "profile_url\nhttps://platform.example/in/x\n"); st/100 != 5 {
		t.Errorf("a submit answered %d while Postgres was down, want a 5xx", st)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the API took %s to answer while Postgres was down", took)
	}
	time.Sleep(500 * time.Millisecond) // the outage: nothing to poll for, Postgres is away
	if err := r.proxy.Up(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	// Chunks whose task failed on the cut connection wait in asynq's retry set.
	waiting, _ := r.enq.Inspector.ListRetryTasks(r.queue)
	if p := r.waitDone(id, 90*time.Second); p.state != "completed" {
		t.Fatalf("job %s after the restart, want completed", p.state)
	}
	resumed := time.Since(up)
	r.expireReservations() // calls whose settlement was cut
	f := r.check(id, n)
	requireRows(t, f)
	r.eventually(10*time.Second, "the API ready again", func() bool { return status(http.MethodGet, "/readyz", "") == http.StatusOK })
	if st := status(http.MethodPost, "/v1/jobs", "profile_url\nhttps://platform.example/in/after\n"); st != http.StatusCreated {
		t.Errorf("a submit after the restart answered %d, want 201", st)
	}
	requireMoney(t, f)
	// With a lease of 1s and sweeps every 20ms, the work is found again at
	// once; a chunk task that failed on the cut connection is retried within
	// 1-2 s (RetryDelay), so 30 s means recovery is broken.
	t.Logf("the job finished %s after Postgres came back (%d chunk tasks were waiting to retry)", resumed.Round(100*time.Millisecond), len(waiting))
	if resumed > 30*time.Second {
		t.Errorf("the job took %s to finish after Postgres came back: %d chunk tasks failed on the cut connection wait in asynq's retry set",
			resumed.Round(time.Second), len(waiting))
	}
}

// The vendor answers nearly everything 429 for a while: rows wait (bounded
// retries, the shared cool-down), calls do not pile up, and the job ends
// once the storm passes.
//
// The storm begins at the vendor's 20th call, a fifth of the job.
func TestVendor429Storm(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigConfig{processor: jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 4, MaxAttempts: 20,
		RetryBase: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond}, rate: 50, burst: 5})
	const n = 100
	var (
		onset  time.Time
		before enrichtest.SeedStats
		calm   = r.vendor.Faults()
	)
	stormed := r.atVendorCall(n/5, func() {
		onset, before = time.Now(), r.vendor.Stats()
		storm := calm
		storm.RPS, storm.Burst = 2, 1
		r.vendor.SetFaults(storm)
	})
	id := r.submit(rows("storm", n), "profile")
	r.startWorker(workerConfig{})
	r.startWorker(workerConfig{})
	r.await(stormed, 30*time.Second, "the storm")
	// 80 rows are left and the vendor lets 2 a second through: 429s come
	// at every end of the shared cool-down until the storm is lifted.
	const want429 = 3
	r.eventually(30*time.Second, "the vendor answering 429", func() bool {
		return r.vendor.Stats().ByStatus[429]-before.ByStatus[429] >= want429
	})
	time.Sleep(time.Second) // the storm lasts a while: it is the fault, not a wait for a condition
	r.vendor.SetFaults(calm)
	secs := time.Since(onset).Seconds()
	during := r.vendor.Stats()
	stormCalls := during.Requests - before.Requests
	t.Logf("the storm: %.1fs, %d calls, %d answered 429", secs, stormCalls, during.ByStatus[429]-before.ByStatus[429])
	if rate := float64(stormCalls) / secs; rate > 3*50 {
		t.Errorf("retry storm: %.0f calls/s during the 429 storm, against a shared limit of 50/s", rate)
	}
	if p := r.waitDone(id, 60*time.Second); p.state != "completed" {
		t.Fatalf("job %s after the storm", p.state)
	}
	fig := r.check(id, n)
	requireClean(t, fig)
	if fig.States["failed"] > 0 {
		t.Errorf("%d rows failed because of a short 429 storm: %v", fig.States["failed"], fig.FailedReasons)
	}
}

// The vendor misbehaves: 503s, malformed answers, answers slower than the
// client timeout, connection resets, and a poison input. Rows end terminal
// after bounded retries; the poison rows fail at once with the vendor's
// message and block nothing; goroutines stay bounded; every credit of a call
// whose answer was lost is counted, at its worst case.
func TestVendorFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ bulk, noHeader bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		bulk := c.bulk
		t.Run(fmt.Sprintf("bulk=%v,no-replay-header=%v", bulk, c.noHeader), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, rigConfig{
				processor: jobs.ProcessorConfig{Bulk: bulk, BulkSize: 10, MaxAttempts: 12, LookupConcurrency: 4},
				timeout:   300 * time.Millisecond,
				vendor: func(o *enrichtest.SeedOptions) {
					o.FailRate, o.MalformedRate, o.SlowRate, o.ResetRate = 0.05, 0.03, 0.03, 0.03
					o.SlowDelay = time.Second
					o.RejectSubstring = "POISON"
					o.NoReplayHeader = c.noHeader
				},
			})
			const n = 200
			in := rows("faults", n)
			poisoned := 0
			for i := range in {
				if in[i].Company != "" && poisoned < 3 {
					in[i].Company = "POISON " + in[i].Company
					poisoned++
				}
			}
			base := runtime.NumGoroutine()
			var peak atomic.Int64
			stop := make(chan struct{})
			var sampler sync.WaitGroup
			sampler.Go(func() {
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					if g := int64(runtime.NumGoroutine()); g > peak.Load() {
						peak.Store(g)
					}
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			})
			id := r.submit(in, "profile", "email", "phone")
			r.startWorker(workerConfig{})
			r.startWorker(workerConfig{})
			p := r.waitDone(id, 90*time.Second)
			close(stop)
			sampler.Wait()
			if p.state != "completed" {
				t.Fatalf("job %s", p.state)
			}
			// 2 workers x 4 chunks x 4 lookups, with their HTTP and Postgres goroutines: a few hundred at most.
			if g := peak.Load() - int64(base); g > 600 {
				t.Errorf("goroutines grew by %d during the job", g)
			}
			f := r.check(id, n)
			requireRows(t, f)
			var rejected, attempts int
			for _, row := range r.rows(id) {
				if strings.HasPrefix(row.Company, "POISON") && row.State == domain.RowFailed && strings.HasPrefix(row.StateReason, "vendor rejected") {
					rejected++
					attempts = max(attempts, row.Attempts)
				}
			}
			// A poison row may have had transient failures before (its bulk call answered 503):
			// the rejection itself is final, never retried to exhaustion.
			if rejected != poisoned || attempts >= 12 {
				t.Errorf("%d of %d poison rows failed with the vendor's message, after %d attempts", rejected, poisoned, attempts)
			}
			if other := f.States["failed"] - poisoned; other > 0 {
				t.Errorf("%d other rows failed: %v", other, f.FailedReasons)
			}
			requireMoney(t, f)
			if !f.Money() {
				for _, e := range r.ledger(id) {
					for _, k := range f.UnexplainedKeys {
						if e.IdempotencyKey == k {
							t.Logf("unexplained key, enrichq: %+v", e)
						}
					}
				}
				for _, e := range r.vendor.Ledger() {
					for _, k := range f.UnexplainedKeys {
						if e.IdempotencyKey == k {
							t.Logf("unexplained key, vendor: %+v", e)
						}
					}
				}
			}
		})
	}
}

// A worker stopped gracefully (SIGTERM: Processor.Drain, then asynq's
// Shutdown) with a chunk under way: the calls in flight finish and are
// saved, the rows it has not started are released at once (not left to
// their lease), and it stops within its shutdown timeout.
func TestGracefulShutdownReleasesRows(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigConfig{processor: jobs.ProcessorConfig{Bulk: false, LookupConcurrency: 2, Lease: 30 * time.Second},
		chunk:  40,
		vendor: func(o *enrichtest.SeedOptions) { o.Latency = 500 * time.Millisecond }})
	const n = 80
	id := r.submit(rows("term", n), "profile")
	// A chunk takes 40 x 500ms / 2 = 10s: longer than the timeout, unless it stops starting calls.
	// The timeout leaves a loaded 2-core CI machine (race detector, parallel packages) room to save.
	const timeout = 6 * time.Second
	w := r.startWorker(workerConfig{shutdownTimeout: timeout, concurrency: 2})
	r.eventually(10*time.Second, "calls under way", func() bool { return r.vendor.Stats().BilledCalls >= 2 })
	start := time.Now()
	w.stop()
	took := time.Since(start)
	// The process would exit now: whatever it did not write is lost.
	w.proxy.Down()
	if took > timeout+time.Second {
		t.Errorf("shutdown took %s, over its timeout of %s", took, timeout)
	}
	t.Logf("graceful stop took %s", took)
	p := r.progress(id)
	var open int
	for _, e := range r.ledger(id) {
		if e.Status == "reserved" {
			open++
		}
	}
	if p.inFlight > 0 || open > 0 {
		t.Fatalf("after a graceful stop, %d rows are left in flight until their lease (%s) expires and %d calls' reservations stay open",
			p.inFlight, r.cfg.processor.Lease, open)
	}
	r.startWorker(workerConfig{})
	if p := r.waitDone(id, 60*time.Second); p.state != "completed" {
		t.Fatalf("job %s", p.state)
	}
	f := r.check(id, n)
	requireClean(t, f)
	if f.LeaseExpired > 0 {
		t.Errorf("%d rows waited for their lease", f.LeaseExpired)
	}
}
