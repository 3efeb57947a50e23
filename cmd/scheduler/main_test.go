package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The real scheduler program finds a job that was never enqueued (its
// tasks lost) in Postgres and enqueues it; a second scheduler is safe.
func TestSchedulerEnqueuesLostWork(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	queue := jobstest.RandomName("test-")
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": jobstest.RedisURL(), "ENRICHQ_QUEUE": queue, "ENRICHQ_LOG_FORMAT": "json"}
	cfg, err := config.SchedulerFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.SweepInterval = 50 * time.Millisecond
	st, err := store.Open(context.Background(), dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	job, _, err := st.CreateJob(context.Background(), store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 2},
		func(add func(store.NewRow) error) error {
			for i := range 5 {
				if err := add(store.NewRow{InputRow: i + 1, Kind: "email", Email: "a@b.example"}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 { // two schedulers: one sweeps, the other waits for the lock
		go func() { done <- serve(ctx, cfg, io.Discard, io.Discard) }()
	}
	redisOpt, _ := asynq.ParseRedisURI(jobstest.RedisURL())
	insp := asynq.NewInspector(redisOpt)
	t.Cleanup(func() { _ = insp.DeleteQueue(queue, true); insp.Close() })
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		found := 0
		for c := range 3 {
			if _, err := insp.GetTaskInfo(queue, jobs.TaskID(store.ChunkRef{JobID: job.ID, Chunk: c})); err == nil {
				found++
			}
		}
		if found == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 chunks enqueued", found)
		}
		<-tick.C
	}
	if info, err := insp.GetQueueInfo(queue); err != nil || info.Size != 3 {
		t.Fatalf("queue holds %+v (%v), want exactly 3 tasks: no duplicates from two schedulers", info, err)
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}
