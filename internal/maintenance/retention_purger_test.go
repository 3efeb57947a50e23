package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A step of the purger goes on from batch to batch while they come back
// full and its budget lasts: retention keeps up with what the pipeline
// writes, not one batch an interval.
func TestRetentionPurgerStepRunsBatchesWhileMoreIsDue(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	now := time.Now()
	job := storetest.GrowJob(t, st, "acme", 250, now.Add(-48*time.Hour), false)
	day := 24 * time.Hour
	if _, err := st.SetRetention(ctx, "acme", "k", &day); err != nil {
		t.Fatal(err)
	}
	p := maintenance.NewRetentionPurger(st, maintenance.RetentionPurgerConfig{Batch: 50, Budget: time.Minute,
		Now: func() time.Time { return now }})
	did, err := p.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := st.JobByID(ctx, job.ID); err != nil || j.PurgedAt == nil {
		t.Fatalf("after one step (%d removed) the job is not purged: %+v, %v", did, j, err)
	}
	if _, rows := storetest.JobsAndRows(t, st); rows != 0 {
		t.Fatalf("%d rows left", rows)
	}
}
