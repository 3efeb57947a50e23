package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/upstream"
)

// Seed run: 200 companies x 1 role, profile + email, the vendor at 300 ms
// latency and 10 requests/s. The baseline is how a script does it: a loop of
// single lookups, one call after another (profile, then email when a
// profile was found), at most at the vendor's rate.
func (b *bench) seed(ctx context.Context) error {
	n := b.scaled(200, 5)
	const rps = 10.0
	vendor := &vendorSpec{rps: rps, burst: 2, latency: 300 * time.Millisecond}
	for rep := range b.opts.repeat {
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := func() error {
			// Single lookups: the vendor's rate is the limit.
			st, err := b.startStack(ctx, stackSpec{name: "seed-single", vendor: vendor, worker: true, scheduler: true, bulk: false, rps: rps, burst: 1})
			if err != nil {
				return err
			}
			defer b.report.rss("seed", st)
			defer st.stop()
			b.logf("seed %d/%d: baseline, a sequential loop of single lookups over %d companies", rep+1, b.opts.repeat, n)
			base, err := seedLoop(ctx, st, n, rps)
			if err != nil {
				return fmt.Errorf("baseline loop: %w", err)
			}
			b.logf("seed: baseline %.2f s for %d calls", base.elapsed.Seconds(), base.calls)
			before, err := st.vendorLedger(ctx)
			if err != nil {
				return err
			}
			single, singleJob, err := b.runJobStatus(ctx, st, n, "seed single", 25*time.Millisecond)
			if err != nil {
				return err
			}
			after, err := st.vendorLedger(ctx)
			if err != nil {
				return err
			}
			calls := after.BilledCalls - before.BilledCalls
			throttled := after.ByStatus[http.StatusTooManyRequests] - before.ByStatus[http.StatusTooManyRequests]
			ideal := float64(calls) / rps
			singleJob.Credits.Spent += base.credits // the loop's calls are on the same bill
			credits := money(ctx, st, singleJob)
			b.report.add("seed.single", sample{Value: 100 * single.Seconds() / ideal,
				Detail: fmt.Sprintf("%.1f s for %d calls at %g req/s (calls ÷ rate = %.1f s), %d answered 429; %s (with the loop's)",
					single.Seconds(), calls, rps, ideal, throttled, credits),
				Baseline: base.elapsed.Seconds(), BaseText: fmt.Sprintf("sequential loop: %.1f s (%d calls)", base.elapsed.Seconds(), base.calls)})
			st.stop()
			b.report.rss("seed", st)

			// Bulk: 100 rows a call.
			bst, err := b.startStack(ctx, stackSpec{name: "seed-bulk", vendor: vendor, worker: true, scheduler: true, bulk: true, rps: rps, burst: 1})
			if err != nil {
				return err
			}
			defer b.report.rss("seed", bst)
			defer bst.stop()
			bulk, bulkJob, err := b.runJobStatus(ctx, bst, n, "seed bulk", 25*time.Millisecond)
			if err != nil {
				return err
			}
			led, _ := bst.vendorLedger(ctx)
			b.report.add("seed.bulk", sample{Value: bulk.Seconds(),
				Detail:   fmt.Sprintf("%d bulk calls; %s", led.BilledCalls, money(ctx, bst, bulkJob)),
				Baseline: base.elapsed.Seconds(), BaseText: fmt.Sprintf("sequential loop: %.1f s, %.0f× slower", base.elapsed.Seconds(), base.elapsed.Seconds()/bulk.Seconds())})
			b.logf("seed: single-lookup mode %.2f s (%d calls, ideal %.1f s), bulk %.2f s", single.Seconds(), calls, ideal, bulk.Seconds())
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

type loopResult struct {
	elapsed time.Duration
	calls   int
	credits int64
}

// seedLoop is the script: for each company, the profile of its VP Sales,
// then that profile's email, one call at a time, never faster than rps,
// waiting out a 429's Retry-After.
func seedLoop(ctx context.Context, st *stack, n int, rps float64) (loopResult, error) {
	client, err := seed.NewClient(seed.Config{BaseURL: st.vendorURL, APIKey: upstream.Secret(st.vendorKey), HTTPClient: &http.Client{Timeout: 30 * time.Second},
		UserAgent: "bench-loop"})
	if err != nil {
		return loopResult{}, err
	}
	lim := rate.NewLimiter(rate.Limit(rps), 1)
	var res loopResult
	call := func(f func() error) error {
		for {
			if err := lim.Wait(ctx); err != nil {
				return err
			}
			res.calls++
			err := f()
			var ve *enrich.Error
			if errors.As(err, &ve) && ve.Class == enrich.ClassRateLimited {
				select {
				case <-time.After(max(ve.RetryAfter, time.Second)):
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			return err
		}
	}
	start := time.Now()
	for i := range n {
		var p *enrich.Profile
		if err := call(func() error {
			r, err := client.Profile(ctx, enrich.ProfileQuery{Name: "VP Sales", Company: companyName(i, "")}, "")
			p = r.Profile
			res.credits += r.Charge.Credits
			return err
		}); err != nil {
			return res, err
		}
		if p == nil {
			continue
		}
		if err := call(func() error {
			r, err := client.Email(ctx, p.ProfileURL, "")
			res.credits += r.Charge.Credits
			return err
		}); err != nil {
			return res, err
		}
	}
	res.elapsed = time.Since(start)
	return res, nil
}

// runJob uploads n companies x "VP Sales" (profile + email) and waits for the
// job to complete: the time from the upload's first byte to the poll that
// sees it completed.
func (b *bench) runJob(ctx context.Context, st *stack, n int, name string, poll time.Duration) (time.Duration, error) {
	took, _, err := b.runJobStatus(ctx, st, n, name, poll)
	return took, err
}

func (b *bench) runJobStatus(ctx context.Context, st *stack, n int, name string, poll time.Duration) (time.Duration, jobStatus, error) {
	body := csvBytes(n, "")
	start := time.Now()
	job, err := st.submitFile(ctx, jobQuery(name), writeTemp(st.logDir, "upload.csv", body))
	if err != nil {
		return 0, job, err
	}
	done, end, err := st.waitJob(ctx, job.ID, poll)
	if err != nil {
		return 0, done, err
	}
	if done.Rows["total"] != n {
		return 0, done, fmt.Errorf("job %s has %d rows, want %d", job.ID, done.Rows["total"], n)
	}
	return end.Sub(start), done, nil
}

// money says whether what the job counts as spent is what the fake vendor
// billed (the ledger invariant), as the job finishes.
func money(ctx context.Context, st *stack, job jobStatus) string {
	led, err := st.vendorLedger(ctx)
	if err != nil {
		return ""
	}
	if job.Credits.Spent == led.TotalCredits && job.Credits.Reserved == 0 {
		return fmt.Sprintf("credits: %d spent = %d billed", job.Credits.Spent, led.TotalCredits)
	}
	return fmt.Sprintf("credits: %d spent and %d still reserved at the end, the vendor billed %d (MISMATCH)",
		job.Credits.Spent, job.Credits.Reserved, led.TotalCredits)
}

// writeTemp writes body to dir/name and returns the path.
func writeTemp(dir, name string, body []byte) string {
	p := filepath.Join(dir, name)
	_ = os.WriteFile(p, body, 0o644)
	return p
}

// ceilingSpec is the stack of the ceiling, polling and many-jobs scenarios:
// the vendor answers at once and without limit, bulk calls.
func ceilingSpec(name string, pprof bool) stackSpec {
	return stackSpec{name: name, vendor: &vendorSpec{}, worker: true, scheduler: true, bulk: true, rps: 100000, burst: 1000, pprof: pprof}
}

// Ceiling: 100,000 rows, bulk, a vendor without latency or limit: what the
// pipeline moves when the vendor is not the limit. The baseline is the write
// path alone, straight to Postgres (writepath.go).
func (b *bench) ceiling(ctx context.Context) error {
	n := b.scaled(100_000, 200)
	for rep := range b.opts.repeat {
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := func() error {
			st, err := b.startStack(ctx, ceilingSpec("ceiling", false))
			if err != nil {
				return err
			}
			defer b.report.rss("ceiling", st)
			defer st.stop()
			b.logf("ceiling %d/%d: %d rows end to end", rep+1, b.opts.repeat, n)
			took, done, err := b.runJobStatus(ctx, st, n, "ceiling", 50*time.Millisecond)
			if err != nil {
				return err
			}
			credits := money(ctx, st, done)
			st.stop()
			b.report.rss("ceiling", st)
			e2e := float64(n) / took.Seconds()
			b.logf("ceiling: %.0f rows/s (%.2f s); write path baseline next", e2e, took.Seconds())
			wp, err := b.writePath(ctx, n)
			if err != nil {
				return fmt.Errorf("write path baseline: %w", err)
			}
			wpRate := float64(n) / wp.elapsed.Seconds()
			b.logf("ceiling: write path %.0f rows/s (%.2f s)", wpRate, wp.elapsed.Seconds())
			base := fmt.Sprintf("write path alone: %s rows/s (%.2f s; %d claims + SaveOutcomes, %d at once)",
				groupThousands(int64(wpRate)), wp.elapsed.Seconds(), wp.chunks, wp.concurrency)
			b.report.add("ceiling.rate", sample{Value: e2e, Detail: fmt.Sprintf("%s rows in %.2f s; %s", groupThousands(int64(n)), took.Seconds(), credits),
				Baseline: wpRate, BaseText: base})
			b.report.add("ceiling.share", sample{Value: e2e / wpRate, Baseline: wpRate, BaseText: base})
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// Polling under load: 200 status polls a second, open loop (a poll is sent
// on schedule whether or not the previous one answered), of a ceiling job
// while it runs.
func (b *bench) polling(ctx context.Context) error {
	n := b.scaled(100_000, 200)
	for rep := range b.opts.repeat {
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := func() error {
			st, err := b.startStack(ctx, ceilingSpec("polling", false))
			if err != nil {
				return err
			}
			defer b.report.rss("polling", st)
			defer st.stop()
			b.logf("polling %d/%d: %g polls/s during a %d-row job", rep+1, b.opts.repeat, b.opts.pollRate, n)
			start := time.Now()
			job, err := st.submitFile(ctx, jobQuery("polling"), writeTemp(st.logDir, "upload.csv", csvBytes(n, "")))
			if err != nil {
				return err
			}
			pctx, stopPolls := context.WithCancel(ctx)
			lat, errs := make(chan time.Duration, 1<<16), make(chan error, 1<<10)
			var wg sync.WaitGroup
			wg.Go(func() { pollLoop(pctx, st, job.ID, b.opts.pollRate, lat, errs) })
			_, end, werr := st.waitJob(ctx, job.ID, 100*time.Millisecond)
			stopPolls()
			wg.Wait()
			close(lat)
			close(errs)
			if werr != nil {
				return werr
			}
			var ds []time.Duration
			for d := range lat {
				ds = append(ds, d)
			}
			nerr := len(errs)
			if len(ds) == 0 {
				return errors.New("no poll answered")
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			p := func(q float64) float64 {
				return float64(ds[min(len(ds)-1, int(math.Ceil(q*float64(len(ds))))-1)].Microseconds()) / 1000
			}
			window := end.Sub(start)
			b.report.add("polling.p99", sample{Value: p(0.99),
				Detail: fmt.Sprintf("p50 %.1f ms, p90 %.1f ms, max %.1f ms; %d polls (%.0f/s) over %.1f s, %d errors; job at %s rows/s",
					p(0.5), p(0.9), p(1), len(ds), float64(len(ds))/window.Seconds(), window.Seconds(), nerr,
					groupThousands(int64(float64(n)/window.Seconds())))})
			b.logf("polling: p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d polls", p(0.5), p(0.99), p(1), len(ds))
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// pollLoop sends a status poll every 1/rate seconds, each in its own
// goroutine, and reports each answered poll's latency.
func pollLoop(ctx context.Context, st *stack, id string, perSecond float64, lat chan<- time.Duration, errs chan<- error) {
	interval := time.Duration(float64(time.Second) / perSecond)
	next := time.Now()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		next = next.Add(interval)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		wg.Go(func() {
			t0 := time.Now()
			_, err := st.status(ctx, id)
			d := time.Since(t0)
			if err != nil {
				if ctx.Err() == nil {
					select {
					case errs <- err:
					default:
					}
				}
				return
			}
			select {
			case lat <- d:
			default:
			}
		})
	}
}

// Many jobs: 50 small jobs submitted, one every 100 ms, while a
// 100,000-row job runs; each small job's time from its submit to its
// finished_at. A big job must not starve small ones.
func (b *bench) manyJobs(ctx context.Context) error {
	n := b.scaled(100_000, 200)
	smalls := b.scaled(b.opts.smallJobs, 3)
	rows := b.opts.smallRows
	for rep := range b.opts.repeat {
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := func() error {
			st, err := b.startStack(ctx, ceilingSpec("manyjobs", false))
			if err != nil {
				return err
			}
			defer b.report.rss("manyjobs", st)
			defer st.stop()
			b.logf("manyjobs %d/%d: %d jobs of %d rows while a %d-row job runs", rep+1, b.opts.repeat, smalls, rows, n)
			bigStart := time.Now()
			big, err := st.submitFile(ctx, jobQuery("big"), writeTemp(st.logDir, "big.csv", csvBytes(n, "")))
			if err != nil {
				return err
			}
			// Wait until the big job is under way.
			for {
				s, err := st.status(ctx, big.ID)
				if err != nil {
					return err
				}
				if s.State == "running" || s.finished() {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			type small struct {
				id    string
				start time.Time
			}
			var jobs []small
			for i := range smalls {
				body := csvBytes(rows, fmt.Sprintf("s%d-", i))
				t0 := time.Now()
				j, err := st.submitCSV(ctx, jobQuery(fmt.Sprintf("small %d", i)), bytesReader(body), int64(len(body)))
				if err != nil {
					return err
				}
				jobs = append(jobs, small{j.ID, t0})
				time.Sleep(100 * time.Millisecond)
			}
			bigDone, bigEnd, err := st.waitJob(ctx, big.ID, 100*time.Millisecond)
			if err != nil {
				return err
			}
			during := 0
			var durs []float64
			for _, j := range jobs {
				s, _, err := st.waitJob(ctx, j.id, 100*time.Millisecond)
				if err != nil {
					return err
				}
				d := s.FinishedAt.Sub(j.start).Seconds()
				durs = append(durs, d)
				if j.start.Before(*bigDone.FinishedAt) {
					during++
				}
			}
			sort.Float64s(durs)
			over := 0
			for _, d := range durs {
				if d >= 10 {
					over++
				}
			}
			b.report.add("manyjobs.max", sample{Value: durs[len(durs)-1],
				Detail: fmt.Sprintf("median %.2f s, %d of %d over 10 s, %d submitted while the big job ran; it took %.1f s (%s rows/s)", durs[len(durs)/2], over, len(durs), during,
					bigEnd.Sub(bigStart).Seconds(), groupThousands(int64(float64(n)/bigEnd.Sub(bigStart).Seconds())))})
			b.logf("manyjobs: slowest small job %.2f s, median %.2f s; big job %.1f s", durs[len(durs)-1], durs[len(durs)/2], bigEnd.Sub(bigStart).Seconds())
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}
