package maintenance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store"
)

// The rows of a lost worker go back to the queue in the round that takes
// them back, under a new task id (the lost worker's task may still be held
// as active by asynq, and its id would be refused), not a Recheck later.
func TestReclaimedChunkIsQueuedAtOnce(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Maintenance: maintenance.Settings{Recheck: time.Hour}})
	job := submit(b, t, jobstest.Companies(30), ingest.JobOptions{Roles: []string{"CFO"}})
	ctx := context.Background()
	if _, err := b.Maintainer.RunOnce(ctx); err != nil { // first round: marks the queue
		t.Fatal(err)
	}
	// A worker claims chunk 1 and dies: its lease is over at once.
	ref := store.ChunkRef{JobID: job.ID, Chunk: 1}
	if err := b.Enqueuer.Inspector.DeleteTask(b.Queue, jobs.TaskID(ref)); err != nil {
		t.Fatal(err)
	}
	claim, err := b.Store.ClaimChunk(ctx, job.ID, 1, -time.Second)
	if err != nil || len(claim.Rows) == 0 {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	before := queued(t, b)
	st, err := b.Maintainer.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st["lease_rescuer"] != 1 || st["chunk_dispatcher"] != 0 {
		t.Fatalf("round %v: want the one chunk reclaimed and queued by the rescuer", st)
	}
	after := queued(t, b)
	if len(after) != len(before)+1 {
		t.Fatalf("queue %v before, %v after: want one more task", before, after)
	}
	found := false
	for _, id := range after {
		found = found || strings.HasPrefix(id, jobs.TaskID(ref)+":r")
	}
	if !found {
		t.Fatalf("no task for %v in %v", ref, after)
	}
}
