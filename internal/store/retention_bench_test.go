package store_test

import (
	"context"

	"github.com/enrichq/enrichq/internal/store"
	"slices"
	"sync"
	"testing"
	"time"
)

// A round of the retention purge with nothing due (every statement of a
// step of the purger), in a tenant of 100,000 then 1,000,000 rows.
//
//	go test -run '^$' -bench IdleSweep -benchtime 50x ./internal/store/
func BenchmarkIdleSweep(b *testing.B) {
	outer := b // the data lives until the benchmark's end
	for _, rows := range growthSizes {
		var st *store.Store
		ctx := context.Background()
		b.Run(sizeName(rows), func(b *testing.B) {
			if st == nil {
				st, _, _ = grownTenant(outer, rows)
				b.ResetTimer()
			}
			for range b.N {
				p, err := st.PurgeExpired(ctx, time.Now(), 5000)
				if err != nil || p.Total() != 0 {
					b.Fatalf("idle round removed %+v: %v", p, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/round")
		})
		// The leader's other sweeps, each with nothing to do.
		now := time.Now()
		for _, s := range []struct {
			name string
			do   func() error
		}{
			{"reclaim_leases", func() error { _, err := st.ReclaimExpiredLeases(ctx, 5, 100); return err }},
			{"expire_reservations", func() error { _, err := st.ExpireReservations(ctx, 100); return err }},
			{"finish_jobs", func() error { _, err := st.FinishJobs(ctx, ""); return err }},
			{"advance_feed", func() error { _, err := st.AdvanceResultsFeed(ctx); return err }},
			{"expire_uploads", func() error { _, err := st.DeleteExpiredUploads(ctx, now, 100); return err }},
			{"prune_commit_marks", func() error { _, err := st.PruneCommitMarks(ctx, time.Hour, 1000); return err }},
			{"due_watches", func() error { _, err := st.SweepDueWatches(ctx, now, 100, 100); return err }},
			{"diff_watch_runs", func() error { _, err := st.DiffWatchRuns(ctx, now, 100); return err }},
			{"resume_allowance", func() error { _, err := st.ResumeAllowancePaused(ctx, now, 100); return err }},
		} {
			b.Run(sizeName(rows)+"/"+s.name, func(b *testing.B) {
				if st == nil {
					b.Skip("the size's round did not run")
				}
				for range b.N {
					if err := s.do(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/round")
			})
		}
	}
}

// The purge of a due tenant of 100,000 then 1,000,000 rows, a batch of
// 5,000 rows (the purger's default) per iteration: rows/s of job_rows (each
// with its results, markers, feed lines, extras and cache entry), and the
// p99 of another tenant's status polls meanwhile.
//
//	go test -run '^$' -bench 'Purge$' -benchtime 20x ./internal/store/
func BenchmarkPurge(b *testing.B) {
	outer := b // the data lives until the benchmark's end
	for _, rows := range growthSizes {
		var st *store.Store
		var polled string
		ctx := context.Background()
		later := time.Now().Add(2000 * 24 * time.Hour)
		b.Run(sizeName(rows), func(b *testing.B) {
			if st == nil {
				st, _, polled = grownTenant(outer, rows)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var polls []time.Duration
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					t0 := time.Now()
					if _, _, err := st.GetJobStatus(ctx, "beta", polled); err != nil {
						b.Error(err)
						return
					}
					polls = append(polls, time.Since(t0))
				}
			})
			var removed int64
			b.ResetTimer()
			for range b.N {
				p, err := st.PurgeExpired(ctx, later, 5000)
				if err != nil {
					b.Fatal(err)
				}
				removed += p.Rows
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(removed)/b.Elapsed().Seconds(), "rows/s")
			if len(polls) > 0 {
				slices.Sort(polls)
				b.ReportMetric(float64(polls[len(polls)*99/100].Microseconds())/1000, "poll-p99-ms")
			}
		})
	}
}
