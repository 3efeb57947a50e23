package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
)

// queued lists the ids of the tasks waiting in the bundle's queue.
func queued(t *testing.T, b *jobstest.Bundle) []string {
	t.Helper()
	tasks, err := b.Enqueuer.Inspector.ListPendingTasks(b.Queue, asynq.PageSize(1000))
	if err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range tasks {
		ids = append(ids, ti.ID)
	}
	return ids
}

// A small job submitted while a big one runs does not wait for the big one:
// a job keeps at most Window chunks in the queue, so the small job's chunk
// is queued behind a window, not behind the whole big job.
func TestSmallJobIsNotStarvedByABigOne(t *testing.T) {
	t.Parallel()
	const window = 4
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}, Concurrency: 2,
		Vendor:      func(o *enrichtest.SeedOptions) { o.Latency = 10 * time.Millisecond },
		Maintenance: maintenance.Settings{Window: window}})
	b.Submitter.Window = window
	big := b.Submit(t, jobstest.Companies(2000), ingest.JobOptions{Roles: []string{"CFO"}}) // 100 chunks of 20
	if n := len(queued(t, b)); n > window {
		t.Fatalf("%d chunks of the big job queued at submit, want at most %d", n, window)
	}
	small := b.Submit(t, jobstest.Companies(10), ingest.JobOptions{Roles: []string{"CEO"}})
	b.WaitJob(t, small.ID, domain.JobCompleted)
	counts, err := b.Store.RowCounts(context.Background(), big.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := counts[domain.RowMatched] + counts[domain.RowNoMatch] + counts[domain.RowFailed]
	t.Logf("the small job finished when the big one had %d of 2000 rows done", done)
	if done >= 2000 {
		t.Fatalf("the small job finished only after the big one")
	}
	b.WaitJob(t, big.ID, domain.JobCompleted)
	b.CheckMoney(t, big.ID, small.ID)
}
