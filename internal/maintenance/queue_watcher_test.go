package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/maintenance"
)

// When Redis loses the queue (FLUSHALL, a restart without persistence), the
// next round hands every chunk with work to the queue again, and only then.
func TestLostQueueIsRefilledAtOnce(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Maintenance: maintenance.Settings{Recheck: time.Hour}})
	job := submit(b, t, jobstest.Companies(50), ingest.JobOptions{Roles: []string{"CFO"}})
	ctx := context.Background()
	chunks := len(queued(t, b))
	if chunks < 2 {
		t.Fatalf("%d chunks queued at submit", chunks)
	}
	// The first round against this Redis finds no marker: it hands the
	// chunks again, a no-op for tasks still queued.
	if _, err := b.Maintainer.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(queued(t, b)); n != chunks {
		t.Fatalf("%d tasks queued after the first round, want %d (no duplicates)", n, chunks)
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
	st, err := b.Maintainer.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(queued(t, b)); n != chunks || st["queue_watcher"] != chunks {
		t.Fatalf("%d tasks queued after the loss (round %v), want all %d chunks of job %s again", n, st, chunks, job.ID)
	}
	// The queue is whole again: the next round hands nothing.
	st, err = b.Maintainer.RunOnce(ctx)
	if err != nil || st["lease_rescuer"]+st["chunk_dispatcher"]+st["queue_watcher"] != 0 {
		t.Fatalf("round after the refill: %v, %v", st, err)
	}
}
