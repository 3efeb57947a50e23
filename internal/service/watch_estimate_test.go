package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/enrichq/enrichq/internal/service"
)

// EstimateWatch answers what CreateWatch then answers, makes nothing, and
// refuses as CreateWatch does: an unfinished job, another tenant's, a
// period under 7 days.
func TestEstimateWatchIsCreatesEstimate(t *testing.T) {
	t.Parallel()
	svc, st := setup(t)
	ctx := context.Background()
	job := mustSubmit(t, svc, acme, 12)
	capCredits := int64(60)
	nw := service.NewWatch{JobID: job.ID, Every: "14d", MonthlyCapCredits: &capCredits}
	var conflict *service.ConflictError
	if _, err := svc.EstimateWatch(ctx, acme, nw); !errors.As(err, &conflict) || conflict.Code != "job_not_finished" {
		t.Fatalf("the estimate of an unfinished job: %v", err)
	}
	if _, err := svc.Cancel(ctx, acme, job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	est, err := svc.EstimateWatch(ctx, acmeRead, nw)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := svc.ListWatches(ctx, acme, "", 10); err != nil || len(list.Watches) != 0 {
		t.Fatalf("the estimate made a watch: %+v %v", list, err)
	}
	if _, err := svc.EstimateWatch(ctx, beta, nw); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("the estimate of another tenant's job: %v", err)
	}
	short := nw
	short.Every = "6d"
	var invalid *service.InvalidError
	if _, err := svc.EstimateWatch(ctx, acme, short); !errors.As(err, &invalid) {
		t.Fatalf("every 6d: %v", err)
	}
	created, err := svc.CreateWatch(ctx, acme, nw)
	if err != nil {
		t.Fatal(err)
	}
	if created.Estimate != est || est.Rows != 12 || est.Month.Max == 0 {
		t.Fatalf("EstimateWatch %+v, CreateWatch %+v", est, created.Estimate)
	}
}
