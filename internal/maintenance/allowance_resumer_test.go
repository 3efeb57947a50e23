package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store"
)

// A job the tenant's monthly allowance paused stays paused while the month
// lasts and resumes when the (moved) clock reaches the next one; it then
// finishes, and its callback becomes due.
func TestAllowancePausedJobResumesNextMonth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}})
	b.Submitter.WebhooksEnabled, b.Submitter.AllowPrivateCallbacks = true, true
	if _, err := b.Store.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	if _, err := b.Store.UpdateTenantLimits(ctx, "acme", store.TenantLimits{MonthlyAllowance: store.Limit{Set: true, Value: &one}}); err != nil {
		t.Fatal(err)
	}
	job := submit(b, t, jobstest.Companies(3), ingest.JobOptions{Roles: []string{"CEO"}, CallbackURL: "http://127.0.0.1:9/hook"})
	paused := b.WaitJob(t, job.ID, domain.JobPaused)
	if cause, _ := b.Store.JobPauseCause(ctx, "acme", job.ID); cause != domain.PausedByAllowance || paused.CreditsSpent != 0 {
		t.Fatalf("paused by %q (%q), spent %d: want the allowance, nothing spent", cause, paused.StateReason, paused.CreditsSpent)
	}

	now := time.Now().UTC()
	clock := now
	r := maintenance.NewAllowanceResumer(b.Store, maintenance.AllowanceResumerConfig{Now: func() time.Time { return clock }}, b.Log)
	if n, err := r.Step(ctx); n != 0 || err != nil {
		t.Fatalf("in the month it paused: resumed %d (%v)", n, err)
	}
	if j, _ := b.Store.JobByID(ctx, job.ID); j.State != domain.JobPaused {
		t.Fatalf("resumed within the month: %s", j.State)
	}
	clock = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 1, 0, time.UTC) // the 1st of next month
	if n, err := r.Step(ctx); n != 1 || err != nil {
		t.Fatalf("on the 1st of next month: resumed %d (%v), want the job", n, err)
	}
	// The database's own clock is still in this month, where the allowance
	// is spent: the job pauses again at its first reservation (a raised
	// allowance resumes it too). Lift it, as the new month's would be free.
	if _, err := b.Store.UpdateTenantLimits(ctx, "acme", store.TenantLimits{MonthlyAllowance: store.Limit{Set: true}}); err != nil {
		t.Fatal(err)
	}
	// A pause of a reservation refused just before the lift may land after it.
	if j := b.WaitJob(t, job.ID, domain.JobCompleted, domain.JobPaused); j.State == domain.JobPaused {
		if err := b.Store.ResumeJob(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
	}
	done := b.WaitJob(t, job.ID, domain.JobCompleted)
	if done.CreditsSpent == 0 || done.FinishedAt == nil {
		t.Fatalf("after the resume: %+v", done)
	}
	if w, err := b.Store.JobWebhook(ctx, job.ID); err != nil || w.State != "pending" {
		t.Fatalf("its callback: %+v %v, want a delivery due", w, err)
	}
}
