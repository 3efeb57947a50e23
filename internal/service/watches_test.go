package service_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// The watch operations check their scopes and values, stay within the
// tenant, audit what they do, and price a month at create.
func TestWatchOperations(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	job := mustSubmit(t, svc, acme, 12)
	capCredits := int64(100)
	nw := service.NewWatch{JobID: job.ID, Every: "7d", MonthlyCapCredits: &capCredits}
	var conflict *service.ConflictError
	if _, err := svc.CreateWatch(ctx, acme, nw); !errors.As(err, &conflict) || conflict.Code != "job_not_finished" {
		t.Fatalf("a watch of an unfinished job: %v", err)
	}
	if _, err := svc.Cancel(ctx, acme, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	var forbidden *service.ForbiddenError
	if _, err := svc.CreateWatch(ctx, acmeRead, nw); !errors.As(err, &forbidden) {
		t.Fatalf("create with a read key: %v", err)
	}
	var invalid *service.InvalidError
	for _, bad := range []service.NewWatch{
		{JobID: job.ID, Every: "6d", MonthlyCapCredits: &capCredits},
		{JobID: job.ID, Every: "soon", MonthlyCapCredits: &capCredits},
		{JobID: job.ID, Every: "7d"},
		{JobID: job.ID, Every: "7d", MonthlyCapCredits: &capCredits, Lookups: []domain.Stage{"fax"}},
	} {
		if _, err := svc.CreateWatch(ctx, acme, bad); !errors.As(err, &invalid) {
			t.Errorf("create %+v: %v, want an InvalidError", bad, err)
		}
	}
	if _, err := svc.CreateWatch(ctx, beta, nw); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("a watch of another tenant's job: %v", err)
	}
	created, err := svc.CreateWatch(ctx, acmeSpend, nw)
	if err != nil {
		t.Fatal(err)
	}
	// 12 name+company searches at 2 credits each (the cost table), 30/7 runs a month, capped at 100.
	if e := created.Estimate; e.Rows != 12 || e.CreditsPerRun.Max != 24 || e.RunsPerMonth != 4.29 || e.Month.Max != 100 || !e.CappedBy {
		t.Errorf("estimate %+v", e)
	}
	id := created.Watch.ID
	if _, err := svc.GetWatch(ctx, beta, id); !errors.Is(err, service.ErrNotFound) {
		t.Errorf("another tenant's read: %v", err)
	}
	if _, err := svc.UpdateWatch(ctx, acmeRead, id, service.WatchPatch{}); !errors.As(err, &forbidden) {
		t.Errorf("patch with a read key: %v", err)
	}
	paused := "paused"
	every := "14d"
	w, err := svc.UpdateWatch(ctx, acme, id, service.WatchPatch{State: &paused, Every: &every})
	if err != nil || w.State != "paused" || w.Every != "14d" || !w.NextRunAt.After(time.Now().Add(13*24*time.Hour)) {
		t.Fatalf("pause and every: %+v %v", w, err)
	}
	run, err := svc.RunWatch(ctx, acme, id, "0s")
	if err != nil || run.JobID == nil || run.Rows != 12 || run.Budget != 100 {
		t.Fatalf("run now of a paused watch: %+v %v", run, err)
	}
	if _, err := svc.RunWatch(ctx, acme, id, "yesterday"); !errors.As(err, &invalid) {
		t.Errorf("a bad max_age: %v", err)
	}
	// A second run while the first goes is throttled (it would find the
	// month's cap taken by the first's budget anyway).
	var throttled *service.TooManyRequestsError
	if _, err := svc.RunWatch(ctx, acme, id, ""); !errors.As(err, &throttled) {
		t.Errorf("a second run: %v", err)
	}
	if page, err := svc.WatchChanges(ctx, acmeRead, id, "", 0); err != nil || len(page.Changes) != 0 {
		t.Errorf("changes: %+v %v", page, err)
	}
	if err := svc.DeleteWatch(ctx, beta, id); !errors.Is(err, service.ErrNotFound) {
		t.Errorf("another tenant's delete: %v", err)
	}
	if err := svc.DeleteWatch(ctx, acme, id); err != nil {
		t.Fatal(err)
	}
	audit, err := svc.Audit(ctx, acme, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, l := range audit.Lines {
		actions = append(actions, l.Action)
	}
	want := []string{"watch_created", "watch_changed", "watch_run", "watch_changes_read", "watch_deleted"}
	if !slices.Equal(actions, want) {
		t.Errorf("audit %v, want %v", actions, want)
	}
}
