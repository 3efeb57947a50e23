package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A job paused by the allowance resumes once the month it paused in is
// over, by the clock given; one paused by the vendor does not.
func TestAllowancePausedJobsResumeNextMonth(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	byAllowance := createJob(t, st, store.NewJob{}, 1)
	byVendor := createJob(t, st, store.NewJob{}, 1)
	if ok, err := st.PauseJob(ctx, byAllowance.ID, domain.PausedByAllowance, store.BudgetPausePrefix+": the tenant's monthly allowance"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := st.PauseJob(ctx, byVendor.ID, domain.PausedByVendorAccess, "the vendor refused the API key (401)"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now().UTC()
	if ids, err := st.ResumeAllowancePaused(ctx, now, 100); err != nil || len(ids) != 0 {
		t.Fatalf("resumed in the same month: %v %v", ids, err)
	}
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 1, 0, time.UTC)
	ids, err := st.ResumeAllowancePaused(ctx, next, 100)
	if err != nil || len(ids) != 1 || ids[0] != byAllowance.ID {
		t.Fatalf("resumed next month: %v %v", ids, err)
	}
	if j, _ := st.JobByID(ctx, byAllowance.ID); j.State != domain.JobQueued || j.StateReason != "" {
		t.Errorf("after the resume: %s %q", j.State, j.StateReason)
	}
	if c, _ := st.JobPauseCause(ctx, "acme", byVendor.ID); c != domain.PausedByVendorAccess {
		t.Errorf("the vendor-paused job: cause %q", c)
	}
	if ids, _ := st.ResumeVendorPaused(ctx); len(ids) != 1 || ids[0] != byVendor.ID {
		t.Errorf("resume of vendor-paused jobs: %v", ids)
	}
	if c, _ := st.JobPauseCause(ctx, "acme", byVendor.ID); c != "" {
		t.Errorf("after its resume: cause %q", c)
	}
}
