package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
	"github.com/enrichq/enrichq/internal/watches"
)

// finishedJob is a job of n distinct rows, marked completed.
func finishedJob(t *testing.T, st *store.Store, n int) store.Job {
	t.Helper()
	job := createJob(t, st, store.NewJob{}, n)
	if _, err := store.PoolForTest(st).Exec(context.Background(),
		`UPDATE jobs SET state = 'completed', finished_at = now() WHERE id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	return job
}

var watchT0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func newWatch(t *testing.T, st *store.Store, job store.Job, capCredits int64) store.Watch {
	t.Helper()
	w, err := st.CreateWatch(context.Background(), store.NewWatch{Tenant: "acme", SourceJob: job.ID, Every: 7 * 24 * time.Hour,
		MonthlyCapCredits: capCredits, Now: watchT0})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func watchRuns(t *testing.T, st *store.Store, watchID string) int {
	t.Helper()
	var n int
	if err := store.PoolForTest(st).QueryRow(context.Background(), `SELECT count(*) FROM watch_runs WHERE watch_id = $1`, watchID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A watch takes a finished job's distinct inputs; its first run is due a
// period on, at its own time of day; a job still running is refused.
func TestCreateWatch(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	open := createJob(t, st, store.NewJob{}, 3)
	if _, err := st.CreateWatch(ctx, store.NewWatch{Tenant: "acme", SourceJob: open.ID, Every: 7 * 24 * time.Hour, Now: watchT0}); !errors.Is(err, store.ErrJobNotFinished) {
		t.Fatalf("a watch of a running job: %v", err)
	}
	if _, err := st.CreateWatch(ctx, store.NewWatch{Tenant: "other", SourceJob: open.ID, Every: 7 * 24 * time.Hour, Now: watchT0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a watch of another tenant's job: %v", err)
	}
	job := finishedJob(t, st, 100)
	w := newWatch(t, st, job, 1000)
	if w.Inputs != 100 || w.State != store.WatchActive {
		t.Fatalf("watch: %+v", w)
	}
	want := time.Date(2026, 3, 17, 0, 0, 0, 0, time.UTC).Add(watches.DayOffset(w.ID))
	if want.Before(watchT0.Add(w.Every)) {
		want = want.AddDate(0, 0, 1)
	}
	if !w.NextRunAt.Equal(want) {
		t.Errorf("next run %v, want %v", w.NextRunAt, want)
	}
}

// Two sweeps racing, and a sweep after a leader killed in the middle of
// its own: each due slot is run once, none lost; a slot overdue by several
// periods is run once and the next one is in the future.
func TestSweepRunsEachSlotOnce(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	w := newWatch(t, st, finishedJob(t, st, 50), 100000)
	if outs, err := st.SweepDueWatches(ctx, watchT0.Add(time.Hour), 10, 20); err != nil || len(outs) != 0 {
		t.Fatalf("sweep before the slot: %v %v", outs, err)
	}

	// A leader takes the watch and dies before its commit.
	conn, err := store.PoolForTest(st).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM watches WHERE id = $1 FOR UPDATE`, w.ID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	due := w.NextRunAt.Add(time.Minute)
	if outs, err := st.SweepDueWatches(ctx, due, 10, 20); err != nil || len(outs) != 0 {
		t.Fatalf("a sweep while another holds the watch: %v %v", outs, err)
	}
	// pg_terminate_backend(pid, timeout) waits until the backend is gone
	// and its locks with it: without the wait, the racing sweeps below
	// could still find the dead leader's lock and skip the watch.
	var gone bool
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&gone); err != nil || !gone {
		t.Fatalf("the leader's backend not ended: %v %v", gone, err)
	}
	conn.Release()

	var wg sync.WaitGroup
	runs := make([]int, 4)
	for i := range runs {
		wg.Go(func() {
			outs, err := st.SweepDueWatches(ctx, due, 10, 20)
			if err != nil {
				t.Error(err)
			}
			for _, o := range outs {
				if o.Run != nil {
					runs[i]++
				}
			}
		})
	}
	wg.Wait()
	if total := runs[0] + runs[1] + runs[2] + runs[3]; total != 1 || watchRuns(t, st, w.ID) != 1 {
		t.Fatalf("runs started by four racing sweeps: %v (stored %d), want 1", runs, watchRuns(t, st, w.ID))
	}
	if outs, err := st.SweepDueWatches(ctx, due, 10, 20); err != nil || len(outs) != 0 {
		t.Fatalf("the sweep repeated: %v %v", outs, err)
	}

	// Down for five weeks: the overdue slot runs once.
	late := due.Add(35 * 24 * time.Hour)
	outs, err := st.SweepDueWatches(ctx, late, 10, 20)
	if err != nil || len(outs) != 1 || outs[0].Run == nil || outs[0].Run.Rows != 50 {
		t.Fatalf("overdue sweep: %+v %v", outs, err)
	}
	if !outs[0].Watch.NextRunAt.After(late) || outs[0].Watch.NextRunAt.After(late.Add(7*24*time.Hour)) {
		t.Errorf("next run after the overdue one: %v (now %v)", outs[0].Watch.NextRunAt, late)
	}
	if watchRuns(t, st, w.ID) != 2 {
		t.Errorf("runs: %d, want 2", watchRuns(t, st, w.ID))
	}
}

// The month's cap: a run's budget is what is left of it; with nothing
// left no run is made, the watch says so and its next run is in the next
// month, where the cap is whole again.
func TestWatchCapHoldsPerMonth(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	w := newWatch(t, st, finishedJob(t, st, 10), 50)
	now := watchT0.Add(time.Hour)
	out, err := st.RunWatchNow(ctx, store.RunNow{Tenant: "acme", ID: w.ID, MaxAge: 0, Now: now, ChunkSize: 20})
	if err != nil || out.Run == nil || out.Run.Budget != 50 {
		t.Fatalf("first run: %+v %v", out, err)
	}
	job, err := st.JobByID(ctx, out.Run.JobID)
	if err != nil || job.BudgetCredits == nil || *job.BudgetCredits != 50 || job.MaxAge != 0 || job.TotalRows != 10 {
		t.Fatalf("run's job: %+v %v", job, err)
	}
	// Its job spent 30 and ended.
	if _, err := store.PoolForTest(st).Exec(ctx, `UPDATE jobs SET credits_spent = 30, state = 'completed', finished_at = now() WHERE id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DiffWatchRuns(ctx, now, 10); err != nil {
		t.Fatal(err)
	}
	out, err = st.RunWatchNow(ctx, store.RunNow{Tenant: "acme", ID: w.ID, MaxAge: time.Hour, Now: now.Add(time.Minute), ChunkSize: 20})
	if err != nil || out.Run == nil || out.Run.Budget != 20 {
		t.Fatalf("second run: %+v %v", out, err)
	}
	// The second is still going: it holds its whole budget.
	out, err = st.RunWatchNow(ctx, store.RunNow{Tenant: "acme", ID: w.ID, MaxAge: time.Hour, Now: now.Add(2 * time.Minute), ChunkSize: 20})
	if err != nil || out.Run != nil || !out.CapReached || out.Watch.CapReachedMonth == nil || !out.Watch.CapReachedMonth.Equal(watches.MonthOf(now)) {
		t.Fatalf("third run: %+v %v", out, err)
	}
	// A scheduled slot in a month with nothing left moves to the next month.
	outs, err := st.SweepDueWatches(ctx, w.NextRunAt, 10, 20)
	if err != nil || len(outs) != 1 || outs[0].Run != nil || !outs[0].CapReached {
		t.Fatalf("sweep at the cap: %+v %v", outs, err)
	}
	april := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	if got := outs[0].Watch.NextRunAt; !got.Equal(april.Add(watches.DayOffset(w.ID))) {
		t.Errorf("next run after the cap: %v, want the first of April at the watch's hour", got)
	}
	if spent, _, err := st.WatchSpend(ctx, w.ID, now); err != nil || spent != 30 {
		t.Errorf("March spend %d %v, want 30", spent, err)
	}
	outs, err = st.SweepDueWatches(ctx, april.Add(24*time.Hour), 10, 20)
	if err != nil || len(outs) != 1 || outs[0].Run == nil || outs[0].Run.Budget != 50 || outs[0].Watch.CapReachedMonth != nil {
		t.Fatalf("April's run: %+v %v", outs, err)
	}
}

// A watch deleted while a sweep compares its run: both end well. The
// comparison is held at the feed's turn, after it wrote the snapshots and
// before its change lines, and the delete is sent then; when the turn is
// given, the comparison's change lines need the watch the delete holds.
// Unless the comparison took its watch first, that is a deadlock and the
// delete (the first to wait) is the one Postgres ends: a 500 on the
// watches page.
func TestDeleteWatchWhileItsRunIsCompared(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	w := newWatch(t, st, finishedJob(t, st, 5), 1000)
	now := watchT0.Add(time.Hour)
	out, err := st.RunWatchNow(ctx, store.RunNow{Tenant: "acme", ID: w.ID, MaxAge: 0, Now: now, ChunkSize: 20})
	if err != nil || out.Run == nil {
		t.Fatalf("run: %+v %v", out, err)
	}
	// Every input was a match; the run finds none any more: a change line each.
	for _, q := range []string{
		`UPDATE watch_inputs SET matched = true, snap_company = 'Acme', answered_at = now() WHERE watch_id = $1`,
		`UPDATE job_rows SET state = 'no_match' WHERE job_id = (SELECT job_id FROM watch_runs WHERE watch_id = $1)`,
		`UPDATE jobs SET state = 'completed', finished_at = now() WHERE id = (SELECT job_id FROM watch_runs WHERE watch_id = $1)`,
	} {
		if _, err := pool.Exec(ctx, q, w.ID); err != nil {
			t.Fatal(err)
		}
	}

	turn, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Rollback(ctx)
	if _, err := turn.Exec(ctx, `SELECT 1 FROM results_feed_cursor WHERE singleton FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type diffed struct {
		diffs []store.WatchDiff
		err   error
	}
	compared := make(chan diffed, 1)
	go func() {
		d, err := st.DiffWatchRuns(ctx, now, 10)
		compared <- diffed{d, err}
	}()
	waitForLockWait(t, pool, "%results_feed_cursor%")
	deleted := make(chan error, 1)
	go func() { deleted <- st.DeleteWatch(ctx, "acme", w.ID) }()
	waitForLockWait(t, pool, "DELETE FROM watches%")
	if err := turn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Errorf("the delete: %v", err)
	}
	if d := <-compared; d.err != nil || len(d.diffs) != 1 || d.diffs[0].Changes != 5 {
		t.Errorf("the comparison: %+v %v, want one run of 5 change lines, compared before the delete", d.diffs, d.err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM watches WHERE id = $1) + (SELECT count(*) FROM watch_changes WHERE watch_id = $1)`, w.ID).Scan(&left); err != nil || left != 0 {
		t.Errorf("after the delete: %d rows of the watch or its changes left (%v)", left, err)
	}
}

// waitForLockWait waits until a statement like query waits on a lock.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, query string) {
	t.Helper()
	for range 500 {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE $1 AND datname = current_database()`, query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no statement like %q waits on a lock", query)
}
