package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Retention purges finished jobs past the window, in batches, and keeps
// each job's counts; cache entries and feed lines past it go too.
func TestPurgeExpired(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	if _, err := st.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureTenant(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	done := people(t, st, "acme")
	if _, err := st.FinishJobs(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	kept := people(t, st, "beta") // no window: kept (unfinished jobs: TestRetentionCancelsAbandonedJobs)
	if _, err := st.FinishJobs(ctx, kept.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := st.RowCounts(ctx, done.ID)
	if p, err := st.PurgeExpired(ctx, time.Now().Add(48*time.Hour), 2); err != nil || p.Total() != 0 {
		t.Fatalf("without a window: %+v %v", p, err)
	}
	day := 24 * time.Hour
	if _, err := st.SetRetention(ctx, "acme", "k", &day); err != nil {
		t.Fatal(err)
	}
	if p, err := st.PurgeExpired(ctx, time.Now(), 2); err != nil || p.Total() != 0 {
		t.Fatalf("inside the window: %+v %v", p, err)
	}
	later := time.Now().Add(2 * day)
	var total store.Purged
	for range 10 {
		p, err := st.PurgeExpired(ctx, later, 2)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rows > 2 {
			t.Fatalf("a step removed %d rows, the batch is 2", p.Rows)
		}
		total.Rows, total.Results, total.CacheEntries, total.Jobs = total.Rows+p.Rows, total.Results+p.Results, total.CacheEntries+p.CacheEntries, total.Jobs+p.Jobs
	}
	if total.Rows != 5 || total.Results != 6 || total.CacheEntries != 6 || total.Jobs != 1 {
		t.Fatalf("purged %+v; want 5 rows, 6 results, 6 cache entries, 1 job", total)
	}
	job, err := st.GetJob(ctx, "acme", done.ID)
	if err != nil || job.PurgedAt == nil {
		t.Fatalf("job %+v, %v: want purged_at", job, err)
	}
	if after, _ := st.RowCounts(ctx, done.ID); after[domain.RowMatched] != before[domain.RowMatched] || after[domain.RowMatched] != 5 {
		t.Fatalf("counts %v, before %v", after, before)
	}
	for _, id := range []string{kept.ID} {
		if counts, _ := st.RowCounts(ctx, id); counts[domain.RowPending]+counts[domain.RowMatched] == 0 {
			t.Errorf("job %s lost its rows", id)
		}
		if j, _ := st.JobByID(ctx, id); j.PurgedAt != nil {
			t.Errorf("job %s purged", id)
		}
	}
	if res, _ := st.ListResults(ctx, kept.ID, "", 0, 100); len(res) != 5 {
		t.Errorf("the other tenant's job has %d results", len(res))
	}
	lines, _ := st.AuditLog(ctx, "acme", 0, 100)
	if len(lines) != 2 || lines[0].Action != store.AuditRetention || lines[1].Action != store.AuditRetentionPurge || lines[1].Rows != 5 {
		t.Fatalf("audit %+v", lines)
	}
}
