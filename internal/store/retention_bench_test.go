package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
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
// tenant beta's status polls (job polled, through polls) meanwhile. grow,
// if not nil, adds the rows the iterations will take, untimed. When polls
// is not st and Postgres runs on this host, it also reports the CPU time
// st's backends took a row: what the purge costs, whatever the machine's
// load makes of its wall time.
func benchPurge(b *testing.B, st, polls *store.Store, polled string, grow func(b *testing.B)) {
	ctx := context.Background()
	later := time.Now().Add(2000 * 24 * time.Hour)
	b.Run("purge", func(b *testing.B) {
		if grow != nil {
			grow(b)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var took []time.Duration
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				t0 := time.Now()
				if _, _, err := polls.GetJobStatus(ctx, "beta", polled); err != nil {
					b.Error(err)
					return
				}
				took = append(took, time.Since(t0))
			}
		})
		var removed int64
		cpu0, cpuOK := backendCPU(st)
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
		if cpu1, ok := backendCPU(st); ok && cpuOK && polls != st && removed > 0 {
			var d time.Duration
			for pid, t := range cpu1 {
				d += t - cpu0[pid]
			}
			b.ReportMetric(float64(d.Microseconds())/float64(removed), "pg-cpu-µs/row")
		}
		if len(took) > 0 {
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "poll-p99-ms")
		}
	})
}

// A due job purged in steps of the purger's batch (5,000 rows), each
// iteration one batch: rows/s of job_rows (each with its results, markers,
// feed lines, extra and a cache entry), and the p99 of another tenant's
// status polls meanwhile. The job is grown fresh, unanalyzed, before the
// timer starts, with as many rows as the iterations will take.
//
//	go test -run '^$' -bench 'Purge$' -benchtime 20x ./internal/store/
func BenchmarkPurge(b *testing.B) {
	url := storetest.NewDatabase(b)
	st, polls := storetest.Open(b, url), storetest.Open(b, url)
	at := time.Now().Add(-40 * 24 * time.Hour)
	polled := storetest.GrowJob(b, st, "beta", 1000, at, true)
	storetest.GrowJob(b, st, "acme", 20_000, at, true) // statistics that have seen a job
	window := 24 * time.Hour
	if _, err := st.SetRetention(context.Background(), "acme", "bench", &window); err != nil {
		b.Fatal(err)
	}
	benchPurgeFresh(b, st, polls, polled.ID)
}

// benchPurgeFresh is benchPurge of a fresh job of acme grown for the
// iterations first, after what earlier runs left is purged (untimed),
// polled through a store of its own.
func benchPurgeFresh(b *testing.B, st, polls *store.Store, polled string) {
	ctx := context.Background()
	later := time.Now().Add(2000 * 24 * time.Hour)
	benchPurge(b, st, polls, polled, func(b *testing.B) {
		for {
			p, err := st.PurgeExpired(ctx, later, 5000)
			if err != nil {
				b.Fatal(err)
			}
			if p.Rows+p.Extras+p.Jobs == 0 {
				break
			}
		}
		storetest.GrowJob(b, st, "acme", 5000*b.N, time.Now().Add(-40*24*time.Hour), false)
	})
}

// backendCPU is the CPU time used so far by the Postgres backend of each of
// st's idle connections, by process id, read from /proc (Postgres on this
// host, the test's default); false when it cannot be read.
func backendCPU(st *store.Store) (map[uint32]time.Duration, bool) {
	conns := store.PoolForTest(st).AcquireAllIdle(context.Background())
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	out := map[uint32]time.Duration{}
	for _, c := range conns {
		pid := c.Conn().PgConn().PID()
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmd), "postgres") {
			return nil, false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, false
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th, in ticks of 1/100 s (USER_HZ).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			return nil, false
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		k, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		out[pid] = time.Duration(u+k) * 10 * time.Millisecond
	}
	return out, len(out) > 0
}
