package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A job that will never finish (paused and never resumed, or stuck with
// nothing dispatched) and has not changed for longer than its tenant's
// window is canceled by retention and its rows purged; a job still at work
// (a chunk dispatched within the window, or changed within it) and a tenant
// without a window keep theirs.
func TestRetentionCancelsAbandonedJobs(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	for _, tenant := range []string{"acme", "beta"} {
		if _, err := st.EnsureTenant(ctx, tenant); err != nil {
			t.Fatal(err)
		}
	}
	day := 24 * time.Hour
	if _, err := st.SetRetention(ctx, "acme", "k", &day); err != nil {
		t.Fatal(err)
	}
	paused := createJob(t, st, store.NewJob{}, 3)
	if ok, err := st.PauseJob(ctx, paused.ID, domain.PausedByJobBudget, "budget"); err != nil || !ok {
		t.Fatalf("pause: %v %v", ok, err)
	}
	stuck := createJob(t, st, store.NewJob{}, 3)
	busy := createJob(t, st, store.NewJob{}, 3)
	fresh := createJob(t, st, store.NewJob{}, 3)
	other := createJob(t, st, store.NewJob{Tenant: "beta"}, 3)
	if _, err := st.PauseJob(ctx, other.ID, domain.PausedByJobBudget, "budget"); err != nil {
		t.Fatal(err)
	}
	for _, j := range []store.Job{paused, stuck, busy, other} {
		storetest.AgeJob(t, st, j.ID, 2*day)
	}
	if refs, err := st.DispatchNext(ctx, busy.ID, 1); err != nil || len(refs) != 1 { // handed to the queue just now
		t.Fatalf("dispatch: %v %v", refs, err)
	}

	now := time.Now()
	p, err := st.PurgeExpired(ctx, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	if p.Abandoned != 2 || p.Jobs != 2 || p.Rows != 6 {
		t.Errorf("purged %+v; want 2 jobs canceled and purged, 6 rows", p)
	}
	for _, id := range []string{paused.ID, stuck.ID} {
		j, err := st.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != domain.JobCanceled || j.StateReason != store.RetentionCancelReason || j.PurgedAt == nil ||
			j.FinishedAt == nil || j.FinishedAt.After(now.Add(-day)) {
			t.Errorf("abandoned job: %s %q finished %v purged %v", j.State, j.StateReason, j.FinishedAt, j.PurgedAt)
		}
		if counts, _ := st.RowCounts(ctx, id); counts[domain.RowSkipped] != 3 {
			t.Errorf("abandoned job's counts %v; want its 3 rows skipped", counts)
		}
	}
	for _, j := range []store.Job{busy, fresh, other} {
		got, err := st.JobByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == domain.JobCanceled || got.PurgedAt != nil {
			t.Errorf("job %s of %s: %s, purged %v; want it kept", j.ID, j.Tenant, got.State, got.PurgedAt)
		}
	}
}
