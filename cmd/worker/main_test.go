package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/enrich/fakevendor"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The real worker program processes an enqueued chunk and stops cleanly.
func TestWorkerRunProcessesAChunk(t *testing.T) {
	t.Parallel()
	fv := fakevendor.New(fakevendor.DefaultOptions())
	vendor := httptest.NewServer(fv)
	t.Cleanup(vendor.Close)
	dbURL := storetest.NewDatabase(t)
	queue := jobstest.RandomName("test-")
	env := map[string]string{
		"DATABASE_URL": dbURL, "REDIS_URL": jobstest.RedisURL(), "ENRICHQ_QUEUE": queue,
		"ENRICHQ_VENDOR_URL": vendor.URL, "ENRICHQ_VENDOR_KEY": fakevendor.DefaultOptions().APIKeys[0],
		"ENRICHQ_VENDOR_RPS": "1000", "ENRICHQ_VENDOR_BURST": "100", "ENRICHQ_LOG_FORMAT": "json",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, io.Discard, io.Discard) }()

	st, err := store.Open(context.Background(), dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	redisOpt, _ := asynq.ParseRedisURI(jobstest.RedisURL())
	enq := jobs.NewEnqueuer(redisOpt, queue)
	t.Cleanup(func() { _ = enq.Inspector.DeleteQueue(queue, true); enq.Close() })
	job, _, err := st.CreateJob(context.Background(), store.NewJob{Tenant: "acme", Lookups: []string{"profile"}, ChunkSize: 100, MaxAge: time.Hour},
		func(add func(store.NewRow) error) error {
			for i := range 20 {
				if err := add(store.NewRow{InputRow: i + 1, Kind: "name_company", Name: "CTO", Company: fmt.Sprint("Co ", i)}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := enq.Enqueue(context.Background(), store.ChunkRef{JobID: job.ID, Chunk: 0}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		j, err := st.GetJob(context.Background(), "", job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == store.JobCompleted {
			if j.CreditsSpent != fv.TotalCharged() {
				t.Fatalf("job spent %d, vendor billed %d", j.CreditsSpent, fv.TotalCharged())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s", j.State)
		}
		<-tick.C
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not stop")
	}
}

func TestWorkerRefusesWithoutVendor(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("started without a vendor")
	}
}
