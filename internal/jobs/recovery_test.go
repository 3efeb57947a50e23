package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/fakevendor"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
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

// The rows of a lost worker go back to the queue in the sweep that takes
// them back, under a new task id (the lost worker's task may still be held
// as active by asynq, and its id would be refused), not a Recheck later.
func TestReclaimedChunkIsQueuedAtOnce(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	job := submit(b, t, companies(30), ingest.JobOptions{Roles: []string{"CFO"}})
	ctx := context.Background()
	b.Sweeper.Config.Recheck = time.Hour
	if _, err := b.Sweeper.Sweep(ctx); err != nil { // first sweep: marks the queue
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
	st, err := b.Sweeper.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.LeasesReclaimed != 1 || st.ChunksEnqueued != 1 {
		t.Fatalf("sweep %+v: want the one chunk reclaimed and queued", st)
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

// When Redis loses the queue (FLUSHALL, a restart without persistence), the
// next sweep hands every chunk with work to the queue again, and only then.
func TestLostQueueIsRefilledAtOnce(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	job := submit(b, t, companies(50), ingest.JobOptions{Roles: []string{"CFO"}})
	ctx := context.Background()
	b.Sweeper.Config.Recheck = time.Hour
	chunks := len(queued(t, b))
	if chunks < 2 {
		t.Fatalf("%d chunks queued at submit", chunks)
	}
	// The first sweep against this Redis finds no marker: it hands the
	// chunks again, a no-op for tasks still queued.
	if _, err := b.Sweeper.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(queued(t, b)); n != chunks {
		t.Fatalf("%d tasks queued after the first sweep, want %d (no duplicates)", n, chunks)
	}
	// Redis loses every key of the queue, marker included (FLUSHALL, but
	// only of this test's keys: the Redis is shared).
	ropt, _ := redis.ParseURL(jobstest.RedisURL())
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, "*{"+b.Queue+"}*").Result()
	if err != nil || len(keys) < 2 {
		t.Fatalf("keys of the queue: %v, %v", keys, err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	st, err := b.Sweeper.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(queued(t, b)); n != chunks {
		t.Fatalf("%d tasks queued after the loss (sweep %+v), want all %d chunks of job %s again", n, st, chunks, job.ID)
	}
	// The queue is whole again: the next sweep hands nothing.
	st, err = b.Sweeper.Sweep(ctx)
	if err != nil || st.ChunksEnqueued != 0 {
		t.Fatalf("sweep after the refill: %+v, %v", st, err)
	}
}

// A small job submitted while a big one runs does not wait for the big one:
// a job keeps at most Window chunks in the queue, so the small job's chunk
// is queued behind a window, not behind the whole big job.
func TestSmallJobIsNotStarvedByABigOne(t *testing.T) {
	t.Parallel()
	const window = 4
	b := jobstest.New(t, jobstest.Options{Processor: jobs.ProcessorConfig{Bulk: true}, Concurrency: 2,
		Vendor: func(o *fakevendor.Options) { o.Latency = 10 * time.Millisecond }})
	b.Submitter.Window = window
	b.Sweeper.Config.Window = window
	big := submit(b, t, companies(2000), ingest.JobOptions{Roles: []string{"CFO"}}) // 100 chunks of 20
	if n := len(queued(t, b)); n > window {
		t.Fatalf("%d chunks of the big job queued at submit, want at most %d", n, window)
	}
	small := submit(b, t, companies(10), ingest.JobOptions{Roles: []string{"CEO"}})
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
