package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The real worker program processes an enqueued chunk and stops cleanly.
func TestWorkerRunProcessesAChunk(t *testing.T) {
	t.Parallel()
	fv := enrichtest.NewSeed(enrichtest.DefaultSeedOptions())
	vendor := httptest.NewServer(fv)
	t.Cleanup(vendor.Close)
	dbURL := storetest.NewDatabase(t)
	queue := jobstest.RandomName("test-")
	env := map[string]string{
		"DATABASE_URL": dbURL, "REDIS_URL": jobstest.RedisURL(), "ENRICHQ_QUEUE": queue,
		"ENRICHQ_VENDOR_URL": vendor.URL, "ENRICHQ_VENDOR_KEY": enrichtest.DefaultSeedOptions().APIKeys[0],
		"ENRICHQ_VENDOR_RPS": "1000", "ENRICHQ_VENDOR_BURST": "100", "ENRICHQ_LOG_FORMAT": "json",
		"ENRICHQ_METRICS_ADDR": "127.0.0.1:0",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	pr, pw := io.Pipe()
	go func() { done <- run(ctx, func(k string) string { return env[k] }, pw, io.Discard) }()
	metricsURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "worker metrics on "); ok {
				metricsURL <- u
			}
		}
	}()

	st, err := store.Open(context.Background(), dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	redisOpt, _ := asynq.ParseRedisURI(jobstest.RedisURL())
	enq := jobs.NewEnqueuer(redisOpt, queue)
	t.Cleanup(func() { _ = enq.Inspector.DeleteQueue(queue, true); enq.Close() })
	job, _, err := st.CreateJob(context.Background(), store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 100, MaxAge: time.Hour},
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
		j, err := st.JobByID(context.Background(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == domain.JobCompleted {
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
	// The metrics say what happened, with no job or row ids as labels.
	var murl string
	select {
	case murl = <-metricsURL:
	case <-time.After(10 * time.Second):
		t.Fatal("no metrics address printed")
	}
	resp, err := http.Get(murl)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`enrichq_vendor_calls_total{endpoint="/v1/bulk",outcome="ok"}`, `enrichq_rows_finished_total{state="matched"}`,
		`enrichq_credits_spent_total{stage="profile"}`, `enrichq_job_duration_seconds_count 1`, `asynq_tasks_enqueued_total`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), job.ID) {
		t.Error("a job id is a metric label")
	}
	// The same internal listener serves the profiles.
	resp, err = http.Get(strings.TrimSuffix(murl, "/metrics") + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("/debug/pprof/heap on the metrics listener: %d %.100s", resp.StatusCode, body)
	}
	cancel()
	pw.Close()
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
