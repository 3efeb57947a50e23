package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// benchIdleSweeps times a round of each leader sweep with nothing to do in
// st: the retention purge's (every statement of a step of the purger), then
// the others'.
func benchIdleSweeps(b *testing.B, st *store.Store) {
	ctx := context.Background()
	now := time.Now()
	for _, s := range []struct {
		name string
		do   func() error
	}{
		{"retention", func() error {
			p, err := st.PurgeExpired(ctx, time.Now(), 5000)
			if err == nil && p.Total() != 0 {
				b.Fatalf("idle round removed %+v", p)
			}
			return err
		}},
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
		b.Run("idle_sweep/"+s.name, func(b *testing.B) {
			for range b.N {
				if err := s.do(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/round")
		})
	}
}

// benchPurge purges st's tenant acme, due at last, a batch of 5,000 rows
// (the purger's default) per iteration: rows/s of job_rows (each with its
// results, markers, feed lines, extras and cache entry), and the p99 of
// tenant beta's status polls (job polled) meanwhile.
func benchPurge(b *testing.B, st *store.Store, polled string) {
	ctx := context.Background()
	later := time.Now().Add(2000 * 24 * time.Hour)
	b.Run("purge", func(b *testing.B) {
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
