package service_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// finishedJob is a job of n rows of the tenant, canceled and finished: a
// source a watch may be made of.
func finishedJob(t *testing.T, svc *service.Service, st *store.Store, p service.Principal, n int) string {
	t.Helper()
	job := mustSubmit(t, svc, p, n)
	if _, err := svc.Cancel(context.Background(), p, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	return job.ID
}

// A tenant has at most its limit of watches (20 by default): the 21st is a
// conflict naming the limit, another tenant's are not counted, and a
// deleted watch frees its place.
func TestWatchLimitPerTenant(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Watches: service.WatchLimits{CreatesPerHour: 100}})
	ctx := context.Background()
	job := finishedJob(t, svc, st, acme, 3)
	capCredits := int64(10)
	nw := service.NewWatch{JobID: job, Every: "7d", MonthlyCapCredits: &capCredits}
	var first string
	for i := range 20 {
		w, err := svc.CreateWatch(ctx, acme, nw)
		if err != nil {
			t.Fatalf("watch %d: %v", i+1, err)
		}
		if i == 0 {
			first = w.Watch.ID
		}
	}
	var conflict *service.ConflictError
	_, err := svc.CreateWatch(ctx, acme, nw)
	if !errors.As(err, &conflict) || conflict.Code != "watch_limit_reached" || !strings.Contains(conflict.Message, "20 watches") {
		t.Fatalf("the 21st watch: %v, want watch_limit_reached naming 20", err)
	}
	if list, err := svc.ListWatches(ctx, acme, "", 100); err != nil || len(list.Watches) != 20 {
		t.Fatalf("watches after the refusal: %d, %v", len(list.Watches), err)
	}
	other := finishedJob(t, svc, st, beta, 2)
	if _, err := svc.CreateWatch(ctx, beta, service.NewWatch{JobID: other, Every: "7d", MonthlyCapCredits: &capCredits}); err != nil {
		t.Fatalf("another tenant's first watch: %v", err)
	}
	if err := svc.DeleteWatch(ctx, acme, first); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateWatch(ctx, acme, nw); err != nil {
		t.Fatalf("a watch in a freed place: %v", err)
	}
}

// Creations are throttled per tenant, deleted watches counted: past the
// hour's quota a creation is a 429's error with a wait within the hour.
func TestWatchCreationsPerHour(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st},
		Watches: service.WatchLimits{CreatesPerHour: 2}})
	ctx := context.Background()
	job := finishedJob(t, svc, st, acme, 3)
	capCredits := int64(10)
	nw := service.NewWatch{JobID: job, Every: "7d", MonthlyCapCredits: &capCredits}
	for range 2 {
		w, err := svc.CreateWatch(ctx, acme, nw)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteWatch(ctx, acme, w.Watch.ID); err != nil {
			t.Fatal(err)
		}
	}
	var throttled *service.TooManyRequestsError
	_, err := svc.CreateWatch(ctx, acme, nw)
	if !errors.As(err, &throttled) || throttled.RetryAfter <= 0 || throttled.RetryAfter > time.Hour {
		t.Fatalf("a third creation in the hour: %v, want a TooManyRequestsError", err)
	}
	if list, err := svc.ListWatches(ctx, acme, "", 10); err != nil || len(list.Watches) != 0 {
		t.Fatalf("the refused creation stored a watch: %d, %v", len(list.Watches), err)
	}
	other := finishedJob(t, svc, st, beta, 2)
	if _, err := svc.CreateWatch(ctx, beta, service.NewWatch{JobID: other, Every: "7d", MonthlyCapCredits: &capCredits}); err != nil {
		t.Fatalf("another tenant's creation: %v", err)
	}
}

// A run asked for now is refused while a run of the watch is going (run,
// cancel, run made a new job each time), and sooner than the interval after
// the last one; it starts again once the interval has passed.
func TestWatchRunThrottled(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	now := time.Now()
	var shift atomic.Int64
	clock := func() time.Time { return now.Add(time.Duration(shift.Load())) }
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}, Now: clock,
		Watches: service.WatchLimits{RunInterval: time.Hour}})
	ctx := context.Background()
	job := finishedJob(t, svc, st, acme, 5)
	capCredits := int64(1000)
	created, err := svc.CreateWatch(ctx, acme, service.NewWatch{JobID: job, Every: "7d", MonthlyCapCredits: &capCredits})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Watch.ID
	run, err := svc.RunWatch(ctx, acme, id, "0s")
	if err != nil {
		t.Fatal(err)
	}
	var throttled *service.TooManyRequestsError
	if _, err := svc.RunWatch(ctx, acme, id, "0s"); !errors.As(err, &throttled) || !strings.Contains(throttled.Message, "is going") {
		t.Fatalf("a run while one is going: %v, want a TooManyRequestsError", err)
	}
	if _, err := svc.Cancel(ctx, acme, *run.JobID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, *run.JobID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DiffWatchRuns(ctx, clock(), 10); err != nil { // the differ: the run ended, what it spent counted
		t.Fatal(err)
	}
	shift.Store(int64(10 * time.Minute))
	_, err = svc.RunWatch(ctx, acme, id, "0s")
	if !errors.As(err, &throttled) || throttled.RetryAfter.Round(time.Second) != 50*time.Minute {
		t.Fatalf("a run 10 minutes after the last: %v, want a wait of 50m", err)
	}
	// A cap reached is said first, within the interval too.
	zero, full := int64(0), capCredits
	if _, err := svc.UpdateWatch(ctx, acme, id, service.WatchPatch{MonthlyCapCredits: &zero}); err != nil {
		t.Fatal(err)
	}
	var conflict *service.ConflictError
	if _, err := svc.RunWatch(ctx, acme, id, "0s"); !errors.As(err, &conflict) || conflict.Code != "cap_reached" {
		t.Fatalf("a run with nothing left of the cap: %v, want cap_reached", err)
	}
	if _, err := svc.UpdateWatch(ctx, acme, id, service.WatchPatch{MonthlyCapCredits: &full}); err != nil {
		t.Fatal(err)
	}
	if jobs := storetest.WatchRunJobs(t, st, id); len(jobs) != 1 {
		t.Fatalf("the refused runs made jobs: %v", jobs)
	}
	shift.Store(int64(time.Hour))
	if run, err := svc.RunWatch(ctx, acme, id, "0s"); err != nil || run.JobID == nil {
		t.Fatalf("a run an hour later: %+v, %v", run, err)
	}
}

// rowCounter counts the rows Postgres sends back to the store's queries.
type rowCounter struct{ rows atomic.Int64 }

func (c *rowCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (c *rowCounter) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if d.CommandTag.Select() {
		c.rows.Add(d.CommandTag.RowsAffected())
	}
}

// Making a watch copies its inputs inside Postgres and prices them by
// class: the API reads a few rows, not one per input, and the estimate is
// the upload's.
func TestWatchCreationReadsNoInputs(t *testing.T) {
	t.Parallel()
	counter := &rowCounter{}
	st := storetest.OpenWith(t, storetest.NewDatabase(t), store.Options{Tracer: counter})
	svc := service.New(service.Config{Store: st, Submitter: &service.Submitter{Store: st}})
	ctx := context.Background()
	const rows = 2000
	job := finishedJob(t, svc, st, acme, rows)
	capCredits := int64(1_000_000)
	before := counter.rows.Load()
	created, err := svc.CreateWatch(ctx, acme, service.NewWatch{JobID: job, Every: "7d", MonthlyCapCredits: &capCredits})
	if err != nil {
		t.Fatal(err)
	}
	read := counter.rows.Load() - before
	if read > 50 {
		t.Errorf("creating a watch of %d inputs read %d rows from Postgres, want a few", rows, read)
	}
	// 2,000 name+company searches at 2 credits each (the cost table).
	if e := created.Estimate; created.Watch.Inputs != rows || e.Rows != rows || e.CreditsPerRun.Max != 2*rows {
		t.Errorf("watch of %d inputs, estimate %+v", created.Watch.Inputs, e)
	}
	est, err := svc.Estimate(ctx, acme, submission(rows, ingest.JobOptions{}))
	if err != nil || est.Credits != created.Estimate.CreditsPerRun {
		t.Errorf("the upload's estimate %+v (%v), the watch's per run %+v", est.Credits, err, created.Estimate.CreditsPerRun)
	}
}
